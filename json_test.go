package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// argsRecorder is a capability that keeps the JSON arguments of every call.
type argsRecorder struct {
	mu   sync.Mutex
	args []string
}

func (r *argsRecorder) capability() Capability {
	return Capability{Name: "rec", Func: fn(func(_ context.Context, args json.RawMessage) (any, error) {
		r.mu.Lock()
		r.args = append(r.args, string(args))
		r.mu.Unlock()
		return nil, nil
	})}
}

func (r *argsRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.args
	r.args = nil
	return a
}

// plainVersusEngine runs each expression's value through the host-call
// serializer twice: as {x: v}, which the plain-data writer takes when v is
// plain, and as {get x() {...}}, whose accessor always sends the whole
// value to the engine's JSON.stringify. Both must give the same bytes, or
// the same error.
func plainVersusEngine(t *testing.T, e *Executor, r *argsRecorder, exprs []string) {
	t.Helper()
	var src strings.Builder
	src.WriteString("const vs = [\n")
	for _, x := range exprs {
		fmt.Fprintf(&src, "() => (%s),\n", x)
	}
	src.WriteString(`];
const out = [];
for (const f of vs) {
	const v = f();
	for (const wrap of [v => ({x: v}), v => ({get x() { return v }})]) {
		try { rec(wrap(v)); out.push("sent") } catch (e) { out.push(String(e)) }
	}
}
return out`)
	res, err := e.Run(context.Background(), src.String())
	require.NoError(t, err)
	var outcomes []string
	require.NoError(t, json.Unmarshal(res.Value, &outcomes))
	require.Len(t, outcomes, 2*len(exprs))
	sent := r.take()
	for i, x := range exprs {
		plain, engine := outcomes[2*i], outcomes[2*i+1]
		require.Equal(t, engine, plain, "outcome of %s", x)
		if plain != "sent" {
			continue
		}
		require.GreaterOrEqual(t, len(sent), 2, "calls recorded for %s", x)
		assert.Equal(t, sent[1], sent[0], "JSON of %s", x)
		sent = sent[2:]
	}
	assert.Empty(t, sent)
}

