/*
 * bridge_check.c: the engine's parser as a syntax check.
 *
 * Before codemode's Go side reads a large source with a parser that has no
 * depth limit of its own (goja's, for positions), the engine's parser,
 * which checks its stack and stops at the first error, says whether the
 * source is valid: a valid source leads that parser into no error
 * recovery, whose recursion nothing bounds. The check runs in a runtime of
 * its own, made and freed for it, with a memory and a stack limit; nothing
 * is evaluated.
 */
#include "bridge_internal.h"

int32_t bridge_syntax_ok(const char *src, size_t len, uint64_t stack, uint64_t memory)
{
	JSRuntime *rt = JS_NewRuntime();
	if (!rt)
		return 0;
	JS_SetMemoryLimit(rt, memory);
	JS_SetMaxStackSize(rt, stack);
	JS_UpdateStackTop(rt);
	int32_t ok = 0;
	JSContext *ctx = JS_NewContextRaw(rt);
	/* The compiler is the Eval intrinsic's; regular expression literals
	 * compile with the RegExp one's. */
	if (ctx && JS_AddIntrinsicBaseObjects(ctx) == 0 && JS_AddIntrinsicEval(ctx) == 0 && JS_AddIntrinsicRegExp(ctx) == 0) {
		JSValue fn = JS_Eval(ctx, src, len, "<check>", JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_COMPILE_ONLY);
		ok = !JS_IsException(fn);
		JS_FreeValue(ctx, fn);
		if (!ok)
			JS_FreeValue(ctx, JS_GetException(ctx));
	}
	if (ctx)
		JS_FreeContext(ctx);
	JS_FreeRuntime(rt);
	return ok;
}
