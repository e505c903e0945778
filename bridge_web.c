/*
 * bridge_web.c: the globals a sandbox makes on first read.
 *
 * Owns the web globals (js/web.js and js/url.js: TextEncoder, URL,
 * crypto...), the lazy-global accessors they and the typed arrays are
 * until a script reads one, the typed arrays themselves (made on first use,
 * typed_ensure), and the helpers that hand our JavaScript factories their
 * native bindings (set_native, call_factory).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bridge_internal.h"
#ifndef BRIDGE_LINT
#include "_cgo_export.h"
#endif

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* The web globals (js/web.js: TextEncoder, URL, crypto...). Each is an
 * accessor on the global object until a script reads one: then web.js's
 * bytecode (compiled once per process, bridge_set_web) is evaluated, and
 * every global still an accessor becomes a data property holding its
 * value. A run that never reads one pays nothing but the accessors in the
 * image; one that assigns one first simply gets its own value. */

static const char *const web_names[] = {
	"TextEncoder", "TextDecoder", "atob",           "btoa",            "structuredClone", "performance", "crypto",
	"URL",         "URLSearchParams", "AbortController", "AbortSignal", "Event",           "EventTarget", "DOMException",
	/* Only in a sandbox whose host grants the network (fetch_capability). */
	"fetch",       "Request",     "Response",       "Headers",
};
#define NWEB ((int)(sizeof(web_names) / sizeof(web_names[0])))
#define NWEB_FETCH 4

/* The internal capability that serves fetch (Go's WithOutbound): moved
 * off the global object into the web accessors' data. */
static const char fetch_capability[] = "__codemode_fetch";

/* URL and URLSearchParams are js/url.js, a unit of its own that web.js
 * reads only when a run first needs them (native.url): reading bytecode is
 * most of what a first read of a web global costs. */
static bool web_in_url(int i)
{
	return strncmp(web_names[i], "URL", 3) == 0; /* URL, URLSearchParams */
}

static _Atomic(const uint8_t *) web_bc;
static _Atomic size_t web_bc_len;
static _Atomic(const uint8_t *) url_bc;
static _Atomic size_t url_bc_len;

void bridge_set_web(const uint8_t *bc, size_t len, const uint8_t *url, size_t url_len)
{
	atomic_store(&url_bc_len, url_len);
	atomic_store(&url_bc, url);
	atomic_store(&web_bc_len, len);
	atomic_store(&web_bc, bc); /* last: web.js's bytecode set means url.js's is */
}

/* native.url(): url.js's factory (web.js calls it once, with its helpers). */
static JSValue js_web_url(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	(void)argc;
	(void)argv;
	const uint8_t *bc = atomic_load(&url_bc);
	if (!bc)
		return JS_ThrowInternalError(ctx, "codemode: the web globals do not compile");
	JSValue fn = JS_ReadObject(ctx, bc, atomic_load(&url_bc_len), JS_READ_OBJ_BYTECODE);
	return JS_IsException(fn) ? fn : JS_EvalFunction(ctx, fn);
}

/* performance.now(): milliseconds since the run began. */
static JSValue js_web_now(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	(void)argc;
	(void)argv;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	s->effects++;
	if (s->det)
		return JS_NewFloat64(ctx, (double)(s->det_ticks++) / 1e3);
	return JS_NewFloat64(ctx, (double)(now_ns() - s->run_start) / 1e6);
}

/* crypto's bytes: the run's generator (Math.random's, seeded per run from
 * the host's CSPRNG) into a Uint8Array. */
static JSValue js_web_fill(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	size_t n;
	uint8_t *p = argc > 0 ? JS_GetUint8Array(ctx, &n, argv[0]) : NULL;
	if (!p)
		return JS_EXCEPTION;
	for (size_t i = 0; i < n; i += 8) {
		uint64_t w = rng_next(s);
		for (size_t k = 0; k < 8 && i + k < n; k++)
			p[i + k] = (uint8_t)(w >> (8 * k));
	}
	return JS_UNDEFINED;
}

