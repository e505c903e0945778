package codemode

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
	"unicode/utf8"

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
		{"legacy encodings' names", `return ['latin1', ' SJIS\n', 'GB2312', 'cseuckr', 'x-mac-ukrainian', 'logical', 'csiso2022jp', 'x-user-defined', 'UTF8', 'unicode'].map((l) => new TextDecoder(l).encoding)`,
			`["windows-1252","shift_jis","gbk","euc-kr","x-mac-cyrillic","iso-8859-8-i","iso-2022-jp","x-user-defined","utf-8","utf-16le"]`},
		{"labels that are not", `const names = []; for (const l of ['iso-2022-kr', 'replacement', 'hz-gb-2312', '\u212Aoi8-r', '\u00a0latin1', '\vlatin1', 'latin1\0', 'utf-32', 'x'.repeat(100)]) { try { new TextDecoder(l) } catch (e) { names.push(e.name) } } return names`,
			`["RangeError","RangeError","RangeError","RangeError","RangeError","RangeError","RangeError","RangeError","RangeError"]`},
		{"single-byte", `return [...new TextDecoder('windows-1252').decode(new Uint8Array([0x41, 0x80, 0x81, 0x9f, 0xe9]))].map((c) => c.codePointAt(0))`, `[65,8364,129,376,233]`},
		{"single-byte fatal", `try { new TextDecoder('windows-1253', {fatal: true}).decode(new Uint8Array([0x41, 0xaa])) } catch (e) { return [e.name, e.message] }`,
			`["TypeError","The encoded data was not valid windows-1253."]`},
		{"Shift_JIS", `const d = new TextDecoder('shift_jis'); return [...d.decode(new Uint8Array([0x82, 0xa0, 0xb1, 0x80, 0xf0, 0x40, 0x81, 0x3f, 0x82]))].map((c) => c.codePointAt(0))`,
			`[12354,65393,128,57344,65533,63,65533]`},
		{"gb18030 and GBK", `return ['gb18030', 'gbk'].map((l) => [...new TextDecoder(l).decode(new Uint8Array([0x80, 0xa6, 0xd9, 0x81, 0x30, 0x81, 0x30, 0x90, 0x30, 0x81, 0x30, 0x81, 0x30, 0xff, 0x41]))].map((c) => c.codePointAt(0)))`,
			`[[8364,65040,128,65536,65533,48,65533,65],[8364,65040,128,65536,65533,48,65533,65]]`},
		{"Big5", `return [...new TextDecoder('big5').decode(new Uint8Array([0xa4, 0x40, 0x88, 0x62, 0x87, 0x40, 0xa1, 0x30]))].map((c) => c.codePointAt(0))`, `[19968,202,772,17392,65533,48]`},
		{"EUC-KR", `return [...new TextDecoder('euc-kr').decode(new Uint8Array([0xb0, 0xa1, 0x81, 0x41, 0xc9, 0x41]))].map((c) => c.codePointAt(0))`, `[44032,44034,65533,65]`},
		{"EUC-JP", `return [...new TextDecoder('euc-jp').decode(new Uint8Array([0xa4, 0xa2, 0x8e, 0xb1, 0x8f, 0xb0, 0xa1, 0xa4, 0x41]))].map((c) => c.codePointAt(0))`, `[12354,65393,19970,65533,65]`},
		{"ISO-2022-JP", `return [...new TextDecoder('iso-2022-jp').decode(new Uint8Array([0x41, 0x1b, 0x24, 0x42, 0x30, 0x21, 0x1b, 0x28, 0x4a, 0x5c, 0x1b, 0x28, 0x49, 0x31, 0x1b, 0x28, 0x42, 0x1b, 0x28, 0x42, 0x5c, 0x1b, 0x24]))].map((c) => c.codePointAt(0))`,
			`[65,20124,165,65393,65533,92,65533,36]`},
		{"x-user-defined", `return [...new TextDecoder('x-user-defined').decode(new Uint8Array([0x41, 0x80, 0xff]))].map((c) => c.codePointAt(0))`, `[65,63360,63487]`},
		{"a legacy stream keeps its state across calls", `const d = new TextDecoder('gb18030'); const parts = [0x81, 0x30, 0x81, 0x30, 0x82].map((b) => d.decode(new Uint8Array([b]), {stream: true})); parts.push(d.decode());
			const j = new TextDecoder('iso-2022-jp'); const k = [[0x1b], [0x24], [0x42, 0x30], [0x21, 0x1b, 0x28], [0x42, 0x41]].map((b) => j.decode(new Uint8Array(b), {stream: true}));
			return [parts.map((p) => [...p].map((c) => c.codePointAt(0))), k.join('|'), d.decode(new Uint8Array([0x41]))]`,
			`[[[],[],[],[128],[],[65533]],"|||亜|A","A"]`},
		{"legacy encodings keep no byte order mark rule", `return [new TextDecoder('gb18030').decode(new Uint8Array([0x84, 0x31, 0x95, 0x33, 0x41])).length, new TextDecoder('windows-1252').decode(new Uint8Array([0xef, 0xbb, 0xbf])).length]`, `[2,3]`},
		{"a legacy decode over chunks (bridge_web.c's, 64 KiB) splits no character", `const b = new Uint8Array(200001).fill(0x41); b[65535] = 0x82; b[65536] = 0xa0; b[131071] = 0x82; b[131072] = 0x7f; b[200000] = 0x82;
			const s = new TextDecoder('shift_jis').decode(b); let f; try { new TextDecoder('shift_jis', {fatal: true}).decode(b) } catch (e) { f = e.name }
			return [s.length, s.codePointAt(65534), s.codePointAt(65535), s.codePointAt(65536), s.codePointAt(131070), s.codePointAt(131071), s.codePointAt(199999), f]`,
			`[200000,65,12354,65,65533,127,65533,"TypeError"]`},
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

