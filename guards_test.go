package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sparse is an array of length 2^32 - 1 with nothing in it: a no-cost
// receiver on which a built-in that walks its length unpolled would run
// four billion iterations.
const sparse = "const a = []; a.length = 2 ** 32 - 1; "

// likeHuge is an array-like of the greatest length.
const likeHuge = "const o = {length: 2 ** 53 - 1}; "

// hugeBuiltins are single calls of built-ins that walk a length or
// search a string: each must end at the deadline (or the memory limit).
var hugeBuiltins = []string{
	sparse + "a.indexOf(1)",
	sparse + "a.lastIndexOf(1)",
	sparse + "a.includes(1)",
	sparse + "a.reverse()",
	sparse + "a.join('')",
	sparse + "a.join()",
	sparse + "a.toString()",
	sparse + "a.toLocaleString()",
	sparse + "a.every(x => true)",
	sparse + "a.some(x => false)",
	sparse + "a.forEach(x => 1)",
	sparse + "a.map(x => 1)",
	sparse + "a.filter(x => 1)",
	sparse + "a.reduce((x, y) => 1, 0)",
	sparse + "a.reduceRight((x, y) => 1, 0)",
	sparse + "a.copyWithin(0, 1)",
	sparse + "a.sort()",
	sparse + "a.sort((x, y) => x - y)",
	sparse + "a.slice(0)",
	sparse + "a.concat([1])",
	sparse + "[1].concat(a)",
	sparse + "a.flat()",
	sparse + "[a].flat(Infinity)",
	sparse + "a.flatMap(x => x)",
	sparse + "[1].flatMap(() => a)",
	sparse + "a.splice(0, 0, 1)",
	sparse + "a.unshift(1)",
	sparse + "a.shift()",
	sparse + "a.findLast(x => false)",
	sparse + "a.findIndex(Number.isNaN)",
	sparse + "String(a)",
	sparse + "`${a}`",
	sparse + "return { toString() { return a.join() } }.toString()",
	sparse + "a[2 ** 32 - 2] = 1; a.indexOf(2)",
	sparse + "Array.prototype.indexOf.call(new Proxy(a, {}), 1)",
	sparse + "Reflect.apply(Array.prototype.join, a, [''])",
	likeHuge + "Array.prototype.indexOf.call(o, 1)",
	likeHuge + "Array.prototype.join.call(o, '')",
	likeHuge + "Array.prototype.includes.call(o, 1)",
	likeHuge + "Array.prototype.lastIndexOf.call(o, 1)",
	likeHuge + "Array.prototype.every.call(o, x => 1)",
	likeHuge + "Array.prototype.reverse.call(o)",
	likeHuge + "Array.prototype.shift.call(o)",
	likeHuge + "Array.prototype.sort.call(o)",
	likeHuge + "Array.prototype.fill.call(o, 1)",
	"new Array(2 ** 32 - 1).join('x')",
	"const s = 'a'.repeat(1 << 23); return s.indexOf('a'.repeat(1 << 22) + 'b')",
	"const s = 'a'.repeat(1 << 23); return s.includes('a'.repeat(1 << 22) + 'b')",
	"const s = 'a'.repeat(1 << 23); return s.lastIndexOf('a'.repeat(1 << 22) + 'b')",
	"const s = 'a'.repeat(1 << 23); return s.split('a'.repeat(1 << 22) + 'b')",
	"const s = 'a'.repeat(1 << 23); return s.replace('a'.repeat(1 << 22) + 'b', '')",
	"const s = 'a'.repeat(1 << 23); return s.replaceAll('a'.repeat(1 << 22) + 'b', '')",
}

