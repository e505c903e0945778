// harness.js: a small stand-in for the web-platform-tests' testharness.js,
// enough to run the .any.js files web_wpt_test.go names, the same text in a
// sandbox and in Node. Every test ends PASS, FAIL or TIMEOUT, its name as
// testharness.js gives it; __wptResults() resolves to the list once every
// test has ended (promise tests run one after another, in order).
//
// The program that includes it defines __wptResources (path -> text), which
// fetch and fetch_json serve, and nothing else: no network.
(function () {
	'use strict';
	const g = globalThis;
	g.self = g;
	g.GLOBAL = { isWindow: () => false, isWorker: () => false, isShadowRealm: () => false };
	// Stand-ins for two platform pieces tests use only as tools, where the
	// sandbox has none (Node has both, and keeps its own): common/sab.js
	// takes SharedArrayBuffer's constructor from a shared WebAssembly.Memory
	// (browsers hide the global without cross-origin isolation), and tests
	// detach a buffer by transferring it through a MessageChannel, which
	// structuredClone's transfer does in the sandbox.
	if (typeof g.WebAssembly === 'undefined' && typeof SharedArrayBuffer === 'function') {
		g.WebAssembly = { Memory: function Memory() { return { buffer: new SharedArrayBuffer(0) }; } };
	}
	if (typeof g.MessageChannel === 'undefined' && typeof structuredClone === 'function') {
		const port = () => ({ postMessage(message, transfer = []) { structuredClone(message, { transfer }); } });
		g.MessageChannel = function MessageChannel() { this.port1 = port(); this.port2 = port(); };
	}
	const results = [];
	let pending = 0;
	let wake = null;
	let queue = Promise.resolve();

	class AssertionError extends Error {}
	AssertionError.prototype.name = 'AssertionError';

	function formatValue(v) {
		if (typeof v === 'string') return JSON.stringify(v);
		if (Object.is(v, -0)) return '-0';
		if (typeof v === 'bigint') return v + 'n';
		if (typeof v === 'symbol') return v.toString();
		if (Array.isArray(v)) return '[' + v.map(formatValue).join(', ') + ']';
		try { return String(v); } catch { return Object.prototype.toString.call(v); }
	}
	g.format_value = formatValue;
	function fail(desc, msg) { throw new AssertionError((desc ? desc + ': ' : '') + msg); }
	const same = (a, b) => Object.is(a, b);

	class Test {
		constructor(name) {
			this.name = name;
			this.phase = 0; // 0 running, 1 ended
			this.cleanups = [];
			this.status = 'PASS';
			this.message = '';
			pending++;
		}
		step(f, thisObj, ...args) {
			if (this.phase) return undefined;
			try { return f.apply(thisObj === undefined ? this : thisObj, args); }
			catch (e) { this.fail(e); return undefined; }
		}
		step_func(f, thisObj) { return (...args) => this.step(f, thisObj, ...args); }
		step_func_done(f, thisObj) {
			return (...args) => {
				if (f) this.step(f, thisObj, ...args);
				this.done();
			};
		}
		unreached_func(desc) { return this.step_func(() => assert_unreached(desc)); }
		step_timeout(f, ms, ...args) { return setTimeout(this.step_func(() => f(...args)), ms); }
		add_cleanup(f) { this.cleanups.push(f); }
		fail(e) {
			if (this.phase) return;
			this.status = 'FAIL';
			this.message = e instanceof AssertionError ? e.message : `${e && e.name}: ${e && e.message}`;
			this.done();
		}
		done() {
			if (this.phase) return;
			this.phase = 1;
			for (const f of this.cleanups) try { f(); } catch {}
			results.push({ name: this.name, status: this.status, message: this.message });
			if (--pending === 0 && wake) wake();
		}
		timeout() {
			this.status = 'TIMEOUT';
			this.message = 'the test never ended';
			this.done();
		}
	}
	const all = [];
	const promiseTimeoutMs = 5000; // a promise test still pending after it ends as TIMEOUT
	const make = (name) => { const t = new Test(name); all.push(t); return t; };

	g.test = function (f, name) {
		const t = make(name);
		t.step(f, t, t);
		t.done();
	};
	g.async_test = function (f, name) {
		if (typeof f !== 'function') { name = f; f = null; }
		const t = make(name);
		if (f) t.step(f, t, t);
		return t;
	};
	g.promise_test = function (f, name) {
		const t = make(name);
		queue = queue.then(() => new Promise((resolve) => {
			const timer = setTimeout(() => t.timeout(), promiseTimeoutMs);
			t.add_cleanup(() => { clearTimeout(timer); resolve(); });
			let p;
			try { p = f(t); } catch (e) { t.fail(e); return; }
			if (!p || typeof p.then !== 'function') { t.fail(new AssertionError('promise_test: the function did not return a promise')); return; }
			p.then(() => t.done(), (e) => t.fail(e));
		}));
	};
	g.generate_tests = function (f, cases) {
		for (const [name, ...args] of cases) g.test(() => f(...args), name);
	};
	g.setup = function (f) { if (typeof f === 'function') f(); };
	g.done = function () {};
	g.add_completion_callback = function () {};

	g.fetch = function (path) {
		const text = __wptResources[path];
		if (text === undefined) return Promise.reject(new TypeError('harness: no resource ' + path));
		return Promise.resolve({ ok: true, json: async () => JSON.parse(text), text: async () => text });
	};
	g.fetch_json = (path) => g.fetch(path).then((r) => r.json());

	g.assert_true = (v, d) => { if (v !== true) fail(d, `expected true got ${formatValue(v)}`); };
	g.assert_false = (v, d) => { if (v !== false) fail(d, `expected false got ${formatValue(v)}`); };
	g.assert_equals = (a, e, d) => { if (!same(a, e)) fail(d, `expected ${formatValue(e)} but got ${formatValue(a)}`); };
	g.assert_not_equals = (a, e, d) => { if (same(a, e)) fail(d, `got disallowed value ${formatValue(a)}`); };
	g.assert_in_array = (a, arr, d) => { if (!arr.includes(a)) fail(d, `value ${formatValue(a)} not in array`); };
	g.assert_array_equals = (a, e, d) => {
		if (typeof a !== 'object' || a === null || !('length' in a)) fail(d, `value is ${formatValue(a)}, expected array`);
		if (a.length !== e.length) fail(d, `lengths differ, expected ${e.length} got ${a.length}`);
		for (let i = 0; i < e.length; i++) {
			if (!same(a[i], e[i])) fail(d, `expected ${formatValue(e[i])} but got ${formatValue(a[i])} at index ${i}`);
		}
	};
	g.assert_object_equals = (a, e, d) => {
		const walk = (x, y, path) => {
			if (typeof y !== 'object' || y === null) { if (!same(x, y)) fail(d, `${path}: expected ${formatValue(y)} got ${formatValue(x)}`); return; }
			for (const k of Object.keys(y)) walk(x[k], y[k], path + '.' + k);
			for (const k of Object.keys(x)) if (!(k in y)) fail(d, `${path}: unexpected property ${k}`);
		};
		walk(a, e, '');
	};
	g.assert_less_than = (a, e, d) => { if (!(a < e)) fail(d, `expected a number less than ${e} but got ${a}`); };
	g.assert_greater_than = (a, e, d) => { if (!(a > e)) fail(d, `expected a number greater than ${e} but got ${a}`); };
	g.assert_less_than_equal = (a, e, d) => { if (!(a <= e)) fail(d, `expected a number at most ${e} but got ${a}`); };
	g.assert_greater_than_equal = (a, e, d) => { if (!(a >= e)) fail(d, `expected a number at least ${e} but got ${a}`); };
	g.assert_regexp_match = (a, re, d) => { if (!re.test(a)) fail(d, `expected ${formatValue(a)} to match ${re}`); };
	g.assert_class_string = (o, c, d) => {
		const s = Object.prototype.toString.call(o);
		if (s !== `[object ${c}]`) fail(d, `expected class string [object ${c}] got ${s}`);
	};
	g.assert_own_property = (o, p, d) => { if (!Object.prototype.hasOwnProperty.call(o, p)) fail(d, `expected property ${String(p)} missing`); };
	g.assert_unreached = (d) => fail(d, 'reached unreachable code');
	g.assert_implements = (c, d) => { if (!c) fail(d, 'not implemented'); };
	g.assert_implements_optional = (c, d) => { if (!c) fail(d, 'optional feature not implemented'); };
	function throws(check, f, d) {
		try { f(); } catch (e) { check(e); return; }
		fail(d, `${f} did not throw`);
	}
	g.assert_throws_js = (ctor, f, d) => throws((e) => {
		if (typeof e !== 'object' || e === null || e.constructor !== ctor || e.name !== ctor.name) {
			fail(d, `${f} threw ${formatValue(e)} (${e && e.name}), expected ${ctor.name}`);
		}
	}, f, d);
	const domCodes = {
		IndexSizeError: 1, HierarchyRequestError: 3, InvalidCharacterError: 5, NotFoundError: 8, NotSupportedError: 9,
		InvalidStateError: 11, SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14, InvalidAccessError: 15,
		TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20, URLMismatchError: 21,
		QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24, DataCloneError: 25,
	};
	const domNames = { INDEX_SIZE_ERR: 'IndexSizeError', INVALID_CHARACTER_ERR: 'InvalidCharacterError', SYNTAX_ERR: 'SyntaxError',
		INVALID_STATE_ERR: 'InvalidStateError', DATA_CLONE_ERR: 'DataCloneError', ABORT_ERR: 'AbortError', TIMEOUT_ERR: 'TimeoutError' };
	g.assert_throws_dom = (type, ...rest) => {
		const f = typeof rest[0] === 'function' && typeof rest[1] === 'function' ? rest[1] : rest[0];
		const d = typeof rest[0] === 'function' && typeof rest[1] === 'function' ? rest[2] : rest[1];
		const name = typeof type === 'number' ? Object.keys(domCodes).find((k) => domCodes[k] === type) : domNames[type] ?? type;
		throws((e) => {
			if (!(e instanceof DOMException) || e.name !== name) fail(d, `${f} threw ${formatValue(e)} (${e && e.name}), expected DOMException ${name}`);
			if (domCodes[name] !== undefined && e.code !== domCodes[name]) fail(d, `code ${e.code}, expected ${domCodes[name]}`);
		}, f, d);
	};
	// The legacy form: a code (a DOMException name, or {name}), or null for any.
	g.assert_throws = (code, f, d) => throws((e) => {
		if (code === null) return;
		const name = typeof code === 'object' ? code.name : code;
		if (!e || e.name !== name) fail(d, `${f} threw ${formatValue(e)}, expected ${name}`);
	}, f, d);
	g.promise_rejects_js = (t, ctor, p, d) => p.then(() => fail(d, 'should have rejected'), (e) => {
		if (typeof e !== 'object' || e === null || e.constructor !== ctor) fail(d, `rejected with ${formatValue(e)}, expected ${ctor.name}`);
	});
	g.promise_rejects_dom = (t, type, p, d) => p.then(() => fail(d, 'should have rejected'), (e) => {
		const name = typeof type === 'number' ? Object.keys(domCodes).find((k) => domCodes[k] === type) : domNames[type] ?? type;
		if (!(e instanceof DOMException) || e.name !== name) fail(d, `rejected with ${formatValue(e)}, expected DOMException ${name}`);
	});
	g.promise_rejects_exactly = (t, v, p, d) => p.then(() => fail(d, 'should have rejected'), (e) => {
		if (!same(e, v)) fail(d, `rejected with ${formatValue(e)}, expected ${formatValue(v)}`);
	});

	// Every test's outcome, once all have ended; a test still running after
	// the promise tests and waitMs more ends as TIMEOUT.
	g.__wptResults = async function (waitMs = 2000) {
		await queue;
		if (pending > 0) {
			await new Promise((resolve) => {
				wake = resolve;
				setTimeout(resolve, waitMs);
			});
		}
		for (const t of all) if (!t.phase) t.timeout();
		return results;
	};
})();