// textDecoderCorpus is the program TestTextDecoderMatchesNode runs in a
// sandbox and in Node: for each group, the byte sequences (hex) and what a
// new TextDecoder of the group's label (Node's label, in Node) makes of
// each, or null and the name of the error (thrown).
const textDecoderCorpus = `
const node = typeof process === 'object';
const groups = [];
const hex = (b) => b.map((x) => x.toString(16).padStart(2, '0')).join(' ');
const group = (name, label, nodeLabel, mapped, seqs) => {
	let thrown = '';
	const outs = seqs.map((b) => { try { return new TextDecoder(node ? nodeLabel : label).decode(new Uint8Array(b)); } catch (e) { thrown = e.name; return null; } });
	groups.push({ name, mapped, hex: seqs.map(hex), outs, thrown });
};
const singles = () => Array.from({ length: 256 }, (_, b) => [b]);
const pairs = (lo, hi) => { const s = []; for (let a = lo; a <= hi; a++) for (let b = 0; b < 256; b++) s.push([a, b]); return s; };
for (const l of ['ibm866', 'iso-8859-2', 'iso-8859-3', 'iso-8859-4', 'iso-8859-5', 'iso-8859-6', 'iso-8859-7', 'iso-8859-8', 'iso-8859-8-i',
	'iso-8859-10', 'iso-8859-13', 'iso-8859-14', 'iso-8859-15', 'iso-8859-16', 'koi8-r', 'koi8-u', 'macintosh', 'windows-874', 'windows-1250',
	'windows-1251', 'windows-1252', 'windows-1253', 'windows-1254', 'windows-1255', 'windows-1256', 'windows-1257', 'windows-1258',
	'x-mac-cyrillic', 'x-user-defined']) group(l, l, l, false, singles());
const four = [];
for (let p = 0; p < 39420; p++) four.push([Math.floor(p / 12600) + 0x81, Math.floor(p % 12600 / 1260) + 0x30, Math.floor(p % 1260 / 10) + 0x81, p % 10 + 0x30]);
for (let p = 189000; p < 1237600; p += 1009) four.push([Math.floor(p / 12600) + 0x81, Math.floor(p % 12600 / 1260) + 0x30, Math.floor(p % 1260 / 10) + 0x81, p % 10 + 0x30]);
const gb = [...singles(), ...pairs(0x80, 0xff), ...four];
group('gb18030', 'gb18030', 'gb18030', false, gb);
group('gbk', 'gbk', 'gb18030', false, gb);
const esc = [];
for (let a = 0x21; a < 0x7f; a++) for (let b = 0x21; b < 0x7f; b++) esc.push([0x1b, 0x24, 0x42, a, b]);
for (const e of [[0x1b, 0x28, 0x4a], [0x1b, 0x28, 0x49], [0x1b, 0x28, 0x42], [0x1b, 0x24, 0x40]]) for (let b = 0; b < 256; b++) esc.push([...e, b]);
group('iso-2022-jp', 'iso-2022-jp', 'iso-2022-jp', false, [...singles(), ...pairs(0x00, 0xff), ...esc]);
group('shift_jis', 'shift_jis', 'shift_jis', true, [...singles(), ...pairs(0x80, 0xff)]);
const jis0212 = [];
for (let a = 0xa1; a < 0xff; a++) for (let b = 0xa1; b < 0xff; b++) jis0212.push([0x8f, a, b]);
group('euc-jp', 'euc-jp', 'euc-jp', true, [...singles(), ...pairs(0x80, 0xff), ...jis0212]);
group('big5', 'big5', 'big5', true, [...singles(), ...pairs(0x80, 0xff)]);
group('euc-kr', 'euc-kr', 'euc-kr', true, [...singles(), ...pairs(0x80, 0xff)]);
return groups;
`