// TestBuiltinsStopAtTheDeadline: every such call, looped so that it must
// run past the deadline however fast a machine is, ends in timeout (or
// memory_exceeded) near it, and the executor serves the next run.
func TestBuiltinsStopAtTheDeadline(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 100 * time.Millisecond}))
	for _, script := range hugeBuiltins {
		t.Run(script, func(t *testing.T) {
			start := time.Now()
			_, err := runBounded(t, e, context.Background(), "for (;;) { (() => { "+script+" })() }")
			kind := execErr(t, err).Kind
			assert.Contains(t, []ErrorKind{KindTimeout, KindMemoryExceeded}, kind, "Run(%q) = %s", script, err)
			// Generous: a JS loop stops within tens of µs; what one guarded
			// call may do unpolled is bounded to milliseconds.
			bound := 3 * time.Second
			if sanitized || checkedMode { // ASan in checked mode on a loaded machine took 4.2 s
				bound = 15 * time.Second
			}
			assert.Less(t, time.Since(start), bound, "Run(%q) ended %v after it began", script, time.Since(start))
			// The next run works. Its budget is the same 100 ms, which a
			// loaded machine (the race detector, cgocheck2, parallel
			// tests) can spend before it starts: a timeout is retried, any
			// other failure is not.
			var res *Result
			for range 5 {
				if res, err = e.Run(context.Background(), "return [1, 2, 3].indexOf(2)"); err == nil || execErr(t, err).Kind != KindTimeout {
					break
				}
			}
			require.NoError(t, err)
			assert.Equal(t, "1", string(res.Value))
		})
	}
}

// runBounded runs a script and fails the test (rather than hang it) if
// the run does not return within 20 s.
func runBounded(t *testing.T, e *Executor, ctx context.Context, script string) (*Result, error) {
	t.Helper()
	type result struct {
		res *Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := e.Run(ctx, script)
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-time.After(20 * time.Second):
		t.Fatalf("Run(%q) did not return", script)
		return nil, nil
	}
}

// TestBuiltinsStopOnCancelAndClose: a cancellation and Close stop a guarded
// call as they stop a loop.
func TestBuiltinsStopOnCancelAndClose(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: time.Minute}))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := runBounded(t, e, ctx, sparse+"a.indexOf(1)")
	assert.ErrorIs(t, err, context.Canceled)

	closing, err := New(WithLimits(Limits{Deadline: time.Minute}))
	require.NoError(t, err)
	time.AfterFunc(50*time.Millisecond, func() { closing.Close() })
	_, err = runBounded(t, closing, context.Background(), likeHuge+"Array.prototype.join.call(o, '')")
	assert.ErrorIs(t, err, ErrClosed)
}

// guardedMethods are the methods the sandbox guards.
var guardedMethods = []string{
	"Array.prototype.indexOf", "Array.prototype.lastIndexOf", "Array.prototype.includes", "Array.prototype.join",
	"Array.prototype.toLocaleString", "Array.prototype.every", "Array.prototype.some", "Array.prototype.forEach",
	"Array.prototype.map", "Array.prototype.filter", "Array.prototype.reduce", "Array.prototype.reduceRight",
	"Array.prototype.reverse", "Array.prototype.copyWithin", "Array.prototype.sort", "Array.prototype.slice",
	"Array.prototype.concat", "Array.prototype.flat", "Array.prototype.flatMap", "Array.prototype.splice",
	"Array.prototype.unshift", "Array.prototype.shift",
	"String.prototype.indexOf", "String.prototype.lastIndexOf", "String.prototype.includes",
	"String.prototype.split", "String.prototype.replace", "String.prototype.replaceAll",
}

