/*
 * bridge_host.c: calls from a sandbox to the host.
 *
 * Owns capability failures (Error objects marked in the slot's WeakMap),
 * the capabilities (one global C function each, called synchronously or as
 * an async host call), the async host calls and provider dispatches in
 * flight and their settling from Go, and the loading of runtime.js with
 * the native bindings it dispatches through (load_runtime).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bridge_internal.h"
#ifndef BRIDGE_LINT
#include "_cgo_export.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Capability failures: Error objects carrying the handler's message exactly,
 * marked in the slot's WeakMap so the run's outcome can be attributed from
 * host-side state. */

int install_marks(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	JSValue global = JS_GetGlobalObject(ctx);
	JSValue ctor = JS_GetPropertyStr(ctx, global, "WeakMap");
	JSValue proto = JS_GetPropertyStr(ctx, ctor, "prototype");
	s->marks = JS_CallConstructor(ctx, ctor, 0, NULL);
	s->marks_get = JS_GetPropertyStr(ctx, proto, "get");
	s->marks_set = JS_GetPropertyStr(ctx, proto, "set");
	JS_FreeValue(ctx, proto);
	JS_FreeValue(ctx, ctor);
	JS_FreeValue(ctx, global);
	return JS_IsException(s->marks) || JS_IsException(s->marks_get) || JS_IsException(s->marks_set) ? -1 : 0;
}

/* __codemode_at(v, K) or __codemode_at(K) (jspos.AtName): the
 * instrumentation's mark of a call site, evaluated as the call's last
 * argument (or before its callee, for a call with none). Records K for the
 * host call about to start (take_site) and returns v, or undefined. */
static JSValue js_at(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	int32_t k = -1;
	if (argc > 0 && JS_VALUE_GET_TAG(argv[argc - 1]) == JS_TAG_INT)
		k = JS_VALUE_GET_INT(argv[argc - 1]);
	s->at_site = k;
	return argc > 1 ? JS_DupValue(ctx, argv[0]) : JS_UNDEFINED;
}

/* The site the call starting now was marked with, or -1; taken once, so a
 * later unmarked call (an aliased tool) has none. */
static int32_t take_site(bridge_slot *s)
{
	int32_t k = s->at_site;
	s->at_site = -1;
	return k;
}

/* Defines __codemode_at as a global lexical binding: a const no program
 * can overwrite, and no property of globalThis (the sandbox's globals
 * stay the engine's and codemode's documented ones). */
int install_at(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	static const char def[] = "const __codemode_at = globalThis.__codemode_at_;\n"
	                          "delete globalThis.__codemode_at_;\n";
	JSValue global = JS_GetGlobalObject(ctx);
	JSValue f = JS_NewCFunction2(ctx, js_at, "__codemode_at", 2, JS_CFUNC_generic, 0);
	int rc = JS_IsException(f) ? -1 : JS_DefinePropertyValueStr(ctx, global, "__codemode_at_", f, JS_PROP_CONFIGURABLE);
	JS_FreeValue(ctx, global);
	if (rc < 0)
		return -1;
	JSValue r = JS_Eval(ctx, def, sizeof(def) - 1, "<codemode:at>", JS_EVAL_TYPE_GLOBAL);
	if (JS_IsException(r))
		return -1;
	JS_FreeValue(ctx, r);
	s->at_site = s->settle_site = -1;
	return 0;
}

/* A new Error whose message is msg[0:len], marked as the failure of
 * capability cap, or (cap < 0, name[0:nlen] set) of the provider tool
 * "provider.tool" a dispatch served, at the call's site (-1: unknown);
 * neither: a plain Error. */
