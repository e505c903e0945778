/*
 * bridge_console.c: console and Math.random.
 *
 * Owns the slot's console records (console.log and its siblings, and
 * logs_append for other writers of a line) and the run's random number
 * generator behind Math.random, seeded per run from the host (rng_next,
 * which crypto shares, is bridge_internal.h's).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bridge_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* console: log, info, warn, error, debug append one line each to the
 * slot's records, bounded by logs_limit; past it lines are only counted. */

static const char *const console_names[] = {"log", "info", "warn", "error", "debug"};
static const char *const console_prefix[] = {"", "[info] ", "[warn] ", "[error] ", "[debug] "};

void logs_append(bridge_slot *s, const char *p, size_t n)
{
	if (n >= s->logs_limit || s->logs_used > s->logs_limit - n - 1) {
		s->logs_dropped++;
		return;
	}
	size_t need = s->logs_len + sizeof(uint32_t) + n;
	if (need > s->logs_cap) {
		size_t cap = s->logs_cap ? s->logs_cap : 256;
		while (cap < need)
			cap *= 2;
		char *q = realloc(s->logs, cap);
		if (!q) {
			s->logs_dropped++;
			return;
		}
		s->logs = q;
		s->logs_cap = cap;
	}
	uint32_t len = (uint32_t)n;
	memcpy(s->logs + s->logs_len, &len, sizeof(len));
	memcpy(s->logs + s->logs_len + sizeof(len), p, n);
	s->logs_len = need;
	s->logs_used += n + 1;
}

static JSValue js_console(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int level)
{
	(void)this_val;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	s->effects++;
	if (s->logs_used >= s->logs_limit) {
		s->logs_dropped++;
		return JS_UNDEFINED;
	}
	strbuf line = {.limit = s->logs_limit};
	sb_puts(&line, console_prefix[level]);
	for (int i = 0; i < argc && !line.overflow; i++) {
		if (i > 0)
			sb_puts(&line, " ");
		if (describe(s, argv[i], &line) < 0) {
			free(line.p);
			return JS_EXCEPTION;
		}
	}
	if (line.overflow)
		s->logs_dropped++;
	else
		logs_append(s, line.p ? line.p : "", line.len);
	free(line.p);
	return JS_UNDEFINED;
}

/* Math.random: the run's generator's top 53 bits. */
static JSValue js_random(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	(void)argc;
	(void)argv;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	return JS_NewFloat64(ctx, (double)(rng_next(s) >> 11) * 0x1.0p-53);
}

int install_random(JSContext *ctx)
{
	JSValue global = JS_GetGlobalObject(ctx);
	JSValue math = JS_GetPropertyStr(ctx, global, "Math");
	JSValue f = JS_NewCFunction2(ctx, js_random, "random", 0, JS_CFUNC_generic, 0);
	int rc = JS_IsException(math) || JS_IsException(f) ? -1 : 0;
	if (rc == 0)
		rc = JS_DefinePropertyValueStr(ctx, math, "random", f, JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0 ? -1 : 0;
	else
		JS_FreeValue(ctx, f);
	JS_FreeValue(ctx, math);
	JS_FreeValue(ctx, global);
	return rc;
}

int install_console(JSContext *ctx)
{
	JSValue con = JS_NewObject(ctx);
	if (JS_IsException(con))
		return -1;
	for (int i = 0; i < (int)(sizeof(console_names) / sizeof(console_names[0])); i++) {
		JSValue f = JS_NewCFunctionMagic(ctx, js_console, console_names[i], 0, JS_CFUNC_generic_magic, i);
		if (JS_IsException(f) || JS_DefinePropertyValueStr(ctx, con, console_names[i], f, JS_PROP_C_W_E) < 0) {
			JS_FreeValue(ctx, con);
			return -1;
		}
	}
	JSValue global = JS_GetGlobalObject(ctx);
	int rc = JS_DefinePropertyValueStr(ctx, global, "console", con, JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
	JS_FreeValue(ctx, global);
	return rc < 0 ? -1 : 0;
}
