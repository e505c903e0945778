/*
 * bridge_clock.c: determinism.
 *
 * Owns the virtual clock of a run with bridge_config.det_clock: the Date
 * put in front of the engine's, reading the slot's ticks.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bridge_internal.h"

/* ---------------------------------------------------------------------- */
/* Determinism (bridge_config.det_clock): the run's clock is virtual. It
 * starts at det_start_ns (wall time) and advances 1 us per read, shared by
 * Date and performance.now (which starts at 0), so two runs that read it
 * alike see the same values and a loop waiting on it still ends. The
 * engine's Date reads the machine's clock, so the run gets a Date in front
 * of it whose clock is this one; the sandbox is the run's own. */

/* The Date in front of the engine's is js/clock.js, whose bytecode the
 * host compiles once (its parse is most of a deterministic run's start). */

static JSValue js_det_now(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	(void)argc;
	(void)argv;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	s->effects++;
	int64_t us = s->det_start_ns / 1000 + (int64_t)(s->det_ticks++);
	return JS_NewFloat64(ctx, (double)(us / 1000));
}

int det_install(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	if (!s->det_bc)
		return -1;
	JSValue fn = JS_ReadObject(ctx, s->det_bc, s->det_bc_len, JS_READ_OBJ_BYTECODE);
	JSValue f = JS_IsException(fn) ? fn : JS_EvalFunction(ctx, fn);
	JSValue now = JS_NewCFunction2(ctx, js_det_now, "now", 0, JS_CFUNC_generic, 0);
	JSValue r = JS_IsException(f) || JS_IsException(now) ? JS_EXCEPTION : JS_Call(ctx, f, JS_UNDEFINED, 1, &now);
	int rc = JS_IsException(r) ? -1 : 0;
	JS_FreeValue(ctx, r);
	JS_FreeValue(ctx, now);
	JS_FreeValue(ctx, f);
	return rc;
}