/* native.toASCII(domain): URL's host parser's domain to ASCII, for a
 * domain with a code point past ASCII (the Go side's golang.org/x/net/idna:
 * pure computation, no authority). The ASCII form; null if the domain is
 * not valid; false if a label is past the bound IDNA runs on. */
static JSValue js_web_to_ascii(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	size_t n;
	const char *in = argc > 0 ? JS_ToCStringLen(ctx, &n, argv[0]) : NULL;
	if (!in)
		return JS_EXCEPTION;
	char *out = NULL;
	size_t len = 0;
	int32_t rc = go_domain_to_ascii((char *)in, n, &out, &len);
	JS_FreeCString(ctx, in);
	if (rc != 0)
		return rc == 1 ? JS_NULL : JS_FALSE;
	JSValue r = JS_NewStringLen(ctx, out, len);
	free(out);
	return r;
}

/* TextDecoder's legacy encodings (textdecoder.go): web.js decodes UTF-8
 * and UTF-16 itself and every other encoding through these two. */

/* The longest label of the Encoding Standard's is 19 bytes; a longer
 * string is no label and never reaches Go. */
#define WEB_LABEL_MAX 64

/* native.label(label): for a label web.js has stripped of ASCII whitespace
 * and ASCII-lowercased, [id, name] of its encoding, or null if it names
 * none. */
static JSValue js_web_label(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	size_t n;
	const char *l = argc > 0 ? JS_ToCStringLen(ctx, &n, argv[0]) : NULL;
	if (!l)
		return JS_EXCEPTION;
	char name[32];
	size_t len = 0;
	int32_t id = n <= WEB_LABEL_MAX ? go_text_label((char *)l, n, name, sizeof name, &len) : -1;
	JS_FreeCString(ctx, l);
	if (id < 0)
		return JS_NULL;
	JSValue s = JS_NewStringLen(ctx, name, len);
	if (JS_IsException(s))
		return s;
	JSValue r = JS_NewArray(ctx); /* the name first: a failed definition consumes its value */
	if (JS_IsException(r) || JS_DefinePropertyValueUint32(ctx, r, 1, s, JS_PROP_C_W_E) < 0 ||
	    JS_DefinePropertyValueUint32(ctx, r, 0, JS_NewInt32(ctx, id), JS_PROP_C_W_E) < 0) {
		if (JS_IsException(r))
			JS_FreeValue(ctx, s);
		JS_FreeValue(ctx, r);
		return JS_EXCEPTION;
	}
	return r;
}

/* Bytes native.decode hands Go at a time: the decoded text's buffer
 * (three bytes of UTF-8 a byte) is counted under the sandbox's memory
 * limit, and web.js's loop over the chunks is where the run's deadline
 * can stop a long decode. */
#define WEB_DECODE_CHUNK (64 * 1024)

/* native.decode(id, state, bytes, start, flags): encoding id's decoder
 * over the Uint8Array bytes from start, at most WEB_DECODE_CHUNK of them,
 * from state (what the previous call returned, 0 for a new stream); flags
 * & 1 flushes (the end of the stream) once the chunk reaches the end of
 * bytes, flags & 2 is fatal. [text, state, next]: text is null at the first
 * error when fatal; next is where the next call starts, or -1 once bytes
 * are all decoded. The text is allocated under the sandbox's memory limit;
 * Go writes it into the buffer C gives it and keeps no pointer. A run past
 * its deadline (or cancelled) stops here, between chunks. */