// nodeTextDeviations: where Node's TextDecoder (its ICU converters) and
// the Encoding Standard part, by group and byte sequence; the sandbox
// decodes each as the standard does (TestTextIndexes holds the indexes,
// the WPT files the algorithms).
var nodeTextDeviations = []struct {
	group, reason string
	seqs          []string
}{
	{"ibm866", "ICU's IBM code pages rotate three controls (0x1A, 0x1C, 0x7F); the standard maps every ASCII byte to itself",
		[]string{"1a", "1c", "7f"}},
	{"shift_jis", "ICU's Shift_JIS (IBM-943) rotates three controls (0x1A, 0x1C, 0x7F); the standard maps every ASCII byte to itself",
		[]string{"1a", "1c", "7f"}},
	{"koi8-u", "index KOI8-U has KOI8-RU's ў and Ў at 0xAE and 0xBE; ICU's KOI8-U has box drawing",
		[]string{"ae", "be"}},
	{"windows-1252", "Node decodes windows-1252 (and latin1, ascii...) as ISO-8859-1: 0x80 to 0x9F as C1 controls, where index windows-1252 has €, ‚, ƒ...",
		[]string{"80", "82", "83", "84", "85", "86", "87", "88", "89", "8a", "8b", "8c", "8e", "91", "92", "93", "94", "95", "96", "97", "98", "99", "9a", "9b", "9c", "9e", "9f"}},
	{"windows-1253", "index windows-1253 has no 0xAA; ICU maps it to U+00AA", []string{"aa"}},
	{"windows-1255", "index windows-1255 maps 0xCA to U+05BA (whatwg/encoding e32a57b, 2016); ICU has none", []string{"ca"}},
	{"windows-874", "index windows-874 has no 0xDB to 0xDE or 0xFC to 0xFF; ICU maps them to Private Use",
		[]string{"db", "dc", "dd", "de", "fc", "fd", "fe", "ff"}},
	{"iso-2022-jp", "the standard's ISO-2022-JP decoder takes only 0x21 to 0x5F in the katakana state and 0x21 to 0x7E in the leading byte state (LF and CR are errors); Node passes LF and CR through",
		[]string{"1b 28 49 0a", "1b 28 49 0d", "1b 24 40 0a", "1b 24 40 0d"}},
	{"iso-2022-jp", "ESC and a byte that begins no escape the standard knows is an error, and the byte is read again (WPT's iso-2022-jp-decoder.any.js, \"Error ESC\"); ICU drops a byte that could begin another ISO 2022 escape",
		[]string{"1b 24", "1b 25", "1b 26", "1b 28", "1b 2e", "1b 4f"}},
	{"big5", "index Big5 maps 0xF9 0xFE to U+FFED (as Big5-HKSCS does); ICU's Big5 to U+2593", []string{"f9 fe"}},
}

