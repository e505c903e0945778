//go:build cgo

package codemode

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLazyTypedArrays: the typed arrays are made on the first read of any
// of their globals, and a run sees the language it expects either way:
// every global there and working, a global it assigned, deleted or
// redefined first left as it made it, the guards' slow paths (which use
// Int32Array) working on a run that never read one or replaced it, and
// binary results revived without a prior read.
func TestLazyTypedArrays(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 10 * time.Second})) // the slow paths scan 200,000 characters: ASan on a loaded machine took past 500 ms
	ctx := context.Background()
	const names = `['ArrayBuffer', 'SharedArrayBuffer', 'Uint8ClampedArray', 'Int8Array', 'Uint8Array', 'Int16Array',
		'Uint16Array', 'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array', 'Float16Array', 'Float32Array',
		'Float64Array', 'DataView', 'Atomics']`
	tests := []struct{ name, code, want string }{
		{"every global", "return " + names + ".map((n) => typeof globalThis[n])",
			`["function","function","function","function","function","function","function","function","function","function","function","function","function","function","function","object"]`},
		{"data properties once read", "typeof Uint8Array; return " + names +
			".map((n) => Object.getOwnPropertyDescriptor(globalThis, n)).every((d) => d.writable && d.configurable && !d.enumerable && !d.get)", `true`},
		{"working", `const b = new Uint8Array([1, 2, 3]); const v = new DataView(b.buffer); return [b.length, v.getUint8(2), new Int32Array(2).length, Atomics.add(new Int32Array(1), 0, 5), ArrayBuffer.isView(b)]`, `[3,3,2,0,true]`},
		{"a typed array's toString is Array's", `return [new Uint8Array([1, 2]).toString(), Object.getPrototypeOf(Uint8Array.prototype).toString === Array.prototype.toString]`, `["1,2",true]`},
		{"assigned first", `Uint8Array = 5; return [Uint8Array, typeof ArrayBuffer, Uint8Array, typeof Int8Array]`, `[5,"function",5,"function"]`},
		{"deleted first", `delete globalThis.Int8Array; return [typeof ArrayBuffer, 'Int8Array' in globalThis, typeof Uint8Array]`, `["function",false,"function"]`},
		{"redefined first", `Object.defineProperty(globalThis, 'DataView', {get: () => 'mine', configurable: true}); return [typeof ArrayBuffer, DataView]`, `["function","mine"]`},
		{"Atomics assigned first", `Atomics = 1; return [typeof Int32Array, Atomics]`, `["function",1]`},
		{"made non-configurable first", `Object.defineProperty(globalThis, 'Atomics', {value: 1, configurable: false});
			try { new ArrayBuffer(1); return 'made' } catch (e) { return [e instanceof TypeError, e.message] }`,
			`"made"`}, // the definition settles the typed arrays first, as if they had never been lazy
		// As on the data property it stands for, a definition keeps what it
		// does not say (writable), where an accessor's would not.
		{"defined non-configurable, then assigned", `Object.defineProperty(globalThis, 'Atomics', {value: 1, configurable: false}); Atomics = 2;
			return Atomics`, `2`},
		{"slow path without a read", `const s = 'a'.repeat(200000); return [s.indexOf('a'.repeat(2000) + 'b'), s.indexOf('a'.repeat(2000), 5)]`, `[-1,5]`},
		{"slow path with Int32Array replaced", `globalThis.Int32Array = function () { throw new Error('not this one') };
			const s = 'a'.repeat(200000); return [s.indexOf('a'.repeat(2000) + 'b'), typeof Int32Array]`, `[-1,"function"]`},
		{"structuredClone of bytes", `return [...structuredClone(new Uint8Array([7, 8]))]`, `[7,8]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for range 2 { // a fresh sandbox and a restored one
				res, err := e.Run(ctx, tt.code)
				require.NoError(t, err, tt.code)
				assert.Equal(t, tt.want, string(res.Value))
			}
		})
	}
}

// TestLazyTypedArraysExecute: binary data from the host revives into typed
// arrays in a run that never named one.
func TestLazyTypedArraysExecute(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	res := e.Execute(context.Background(), Request{Code: "async () => { const b = await store.bytes(); return [b.constructor.name, b.length, b[1]] }",
		Providers: []Provider{{Name: "store"}},
		Dispatch: EnvelopeDispatch(nil, func(context.Context, string, string, string) (any, error) {
			return []byte{1, 2, 3}, nil
		})})
	require.Empty(t, res.Error)
	assert.Equal(t, `["Uint8Array",3,2]`, string(res.Result))
}

// TestLazyTypedArraysCodec: the codec's typed-array built-ins are the
// language's own even when a program tampered with what capturing them
// late would use, before or after its first read of a typed array.
func TestLazyTypedArraysCodec(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	echo := EnvelopeDispatch(nil, func(_ context.Context, _, _, argsJSON string) (any, error) {
		args, err := ParseDispatchArguments(argsJSON)
		if err != nil {
			return nil, err
		}
		return args[0], nil
	})
	tamper := []string{
		"Uint8Array.prototype.toBase64 = () => 'tampered'; Uint8Array.fromBase64 = () => new Uint8Array([9]);",
		"Object.getOwnPropertyDescriptor = () => ({ get() { throw new Error('tampered') } });",
		"Function.prototype.call = function () { throw new Error('tampered') }; Function.prototype.bind = Function.prototype.call;",
		"Object.getPrototypeOf = () => ({});",
		"Object.defineProperty(Object.prototype, 'Uint8Array', { set() { throw new Error('tampered') }, configurable: true });",
	}
	for _, code := range tamper {
		res := e.Execute(context.Background(), Request{
			Code:      "async () => { " + code + " const b = await store.echo(new Uint8Array([1, 2, 255])); return [b.constructor === Uint8Array, b.length, b[2]] }",
			Providers: []Provider{{Name: "store"}}, Dispatch: echo})
		require.Empty(t, res.Error, code)
		assert.Equal(t, `[true,3,255]`, string(res.Result), code)
	}
}

// TestLazyGlobalsLookLikeData: what could tell a lazy global (an accessor
// until first read) from the data property it stands for, on the global
// object, sees the data property: its descriptor, a redefinition, a freeze,
// __lookupGetter__. (test262's DataView and BigInt64Array descriptor tests
// once saw the accessors.)
func TestLazyGlobalsLookLikeData(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	tests := []struct{ script, want string }{
		{`const d = Object.getOwnPropertyDescriptor(globalThis, 'DataView')
return [typeof d.value, d.writable, d.enumerable, d.configurable, 'get' in d]`, `["function",true,false,true,false]`},
		{`const d = Reflect.getOwnPropertyDescriptor(globalThis, 'URL')
return [d.value === URL, d.writable, 'set' in d]`, `[true,true,false]`},
		{`const ds = Object.getOwnPropertyDescriptors(globalThis)
return [ds.BigInt64Array.writable, ds.TextEncoder.writable, ds.Uint8Array.value === Uint8Array]`, `[true,true,true]`},
		{`Object.defineProperty(globalThis, 'atob', { writable: false })
return [typeof atob, Object.getOwnPropertyDescriptor(globalThis, 'atob').writable]`, `["function",false]`},
		{`Object.freeze(globalThis)
return [typeof URL, typeof Int8Array, Object.isFrozen(globalThis)]`, `["function","function",true]`},
		{`return [globalThis.__lookupGetter__('DataView'), globalThis.__lookupSetter__('crypto')]`, `[null,null]`},
		// Not the global object: nothing is settled, nothing is touched.
		{`const o = {}; Object.defineProperty(o, 'x', { value: 1 }); return Object.getOwnPropertyDescriptor(o, 'x').value`, `1`},
	}
	for _, tt := range tests {
		res, err := e.Run(context.Background(), tt.script)
		require.NoError(t, err, "Run(%q)", tt.script)
		assert.Equal(t, tt.want, string(res.Value), "Run(%q)", tt.script)
	}
}