static JSValue js_web_decode(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	int32_t id, flags;
	int64_t state, start;
	if (argc < 5 || JS_ToInt32(ctx, &id, argv[0]) < 0 || JS_ToInt64(ctx, &state, argv[1]) < 0 ||
	    JS_ToInt64(ctx, &start, argv[3]) < 0 || JS_ToInt32(ctx, &flags, argv[4]) < 0)
		return argc < 5 ? JS_ThrowTypeError(ctx, "native.decode: five arguments") : JS_EXCEPTION;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	if (check_kill(s)) /* the engine polls its deadline rarely in a loop of native calls */
		return throw_kill(s, s->killed);
	size_t n;
	uint8_t *p = JS_GetUint8Array(ctx, &n, argv[2]);
	if (!p && JS_HasException(ctx))
		return JS_EXCEPTION;
	size_t from = start < 0 ? 0 : (uint64_t)start > n ? n : (size_t)start;
	size_t len = n - from < WEB_DECODE_CHUNK ? n - from : WEB_DECODE_CHUNK;
	bool last = from + len == n;
	size_t cap = 3 * (len + 3) + 3;
	char *out = js_malloc(ctx, cap);
	if (!out)
		return JS_EXCEPTION;
	uint32_t st = (uint32_t)state;
	int64_t w = go_text_decode(id, &st, len ? p + from : NULL, len, (last ? flags & 1 : 0) | (flags & 2), out, cap);
	JSValue text = w >= 0 ? JS_NewStringLen(ctx, out, (size_t)w) : w == -1 ? JS_NULL
	                                                                      : JS_ThrowInternalError(ctx, "codemode: TextDecoder failed");
	js_free(ctx, out);
	if (JS_IsException(text))
		return text;
	JSValue r = JS_NewArray(ctx);
	if (JS_IsException(r) || JS_DefinePropertyValueUint32(ctx, r, 0, text, JS_PROP_C_W_E) < 0 ||
	    JS_DefinePropertyValueUint32(ctx, r, 1, JS_NewInt32(ctx, (int32_t)st), JS_PROP_C_W_E) < 0 ||
	    JS_DefinePropertyValueUint32(ctx, r, 2, JS_NewFloat64(ctx, last ? -1 : (double)(from + len)), JS_PROP_C_W_E) < 0) {
		if (JS_IsException(r))
			JS_FreeValue(ctx, text);
		JS_FreeValue(ctx, r);
		return JS_EXCEPTION;
	}
	return r;
}

/* Defines native.name as a C function (defined, not assigned: native has
 * no prototype, and no setter a script put on Object.prototype runs); -1
 * with native released on failure. */