// TestTextDecoderMatchesNode: TextDecoder's legacy encodings against
// Node's (v20 with full ICU), sequence by sequence: every byte of every
// single-byte encoding and x-user-defined; every one- and two-byte
// gb18030 sequence and every four-byte one below pointer 39420 (and a
// sample above), GBK's too (the standard's GBK decoder is gb18030's, so
// against Node's gb18030: Node's GBK is ICU's, without four-byte
// sequences); every ISO-2022-JP pair, escape and JIS X 0208 pair. ICU's
// Shift_JIS, EUC-JP, Big5 and EUC-KR recover from errors differently
// (their errors consume what the standard's restore) and cover less (no
// HKSCS, no Unified Hangul Code, IBM extensions elsewhere), so there the
// mappings both make are compared: every sequence both decode to one code
// point that is neither U+FFFD nor Private Use. Every difference is in
// nodeTextDeviations with the reason the standard is otherwise, and every
// entry there is one.
func TestTextDecoderMatchesNode(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on the PATH: TextDecoder is not compared with Node's")
	}
	type group struct {
		Name   string    `json:"name"`
		Mapped bool      `json:"mapped"`
		Hex    []string  `json:"hex"`
		Outs   []*string `json:"outs"`
		Thrown string    `json:"thrown"`
	}
	e := newExecutor(t, WithLimits(Limits{Memory: 512 << 20, Deadline: time.Minute, Payload: 64 << 20}))
	res, err := e.Run(context.Background(), textDecoderCorpus)
	require.NoError(t, err)
	var ours []group
	require.NoError(t, json.Unmarshal(res.Value, &ours))
	f := filepath.Join(t.TempDir(), "corpus.js")
	require.NoError(t, os.WriteFile(f, []byte("process.stdout.write(JSON.stringify((() => {"+textDecoderCorpus+"})()));"), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, f).Output()
	require.NoError(t, err)
	var theirs []group
	require.NoError(t, json.Unmarshal(out, &theirs))
	require.Len(t, theirs, len(ours))

	known := map[string]map[string]string{}
	for _, d := range nodeTextDeviations {
		if known[d.group] == nil {
			known[d.group] = map[string]string{}
		}
		for _, s := range d.seqs {
			known[d.group][s] = d.reason
		}
	}
	mapping := func(s string) (rune, bool) {
		r, size := utf8.DecodeRuneInString(s)
		return r, size == len(s) && size > 0 && r != utf8.RuneError && !(r >= 0xe000 && r <= 0xf8ff)
	}
	nodeRefuses := map[string]bool{"iso-8859-16": true, "x-user-defined": true}
	compared := 0
	for i, g := range ours {
		n := theirs[i]
		require.Equal(t, g.Name, n.Name)
		require.Len(t, n.Outs, len(g.Outs), g.Name)
		require.Empty(t, g.Thrown, g.Name)
		if nodeRefuses[g.Name] {
			assert.Equal(t, "RangeError", n.Thrown, "%s: Node decodes it now", g.Name)
			continue
		}
		require.Empty(t, n.Thrown, g.Name)
		seen := map[string]bool{}
		for j, o := range g.Outs {
			a, b := *o, *n.Outs[j]
			if g.Mapped {
				r, ok := mapping(a)
				s, nok := mapping(b)
				if !ok || !nok {
					continue
				}
				a, b = string(r), string(s)
			}
			compared++
			if a == b {
				continue
			}
			if _, ok := known[g.Name][g.Hex[j]]; ok {
				seen[g.Hex[j]] = true
				continue
			}
			t.Errorf("%s %s: sandbox %+q, Node %+q", g.Name, g.Hex[j], a, b)
		}
		for s := range known[g.Name] {
			assert.True(t, seen[s], "nodeTextDeviations: %s %s decodes alike now", g.Name, s)
		}
	}
	t.Logf("%d sequences compared with Node", compared)
}

// TestTextDecoderDeadline: a long legacy decode stops at the run's
// deadline (bridge_web.c checks it between chunks). The engine's own
// polls come once per 10,000 of its calls, some 3,000 chunks of the
// decode's loop: 256 MiB of bytes that are each an error (U+FFFD) would
// otherwise overrun the deadline by two seconds here.
func TestTextDecoderDeadline(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, WithLimits(Limits{Memory: 1 << 30, Deadline: 100 * time.Millisecond}))
	start := time.Now()
	_, err := e.Run(context.Background(), `return new TextDecoder('shift_jis').decode(new Uint8Array(256 << 20).fill(0xff)).length`)
	require.ErrorIs(t, err, ErrTimeout)
	assert.Less(t, time.Since(start), time.Second, "the decode ran on past its deadline")
}