// TestGuardsLookNative: a guard keeps its method's name, length,
// toString and property attributes.
func TestGuardsLookNative(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	want := map[string]int{"indexOf": 1, "lastIndexOf": 1, "includes": 1, "join": 1, "toLocaleString": 0, "every": 1,
		"some": 1, "forEach": 1, "map": 1, "filter": 1, "reduce": 1, "reduceRight": 1, "reverse": 0, "copyWithin": 2,
		"sort": 1, "slice": 2, "concat": 1, "flat": 0, "flatMap": 1, "splice": 2, "unshift": 1, "shift": 0, "split": 2,
		"replace": 2, "replaceAll": 2}
	for _, path := range guardedMethods {
		name := path[strings.LastIndexByte(path, '.')+1:]
		res, err := e.Run(context.Background(), fmt.Sprintf(`
			const f = %s, d = Object.getOwnPropertyDescriptor(%s, %q)
			return [f.name, f.length, String(f), d.writable, d.enumerable, d.configurable, typeof f.prototype]`,
			path, path[:strings.LastIndexByte(path, '.')], name))
		require.NoError(t, err, path)
		n := want[name]
		if path == "String.prototype.indexOf" || path == "String.prototype.lastIndexOf" || path == "String.prototype.includes" {
			n = 1
		}
		wantJSON, _ := json.Marshal([]any{name, n, "function " + name + "() {\n    [native code]\n}", true, false, true, "undefined"})
		assert.JSONEq(t, string(wantJSON), string(res.Value), path)
	}
}

// TestGuardsSlowPathsAgree: a guard's slow path (guards.js) gives what the
// engine's own method gives. A Proxy over an array always takes the slow
// path (its length cannot be read without running code) and a String
// object the string one, so each call is made on a plain receiver and on
// its Proxy, and the results, the receivers afterwards and the kinds of
// errors must agree.
func TestGuardsSlowPathsAgree(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Deadline: 10 * time.Second}))
	res, err := e.Run(context.Background(), guardsAgreeScript)
	require.NoError(t, err)
	var got struct {
		Cases      int
		Mismatches []string
	}
	require.NoError(t, json.Unmarshal(res.Value, &got))
	assert.Greater(t, got.Cases, 4000)
	assert.Empty(t, got.Mismatches)
}