int set_native(JSContext *ctx, JSValue *native, const char *name, JSCFunction *fn, int length)
{
	JSValue f = JS_NewCFunction2(ctx, fn, name, length, JS_CFUNC_generic, 0);
	if (JS_IsException(f) || JS_DefinePropertyValueStr(ctx, *native, name, f, JS_PROP_C_W_E) < 0) {
		JS_FreeValue(ctx, *native);
		*native = JS_EXCEPTION;
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Lazy globals (the typed arrays, the web globals): accessors on the global
 * object until first read. */

/* An assignment before any read: the global becomes the value given. */
static JSValue lazy_assign(JSContext *ctx, const char *name, int argc, JSValueConst *argv)
{
	JSValue global = JS_GetGlobalObject(ctx);
	JSValue v = argc > 0 ? JS_DupValue(ctx, argv[0]) : JS_UNDEFINED;
	int rc = JS_DefinePropertyValueStr(ctx, global, name, v, JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
	JS_FreeValue(ctx, global);
	return rc < 0 ? JS_EXCEPTION : JS_UNDEFINED;
}

/* Defines global.name as the accessor get/set, which it consumes: 0 or -1. */
int lazy_define(JSContext *ctx, JSValueConst global, const char *name, JSValue get, JSValue set)
{
	JSAtom atom = JS_NewAtom(ctx, name);
	if (atom == JS_ATOM_NULL || JS_IsException(get) || JS_IsException(set)) {
		JS_FreeValue(ctx, get);
		JS_FreeValue(ctx, set);
		if (atom != JS_ATOM_NULL)
			JS_FreeAtom(ctx, atom);
		return -1;
	}
	int rc = JS_DefinePropertyGetSet(ctx, global, atom, get, set, JS_PROP_CONFIGURABLE) < 0 ? -1 : 0;
	JS_FreeAtom(ctx, atom);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Typed arrays (ArrayBuffer, the typed arrays, DataView, Atomics) were an
 * eighth of every image, and most runs never touch one: their globals are
 * accessors until the first read of any of them, which makes the engine's
 * intrinsics then (typed_ensure). A global the run assigned or deleted
 * before that stays as the run left it. Engine paths that make binary
 * data from C (revived binary envelopes) and the guards' slow paths (which
 * use Int32Array) ensure them first. */

static const char *const typed_globals[] = {
	"ArrayBuffer", "SharedArrayBuffer", "Uint8ClampedArray", "Int8Array",   "Uint8Array",   "Int16Array",
	"Uint16Array", "Int32Array",        "Uint32Array",       "BigInt64Array", "BigUint64Array", "Float16Array",
	"Float32Array", "Float64Array",     "DataView",          "Atomics",
};
#define NTYPED_GLOBALS ((int)(sizeof(typed_globals) / sizeof(typed_globals[0])))

/* Whether a global's property is the lazy accessor whose getter is
 * lazy_getters[i] (a typed array's, or past NTYPED_GLOBALS a web
 * global's). */
static bool lazy_ours(bridge_slot *s, int i, const JSPropertyDescriptor *d)
{
	if (!(d->flags & JS_PROP_GETSET) || !JS_IsObject(d->getter))
		return false;
	JSValue mine = JS_GetPropertyUint32(s->ctx, s->lazy_getters, (uint32_t)i);
	bool ours = JS_IsObject(mine) && JS_VALUE_GET_PTR(mine) == JS_VALUE_GET_PTR(d->getter);
	JS_FreeValue(s->ctx, mine);
	return ours;
}

/* Hands the typed arrays as the engine just made them (global's, before
 * the run's own globals are put back) to the runtime, if the sandbox has
 * one: runtime.js's typedInit. */
int typed_hand_over(bridge_slot *s, JSValueConst global)
{
	JSContext *ctx = s->ctx;
	if (!JS_IsObject(s->rtobj))
		return 0;
	JSValue init = JS_GetPropertyStr(ctx, s->rtobj, "typedInit");
	JSValue g = JS_NewObject(ctx); /* own properties: what a program put on Object.prototype is not read */
	int rc = JS_IsFunction(ctx, init) && !JS_IsException(g) ? 0 : -1;
	for (int i = 0; i < NTYPED_GLOBALS && rc == 0; i++) {
		JSValue v = JS_GetPropertyStr(ctx, global, typed_globals[i]);
		if (JS_IsException(v) || JS_DefinePropertyValueStr(ctx, g, typed_globals[i], v, JS_PROP_C_W_E) < 0)
			rc = -1;
	}
	if (rc == 0) {
		JSValue r = JS_Call(ctx, init, JS_UNDEFINED, 1, (JSValueConst *)&g);
		if (JS_IsException(r))
			rc = -1;
		JS_FreeValue(ctx, r);
	}
	JS_FreeValue(ctx, g);
	JS_FreeValue(ctx, init);
	return rc;
}

/* runtime.js's native.typed(): makes the typed arrays. */
JSValue js_typed_make(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	(void)argc;
	(void)argv;
	return typed_ensure(JS_GetContextOpaque(ctx)) < 0 ? JS_EXCEPTION : JS_UNDEFINED;
}

/* Which lazy globals a property key may name: LAZY_TYPED, LAZY_WEB, both
 * (an object, whose string only its own code can say), or neither. */
enum { LAZY_TYPED = 1, LAZY_WEB = 2 };

static int lazy_named(JSContext *ctx, JSValueConst key)
{
	if (JS_IsObject(key))
		return LAZY_TYPED | LAZY_WEB;
	if (!JS_IsString(key))
		return 0;
	size_t n;
	const char *k = JS_ToCStringLen(ctx, &n, key);
	if (!k)
		return JS_FreeValue(ctx, JS_GetException(ctx)), 0;
	int r = 0;
	for (int i = 0; i < NTYPED_GLOBALS && !r; i++)
		if (strcmp(k, typed_globals[i]) == 0)
			r = LAZY_TYPED;
	for (int i = 0; i < NWEB && !r; i++)
		if (strcmp(k, web_names[i]) == 0)
			r = LAZY_WEB;
	JS_FreeCString(ctx, k);
	return r;
}

int lazy_settle(bridge_slot *s, JSValueConst key)
{
	JSContext *ctx = s->ctx;
	int which = JS_IsUndefined(key) ? LAZY_TYPED | LAZY_WEB : lazy_named(ctx, key);
	if ((which & LAZY_TYPED) && JS_IsUndefined(s->guards.intrinsics[INTRINSIC_INT32ARRAY]) && typed_ensure(s) < 0)
		return -1;
	if (!(which & LAZY_WEB))
		return 0;
	/* A getter loads its unit's globals (web.js's, or url.js's): the key's
	 * own getter is called, or for any key every one still waiting. */
	const char *k = JS_IsString(key) ? JS_ToCStringLen(ctx, NULL, key) : NULL;
	if (JS_IsString(key) && !k)
		return -1;
	JSValue global = JS_GetGlobalObject(ctx);
	int rc = 0;
	for (int i = 0; i < NWEB && rc == 0; i++) {
		if (k && strcmp(k, web_names[i]) != 0)
			continue;
		JSAtom atom = JS_NewAtom(ctx, web_names[i]);
		JSPropertyDescriptor d;
		int has = atom == JS_ATOM_NULL ? -1 : JS_GetOwnProperty(ctx, &d, global, atom);
		if (atom != JS_ATOM_NULL)
			JS_FreeAtom(ctx, atom);
		if (has <= 0) {
			rc = has;
			continue;
		}
		if (lazy_ours(s, NTYPED_GLOBALS + i, &d)) {
			JSValue v = JS_Call(ctx, d.getter, global, 0, NULL);
			rc = JS_IsException(v) ? -1 : 0;
			JS_FreeValue(ctx, v);
		}
		JS_FreeValue(ctx, d.value);
		JS_FreeValue(ctx, d.getter);
		JS_FreeValue(ctx, d.setter);
	}
	JS_FreeCString(ctx, k);
	JS_FreeValue(ctx, global);
	return rc;
}

int typed_ensure(bridge_slot *s)
{
	JSValue *mark = &s->guards.intrinsics[INTRINSIC_INT32ARRAY];
	if (!JS_IsUndefined(*mark))
		return JS_IsNull(*mark) ? (JS_ThrowTypeError(s->ctx, "typed arrays are unavailable in this run"), -1) : 0;
	JSContext *ctx = s->ctx;
	JSValue global = JS_GetGlobalObject(ctx);
	/* What the run made of each global before: put back after. */
	JSPropertyDescriptor kept[NTYPED_GLOBALS];
	int state[NTYPED_GLOBALS]; /* 1: still our accessor, 0: absent, 2: the run's own */
	int rc = 0;
	for (int i = 0; i < NTYPED_GLOBALS; i++) {
		JSAtom atom = JS_NewAtom(ctx, typed_globals[i]);
		int has = JS_GetOwnProperty(ctx, &kept[i], global, atom);
		JS_FreeAtom(ctx, atom);
		if (has < 0) {
			rc = -1;
			state[i] = 0;
			continue;
		}
		state[i] = has == 0 ? 0 : lazy_ours(s, i, &kept[i]) ? 1 : 2;
	}
	/* The engine defines each global afresh (and aborts on an Atomics
	 * already there): none may be left. A run that made one of them
	 * non-configurable goes without typed arrays. */
	for (int i = 0; i < NTYPED_GLOBALS && rc == 0; i++) {
		if (state[i] == 0)
			continue;
		JSAtom atom = JS_NewAtom(ctx, typed_globals[i]);
		if (JS_DeleteProperty(ctx, global, atom, 0) <= 0) {
			if (!JS_HasException(ctx))
				JS_ThrowTypeError(ctx, "typed arrays are unavailable: the global %s cannot be replaced",
				                  typed_globals[i]);
			rc = -1;
		}
		JS_FreeAtom(ctx, atom);
	}
	if (rc == 0 && JS_AddIntrinsicTypedArrays(ctx) < 0)
		rc = -1;
	JSValue int32 = rc == 0 ? JS_GetPropertyStr(ctx, global, "Int32Array") : JS_EXCEPTION;
	*mark = JS_IsException(int32) ? JS_NULL : int32;
	if (rc == 0 && (JS_IsException(int32) || typed_hand_over(s, global) < 0))
		rc = -1;
	for (int i = 0; i < NTYPED_GLOBALS; i++) {
		if (state[i] != 1 && rc == 0) {
			JSAtom atom = JS_NewAtom(ctx, typed_globals[i]);
			int r;
			if (state[i] == 0)
				r = JS_DeleteProperty(ctx, global, atom, 0);
			else if (kept[i].flags & JS_PROP_GETSET)
				r = JS_DefinePropertyGetSet(ctx, global, atom, JS_DupValue(ctx, kept[i].getter),
				                            JS_DupValue(ctx, kept[i].setter),
				                            kept[i].flags & (JS_PROP_ENUMERABLE | JS_PROP_CONFIGURABLE));
			else
				r = JS_DefinePropertyValue(ctx, global, atom, JS_DupValue(ctx, kept[i].value),
				                           kept[i].flags & (JS_PROP_WRITABLE | JS_PROP_ENUMERABLE | JS_PROP_CONFIGURABLE));
			JS_FreeAtom(ctx, atom);
			if (r < 0)
				rc = -1;
		}
		if (state[i] != 0) {
			JS_FreeValue(ctx, kept[i].value);
			JS_FreeValue(ctx, kept[i].getter);
			JS_FreeValue(ctx, kept[i].setter);
		}
	}
	JS_FreeValue(ctx, global);
	return rc;
}

static JSValue js_typed_get(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int magic)
{
	(void)this_val;
	(void)argc;
	(void)argv;
	if (typed_ensure(JS_GetContextOpaque(ctx)) < 0)
		return JS_EXCEPTION;
	JSValue global = JS_GetGlobalObject(ctx);
	JSValue v = JS_GetPropertyStr(ctx, global, typed_globals[magic]);
	JS_FreeValue(ctx, global);
	return v;
}

static JSValue js_typed_set(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int magic)
{
	(void)this_val;
	return lazy_assign(ctx, typed_globals[magic], argc, argv);
}

int install_typed(JSContext *ctx)
{
	bridge_slot *s = JS_GetContextOpaque(ctx);
	JSValue global = JS_GetGlobalObject(ctx);
	s->lazy_getters = JS_NewArray(ctx);
	int rc = JS_IsException(s->lazy_getters) ? -1 : 0;
	if (rc < 0)
		s->lazy_getters = JS_UNDEFINED;
	for (int i = 0; i < NTYPED_GLOBALS && rc == 0; i++) {
		JSValue get = JS_NewCFunctionMagic(ctx, js_typed_get, typed_globals[i], 0, JS_CFUNC_generic_magic, i);
		JSValue set = JS_NewCFunctionMagic(ctx, js_typed_set, typed_globals[i], 1, JS_CFUNC_generic_magic, i);
		if (!JS_IsException(get) &&
		    JS_DefinePropertyValueUint32(ctx, s->lazy_getters, (uint32_t)i, JS_DupValue(ctx, get), JS_PROP_C_W_E) < 0)
			rc = -1; /* the array's reference went with the failure; ours goes below */
		if (rc < 0) {
			JS_FreeValue(ctx, get);
			JS_FreeValue(ctx, set);
		} else {
			rc = lazy_define(ctx, global, typed_globals[i], get, set);
		}
	}
	JS_FreeValue(ctx, global);
	return rc;
}

/* Runs one of our factories (runtime.js, web.js: bytecode whose completion
 * value is a function of the native bindings) with native, which it
 * consumes: what the factory returns. */
JSValue call_factory(JSContext *ctx, const uint8_t *bc, size_t len, JSValue native)
{
	JSValue r = JS_EXCEPTION;
	JSValue fn = JS_IsException(native) ? JS_EXCEPTION : JS_ReadObject(ctx, bc, len, JS_READ_OBJ_BYTECODE);
	JSValue factory = JS_IsException(fn) ? JS_EXCEPTION : JS_EvalFunction(ctx, fn);
	if (!JS_IsException(factory))
		r = JS_Call(ctx, factory, JS_UNDEFINED, 1, (JSValueConst *)&native);
	JS_FreeValue(ctx, factory);
	JS_FreeValue(ctx, native);
	return r;
}

/* Turns every web global still an accessor, of url.js's (url) or of the
 * rest, into its value in web (the object of the globals): 0, or -1. */
static int web_settle(JSContext *ctx, JSValueConst web, bool url)
{
	JSValue global = JS_GetGlobalObject(ctx);
	int r = 0;
	for (int i = 0; i < NWEB && r >= 0; i++) {
		if (web_in_url(i) != url)
			continue;
		JSAtom atom = JS_NewAtom(ctx, web_names[i]);
		if (atom == JS_ATOM_NULL) {
			r = -1;
			break;
		}
		JSPropertyDescriptor d;
		r = JS_GetOwnProperty(ctx, &d, global, atom);
		if (r > 0) {
			bool accessor = (d.flags & JS_PROP_GETSET) != 0;
			JS_FreeValue(ctx, d.value);
			JS_FreeValue(ctx, d.getter);
			JS_FreeValue(ctx, d.setter);
			if (accessor) {
				JSValue v = JS_GetProperty(ctx, web, atom);
				if (JS_IsException(v) ||
				    JS_DefinePropertyValue(ctx, global, atom, v, JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0)
					r = -1;
			}
		}
		JS_FreeAtom(ctx, atom);
	}
	JS_FreeValue(ctx, global);
	return r < 0 ? -1 : 0;
}

/* Evaluates web.js and turns every global still an accessor, but url.js's,
 * into its value: the object of the globals. fetch is the host's fetch
 * capability, or undefined. */
static JSValue web_load(JSContext *ctx, JSValueConst fetch)
{
	const uint8_t *bc = atomic_load(&web_bc);
	if (!bc && (go_load_web() != 0 || !(bc = atomic_load(&web_bc)))) /* the first read in the process */
		return JS_ThrowInternalError(ctx, "codemode: the web globals do not compile");
	JSValue native = JS_NewObjectProto(ctx, JS_NULL);
	if (!JS_IsException(native) && set_native(ctx, &native, "now", js_web_now, 0) == 0 &&
	    set_native(ctx, &native, "fill", js_web_fill, 1) == 0 &&
	    set_native(ctx, &native, "toASCII", js_web_to_ascii, 1) == 0 &&
	    set_native(ctx, &native, "label", js_web_label, 1) == 0 &&
	    set_native(ctx, &native, "decode", js_web_decode, 5) == 0 &&
	    set_native(ctx, &native, "url", js_web_url, 0) == 0 &&
	    JS_DefinePropertyValueStr(ctx, native, "fetch", JS_DupValue(ctx, fetch), JS_PROP_C_W_E) < 0) {
		JS_FreeValue(ctx, native);
		native = JS_EXCEPTION;
	}
	JSValue web = call_factory(ctx, bc, atomic_load(&web_bc_len), native);
	if (!JS_IsException(web) && web_settle(ctx, web, false) < 0) {
		JS_FreeValue(ctx, web);
		return JS_EXCEPTION;
	}
	return web;
}

/* A web global's getter. data[0] is the host's fetch (or undefined);
 * data[1] the sandbox's holder of web.js's globals object, which every
 * getter shares: web.js is evaluated once per sandbox, and url.js, which
 * it reads on demand, once too. */
static JSValue js_web_get(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int magic,
                          JSValueConst *data)
{
	(void)this_val;
	(void)argc;
	(void)argv;
	JSValue web = JS_GetPropertyUint32(ctx, data[1], 0);
	if (JS_IsUndefined(web)) {
		web = web_load(ctx, data[0]);
		if (JS_IsException(web) ||
		    JS_DefinePropertyValueUint32(ctx, data[1], 0, JS_DupValue(ctx, web), JS_PROP_C_W_E) < 0) {
			JS_FreeValue(ctx, web);
			return JS_EXCEPTION;
		}
	}
	if (JS_IsException(web))
		return web;
	JSValue v = JS_GetPropertyStr(ctx, web, web_names[magic]);
	if (!JS_IsException(v) && web_in_url(magic) && web_settle(ctx, web, true) < 0) {
		JS_FreeValue(ctx, v);
		v = JS_EXCEPTION;
	}
	JS_FreeValue(ctx, web);
	return v;
}

static JSValue js_web_set(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int magic)
{
	(void)this_val;
	return lazy_assign(ctx, web_names[magic], argc, argv);
}

int install_web(JSContext *ctx)
{
	JSValue global = JS_GetGlobalObject(ctx);
	/* The host's fetch, if it grants the network: off the global object. */
	JSAtom fa = JS_NewAtom(ctx, fetch_capability);
	if (fa == JS_ATOM_NULL) {
		JS_FreeValue(ctx, global);
		return -1;
	}
	JSValue fetch = JS_UNDEFINED;
	int has = JS_HasProperty(ctx, global, fa);
	if (has > 0) {
		fetch = JS_GetProperty(ctx, global, fa);
		if (JS_IsException(fetch) || JS_DeleteProperty(ctx, global, fa, 0) < 0)
			has = -1;
	}
	JS_FreeAtom(ctx, fa);
	int rc = has < 0 ? -1 : 0;
	int n = JS_IsUndefined(fetch) ? NWEB - NWEB_FETCH : NWEB;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	JSValue data[2] = {fetch, JS_NewObjectProto(ctx, JS_NULL)}; /* the holder: js_web_get */
	if (JS_IsException(data[1]))
		rc = -1;
	for (int i = 0; i < n && rc == 0; i++) {
		JSValue get = JS_NewCFunctionData(ctx, js_web_get, 0, i, 2, (JSValueConst *)data);
		if (!JS_IsException(get) && JS_DefinePropertyValueUint32(ctx, s->lazy_getters, (uint32_t)(NTYPED_GLOBALS + i),
		                                                         JS_DupValue(ctx, get), JS_PROP_C_W_E) < 0) {
			JS_FreeValue(ctx, get);
			rc = -1;
			break;
		}
		rc = lazy_define(ctx, global, web_names[i], get,
		                 JS_NewCFunctionMagic(ctx, js_web_set, web_names[i], 1, JS_CFUNC_generic_magic, i));
	}
	JS_FreeValue(ctx, data[1]);
	JS_FreeValue(ctx, fetch);
	JS_FreeValue(ctx, global);
	return rc;
}