// plainExprs are values at the plain-data writer's edges: what it takes,
// and everything it must decline.
var plainExprs = []string{
	// Numbers: ints, -0, the 2^53 edge, shortest round-trip floats.
	`0`, `-0`, `1`, `-1`, `2**31`, `-(2**31)`, `2**31 - 1`, `2**53 - 1`, `-(2**53 - 1)`, `2**53`, `2**53 + 2`,
	`-(2**53)`, `1e20`, `1e21`, `123456789012345680000`, `0.1`, `1/3`, `-1.5e300`, `5e-324`, `1e-7`, `1.7976931348623157e308`,
	`123.456`, `NaN`, `Infinity`, `-Infinity`, `[0.5, -0.5, 1e-6, 1.5e-7]`,
	// Other primitives.
	`true`, `false`, `null`, `undefined`, `Symbol("s")`, `10n`, `[1n]`,
	// Strings: escapes, controls, Latin-1, BMP, pairs, lone surrogates.
	`""`, `"plain"`, `"a\"b\\c/d"`, `"\b\f\n\r\t"`, `"\u0000\u0001\u001f\u0020\u007f"`, `"\u00e9\u00ff\u0080"`,
	`"€ 𝄞 中文"`, `"\ud800"`, `"\udfff"`, `"\udc00x"`, `"x\ud800"`, `"a\ud800\udc00b"`, `"\udbff\udfff"`,
	`"\ud800\ud800\udc00"`, `"\udc00\ud800"`, `"\u2028\u2029"`, `"x".repeat(1000)`, `"é".repeat(100) + "\n"`,
	`"a" + "b".repeat(20) + "c"`,
	// Arrays.
	`[]`, `[1, "two", null, true, [[]], {}]`, `[1, , 3]`, `new Array(3)`, `[undefined, Symbol(), function () {}, () => 1]`,
	`Object.assign([1, 2], {x: 1})`, `Object.defineProperty([1, 2], 0, {get() { return 5 }, enumerable: true})`,
	`(() => { const a = [1, 2, 3]; a.length = 5; return a })()`,
	`Array.from({length: 300}, (_, i) => ({i, s: "x" + i, f: i / 7}))`,
	// Objects: key order, omitted values, non-enumerable, accessors.
	`{}`, `{a: 1, b: [1, 2, {c: null}]}`, `{b: 1, 2: 2, 1: 3, a: 4}`,
	`{"-1": 1, "01": 2, "4294967295": 3, "4294967294": 4, "1.5": 5}`, `{"é": 1, "\ud800": 2, "\n\"": 3, "": 4}`,
	`{u: undefined, s: Symbol(), f() {}, k: 1}`, `{[Symbol("k")]: 1, v: 2}`,
	`Object.defineProperty({a: 1}, "hidden", {value: 2, enumerable: false})`,
	`{get g() { return 1 }, a: 2}`, `Object.defineProperty({}, "s", {set(v) {}, enumerable: true})`,
	`(() => { const o = {a: 1, b: 2, c: 3}; delete o.b; o.d = 4; return o })()`,
	// toJSON, prototypes, exotic and boxed objects.
	`{toJSON() { return "own" }}`, `{a: {toJSON: () => [1]}}`, `Object.defineProperty({a: 1}, "toJSON", {value: () => 7})`,
	`new (class K { constructor() { this.a = 1 } })()`, `Object.create(null)`, `Object.assign(Object.create({p: 1}), {a: 1})`,
	`new Date(0)`, `new Number(3)`, `new String("s")`, `new Boolean(false)`, `Object(10n)`, `new Map([[1, 2]])`,
	`new Uint8Array([1, 2])`, `new Proxy({a: 1}, {})`, `new Proxy([1], {})`, `/re/g`, `new Error("e")`, `[globalThis.Math]`,
	`(function () { return arguments })(1, 2)`,
	// Nesting: past the plain writer's depth, and cycles.
	`JSON.parse("[".repeat(63) + "]".repeat(63))`, `JSON.parse("[".repeat(64) + "]".repeat(64))`,
	`JSON.parse("[".repeat(65) + "1" + "]".repeat(65))`, `JSON.parse("{\"a\":".repeat(80) + "1" + "}".repeat(80))`,
	`(() => { const o = {}; o.self = o; return o })()`, `(() => { const a = [1]; a.push(a); return a })()`,
	`(() => { const x = {n: 1}; return [x, x, {x}] })()`,
}

func TestPlainJSONMatchesEngine(t *testing.T) {
	t.Parallel()
	r := &argsRecorder{}
	e := newExecutor(t, WithCapability(r.capability()))
	plainVersusEngine(t, e, r, plainExprs)
}

// codecExprs is the plain-data corpus with what the codec tags or reads
// beyond it: binary values, functions, toStringTag (own, an accessor that
// logs, on the prototypes), each read before and after the sandbox made
// its typed arrays.
func codecExprs() []string {
	exprs := append(slices.Clone(plainExprs),
		`{b: new Uint16Array([1]).buffer, d: new DataView(new ArrayBuffer(2))}`,
		`{f() {}, g: [() => 1]}`, `[function named() {}]`,
		`{[Symbol.toStringTag]: "ArrayBuffer", a: 1}`, `{[Symbol.toStringTag]: "X", a: [1]}`,
		`{a: {get [Symbol.toStringTag]() { console.log("own tag read"); return "T" }}}`,
	)
	// The replacer reads toStringTag once the sandbox has made its typed
	// arrays (before, no binary value exists to ask about).
	for _, x := range []string{
		`{a: {get [Symbol.toStringTag]() { console.log("own tag read"); return "T" }}}`,
		`[{get [Symbol.toStringTag]() { console.log("tag read in an array"); return "ArrayBuffer" }}]`,
		`(Object.defineProperty(Object.prototype, Symbol.toStringTag, {get() { console.log("Object tag read"); return "O" }}), {a: {b: 1}})`,
		`(Object.defineProperty(Array.prototype, Symbol.toStringTag, {get() { console.log("Array tag read"); return "A" }}), [[1]])`,
		`(Object.prototype[Symbol.toStringTag] = "ArrayBuffer", {a: 1})`,
		`{a: {[Symbol.toStringTag]: "ArrayBuffer"}}`, `{a: [1, {b: "c"}]}`,
	} {
		exprs = append(exprs, "(new Uint8Array(0), "+x+")")
	}
	return exprs
}

