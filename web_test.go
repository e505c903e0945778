package codemode

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWebGlobals: the web globals models reach for, with the values a
// browser gives.
func TestWebGlobals(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	ctx := context.Background()
	tests := []struct{ name, code, want string }{
		{"text round trip", `return new TextDecoder().decode(new TextEncoder().encode("héllo ✓"))`, `"héllo ✓"`},
		{"encode bytes", `return [...new TextEncoder().encode("é✓😀")]`, `[195,169,226,156,147,240,159,152,128]`},
		{"lone surrogate", `return [...new TextEncoder().encode("\ud800")]`, `[239,191,189]`},
		{"encodeInto", `const d = new Uint8Array(4); const r = new TextEncoder().encodeInto("aé✓", d); return [r.read, r.written, [...d]]`, `[2,3,[97,195,169,0]]`},
		{"decode invalid", `return new TextDecoder().decode(new Uint8Array([0x61, 0xff, 0xe2, 0x82, 0x62]))`, "\"a\ufffd\ufffdb\""},
		{"decode fatal", `try { new TextDecoder('utf-8', {fatal: true}).decode(new Uint8Array([0xc3])) } catch (e) { return [e instanceof TypeError, e.message] }`, `[true,"The encoded data was not valid utf-8."]`},
		{"decode stream", `const d = new TextDecoder(); return d.decode(new Uint8Array([0xe2, 0x9c]), {stream: true}) + '|' + d.decode(new Uint8Array([0x93]))`, `"|✓"`},
		{"decode BOM", `return [new TextDecoder().decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x61])), new TextDecoder('utf8', {ignoreBOM: true}).decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x61])).length]`, `["a",2]`},
		{"decode a buffer and a view", `const b = new Uint8Array([104, 105, 33]); return [new TextDecoder().decode(b.buffer), new TextDecoder().decode(new DataView(b.buffer, 1))]`, `["hi!","i!"]`},
		{"UTF-16", `const le = new TextDecoder('utf-16'); return [le.encoding, le.decode(new Uint8Array([0xff, 0xfe, 0x68, 0, 0x69, 0, 0x3d, 0xd8, 0x00, 0xde])), new TextDecoder('utf-16be').decode(new Uint8Array([0, 0x68, 0xd8]))]`, "[\"utf-16le\",\"hi😀\",\"h\ufffd\"]"},
		{"other encodings", `try { new TextDecoder('latin1') } catch (e) { return e instanceof RangeError }`, `true`},
		{"JSON from bytes", `const bytes = new TextEncoder().encode('{"a":[1,2]}'); return JSON.parse(new TextDecoder().decode(bytes))`, `{"a":[1,2]}`},
		{"base64", `return [btoa(atob("AQID")), atob("aGk="), btoa("hi"), atob(" aG k "), btoa("")]`, `["AQID","hi","aGk=","hi",""]`},
		{"btoa outside Latin1", `try { btoa("✓") } catch (e) { return [e.name, e.code, e instanceof DOMException, e instanceof Error] }`, `["InvalidCharacterError",5,true,true]`},
		{"atob invalid", `try { atob("a") } catch (e) { return e.name }`, `"InvalidCharacterError"`},
		{"structuredClone", `const d = new Date(5); const m = new Map([[1, {x: [1, 2]}]]); const o = {m, s: new Set(['a']), d, t: new Uint16Array([1, 2]), r: /x/gi}; o.self = o;
			const c = structuredClone(o);
			return [c !== o, c.self === c, c.m.get(1).x, c.m.get(1) !== m.get(1), [...c.s], c.d.getTime(), c.d !== d, c.t instanceof Uint16Array, [...c.t], c.r.flags, c.r.source]`,
			`[true,true,[1,2],true,["a"],5,true,true,[1,2],"gi","x"]`},
		{"structuredClone of errors", `const c = structuredClone(new RangeError('r', {cause: 1})); return [c instanceof RangeError, c.message, c.cause]`, `[true,"r",1]`},
		{"structuredClone transfers buffers", `const b = new Uint8Array([1, 2, 3]).buffer; const c = structuredClone({v: new Uint8Array(b, 1), b}, {transfer: [b]});
			const d = new ArrayBuffer(2); let refused; try { structuredClone({f() {}, d}, {transfer: [d]}) } catch (e) { refused = [e.name, d.byteLength] }
			let twice; try { structuredClone(b, {transfer: [b]}) } catch (e) { twice = e.name }
			return [b.byteLength, c.b.byteLength, [...c.v], c.v.buffer === c.b, refused, twice]`, `[0,3,[2,3],true,["DataCloneError",2],"DataCloneError"]`},
		{"structuredClone refuses the web globals' own objects", `const names = []; for (const v of [new URL("http://a/"), new URLSearchParams("a=1"), new AbortController(), new TextEncoder()]) { try { structuredClone(v) } catch (e) { names.push(e.name) } } return names`,
			`["DataCloneError","DataCloneError","DataCloneError","DataCloneError"]`},
		{"URL and the other web globals are one load", `const d = Object.getOwnPropertyDescriptor(globalThis, "URLSearchParams"); const t = TextEncoder; return [typeof d.value, "get" in d, new URL("http://h/?a=1").searchParams instanceof d.value, t === TextEncoder, String(URL).includes("[native code]")]`,
			`["function",false,true,true,true]`},
		{"structuredClone refuses functions", `try { structuredClone({f() {}}) } catch (e) { return e.name }`, `"DataCloneError"`},
		{"performance.now grows", `const a = performance.now(); const t = Date.now(); while (Date.now() - t < 3) {} const b = performance.now(); return [typeof a, a >= 0, b > a, b - a >= 2]`, `["number",true,true,true]`},
		{"getRandomValues", `const a = crypto.getRandomValues(new Uint32Array(4)); return [a.length, a.some((x) => x !== 0)]`, `[4,true]`},
		{"getRandomValues refuses floats", `try { crypto.getRandomValues(new Float64Array(1)) } catch (e) { return e.name }`, `"TypeMismatchError"`},
		{"getRandomValues quota", `try { crypto.getRandomValues(new Uint8Array(65537)) } catch (e) { return e.name }`, `"QuotaExceededError"`},
		{"URL relative", `return new URL("../a?b=1#c", "https://x.test/p/q").href`, `"https://x.test/a?b=1#c"`},
		{"URL parts", `const u = new URL("HTTPS://user:pw@Example.COM:8080/a/./b/../c?x=1&y=%20#frag");
			return [u.protocol, u.username, u.password, u.host, u.hostname, u.port, u.pathname, u.search, u.hash, u.origin, u.searchParams.get('y')]`,
			`["https:","user","pw","example.com:8080","example.com","8080","/a/c","?x=1&y=%20","#frag","https://example.com:8080"," "]`},
		{"URL default port and encoding", `return [new URL("http://h:80/a b").href, new URL("http://h/ä?q=ä").href, new URL("http://0x7f.1/").host, new URL("http://[::1]:3000/").host]`,
			`["http://h/a%20b","http://h/%C3%A4?q=%C3%A4","127.0.0.1","[::1]:3000"]`},
		{"URL non-special", `const u = new URL("mailto:a@b.c?subject=hi"); return [u.protocol, u.pathname, u.search, new URL("foo://h/p").pathname, new URL("file:///C:/x/../y").href]`,
			`["mailto:","a@b.c","?subject=hi","/p","file:///C:/y"]`},
		{"URL invalid", `try { new URL("nope") } catch (e) { return [e instanceof TypeError, URL.canParse("nope"), URL.canParse("/a", "http://h")] }`, `[true,false,true]`},
		{"URL setters", `const u = new URL("https://h/p?a=1"); u.searchParams.append('b', 'x y'); u.pathname = '/q'; u.hash = 'z'; u.port = '444'; return [u.href, String(u), JSON.stringify({u})]`,
			`["https://h:444/q?a=1&b=x+y#z","https://h:444/q?a=1&b=x+y#z","{\"u\":\"https://h:444/q?a=1&b=x+y#z\"}"]`},
		{"URL IDNA hosts", `return [new URL("https://Bücher.example/").host, new URL("http://faß.de/").hostname, new URL("http://%F0%9F%92%A9.com/").host, URL.canParse("http://a\u200cb/"), new URL("https://XN--ab-j1t/").host]`,
			`["xn--bcher-kva.example","xn--fa-hia.de","xn--ls8h.com",false,"xn--ab-j1t"]`},
		{"URL setters follow the state override", `const u = new URL("https://h/p"); u.pathname = "/a?b#c"; const v = new URL("http://h:8080/"); v.host = "x.test:81/junk"; const w = new URL("http://h:443/"); w.protocol = "https:"; const f = new URL("file:///p"); f.hostname = "";
			return [u.pathname, u.href, v.host, w.port, w.href, new URL("non-spec:/.//p").pathname, new URL("non-spec:/.//p").href]`,
			`["/a%3Fb%23c","https://h/a%3Fb%23c","x.test:81","","https://h/","//p","non-spec:/.//p"]`},
		{"URL refuses an IDNA label past the bound, and says so", `try { new URL("https://" + "é".repeat(256) + ".test/") } catch (e) { return [e instanceof TypeError, e.message.endsWith("(IDNA runs on a host label of at most 255 code points)"), URL.canParse("https://" + "é".repeat(255) + ".test/")] }`,
			`[true,true,true]`},
		{"URLSearchParams", `const p = new URLSearchParams("?a=1&b=2&a=3"); p.set('b', '9'); p.delete('x'); p.sort();
			return [p.getAll('a'), p.get('b'), p.has('a'), p.toString(), [...p.keys()], new URLSearchParams({q: 'a&b', r: '✓'}).toString(), p.size]`,
			`[["1","3"],"9",true,"a=1&a=3&b=9",["a","a","b"],"q=a%26b&r=%E2%9C%93",3]`},
		{"AbortController", `const c = new AbortController(); const seen = []; c.signal.addEventListener('abort', (e) => seen.push(e.type)); c.signal.onabort = () => seen.push('on');
			c.abort(); c.abort(); return [c.signal.aborted, c.signal.reason.name, seen]`, `[true,"AbortError",["on","abort"]]`},
		{"AbortSignal.timeout", `const s = AbortSignal.timeout(5); await new Promise((r) => s.addEventListener('abort', r)); return [s.aborted, s.reason.name]`, `[true,"TimeoutError"]`},
		{"AbortSignal.any and abort", `const a = AbortSignal.abort('why'); const s = AbortSignal.any([new AbortController().signal, a]); try { s.throwIfAborted() } catch (e) { return [s.aborted, e] }`, `[true,"why"]`},
		{"EventTarget", `const t = new EventTarget(); let n = 0; const f = () => n++; t.addEventListener('x', f, {once: true}); t.dispatchEvent(new Event('x')); t.dispatchEvent(new Event('x')); return n`, `1`},
		{"queueMicrotask", `const seen = []; queueMicrotask(() => seen.push(1)); await null; return seen`, `[1]`},
		{"an assignment first wins", `URL = 5; TextEncoder = undefined; return [URL, typeof TextDecoder]`, `[5,"function"]`},
		{"no Intl", `return typeof Intl`, `"undefined"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.Run(ctx, tt.code)
			require.NoError(t, err, tt.code)
			assert.Equal(t, tt.want, string(res.Value), tt.code)
		})
	}
}

// TestRandomUUID: a v4 UUID, different in every run.
func TestRandomUUID(t *testing.T) {
	t.Parallel()
	e := newExecutor(t)
	v4 := regexp.MustCompile(`^"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"$`)
	seen := map[string]bool{}
	for range 20 {
		res, err := e.Run(context.Background(), "return crypto.randomUUID()")
		require.NoError(t, err)
		assert.Regexp(t, v4, string(res.Value))
		assert.False(t, seen[string(res.Value)], "a UUID repeats across runs")
		seen[string(res.Value)] = true
	}
}

// TestWebCompiles: js/web.js compiles (a run's first read of a web global
// compiles it, once per process).
func TestWebCompiles(t *testing.T) {
	t.Parallel()
	require.NoError(t, loadWeb())
}