static JSValue capability_error(bridge_slot *s, int32_t cap, const char *name, size_t nlen, const char *msg,
                                size_t len, int32_t site)
{
	JSContext *ctx = s->ctx;
	JSValue err = JS_NewError(ctx);
	if (JS_IsException(err))
		return err;
	JSValue m = JS_NewStringLen(ctx, msg, len);
	if (JS_IsException(m)) {
		JS_FreeValue(ctx, err);
		return m;
	}
	if ((cap < 0 && !name) || JS_IsUndefined(s->marks)) {
		if (JS_DefinePropertyValueStr(ctx, err, "message", m, JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
			JS_FreeValue(ctx, err);
			return JS_EXCEPTION;
		}
		return err;
	}
	JSValue mark = JS_NewArray(ctx);
	JSValue who = name ? JS_NewStringLen(ctx, name, nlen) : JS_UNDEFINED;
	if (JS_IsException(mark) || JS_IsException(who) ||
	    JS_DefinePropertyValueStr(ctx, err, "message", JS_DupValue(ctx, m), JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0 ||
	    JS_DefinePropertyValueUint32(ctx, mark, 0, JS_NewInt32(ctx, cap), JS_PROP_C_W_E) < 0 ||
	    JS_DefinePropertyValueUint32(ctx, mark, 1, JS_DupValue(ctx, m), JS_PROP_C_W_E) < 0 ||
	    JS_DefinePropertyValueUint32(ctx, mark, 2, JS_DupValue(ctx, who), JS_PROP_C_W_E) < 0 ||
	    JS_DefinePropertyValueUint32(ctx, mark, 3, JS_NewInt32(ctx, site), JS_PROP_C_W_E) < 0) {
		JS_FreeValue(ctx, who);
		JS_FreeValue(ctx, mark);
		JS_FreeValue(ctx, m);
		JS_FreeValue(ctx, err);
		return JS_EXCEPTION;
	}
	JS_FreeValue(ctx, who);
	JS_FreeValue(ctx, m);
	JSValue args[2] = {err, mark};
	JSValue r = JS_Call(ctx, s->marks_set, s->marks, 2, args);
	JS_FreeValue(ctx, mark);
	if (JS_IsException(r)) {
		JS_FreeValue(ctx, err);
		return r;
	}
	JS_FreeValue(ctx, r);
	s->marked = true;
	return err;
}

/* A copy of the string v in libc memory (NUL-terminated), or NULL. */
static char *dup_js_string(JSContext *ctx, JSValueConst v, size_t *n)
{
	if (!JS_IsString(v))
		return NULL;
	const char *p = JS_ToCStringLen(ctx, n, v);
	if (!p)
		return NULL;
	char *c = malloc(*n + 1);
	if (c)
		memcpy(c, p, *n + 1);
	JS_FreeCString(ctx, p);
	return c;
}

/* If v is a marked capability Error, reports what failed (out->cap, and
 * for a provider tool out->cap_name) and its original message into out
 * and returns true. */
bool capability_of(bridge_slot *s, JSValueConst v, bridge_out *out)
{
	JSContext *ctx = s->ctx;
	if (!s->marked || !JS_IsObject(v))
		return false;
	JSValue mark = JS_Call(ctx, s->marks_get, s->marks, 1, &v);
	if (JS_IsException(mark)) {
		JS_FreeValue(ctx, JS_GetException(ctx));
		return false;
	}
	bool found = false;
	if (JS_IsArray(mark)) {
		JSValue idx = JS_GetPropertyUint32(ctx, mark, 0);
		JSValue msg = JS_GetPropertyUint32(ctx, mark, 1);
		JSValue who = JS_GetPropertyUint32(ctx, mark, 2);
		JSValue site = JS_GetPropertyUint32(ctx, mark, 3);
		size_t n = 0, nn = 0;
		char *m = JS_VALUE_GET_TAG(idx) == JS_TAG_INT ? dup_js_string(ctx, msg, &n) : NULL;
		char *w = m && JS_VALUE_GET_INT(idx) < 0 ? dup_js_string(ctx, who, &nn) : NULL;
		if (m && (JS_VALUE_GET_INT(idx) >= 0 || w)) {
			out->data = m;
			out->size = n;
			out->cap = JS_VALUE_GET_INT(idx);
			out->cap_name = w;
			out->cap_name_len = nn;
			out->cap_site = JS_VALUE_GET_TAG(site) == JS_TAG_INT ? JS_VALUE_GET_INT(site) : -1;
			found = true;
		} else {
			free(m);
			free(w);
		}
		JS_FreeValue(ctx, site);
		JS_FreeValue(ctx, who);
		JS_FreeValue(ctx, msg);
		JS_FreeValue(ctx, idx);
	}
	JS_FreeValue(ctx, mark);
	if (JS_HasException(ctx))
		JS_FreeValue(ctx, JS_GetException(ctx));
	return found;
}

/* Stops the run from inside a host call (why: a BRIDGE_* kill). The engine
 * unwinds with an uncatchable error; the outcome comes from the kill. */
JSValue throw_kill(bridge_slot *s, int32_t why)
{
	slot_kill(s, why);
	JSValue e = JS_ThrowInternalError(s->ctx, "interrupted");
	JSValue exc = JS_GetException(s->ctx);
	JS_SetUncatchableError(s->ctx, exc);
	JS_Throw(s->ctx, exc);
	return e;
}

/* Whether the program has settled: from then on every host call meets the
 * completion text and never reaches Go. */
static bool program_settled(bridge_slot *s)
{
	return s->retained || (JS_IsObject(s->program) && JS_PromiseState(s->ctx, s->program) != JS_PROMISE_PENDING);
}

static JSValue throw_message(bridge_slot *s, const char *msg, size_t len)
{
	JSValue err = capability_error(s, -1, NULL, 0, msg, len, -1);
	return JS_IsException(err) ? err : JS_Throw(s->ctx, err);
}

static JSValue throw_completed(bridge_slot *s) { return throw_message(s, MSG_COMPLETED, sizeof(MSG_COMPLETED) - 1); }

/* ---------------------------------------------------------------------- */
/* Capabilities: one global C function each, addressed by index (the magic
 * argument). The name is used as a property key, never spliced into source. */

static JSValue call_async(bridge_slot *s, int32_t cap, const char *args, size_t n, int32_t site);

static JSValue js_capability(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int cap)
{
	(void)this_val;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	int32_t site = take_site(s); /* before the arguments' toJSON can make calls */
	s->effects++;
	const char *name = s->cap_names[cap];
	if (program_settled(s))
		return throw_completed(s);
	JSValueConst arg = argc > 0 ? argv[0] : JS_UNDEFINED;
	const char *args = "{}";
	size_t n = 2;
	if (!JS_IsUndefined(arg)) { /* no argument: {} */
		if (!JS_IsObject(arg) || JS_IsArray(arg) || JS_IsFunction(ctx, arg))
			return JS_ThrowTypeError(ctx, "%s expects one argument object", name);
		switch (json_text(s, arg, s->payload, JSON_BINARY, &n)) {
		case JSON_TEXT:
			args = s->json.p;
			break;
		case JSON_NONE: /* its toJSON said so */
			json_scratch_trim(s);
			return JS_ThrowTypeError(ctx, "%s expects one argument object", name);
		case JSON_TOO_LARGE:
			json_scratch_trim(s);
			return JS_ThrowRangeError(ctx,
			                          "%s: the arguments are %zu bytes of JSON, over the payload limit of %llu bytes",
			                          name, n, (unsigned long long)s->payload);
		default:
			json_scratch_trim(s);
			return JS_EXCEPTION;
		}
	}
	JSValue ret;
	if (s->cap_async[cap]) {
		ret = call_async(s, cap, args, n, site);
	} else {
		char room[256];
		bridge_reply r = {.buf = room, .cap = sizeof(room)};
		go_capability_call(s->handle, cap, (char *)args, n, &r);
		switch (r.status) {
		case BRIDGE_CALL_OK:
			ret = parse_result(ctx, r.data ? r.data : "null", r.data ? r.size : 4);
			if (JS_IsException(ret) && !s->killed) {
				JS_FreeValue(ctx, JS_GetException(ctx));
				static const char bad[] = "the capability returned invalid JSON";
				JSValue err = capability_error(s, cap, NULL, 0, bad, sizeof(bad) - 1, site);
				ret = JS_IsException(err) ? err : JS_Throw(ctx, err);
			}
			break;
		case BRIDGE_CALL_ERROR: {
			JSValue err = capability_error(s, cap, NULL, 0, r.data ? r.data : "", r.data ? r.size : 0, site);
			ret = JS_IsException(err) ? err : JS_Throw(ctx, err);
			break;
		}
		case BRIDGE_CALL_TYPE_ERROR: /* NUL-terminated by Go */
			ret = JS_ThrowTypeError(ctx, "%s", r.data ? r.data : "");
			break;
		case BRIDGE_CALL_TIMEOUT:
			ret = throw_kill(s, BRIDGE_TIMEOUT);
			break;
		case BRIDGE_CALL_CANCELED:
			ret = throw_kill(s, BRIDGE_CANCELED);
			break;
		default:
			ret = throw_kill(s, BRIDGE_INTERNAL);
			break;
		}
		if (r.data != room)
			free(r.data);
	}
	json_scratch_trim(s);
	return ret;
}

int install_capabilities(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	JSValue global = JS_GetGlobalObject(ctx);
	int rc = 0;
	for (int32_t i = 0; i < s->ncaps && rc == 0; i++) {
		JSValue f = JS_NewCFunctionMagic(ctx, js_capability, s->cap_names[i], 1, JS_CFUNC_generic_magic, i);
		if (JS_IsException(f) ||
		    JS_DefinePropertyValueStr(ctx, global, s->cap_names[i], f, JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0)
			rc = -1;
	}
	JS_FreeValue(ctx, global);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Async host calls: the call gets a Promise at once and an id; Go starts
 * the handler and later settles the id from its event loop. */

/* Makes room for one more element in an engine-heap array of *cap
 * elements holding len; false on out-of-memory. */
bool grow_array(JSContext *ctx, void **arr, uint32_t *cap, uint32_t len, size_t elem)
{
	if (len < *cap)
		return true;
	uint32_t n = *cap ? *cap * 2 : 8;
	void *p = js_realloc(ctx, *arr, n * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = n;
	return true;
}

/* Registers a call in flight and returns its promise; *pid names it. */
static JSValue new_call(bridge_slot *s, int32_t cap, const char *name, int32_t site, uint32_t *pid)
{
	JSContext *ctx = s->ctx;
	if (s->pending_calls >= MAX_PENDING_CALLS)
		return JS_ThrowRangeError(ctx, "%s: too many host calls in flight (%d)", name, MAX_PENDING_CALLS);
	uint32_t id = s->calls_free;
	if (id == NO_CALL) {
		if (!grow_array(ctx, (void **)&s->calls, &s->calls_cap, s->calls_len, sizeof(*s->calls)))
			return JS_EXCEPTION;
		id = s->calls_len++;
		s->calls[id].used = false;
	} else {
		s->calls_free = s->calls[id].next;
	}
	JSValue funcs[2];
	JSValue promise = JS_NewPromiseCapability(ctx, funcs);
	if (JS_IsException(promise)) {
		s->calls[id].next = s->calls_free;
		s->calls_free = id;
		return promise;
	}
	s->calls[id] = (host_call){.resolve = funcs[0],
	                           .reject = funcs[1],
	                           .provider = JS_UNDEFINED,
	                           .tool = JS_UNDEFINED,
	                           .cap = cap,
	                           .site = site,
	                           .used = true,
	                           .next = NO_CALL};
	s->pending_calls++;
	*pid = id;
	return promise;
}

/* The kill a start's refusal rc makes (call_async's). */
static int32_t start_kill(int32_t rc)
{
	return rc == 1 ? BRIDGE_CANCELED : rc == 2 ? BRIDGE_TIMEOUT : BRIDGE_INTERNAL;
}

static JSValue call_async(bridge_slot *s, int32_t cap, const char *args, size_t n, int32_t site)
{
	uint32_t id;
	JSValue promise = new_call(s, cap, s->cap_names[cap], site, &id);
	if (JS_IsException(promise))
		return promise;
	int32_t rc = go_capability_start(s->handle, cap, id, (char *)args, n);
	if (rc != 0) { /* Go ends the run at this call: 1 (a pause, a cancellation), 2 (the deadline
	                * passed in a handler Go served inline); -1: the glue failed */
		JS_FreeValue(s->ctx, promise);
		return throw_kill(s, start_kill(rc));
	}
	return promise;
}

/* The payload bound's refusal of a provider call of total bytes. */
static JSValue throw_payload(bridge_slot *s, size_t total)
{
	char msg[256];
	int len = snprintf(msg, sizeof(msg),
	                   "The tool call is %zu bytes (provider, tool and arguments), over the payload limit of %llu "
	                   "bytes; it was not delivered.",
	                   total, (unsigned long long)s->payload);
	return throw_message(s, msg, (size_t)len);
}

/* Sends one provider call (its names and arguments' JSON, n bytes each)
 * out of the sandbox: a new call in flight, its promise, and Go starts the
 * dispatch. A call that opens its envelope in C keeps its names. */
static JSValue send_dispatch(bridge_slot *s, JSValueConst *names, const char *p[2], size_t n[2], const char *args,
                             size_t nargs, bool open, int32_t site)
{
	uint32_t id;
	JSValue ret = new_call(s, -1, "dispatch", site, &id);
	if (JS_IsException(ret))
		return ret;
	if (open) {
		s->calls[id].provider = JS_DupValue(s->ctx, names[0]);
		s->calls[id].tool = JS_DupValue(s->ctx, names[1]);
	}
	int32_t rc = go_dispatch_start(s->handle, id, (char *)p[0], n[0], (char *)p[1], n[1], (char *)args, nargs);
	if (rc != 0) { /* as in call_async */
		JS_FreeValue(s->ctx, ret);
		ret = throw_kill(s, start_kill(rc));
	}
	return ret;
}

/* native.dispatch(provider, tool, argsJson) of runtime.js: one provider
 * call, measured against the payload bound before it leaves the sandbox.
 * Resolves to the dispatch's answer, a string. */
static JSValue js_dispatch(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	int32_t site = take_site(s);
	s->effects++;
	if (program_settled(s))
		return throw_completed(s);
	if (argc < 3)
		return JS_ThrowTypeError(ctx, "dispatch expects a provider, a tool and the arguments");
	const char *p[3] = {NULL, NULL, NULL};
	size_t n[3] = {0, 0, 0};
	JSValue ret = JS_UNDEFINED;
	for (int i = 0; i < 3; i++) {
		if (!(p[i] = JS_ToCStringLen(ctx, &n[i], argv[i]))) {
			ret = JS_EXCEPTION;
			goto cleanup;
		}
	}
	size_t total = n[0] + n[1] + n[2];
	if (total > s->payload)
		ret = throw_payload(s, total);
	else
		ret = send_dispatch(s, argv, p, n, p[2], n[2], false, site);
cleanup:
	for (int i = 0; i < 3; i++)
		if (p[i])
			JS_FreeCString(ctx, p[i]);
	return ret;
}

/* native.call(provider, tool, payload) of runtime.js: a provider tool's
 * call. The payload is encoded as runtime.js's codec gives it (plain data
 * here, anything else by its encode), measured against the payload bound,
 * and sent; the promise settles with the envelope opened (open_envelope):
 * what runtime.js's open(await dispatch(...)) gives, without a JS string
 * of the arguments, a reviver's scan or a JS frame for either. */
static JSValue js_call(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	int32_t site = take_site(s); /* before the payload's getters and toJSON can make calls */
	if (argc < 3)
		return JS_ThrowTypeError(ctx, "call expects a provider, a tool and the arguments");
	const char *p[2] = {NULL, NULL};
	size_t n[2] = {0, 0};
	JSValue ret = JS_EXCEPTION;
	for (int i = 0; i < 2; i++)
		if (!(p[i] = JS_ToCStringLen(ctx, &n[i], argv[i])))
			goto cleanup;
	/* Encoded first, as runtime.js encoded before it called dispatch (its
	 * getters and toJSON run, and log, even for a call refused below). A
	 * bound of at least 1: the writer's 0 is none. */
	size_t names = n[0] + n[1], len = 0;
	int kind = json_text(s, argv[2], names < s->payload ? s->payload - names : 1, JSON_CODEC, &len);
	if (kind == JSON_THREW)
		goto cleanup;
	s->effects++;
	if (program_settled(s)) {
		ret = throw_completed(s);
		goto cleanup;
	}
	const char *args = s->json.p;
	if (kind == JSON_NONE) { /* what `${undefined}` gives, as runtime.js's dispatch sends it */
		args = "undefined";
		len = strlen(args);
	}
	if (kind == JSON_TOO_LARGE || names + len > s->payload)
		ret = throw_payload(s, names + len);
	else
		ret = send_dispatch(s, argv, p, n, args, len, true, site);
cleanup:
	json_scratch_trim(s);
	for (int i = 0; i < 2; i++)
		if (p[i])
			JS_FreeCString(ctx, p[i]);
	return ret;
}

/* The Error a provider tool's failure throws: msg, marked as the failure
 * of provider.tool (provider and tool are strings) at the call's site. */
static JSValue tool_failure(bridge_slot *s, JSValueConst provider, JSValueConst tool, const char *msg, size_t len,
                            int32_t site)
{
	JSContext *ctx = s->ctx;
	const char *p[2] = {NULL, NULL};
	size_t n[2] = {0, 0};
	JSValueConst v[2] = {provider, tool};
	JSValue ret = JS_EXCEPTION;
	strbuf name = {0};
	for (int i = 0; i < 2; i++)
		if (!(p[i] = JS_ToCStringLen(ctx, &n[i], v[i])))
			goto cleanup;
	sb_put(&name, p[0], n[0]);
	sb_put(&name, ".", 1);
	sb_put(&name, p[1], n[1]);
	ret = name.overflow ? JS_ThrowOutOfMemory(ctx) : capability_error(s, -1, name.p, name.len, msg, len, site);
cleanup:
	free(name.p);
	for (int i = 0; i < 2; i++)
		if (p[i])
			JS_FreeCString(ctx, p[i]);
	return ret;
}

/* native.fail(provider, tool, message) of runtime.js: the Error a provider
 * tool's envelope failure throws, marked as that tool's. */
static JSValue js_fail(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	if (argc < 3)
		return JS_ThrowTypeError(ctx, "fail expects a provider, a tool and a message");
	size_t n = 0;
	const char *msg = JS_ToCStringLen(ctx, &n, argv[2]);
	if (!msg)
		return JS_EXCEPTION;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	JSValue ret = tool_failure(s, argv[0], argv[1], msg, n, s->settle_site);
	JS_FreeCString(ctx, msg);
	return ret;
}

/* Whether p[0..n) is UTF-8 as RFC 3629 has it: no overlong form, no
 * surrogate, nothing past U+10FFFF. What is not reads differently as a
 * JS string (each bad byte U+FFFD) and as JS_ParseJSON's input. */
static bool utf8_strict(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint8_t c = p[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t k;
		uint32_t cp, min;
		if ((c & 0xE0) == 0xC0) {
			k = 1, cp = c & 0x1F, min = 0x80;
		} else if ((c & 0xF0) == 0xE0) {
			k = 2, cp = c & 0x0F, min = 0x800;
		} else if ((c & 0xF8) == 0xF0) {
			k = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (n - i <= k)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((p[i + j] & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + j] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += k + 1;
	}
	return true;
}

/* A provider tool's answer v in a box of no prototype, {0: v}: the call's
 * promise settles with it, and the tool (runtime.js) returns box[0]. A
 * promise resolved with an object reads its then; the tool's own return
 * reads v's, as it always did, and the box's has none to read. */
static JSValue boxed(JSContext *ctx, JSValue v)
{
	if (JS_IsException(v))
		return v;
	JSValue box = JS_NewObjectProto(ctx, JS_NULL);
	if (JS_IsException(box) || JS_DefinePropertyValueUint32(ctx, box, 0, v, JS_PROP_C_W_E) < 0) {
		if (JS_IsException(box))
			JS_FreeValue(ctx, v);
		JS_FreeValue(ctx, box);
		return JS_EXCEPTION;
	}
	return box;
}

/* Opens a provider tool's answer as runtime.js's open does: {"result": v}
 * gives v; {"error": e} with e truthy fails with `${e}` (e read again, as
 * open reads it twice); anything else (not JSON, not an object, an array)
 * fails as the dispatch's defect (MSG_OUTSIDE). Text naming the codec's
 * binary or handle tag, or not strict UTF-8, goes to runtime.js's open
 * itself (the reviver rebuilds what the tags name; a JS string is what it
 * parses). Returns the value to settle with (a success boxed), *failed
 * saying whether it rejects; JS_EXCEPTION with the exception pending when
 * something threw. */
static JSValue open_envelope(bridge_slot *s, const host_call *c, const char *data, size_t len, bool *failed)
{
	JSContext *ctx = s->ctx;
	if (memmem(data, len, BINARY_TAG, sizeof(BINARY_TAG) - 1) || memmem(data, len, HANDLE_TAG, sizeof(HANDLE_TAG) - 1) ||
	    !utf8_strict((const uint8_t *)data, len)) {
		JSValue a[3] = {JS_NewStringLen(ctx, data, len), c->provider, c->tool};
		if (JS_IsException(a[0]))
			return a[0];
		s->settle_site = c->site; /* what open fails with (native.fail) is this call's */
		JSValue v = rt_call(s, "open", 3, a);
		s->settle_site = -1;
		JS_FreeValue(ctx, a[0]);
		return boxed(ctx, v);
	}
	JSValue env = JS_ParseJSON(ctx, data, len, "<dispatch>");
	if (JS_IsException(env)) {
		if (s->killed)
			return env;
		JS_FreeValue(ctx, JS_GetException(ctx));
	} else if (JS_IsObject(env) && !JS_IsArray(env)) {
		JSValue e = JS_GetPropertyStr(ctx, env, "error");
		if (JS_IsException(e) || !JS_ToBool(ctx, e)) {
			JSValue r = e;
			if (!JS_IsException(e)) {
				JS_FreeValue(ctx, e);
				r = boxed(ctx, JS_GetPropertyStr(ctx, env, "result"));
			}
			JS_FreeValue(ctx, env);
			return r;
		}
		JS_FreeValue(ctx, e);
		e = JS_GetPropertyStr(ctx, env, "error");
		JS_FreeValue(ctx, env);
		JSValue text = JS_IsException(e) ? e : JS_ToString(ctx, e); /* `${e}` */
		JS_FreeValue(ctx, e);
		size_t n = 0;
		const char *msg = JS_IsException(text) ? NULL : JS_ToCStringLen(ctx, &n, text);
		JS_FreeValue(ctx, text);
		if (!msg)
			return JS_EXCEPTION;
		JSValue err = tool_failure(s, c->provider, c->tool, msg, n, c->site);
		JS_FreeCString(ctx, msg);
		*failed = !JS_IsException(err);
		return err;
	}
	JS_FreeValue(ctx, env);
	JSValue err = tool_failure(s, c->provider, c->tool, MSG_OUTSIDE, sizeof(MSG_OUTSIDE) - 1, c->site);
	*failed = !JS_IsException(err);
	return err;
}

void bridge_slot_settle(bridge_slot *s, uint32_t id, int32_t status, const char *data, size_t len, const char *name,
                        size_t nlen, int32_t nested)
{
	if (!s->open || id >= s->calls_len || !s->calls[id].used)
		return;
	/* Nested in a host call's callback (a non-blocking call settled as it
	 * starts), the stack top is the running program's entry's: taken here,
	 * deeper, it would move the stack limit down by the program's depth at
	 * each such call, and a program recursing between them would pass the
	 * stack it was given. */
	if (!nested)
		JS_UpdateStackTop(s->rt);
	JSContext *ctx = s->ctx;
	if (!data)
		data = "";
	host_call c = s->calls[id];
	s->calls[id].used = false;
	s->calls[id].next = s->calls_free;
	s->calls_free = id;
	s->pending_calls--;

	JSValue v = JS_UNDEFINED, fn = c.resolve;
	if (status == BRIDGE_CALL_STRING && !JS_IsUndefined(c.provider)) {
		bool failed = false;
		v = open_envelope(s, &c, data, len, &failed);
		if (JS_IsException(v) && !s->killed) { /* what open threw rejects the call */
			v = JS_GetException(ctx);
			failed = true;
		}
		if (failed)
			fn = c.reject;
	} else if (status == BRIDGE_CALL_STRING) {
		v = JS_NewStringLen(ctx, data, len);
	} else if (status == BRIDGE_CALL_OK) {
		v = parse_result(ctx, data, len);
		if (JS_IsException(v) && !s->killed) {
			JS_FreeValue(ctx, JS_GetException(ctx));
			static const char bad[] = "the capability returned invalid JSON";
			v = capability_error(s, c.cap, name, nlen, bad, sizeof(bad) - 1, c.site);
			fn = c.reject;
		}
	} else if (status == BRIDGE_CALL_TYPE_ERROR) {
		JS_ThrowTypeError(ctx, "%.*s", (int)(len < INT32_MAX ? len : INT32_MAX), data);
		v = JS_GetException(ctx);
		fn = c.reject;
	} else {
		v = capability_error(s, c.cap, name, nlen, data, len, c.site);
		fn = c.reject;
	}
	if (JS_IsException(v)) {
		JS_FreeValue(ctx, JS_GetException(ctx));
	} else {
		JSValue r = JS_Call(ctx, fn, JS_UNDEFINED, 1, &v);
		if (JS_IsException(r))
			JS_FreeValue(ctx, JS_GetException(ctx));
		JS_FreeValue(ctx, r);
		JS_FreeValue(ctx, v);
	}
	JS_FreeValue(ctx, c.resolve);
	JS_FreeValue(ctx, c.reject);
	JS_FreeValue(ctx, c.provider);
	JS_FreeValue(ctx, c.tool);
}

/* ---------------------------------------------------------------------- */
/* The runtime (runtime.js, which Execute programs run on): its native
 * bindings are the provider dispatch above and the typed arrays' maker. */

/* Loads the runtime (from bytecode) and hands it the native bindings. */
JSValue load_runtime(bridge_slot *s, const bridge_config *cfg)
{
	JSContext *ctx = s->ctx;
	JSValue native = JS_NewObjectProto(ctx, JS_NULL);
	if (!JS_IsException(native) && set_native(ctx, &native, "dispatch", js_dispatch, 3) == 0 &&
	    set_native(ctx, &native, "fail", js_fail, 3) == 0 && set_native(ctx, &native, "typed", js_typed_make, 0) == 0) {
		/* Named dispatch, as the call a stack trace shows always was. */
		JSValue f = JS_NewCFunction2(ctx, js_call, "dispatch", 3, JS_CFUNC_generic, 0);
		int rc = JS_IsException(f) ? -1 : JS_DefinePropertyValueStr(ctx, native, "call", f, JS_PROP_C_W_E);
		if (rc >= 0) {
			JSValue outside = JS_NewStringLen(ctx, MSG_OUTSIDE, sizeof(MSG_OUTSIDE) - 1);
			rc = JS_IsException(outside) ? -1
			                             : JS_DefinePropertyValueStr(ctx, native, "outside", outside, JS_PROP_C_W_E);
		}
		if (rc < 0) {
			JS_FreeValue(ctx, native);
			native = JS_EXCEPTION;
		}
	}
	JSValue rt = call_factory(ctx, cfg->runtime_bc, cfg->runtime_bc_len, native);
	if (JS_IsException(rt) || JS_IsUndefined(s->guards.intrinsics[INTRINSIC_INT32ARRAY]))
		return rt;
	/* The typed arrays were made before the runtime came: hand them over. */
	JSValue saved = s->rtobj, global = JS_GetGlobalObject(ctx);
	s->rtobj = rt;
	int rc = JS_IsNull(s->guards.intrinsics[INTRINSIC_INT32ARRAY]) ? 0 : typed_hand_over(s, global);
	s->rtobj = saved;
	JS_FreeValue(ctx, global);
	if (rc < 0) {
		JS_FreeValue(ctx, rt);
		return JS_EXCEPTION;
	}
	return rt;
}
