/*
 * bridge_plain.c: the plain engine, the reference of the differential
 * conformance tests (conformance_test.go).
 *
 * The same QuickJS-ng with the same intrinsics as a sandbox (bridge_image.c,
 * sandbox_open), and nothing of codemode's: no guards, no web globals, no
 * console, no lazy globals, no rewriting, a runtime on libc made and
 * freed for each run. Its only host function is test262's print. A test
 * the plain engine passes and a sandbox fails is a bug of codemode's.
 */
#include "bridge_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct plain_run {
	int64_t deadline; /* CLOCK_MONOTONIC ns */
	bool timed_out;
	strbuf logs; /* print's lines, one per call, '\n'-terminated */
} plain_run;

static int64_t plain_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int plain_interrupt(JSRuntime *rt, void *opaque)
{
	(void)rt;
	plain_run *p = opaque;
	if (p->timed_out || plain_now() >= p->deadline)
		return p->timed_out = true;
	return 0;
}

static JSValue plain_print(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	plain_run *p = JS_GetRuntimeOpaque(JS_GetRuntime(ctx));
	size_t n = 0;
	const char *s = argc > 0 ? JS_ToCStringLen(ctx, &n, argv[0]) : NULL;
	if (!s)
		return JS_EXCEPTION;
	sb_put(&p->logs, s, n);
	sb_put(&p->logs, "\n", 1);
	JS_FreeCString(ctx, s);
	return JS_UNDEFINED;
}

/* Renders a thrown value as String(value) does: "Name: message" for the
 * errors test262 throws. */
static void plain_render(JSContext *ctx, JSValueConst exc, bridge_out *out)
{
	size_t n = 0;
	const char *s = JS_ToCStringLen(ctx, &n, exc);
	if (!s) {
		JS_FreeValue(ctx, JS_GetException(ctx));
		s = "<a value String() refuses>";
		n = strlen(s);
		out->data = dup_text(s, &out->size);
		return;
	}
	if ((out->data = malloc(n + 1)) != NULL) {
		memcpy(out->data, s, n);
		out->data[n] = '\0';
		out->size = n;
	}
	JS_FreeCString(ctx, s);
}

/* Runs jobs until none is left, or the deadline. */
static void plain_drain(JSRuntime *rt, plain_run *p)
{
	JSContext *jctx;
	while (!p->timed_out) {
		int r = JS_ExecutePendingJob(rt, &jctx);
		if (r == 0)
			return;
		if (r < 0)
			JS_FreeValue(jctx, JS_GetException(jctx));
	}
}

int32_t bridge_plain_run(const char *src, size_t len, int32_t body, int64_t budget_ns, uint64_t memory,
                         uint64_t stack, bridge_out *out)
{
	memset(out, 0, sizeof(*out));
	plain_run p = {.deadline = plain_now() + budget_ns};
	JSRuntime *rt = JS_NewRuntime();
	if (!rt)
		return out->status = BRIDGE_INTERNAL;
	JS_SetRuntimeOpaque(rt, &p);
	JS_SetMemoryLimit(rt, memory);
	JS_SetMaxStackSize(rt, stack);
	JS_UpdateStackTop(rt);
	JS_SetInterruptHandler(rt, plain_interrupt, &p);
	int32_t st = BRIDGE_INTERNAL;
	JSContext *ctx = JS_NewContextRaw(rt);
	JSValue global = JS_UNDEFINED;
	if (!ctx || JS_AddIntrinsicBaseObjects(ctx) || JS_AddIntrinsicDate(ctx) || JS_AddIntrinsicEval(ctx) ||
	    JS_AddIntrinsicRegExp(ctx) || JS_AddIntrinsicJSON(ctx) || JS_AddIntrinsicProxy(ctx) ||
	    JS_AddIntrinsicMapSet(ctx) || JS_AddIntrinsicTypedArrays(ctx) || JS_AddIntrinsicPromise(ctx))
		goto cleanup;
	global = JS_GetGlobalObject(ctx);
	if (JS_DefinePropertyValueStr(ctx, global, "print", JS_NewCFunction2(ctx, plain_print, "print", 1, JS_CFUNC_generic, 0),
	                              JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0)
		goto cleanup;
	/* As a function body, the source is (async () => {<src>\n})(): its
	 * promise is the outcome. As global code, it is the script itself. */
	strbuf text = {0};
	if (body)
		sb_puts(&text, "(async () => {");
	sb_put(&text, src, len);
	if (body)
		sb_puts(&text, "\n})()");
	if (text.overflow) {
		free(text.p);
		goto cleanup;
	}
	JSValue fn = JS_Eval(ctx, text.p ? text.p : "", text.len, "test.js", JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_COMPILE_ONLY);
	free(text.p);
	if (JS_IsException(fn)) {
		out->syntax = 1;
		JSValue exc = JS_GetException(ctx);
		plain_render(ctx, exc, out);
		JS_FreeValue(ctx, exc);
		st = p.timed_out ? BRIDGE_TIMEOUT : BRIDGE_THROWN;
		goto cleanup;
	}
	JSValue v = JS_EvalFunction(ctx, fn);
	if (JS_IsException(v)) {
		JSValue exc = JS_GetException(ctx);
		plain_render(ctx, exc, out);
		JS_FreeValue(ctx, exc);
		st = p.timed_out ? BRIDGE_TIMEOUT : BRIDGE_THROWN;
		goto cleanup;
	}
	plain_drain(rt, &p);
	st = p.timed_out ? BRIDGE_TIMEOUT : BRIDGE_DONE;
	if (body && !p.timed_out) {
		switch (JS_PromiseState(ctx, v)) {
		case JS_PROMISE_REJECTED: {
			JSValue r = JS_PromiseResult(ctx, v);
			plain_render(ctx, r, out);
			JS_FreeValue(ctx, r);
			st = BRIDGE_THROWN;
			break;
		}
		case JS_PROMISE_PENDING:
			st = BRIDGE_STALLED;
			break;
		default:
			break;
		}
	}
	JS_FreeValue(ctx, v);
cleanup:
	if (ctx) {
		JS_FreeValue(ctx, global);
		JS_FreeContext(ctx);
	}
	JS_FreeRuntime(rt);
	if (p.logs.p) {
		out->logs = p.logs.p; /* one '\n'-terminated line per print, not records */
		out->logs_size = p.logs.len;
	}
	return out->status = st;
}
