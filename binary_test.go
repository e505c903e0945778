package codemode

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBinaryResults: binary data in a result crosses as the codec's
// envelope from Run as from Execute, at any depth.
func TestBinaryResults(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	ctx := context.Background()
	tests := []struct{ code, want string }{
		{"return new Uint8Array([1, 2, 3])", `{"__executor_binary_v1__":"Uint8Array","data":"AQID"}`},
		{"return {a: [new Uint16Array([1])], n: 1}", `{"a":[{"__executor_binary_v1__":"Uint16Array","data":"AQA="}],"n":1}`},
		{"return new Uint8Array([1, 2, 3, 4]).buffer", `{"__executor_binary_v1__":"ArrayBuffer","data":"AQIDBA=="}`},
		{"return new DataView(new Uint8Array([1, 2, 3, 4]).buffer, 1, 2)", `{"__executor_binary_v1__":"DataView","data":"AgM="}`},
		{"return new Uint8Array(new Uint8Array([9, 8, 7, 6]).buffer, 1, 2)", `{"__executor_binary_v1__":"Uint8Array","data":"CAc="}`},
		{"return new Float64Array([1.5])", `{"__executor_binary_v1__":"Float64Array","data":"AAAAAAAA+D8="}`},
		{"return new Uint8Array(0)", `{"__executor_binary_v1__":"Uint8Array","data":""}`},
		{"return [new Date(0), new Int8Array([-1])]", `["1970-01-01T00:00:00.000Z",{"__executor_binary_v1__":"Int8Array","data":"/w=="}]`},
	}
	for _, tt := range tests {
		res, err := e.Run(ctx, tt.code)
		require.NoError(t, err, tt.code)
		assert.Equal(t, tt.want, string(res.Value), "Run(%q)", tt.code)
		x := e.Execute(ctx, Request{Code: "async () => { " + tt.code + " }"})
		assert.Equal(t, tt.want, result(t, x), "Execute(%q)", tt.code)
	}
}

// TestBinaryCapabilities: a capability receives binary arguments as
// envelopes and may return []byte (or any envelope), which the script
// reads as the typed array it names.
func TestBinaryCapabilities(t *testing.T) {
	t.Parallel()
	var seen json.RawMessage
	e := newExecutor(t,
		WithCapability(Capability{Name: "echo", Func: fn(func(_ context.Context, args json.RawMessage) (any, error) {
			seen = append(json.RawMessage(nil), args...)
			return json.RawMessage(args), nil
		})}),
		WithCapability(Capability{Name: "blob", Func: fn(func(context.Context, json.RawMessage) (any, error) {
			return struct {
				B    []byte `json:"b"`
				Name string `json:"name"`
			}{[]byte{1, 2, 3}, "x"}, nil
		})}),
		WithCapability(Capability{Name: "raw", Async: true, Func: fn(func(context.Context, json.RawMessage) (any, error) {
			return []byte{7, 8}, nil
		})}),
	)
	ctx := context.Background()
	res, err := e.Run(ctx, "const r = echo({b: new Uint8Array([1, 2]), f: new Float32Array([1])}); return [r.b instanceof Uint8Array, [...r.b], r.f instanceof Float32Array, r.f[0]]")
	require.NoError(t, err)
	assert.Equal(t, `[true,[1,2],true,1]`, string(res.Value))
	assert.Equal(t, `{"b":{"__executor_binary_v1__":"Uint8Array","data":"AQI="},"f":{"__executor_binary_v1__":"Float32Array","data":"AACAPw=="}}`, string(seen))

	res, err = e.Run(ctx, "const r = blob(); const x = await raw(); return [r.b instanceof Uint8Array, r.b.join(), r.name, x instanceof Uint8Array, x.join()]")
	require.NoError(t, err)
	assert.Equal(t, `[true,"1,2,3","x",true,"7,8"]`, string(res.Value))

	// What is not a well-formed envelope stays an object.
	res, err = e.Run(ctx, `const r = echo({a: {__executor_binary_v1__: "Uint8Array", data: "!!"}, b: {__executor_binary_v1__: "Nope", data: "AA=="}, c: {__executor_binary_v1__: "Uint16Array", data: "AA=="}}); return [typeof r.a.data, typeof r.b.data, typeof r.c.data]`)
	require.NoError(t, err)
	assert.Equal(t, `["string","string","string"]`, string(res.Value))
	res, err = e.Run(ctx, `const r = echo(JSON.parse('{"__proto__": {"__executor_binary_v1__": "Uint8Array", "data": "AQ=="}}')); return [Object.getPrototypeOf(r) === Object.prototype, r.__proto__ instanceof Uint8Array]`)
	require.NoError(t, err)
	assert.Equal(t, `[true,true]`, string(res.Value), "an own __proto__ is revived in place, not set as the prototype")
}

// TestSmallResults: the scalars C reads without the JSON parser read as
// the parser would read them.
func TestSmallResults(t *testing.T) {
	t.Parallel()
	var next json.RawMessage
	e := newExecutor(t, WithCapability(Capability{Name: "give", Func: fn(func(context.Context, json.RawMessage) (any, error) {
		return next, nil
	})}))
	for _, tt := range []struct{ raw, want string }{
		{"42", `[42,"number"]`}, {"-7", `[-7,"number"]`}, {"0", `[0,"number"]`}, {"-0", `[0,"number"]`},
		{"2147483647", `[2147483647,"number"]`}, {"2147483648", `[2147483648,"number"]`}, {"-2147483648", `[-2147483648,"number"]`},
		{"9999999999", `[9999999999,"number"]`}, {"1e3", `[1000,"number"]`}, {"true", `[true,"boolean"]`},
		{"false", `[false,"boolean"]`}, {"null", `[null,"object"]`}, {`"5"`, `["5","string"]`},
	} {
		next = json.RawMessage(tt.raw)
		res, err := e.Run(context.Background(), "const v = give(); return [v, typeof v]")
		require.NoError(t, err, tt.raw)
		assert.Equal(t, tt.want, string(res.Value), tt.raw)
	}
	next = json.RawMessage("-0")
	res, err := e.Run(context.Background(), "return Object.is(give(), -0)")
	require.NoError(t, err)
	assert.Equal(t, "true", string(res.Value), "-0 stays negative zero")
	for _, bad := range []string{"007", "-", "+1", "tru"} {
		next = json.RawMessage(bad)
		res, err := e.Run(context.Background(), "try { give() } catch (e) { return e.message }")
		require.NoError(t, err, bad)
		assert.Contains(t, string(res.Value), "the capability returned invalid JSON", bad)
	}
}