// TestCodecPlainMatchesEngine holds an Execute result's JSON to the
// runtime's codec (runtime.js, stringifyForDispatch): each value returned
// as {x: v}, which the plain-data writer takes when v is plain, and as
// {get x() {...}}, whose accessor sends the whole value to the codec. Both
// give the same result, error and logs: binary values and functions cross
// tagged, and a toStringTag the codec's replacer reads (an accessor, which
// may log) is read.
func TestCodecPlainMatchesEngine(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	exprs := codecExprs()
	type outcome struct {
		Result string
		Error  string
		Logs   []string
	}
	run := func(code string) outcome {
		res := e.Execute(context.Background(), Request{Code: code})
		return outcome{string(res.Result), res.Error, res.Logs}
	}
	for _, x := range exprs {
		plain := run(fmt.Sprintf("async () => { const v = (%s); return {x: v} }", x))
		codec := run(fmt.Sprintf("async () => { const v = (%s); return {get x() { return v }} }", x))
		assert.Equal(t, codec, plain, "outcome of %s", x)
	}
	// The codec's own forms, from the plain writer's side.
	assert.Equal(t, outcome{Result: `{"x":{"a":1}}`, Logs: []string{}},
		run(`async () => ({x: {[Symbol.toStringTag]: "ArrayBuffer", a: 1}})`))
}