const guardsAgreeScript = `
const snap = (v) => {
	if (Array.isArray(v)) return { array: v.length, entries: Object.entries(v).map(([k, x]) => [k, snap(x)]) }
	if (typeof v === 'number' && Object.is(v, -0)) return '-0'
	if (typeof v === 'number' && v !== v) return 'NaN'
	if (v === undefined) return 'undefined'
	if (typeof v === 'object' && v !== null) return { object: Object.entries(v).map(([k, x]) => [k, snap(x)]) }
	return v
}
const attempt = (f) => { try { return ['ok', snap(f())] } catch (e) { return ['throw', e instanceof Error ? e.name : typeof e] } }
const arrays = () => [
	[], [1, 2, 3], [3, 1, 2, undefined, null, 'b', 'a', NaN, -0, 0, 10, 9, '10'], [1, , 3, , 5], [[1, [2, [3, [4]]]], 5, [6, 7]],
	['x', 'y', 'x', 'z', 'x'], [{ n: 2 }, { n: 1 }], [true, false, 'true', 1, '1'],
]
const fns = {
	id: (x) => x, twice: (x) => [x, x], truthy: (x) => x, odd: (x) => typeof x === 'number' && x % 2 === 1,
	sum: (a, b) => (typeof a === 'number' ? a : 0) + (typeof b === 'number' ? b : 0), cmp: (a, b) => (a < b ? 1 : a > b ? -1 : 0),
	index: (x, i) => i, three: (x, i, o) => [i, typeof o], notfn: 42,
}
const argLists = {
	indexOf: [[1], [3], ['x', 1], ['x', -2], [NaN], [undefined], [2, Infinity], [2, -Infinity], [2, '1'], ['x', 100], [-0]],
	lastIndexOf: [[1], ['x'], ['x', 3], ['x', -2], ['x', -100], [3, undefined], [NaN], ['x', Infinity]],
	includes: [[1], [NaN], [undefined], ['x', 2], ['x', -1], [-0], [0, Infinity]],
	join: [[], [','], [''], [' - '], [undefined], [null], [1]],
	toLocaleString: [[]],
	every: [[fns.truthy], [fns.odd], [fns.index], [fns.notfn]], some: [[fns.truthy], [fns.odd], [fns.notfn]],
	forEach: [[fns.id], [fns.notfn]], map: [[fns.twice], [fns.three], [fns.notfn]], filter: [[fns.odd], [fns.truthy], [fns.notfn]],
	reduce: [[fns.sum], [fns.sum, 100], [fns.index, 'start'], [fns.notfn]], reduceRight: [[fns.sum], [fns.sum, 7], [fns.index, 's']],
	reverse: [[]], copyWithin: [[0, 1], [1, 0], [0, -2], [-1, 0, 1], [2, 0, 5], [0, 3, 1], [NaN, NaN]],
	sort: [[], [fns.cmp], [undefined], [fns.notfn]],
	slice: [[], [1], [-2], [1, -1], [0, 100], [5, 2], [NaN], ['1', '3']],
	concat: [[], [[7, 8]], [9], [[1, , 3], 4], [{ length: 2, 0: 'a', 1: 'b', [Symbol.isConcatSpreadable]: true }], [{ length: 2 }]],
	flat: [[], [0], [2], [Infinity], [-1], ['2']], flatMap: [[fns.twice], [fns.id], [fns.notfn]],
	splice: [[], [1], [1, 1], [1, 0, 'a', 'b'], [-2, 1, 'q'], [0, 100], [2, -1, 'z'], [100, 1, 'w']],
	unshift: [[], ['a'], ['a', 'b']], shift: [[]],
}
const mismatches = []
let cases = 0
for (const [name, lists] of Object.entries(argLists)) {
	for (const args of lists) {
		for (let i = 0; i < arrays().length; i++) {
			const plain = arrays()[i], target = arrays()[i]
			const viaEngine = attempt(() => Array.prototype[name].apply(plain, args))
			const viaGuard = attempt(() => Array.prototype[name].apply(new Proxy(target, {}), args))
			const a = JSON.stringify([viaEngine, snap(plain)]), b = JSON.stringify([viaGuard, snap(target)])
			cases++
			if (a !== b) mismatches.push(name + '(' + JSON.stringify(args) + ') on #' + i + ': engine ' + a + ' guard ' + b)
		}
	}
}
const strings = ['', 'a', 'abc', 'abcabcabc', 'aaaa', 'héllo wörld', '😀x😀', 'a,b,,c', 'xyz']
const patterns = ['', 'a', 'bc', 'abc', 'aa', 'ö', '😀', ',', 'zz', 'c'];
const templates = ['-', '$$', '$&', '[$&]', '$\u0060', "$'", '$1', '$<n>', '$', 'x$', (m, p, s) => m.toUpperCase() + p + s.length]
for (const s of strings) {
	for (const p of patterns) {
		const calls = [
			['indexOf', [p]], ['indexOf', [p, 2]], ['indexOf', [p, -1]], ['lastIndexOf', [p]], ['lastIndexOf', [p, 3]],
			['lastIndexOf', [p, NaN]], ['lastIndexOf', [p, -5]], ['includes', [p]], ['includes', [p, 4]],
			['split', [p]], ['split', [p, 2]], ['split', [p, 0]], ['split', [undefined]], ['split', [p, -1]],
			...templates.flatMap((r) => [['replace', [p, r]], ['replaceAll', [p, r]]]),
		]
		for (const [name, args] of calls) {
			cases++
			const viaEngine = attempt(() => String.prototype[name].apply(s, args))
			const viaGuard = attempt(() => String.prototype[name].apply(new String(s), args))
			const a = JSON.stringify(viaEngine), b = JSON.stringify(viaGuard)
			if (a !== b) mismatches.push('String ' + name + '(' + JSON.stringify(args) + ') on ' + JSON.stringify(s) + ': engine ' + a + ' guard ' + b)
		}
	}
}
for (const [name, args] of [['includes', [/a/]], ['split', [/b/]], ['replace', [/b/g, 'X']], ['replaceAll', [/b/g, 'X']], ['replaceAll', [/b/, 'X']]]) {
	cases++
	const a = JSON.stringify(attempt(() => String.prototype[name].apply('abcb', args)))
	const b = JSON.stringify(attempt(() => String.prototype[name].apply(new String('abcb'), args)))
	if (a !== b) mismatches.push('String ' + name + ' with a RegExp: engine ' + a + ' guard ' + b)
}
// A species constructor whose array refuses new elements: the engine's
// methods throw (CreateDataPropertyOrThrow), and so must the slow paths.
const refusing = () => { const a = [1, [2], 3]; a.constructor = { [Symbol.species]: function () { return Object.preventExtensions([]) } }; return a }
for (const [name, args] of [['map', [fns.id]], ['filter', [fns.truthy]], ['slice', []], ['concat', [[4]]], ['splice', [0, 2]], ['flat', []], ['flatMap', [fns.id]]]) {
	cases++
	const a = JSON.stringify(attempt(() => Array.prototype[name].apply(refusing(), args)))
	const b = JSON.stringify(attempt(() => Array.prototype[name].apply(new Proxy(refusing(), {}), args)))
	if (a !== b || !a.includes('TypeError')) mismatches.push(name + ' into a non-extensible species array: engine ' + a + ' guard ' + b)
}
return { cases, mismatches: mismatches.slice(0, 40) }
`

