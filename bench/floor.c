/* floor.c: see floor.h. */
#include "floor.h"
#include "quickjs_api.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* JS_NewContext is stock QuickJS-ng but not part of codemode's subset. */
JSContext *JS_NewContext(JSRuntime *rt);

enum { MEMORY = 32 << 20, STACK = 512 << 10 };

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int on_interrupt(JSRuntime *rt, void *opaque)
{
	(void)rt;
	return now_ns() >= *(int64_t *)opaque;
}

static JSValue hcall(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	int32_t i = 0;
	if (argc > 0 && JS_ToInt32(ctx, &i, argv[0]))
		return JS_EXCEPTION;
	return JS_NewInt32(ctx, i + 1);
}

typedef struct {
	JSRuntime *rt;
	JSContext *ctx;
	int64_t deadline;
} sandbox;

static int open_sandbox_for(sandbox *s, int host, int64_t budget_ns)
{
	s->rt = JS_NewRuntime();
	if (!s->rt)
		return -1;
	JS_SetMemoryLimit(s->rt, MEMORY);
	JS_SetMaxStackSize(s->rt, STACK);
	s->deadline = now_ns() + budget_ns;
	JS_SetInterruptHandler(s->rt, on_interrupt, &s->deadline);
	s->ctx = JS_NewContext(s->rt);
	if (!s->ctx)
		return -1;
	if (host) {
		JSValue g = JS_GetGlobalObject(s->ctx);
		JS_SetPropertyStr(s->ctx, g, "hcall", JS_NewCFunction2(s->ctx, hcall, "hcall", 1, JS_CFUNC_generic, 0));
		JS_FreeValue(s->ctx, g);
	}
	return 0;
}

static int open_sandbox(sandbox *s, int host) { return open_sandbox_for(s, host, 1000000000LL); }

/* Stringifies v (taking it), copies the JSON out, frees the sandbox. */
static int64_t finish(sandbox *s, JSValue v, char *out, size_t cap)
{
	int64_t n = -1;
	if (!JS_IsException(v)) {
		JSValue json = JS_JSONStringify(s->ctx, v, JS_UNDEFINED, JS_UNDEFINED);
		size_t len;
		const char *p = JS_IsString(json) ? JS_ToCStringLen(s->ctx, &len, json) : NULL;
		if (p) {
			n = (int64_t)len;
			memcpy(out, p, len < cap ? len : cap);
			JS_FreeCString(s->ctx, p);
		}
		JS_FreeValue(s->ctx, json);
	}
	if (JS_HasException(s->ctx))
		JS_FreeValue(s->ctx, JS_GetException(s->ctx));
	JS_FreeValue(s->ctx, v);
	JS_FreeContext(s->ctx);
	JS_FreeRuntime(s->rt);
	return n;
}

int64_t floor_run(const char *src, size_t len, int host, char *out, size_t cap)
{
	sandbox s;
	if (open_sandbox(&s, host))
		return -1;
	JSValue v = JS_Eval(s.ctx, src, len, "floor.js", JS_EVAL_TYPE_GLOBAL);
	return finish(&s, v, out, cap);
}

uint8_t *floor_compile(const char *src, size_t len, size_t *n)
{
	sandbox s;
	if (open_sandbox(&s, 0))
		return NULL;
	uint8_t *res = NULL;
	JSValue fn = JS_Eval(s.ctx, src, len, "floor.js", JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_COMPILE_ONLY);
	if (!JS_IsException(fn)) {
		uint8_t *bc = JS_WriteObject(s.ctx, n, fn, JS_WRITE_OBJ_BYTECODE);
		if (bc && (res = malloc(*n)))
			memcpy(res, bc, *n);
		if (bc)
			js_free(s.ctx, bc);
	}
	finish(&s, fn, NULL, 0);
	return res;
}

int64_t floor_run_bytecode(const uint8_t *bc, size_t n, char *out, size_t cap)
{
	sandbox s;
	if (open_sandbox(&s, 0))
		return -1;
	JSValue fn = JS_ReadObject(s.ctx, bc, n, JS_READ_OBJ_BYTECODE);
	JSValue v = JS_IsException(fn) ? fn : JS_EvalFunction(s.ctx, fn);
	return finish(&s, v, out, cap);
}

void floor_free(void *p) { free(p); }

int floor_spin(int64_t budget_ns)
{
	sandbox s;
	if (open_sandbox_for(&s, 0, budget_ns))
		return -1;
	static const char src[] = "for (;;) {}";
	JSValue v = JS_Eval(s.ctx, src, sizeof(src) - 1, "floor.js", JS_EVAL_TYPE_GLOBAL);
	int stopped = JS_IsException(v);
	finish(&s, v, NULL, 0);
	return stopped ? 0 : -1;
}