// TestPlainJSONPrototypes changes the intrinsic prototypes before sending:
// every toJSON the engine would find must still be found.
func TestPlainJSONPrototypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, setup string
		want        string
	}{
		{"Object.prototype.toJSON", `Object.prototype.toJSON = function () { return "P" }`, `"P"`},
		{"Array.prototype.toJSON", `Array.prototype.toJSON = function () { return "A" }`, `{"x":{"a":"A"}}`},
		{"Array.prototype's prototype", `Object.setPrototypeOf(Array.prototype, {toJSON() { return "S" }})`, `{"x":{"a":"S"}}`},
		{"index getter on Array.prototype", `Object.defineProperty(Array.prototype, 3, {get() { return "G" }})`,
			`{"x":{"a":[0,1,2,"G",4]}}`},
		{"accessor toJSON on Object.prototype", `Object.defineProperty(Object.prototype, "toJSON", {get() { return () => "T" }})`,
			`"T"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &argsRecorder{}
			e := newExecutor(t, WithCapability(r.capability()))
			_, err := e.Run(context.Background(), tt.setup+`; rec({x: {a: [0, 1, 2, , 4]}})`)
			require.NoError(t, err)
			assert.Equal(t, []string{tt.want}, r.take())
		})
	}
}

// TestPlainJSONResult checks the result path, which shares the writer:
// exact bytes, and the payload bound at its edge.
func TestPlainJSONResult(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Payload: 64}))
	tests := []struct {
		script, want string
	}{
		{`return {b: 1, a: [true, null, "\u00e9\ud800"], n: -0, f: 0.1}`, `{"b":1,"a":[true,null,"é\ud800"],"n":0,"f":0.1}`},
		{`return "x".repeat(62)`, `"` + strings.Repeat("x", 62) + `"`},
		{`return [undefined, () => 1]`, `[null,null]`},
		{`return new Date(0)`, `"1970-01-01T00:00:00.000Z"`},
		{`return Symbol()`, `null`},
	}
	for _, tt := range tests {
		res, err := e.Run(context.Background(), tt.script)
		require.NoError(t, err, tt.script)
		assert.Equal(t, tt.want, string(res.Value), tt.script)
	}
	// One byte over: the plain writer stops at the bound, the engine's
	// JSON.stringify then measures the whole value for the error.
	_, err := e.Run(context.Background(), `return "x".repeat(63)`)
	var ee *ExecError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, ee.Message, "65 bytes")
}

// TestPlainJSONRandom compares the two serializers on generated values:
// strings of arbitrary UTF-16 code units, numbers from arbitrary bits,
// nested arrays and objects with arbitrary keys.
func TestPlainJSONRandom(t *testing.T) {
	t.Parallel()
	r := &argsRecorder{}
	e := newExecutor(t, WithCapability(r.capability()), WithLimits(Limits{Payload: 8 << 20}))
	for seed := range uint64(8) {
		g := valueGen{rand.New(rand.NewPCG(seed, 0x5eed))}
		exprs := make([]string, 200)
		for i := range exprs {
			exprs[i] = g.value(0)
		}
		plainVersusEngine(t, e, r, exprs)
	}
}

// valueGen writes random JavaScript value expressions.
type valueGen struct{ r *rand.Rand }

func (g valueGen) value(depth int) string {
	n := 7
	if depth >= 4 {
		n = 5
	}
	switch g.r.IntN(n) {
	case 0:
		return g.str()
	case 1:
		return g.number()
	case 2:
		return []string{"true", "false", "null", "undefined"}[g.r.IntN(4)]
	case 3:
		return strconv.Itoa(g.r.IntN(2000) - 1000)
	case 4:
		return g.str()
	case 5:
		parts := make([]string, g.r.IntN(6))
		for i := range parts {
			if g.r.IntN(12) > 0 {
				parts[i] = g.value(depth + 1)
			}
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		parts := make([]string, g.r.IntN(6))
		for i := range parts {
			parts[i] = g.str() + ": " + g.value(depth+1)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
}

func (g valueGen) str() string {
	var b strings.Builder
	b.WriteByte('"')
	for range g.r.IntN(12) {
		var u int
		switch g.r.IntN(5) {
		case 0:
			u = g.r.IntN(0x80)
		case 1:
			u = g.r.IntN(0x100)
		case 2:
			u = 0xd800 + g.r.IntN(0x800)
		default:
			u = g.r.IntN(0x10000)
		}
		fmt.Fprintf(&b, `\u%04x`, u)
	}
	b.WriteByte('"')
	return b.String()
}

func (g valueGen) number() string {
	var f float64
	switch g.r.IntN(3) {
	case 0:
		f = math.Float64frombits(g.r.Uint64())
	case 1:
		f = float64(g.r.Int64()>>g.r.IntN(64)) / float64(int64(1)<<g.r.IntN(40))
	default:
		f = g.r.NormFloat64() * math.Pow(10, float64(g.r.IntN(40)-20))
	}
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0 && math.Signbit(f):
		return "-0"
	}
	return "(" + strconv.FormatFloat(f, 'g', -1, 64) + ")"
}

// FuzzPlainJSON compares the two serializers on values generated from the
// fuzzer's seed (make fuzz FUZZ=FuzzPlainJSON).
func FuzzPlainJSON(f *testing.F) {
	for seed := range uint64(4) {
		f.Add(seed, seed*7)
	}
	r := &argsRecorder{}
	e, err := New(WithCapability(r.capability()), WithLimits(Limits{Payload: 8 << 20}))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	f.Fuzz(func(t *testing.T, a, b uint64) {
		g := valueGen{rand.New(rand.NewPCG(a, b))}
		exprs := make([]string, 20)
		for i := range exprs {
			exprs[i] = g.value(0)
		}
		plainVersusEngine(t, e, r, exprs)
	})
}
