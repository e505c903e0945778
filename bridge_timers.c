/*
 * bridge_timers.c: the event loop's queues.
 *
 * Owns setTimeout/setInterval and their clear functions, the firing of due
 * timers (an uncaught exception in a callback becomes a log line), and
 * drain_jobs, which runs queued promise jobs until none is runnable or a
 * kill fires.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bridge_internal.h"

#include <stdlib.h>

/* ---------------------------------------------------------------------- */
/* Timers: setTimeout/setInterval and their clear functions. They fire from
 * the event loop (bridge_slot_step), never after the run has settled. */

void timer_free(JSContext *ctx, js_timer *t)
{
	JS_FreeValue(ctx, t->fn);
	for (int i = 0; i < t->argc; i++)
		JS_FreeValue(ctx, t->argv[i]);
	js_free(ctx, t->argv);
	t->argv = NULL;
	t->argc = 0;
}

static JSValue js_set_timer(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int repeat)
{
	(void)this_val;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	s->effects++;
	const char *name = repeat ? "setInterval" : "setTimeout";
	if (argc < 1 || !JS_IsFunction(ctx, argv[0]))
		return JS_ThrowTypeError(ctx, "%s expects a function", name);
	double ms = 0;
	if (argc > 1 && JS_ToFloat64(ctx, &ms, argv[1]))
		return JS_EXCEPTION;
	if (!(ms >= 0)) /* negative or NaN */
		ms = 0;
	if (ms > 2147483647.0)
		ms = 2147483647.0;
	if (s->ntimers >= MAX_TIMERS)
		return JS_ThrowRangeError(ctx, "%s: too many timers (%d)", name, MAX_TIMERS);
	if (!grow_array(ctx, (void **)&s->timers, &s->timers_cap, s->ntimers, sizeof(*s->timers)))
		return JS_EXCEPTION;
	int extra = argc > 2 ? argc - 2 : 0;
	JSValue *args = NULL;
	if (extra > 0 && !(args = js_malloc(ctx, extra * sizeof(JSValue))))
		return JS_EXCEPTION;
	for (int i = 0; i < extra; i++)
		args[i] = JS_DupValue(ctx, argv[i + 2]);
	int64_t delay = (int64_t)(ms * 1e6);
	js_timer *t = &s->timers[s->ntimers++];
	*t = (js_timer){
		.due = now_ns() + delay,
		.interval = repeat ? (delay > 0 ? delay : 1) : -1,
		.seq = ++s->timer_seq,
		.id = ++s->timer_ids,
		.argc = extra,
		.fn = JS_DupValue(ctx, argv[0]),
		.argv = args,
	};
	return JS_NewInt32(ctx, t->id);
}

static JSValue js_clear_timer(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int magic)
{
	(void)this_val;
	(void)magic;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	if (argc < 1 || !JS_IsNumber(argv[0]))
		return JS_UNDEFINED;
	int32_t id;
	if (JS_ToInt32(ctx, &id, argv[0]))
		return JS_EXCEPTION;
	for (uint32_t i = 0; i < s->ntimers; i++) {
		if (s->timers[i].id == id) {
			timer_free(ctx, &s->timers[i]);
			s->timers[i] = s->timers[--s->ntimers];
			break;
		}
	}
	return JS_UNDEFINED;
}

int install_timers(JSContext *ctx)
{
	static const struct {
		const char *name;
		JSCFunctionMagic *fn;
		int magic, length;
	} defs[] = {
		{"setTimeout", js_set_timer, 0, 2},
		{"setInterval", js_set_timer, 1, 2},
		{"clearTimeout", js_clear_timer, 0, 1},
		{"clearInterval", js_clear_timer, 1, 1},
	};
	JSValue global = JS_GetGlobalObject(ctx);
	int rc = 0;
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]) && rc == 0; i++) {
		JSValue f = JS_NewCFunctionMagic(ctx, defs[i].fn, defs[i].name, defs[i].length, JS_CFUNC_generic_magic,
		                                 defs[i].magic);
		if (JS_IsException(f) ||
		    JS_DefinePropertyValueStr(ctx, global, defs[i].name, f, JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0)
			rc = -1;
	}
	JS_FreeValue(ctx, global);
	return rc;
}

/* The timer due first (ties: the one set first), or -1. */
int earliest_timer(bridge_slot *s)
{
	int best = -1;
	for (uint32_t i = 0; i < s->ntimers; i++) {
		js_timer *t = &s->timers[i];
		if (best < 0 || t->due < s->timers[best].due ||
		    (t->due == s->timers[best].due && t->seq < s->timers[best].seq))
			best = (int)i;
	}
	return best;
}

static void log_uncaught(bridge_slot *s);

/* Fires, in order, the timers due at entry, each followed by its jobs. An
 * interval re-armed meanwhile waits for the next step. */
void fire_timers(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	int64_t now = now_ns();
	while (!s->killed) {
		int i = earliest_timer(s);
		if (i < 0 || s->timers[i].due > now)
			return;
		js_timer t = s->timers[i];
		if (t.interval < 0) {
			s->timers[i] = s->timers[--s->ntimers]; /* t now owns the values */
		} else {
			s->timers[i].due = now_ns() + t.interval;
			s->timers[i].seq = ++s->timer_seq;
			JSValue *args = t.argc ? js_malloc(ctx, t.argc * sizeof(JSValue)) : NULL;
			if (t.argc && !args)
				return;
			for (int k = 0; k < t.argc; k++)
				args[k] = JS_DupValue(ctx, t.argv[k]);
			t.fn = JS_DupValue(ctx, t.fn);
			t.argv = args;
		}
		JSValue r = JS_Call(ctx, t.fn, JS_UNDEFINED, t.argc, t.argv);
		if (JS_IsException(r))
			log_uncaught(s);
		JS_FreeValue(ctx, r);
		timer_free(ctx, &t);
		drain_jobs(s);
	}
}

/* Logs the pending exception of a timer callback as an "[error] Uncaught"
 * line; a kill propagates instead. */
static void log_uncaught(bridge_slot *s)
{
	JSValue exc = JS_GetException(s->ctx);
	if (!s->killed) {
		strbuf b = {.limit = s->logs_limit};
		sb_puts(&b, "[error] ");
		if (JS_IsError(exc))
			sb_puts(&b, "Uncaught ");
		render_thrown(s, exc, &b);
		if (!s->killed)
			logs_append(s, b.p ? b.p : "", b.len);
		free(b.p);
	}
	JS_FreeValue(s->ctx, exc);
}

/* ---------------------------------------------------------------------- */
/* Jobs: the promise reactions queued between timers and host calls. */

/* Runs queued jobs (promise reactions) until none is runnable or a kill
 * fires; a job flood that never reaches an engine poll is still bounded by
 * the clock check every 128 jobs. */
void drain_jobs(bridge_slot *s)
{
	JSContext *jctx;
	for (uint32_t i = 1; !s->killed; i++) {
		if ((i & 127) == 0 && check_kill(s))
			return;
		int r = JS_ExecutePendingJob(s->rt, &jctx);
		if (r == 0)
			return;
		if (r < 0)
			JS_FreeValue(jctx, JS_GetException(jctx));
	}
}