// TestGuardedSortInChunks: a default-order sort too long for the engine to
// do unpolled is sorted in chunks and merged; it orders, keeps ties
// stable, puts undefined and holes last and converts each element once,
// as the engine does.
func TestGuardedSortInChunks(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(memoryLimits(256<<20)))
	res, err := e.Run(context.Background(), `
		let conversions = 0
		const n = 150000
		const make = () => {
			const a = []
			for (let i = 0; i < n; i++) {
				const r = (i * 7919) % 1009
				a.push(r % 7 === 0 ? { id: i, toString() { conversions++; return 'k' + (r % 13) } } : r % 5 === 0 ? String(r) : r)
			}
			a[n + 5] = 'after a hole'
			a.push(undefined, -0, 0)
			return a
		}
		const reference = make().sort((x, y) => { const a = String(x), b = String(y); return a < b ? -1 : a > b ? 1 : 0 })
		conversions = 0
		const guarded = make()
		const sorted = guarded.sort()
		const objects = reference.filter((v) => typeof v === 'object').length
		const same = reference.length === sorted.length && reference.every((v, i) =>
			typeof v === 'object' ? v.id === sorted[i].id : Object.is(v, sorted[i]))
		return { same, sameArray: sorted === guarded, length: sorted.length, holes: !(n + 7 in sorted) && !(n + 8 in sorted),
			last: String(sorted[sorted.length - 1]), conversionsPerObject: conversions / objects }
	`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"same":true,"sameArray":true,"length":150009,"holes":true,"last":"undefined","conversionsPerObject":1}`,
		string(res.Value))
}

// TestPrimitiveSeparatorsAreStrings: split, replace and replaceAll read
// Symbol.split and Symbol.replace only from an object (ECMAScript 2025,
// and the engine): a number, boolean or BigInt pattern is its string,
// whatever its prototype holds. (The guards take the slow path for every
// pattern that is not a string.)
func TestPrimitiveSeparatorsAreStrings(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	res, err := e.Run(context.Background(), `
for (const proto of [Number.prototype, Boolean.prototype, BigInt.prototype]) {
	for (const sym of [Symbol.split, Symbol.replace]) {
		Object.defineProperty(proto, sym, { get() { throw new Error('read') }, configurable: true })
	}
}
return ['a1b1c'.split(1), 'xtruey'.split(true), 'p7q'.split(7n), 'a1b'.replace(1, '-'), 'a1b1'.replaceAll(1, '-'), 'true!'.replace(true, 'T')]`)
	require.NoError(t, err)
	assert.Equal(t, `[["a","b","c"],["x","y"],["p","q"],"a-b","a-b-","T!"]`, string(res.Value))
}
