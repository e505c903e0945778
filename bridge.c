/*
 * bridge.c: the unit that implements bridge.h's seam: a run from start
 * to outcome, and the slot's entry points.
 *
 * Owns what a run executes (a global script, an Execute program, a tool's
 * call, a registration), how it advances and what it reports (a result, a
 * thrown value, a kill), its logs' handing over, the retained sandbox's
 * invocations, compiling to bytecode, and the bridge_slot_* entry points
 * the other units do not own.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bridge_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static inline size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* ---------------------------------------------------------------------- */
/* Outcomes: what a run reports (a result, a thrown value, a kill), how
 * it advances through its jobs and timers, and how it ends. */

/* Reports a thrown value: a marked capability failure (however it got
 * here: thrown at the call site, caught and rethrown, or a rejection) is
 * BRIDGE_CAPABILITY; anything else is rendered (BRIDGE_THROWN). With
 * attribute false it is always rendered. */
static int32_t emit_thrown(bridge_slot *s, JSValueConst exc, bool attribute, bridge_out *out)
{
	if (s->killed)
		return s->killed;
	if (attribute && capability_of(s, exc, out))
		return BRIDGE_CAPABILITY;
	strbuf b = {0};
	render_thrown(s, exc, &b);
	if (s->killed) {
		free(b.p);
		return s->killed;
	}
	out->data = b.p;
	out->size = b.len;
	return BRIDGE_THROWN;
}

/* Takes the pending exception and reports it. */
static int32_t emit_exception(bridge_slot *s, bool attribute, bridge_out *out)
{
	JSValue exc = JS_GetException(s->ctx);
	int32_t st = emit_thrown(s, exc, attribute, out);
	JS_FreeValue(s->ctx, exc);
	return st;
}

/* The result's JSON: JSON.stringify, or for Execute programs the codec. */
static int32_t emit_result(bridge_slot *s, JSValueConst val, bridge_out *out)
{
	size_t n;
	int r = json_text(s, val, s->payload, s->codec ? JSON_CODEC : JSON_BINARY, &n);
	int32_t st = BRIDGE_DONE;
	if (s->killed) {
		if (r == JSON_THREW)
			JS_FreeValue(s->ctx, JS_GetException(s->ctx));
		st = s->killed;
	} else if (r == JSON_THREW) {
		st = emit_exception(s, true, out);
	} else if (r == JSON_TOO_LARGE) {
		out->size = n;
		st = BRIDGE_TOO_LARGE;
	} else {
		const char *text = r == JSON_TEXT ? s->json.p : "null"; /* none: undefined, a function, a symbol */
		out->size = r == JSON_TEXT ? n : 4;
		if ((out->data = malloc(out->size + 1)) != NULL)
			memcpy(out->data, text, out->size + 1);
		else
			st = BRIDGE_INTERNAL;
	}
	json_scratch_trim(s);
	return st;
}

/* Runs jobs, then reports where the program stands. A kill that fired
 * meanwhile wins, and so does a cancel or the deadline that no engine poll
 * saw yet: the run's outcome is the kill whatever the script did since. */
static int32_t advance(bridge_slot *s, bridge_out *out)
{
	drain_jobs(s);
	if (check_kill(s))
		return s->killed;
	JSValue r;
	int32_t st;
	switch (JS_PromiseState(s->ctx, s->program)) {
	case JS_PROMISE_FULFILLED:
		r = JS_PromiseResult(s->ctx, s->program);
		st = emit_result(s, r, out);
		JS_FreeValue(s->ctx, r);
		return st;
	case JS_PROMISE_REJECTED:
		r = JS_PromiseResult(s->ctx, s->program);
		st = emit_thrown(s, r, true, out);
		JS_FreeValue(s->ctx, r);
		return st;
	case JS_PROMISE_PENDING:
		return s->pending_calls > 0 || s->ntimers > 0 ? BRIDGE_PENDING : BRIDGE_STALLED;
	default: /* not a promise: the value itself */
		return emit_result(s, s->program, out);
	}
}

static void hand_over_logs(bridge_slot *s, bridge_out *out)
{
	out->logs = s->logs;
	out->logs_size = s->logs_len;
	out->logs_dropped = s->logs_dropped;
	s->logs = NULL;
	s->logs_len = s->logs_cap = s->logs_used = 0;
	s->logs_dropped = 0;
}

static void finish(bridge_slot *s, bridge_out *out)
{
	sandbox_close(s);
	out->charged = s->charged;
	hand_over_logs(s, out);
}

int64_t bridge_slot_wait(bridge_slot *s)
{
	int i = s->open ? earliest_timer(s) : -1;
	if (i < 0)
		return -1;
	int64_t d = s->timers[i].due - now_ns();
	return d > 0 ? d : 0;
}

int32_t bridge_slot_alive(bridge_slot *s) { return s->open; }

int32_t bridge_slot_zero_above(bridge_slot *s)
{
	if (!s->ar)
		return 1;
	size_t from = s->ar->hwm > s->dirty_end ? s->ar->hwm : s->dirty_end;
	for (const uint8_t *p = (const uint8_t *)s->ar + from, *end = (const uint8_t *)s->ar + s->touched; p < end; p++)
		if (*p)
			return 0;
	return 1;
}

size_t bridge_slot_image_size(bridge_slot *s, int32_t kind)
{
	if (kind < 0 || kind >= NIMAGES)
		return 0;
	const slot_image *im = &s->images[kind];
	return im->bytes ? im->len : 0;
}

static bool is_kill(int32_t st)
{
	return st == BRIDGE_TIMEOUT || st == BRIDGE_CANCELED || st == BRIDGE_MEMORY || st == BRIDGE_BUDGET ||
	       st == BRIDGE_INTERNAL;
}

/* Ends the run unless it waits on host work or is retained, in which case
 * out says how long until the next timer. */
static int32_t conclude(bridge_slot *s, int32_t st, bridge_out *out)
{
	out->wait_ns = -1;
	out->peak_heap = s->heap_peak;
	if ((s->retained && !is_kill(st) && s->open) || st == BRIDGE_PENDING) {
		out->wait_ns = bridge_slot_wait(s);
	} else if (s->session_run && s->open) {
		session_end(s, st == BRIDGE_DONE);
		out->charged = s->charged;
		hand_over_logs(s, out);
	} else {
		finish(s, out);
	}
	out->status = st;
	return st;
}

/* Concludes a step of the main run; a retained run that settled keeps its
 * sandbox and hands over the logs so far. */
static int32_t settle_run(bridge_slot *s, int32_t st, bridge_out *out)
{
	if (s->retain && st != BRIDGE_PENDING && !is_kill(st) && s->open)
		s->retained = true;
	st = conclude(s, st, out);
	if (s->retained)
		hand_over_logs(s, out);
	return st;
}

/* Serializes a compiled function for the bytecode cache, in libc memory,
 * or NULL. The cache lives in this process and only ever holds what this
 * function wrote, so its reads skip the engine's checksum (a pass over
 * the whole buffer per read, an eighth of a large tool's call): the
 * version byte is followed by the u32 checksum, and UINT32_MAX there is
 * the engine's documented "do not verify". */
static uint8_t *write_bytecode(JSContext *ctx, JSValueConst fn, size_t *len, int flags)
{
	size_t n = 0;
	uint8_t *bc = JS_WriteObject(ctx, &n, fn, JS_WRITE_OBJ_BYTECODE | flags);
	if (!bc)
		return NULL;
	uint8_t *copy = n >= 5 ? malloc(n) : NULL;
	if (copy) {
		memcpy(copy, bc, n);
		memset(copy + 1, 0xff, 4);
		*len = n;
	}
	js_free(ctx, bc);
	return copy;
}

/* A compiled unit: read from its cached bytecode, or compiled from src
 * (and, with want, its fresh bytecode written to *out_bc). */
static JSValue compile_unit(JSContext *ctx, const uint8_t *bc, size_t bc_len, const char *src, size_t len,
                            const char *filename, bool want, uint8_t **out_bc, size_t *out_len)
{
	if (bc)
		return JS_ReadObject(ctx, bc, bc_len, JS_READ_OBJ_BYTECODE);
	JSEvalOptions opts = {
		.version = JS_EVAL_OPTIONS_VERSION,
		.eval_flags = JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_COMPILE_ONLY,
		.filename = filename,
		.line_num = 1, /* the wrappers share the first line with the user's source */
	};
	JSValue fn = JS_Eval2(ctx, src, len, &opts);
	if (!JS_IsException(fn) && want && !(*out_bc = write_bytecode(ctx, fn, out_len, 0)) && JS_HasException(ctx))
		JS_FreeValue(ctx, JS_GetException(ctx));
	return fn;
}

/* Compiles src in the sandbox (or reads its cached bytecode) and evaluates
 * it: the completion value. With want_bc, fresh bytecode goes to out. */
static JSValue load_source(bridge_slot *s, const bridge_config *cfg, const char *src, size_t len, bridge_out *out)
{
	JSContext *ctx = s->ctx;
	JSValue fn = compile_unit(ctx, cfg->bc, cfg->bc_len, src, len, cfg->filename, cfg->want_bc, &out->bc, &out->bc_len);
	if (JS_IsException(fn)) {
		s->syntax = !s->killed;
		return fn;
	}
	JS_FreeValue(ctx, s->unit);
	s->unit = JS_DupValue(ctx, fn); /* released with the sandbox: see sandbox_close */
	return JS_EvalFunction(ctx, fn);
}

/* Chains an entry whose provider scope awaited: (p, program) => the
 * program's promise once the scope's inner function is there. */
static const char entry_chain[] = "(p, g) => p.then((f) => f(g))";

/* The entry's inner function: from the unit image, or the entry read (or
 * compiled) and called with the runtime; its provider scope settles at
 * once unless it awaits, and then *pending is its promise. */
static JSValue entry_function(bridge_slot *s, const bridge_config *cfg, bridge_out *out, JSValue *pending)
{
	JSContext *ctx = s->ctx;
	*pending = JS_UNDEFINED;
	if (s->from_unit)
		return JS_DupValue(ctx, s->unitfn);
	if (JS_IsUndefined(s->rtobj)) { /* a snapshot's image holds it already */
		s->rtobj = load_runtime(s, cfg);
		if (JS_IsException(s->rtobj)) {
			s->rtobj = JS_UNDEFINED;
			return JS_EXCEPTION;
		}
	}
	bool want = unit_begin(s, cfg);
	JSValue entry = compile_unit(ctx, cfg->entry_bc, cfg->entry_bc_len, cfg->entry, cfg->entry_len,
	                             "<codemode:entry>", cfg->want_entry_bc, &out->entry_bc, &out->entry_bc_len);
	if (!JS_IsException(entry))
		entry = JS_EvalFunction(ctx, entry);
	JSValue p = JS_EXCEPTION;
	if (!JS_IsException(entry)) {
		p = JS_Call(ctx, entry, JS_UNDEFINED, 1, &s->rtobj);
		JS_FreeValue(ctx, entry);
	}
	JSValue fn = JS_UNDEFINED;
	if (!JS_IsException(p) && JS_PromiseState(ctx, p) == JS_PROMISE_FULFILLED) {
		fn = JS_PromiseResult(ctx, p);
		JS_FreeValue(ctx, p);
	} else if (!JS_IsException(p)) {
		*pending = p;
	}
	unit_end(s, cfg, want, fn);
	return JS_IsException(p) ? JS_EXCEPTION : fn;
}

/* Starts an Execute program: the entry's inner function (the provider
 * scope), then the program unit, then inner(program) is the program's
 * promise. */
static JSValue start_execute(bridge_slot *s, const bridge_config *cfg, const char *src, size_t len, bridge_out *out)
{
	JSContext *ctx = s->ctx;
	JSValue pending;
	JSValue inner = entry_function(s, cfg, out, &pending);
	if (JS_IsException(inner))
		return inner;
	JSValue program = load_source(s, cfg, src, len, out);
	if (JS_IsException(program)) {
		JS_FreeValue(ctx, inner);
		JS_FreeValue(ctx, pending);
		return program;
	}
	JSValue p;
	if (JS_IsUndefined(pending)) {
		p = JS_Call(ctx, inner, JS_UNDEFINED, 1, &program);
	} else {
		JSValue chain = eval_source(s, entry_chain, sizeof(entry_chain) - 1, "<codemode:entry>");
		JSValue args[2] = {pending, program};
		p = JS_IsException(chain) ? chain : JS_Call(ctx, chain, JS_UNDEFINED, 2, args);
		JS_FreeValue(ctx, chain);
		JS_FreeValue(ctx, pending);
	}
	JS_FreeValue(ctx, inner);
	JS_FreeValue(ctx, program);
	return p;
}

/* Calls a tool module's function with the run's argument JSON. */
static JSValue start_tool(bridge_slot *s, const bridge_config *cfg, const char *src, size_t len, bridge_out *out)
{
	JSContext *ctx = s->ctx;
	JSValue fn;
	if (s->from_unit) {
		fn = JS_DupValue(ctx, s->unitfn);
	} else {
		bool want = unit_begin(s, cfg);
		fn = load_source(s, cfg, src, len, out);
		unit_end(s, cfg, want, fn);
	}
	if (JS_IsException(fn))
		return fn;
	if (!JS_IsFunction(ctx, fn)) {
		JS_FreeValue(ctx, fn);
		return JS_ThrowTypeError(ctx, "the tool did not evaluate to a function");
	}
	JSValue args = JS_ParseJSON(ctx, cfg->args, cfg->args_len, "<arguments>");
	if (JS_IsException(args)) {
		JS_FreeValue(ctx, fn);
		s->bad_args = true; /* what the engine refuses is the caller's to fix */
		return args;
	}
	JSValue r = JS_Call(ctx, fn, JS_UNDEFINED, 1, &args);
	JS_FreeValue(ctx, args);
	s->tool = fn; /* released with the sandbox: see sandbox_close */
	return r;
}

/* typeof v, in the language's vocabulary. */
static const char *type_of(JSContext *ctx, JSValueConst v)
{
	if (JS_IsFunction(ctx, v))
		return "function";
	switch (JS_VALUE_GET_TAG(v)) {
	case JS_TAG_UNDEFINED:
		return "undefined";
	case JS_TAG_BOOL:
		return "boolean";
	case JS_TAG_INT:
	case JS_TAG_FLOAT64:
		return "number";
	case JS_TAG_STRING:
	case JS_TAG_STRING_ROPE:
		return "string";
	case JS_TAG_SYMBOL:
		return "symbol";
	case JS_TAG_BIG_INT:
	case JS_TAG_SHORT_BIG_INT:
		return "bigint";
	default:
		return "object";
	}
}

/* The self-test's verdict: it runs as a script with top-level await; its
 * completion value (awaited if a promise) fails it when exactly false. */
static const char selftest_verdict[] = "(p) => p.then((r) => r.value).then((v) => v !== false)";

/* Registration: the module must evaluate to a function; then the global
 * `tool` is that function and the self-test, if any, is the program. A
 * parse error or a throw while evaluating is BRIDGE_COMPILE; a value that
 * is not a function is BRIDGE_NOT_FUNCTION (data: its typeof). */
static int32_t start_register(bridge_slot *s, const bridge_config *cfg, const char *src, size_t len, bridge_out *out)
{
	JSContext *ctx = s->ctx;
	JSValue fn = load_source(s, cfg, src, len, out);
	if (JS_IsException(fn)) {
		if (s->killed)
			return s->killed;
		int32_t st = emit_exception(s, false, out);
		return st == BRIDGE_THROWN ? BRIDGE_COMPILE : st;
	}
	if (!JS_IsFunction(ctx, fn)) {
		out->data = dup_text(type_of(ctx, fn), &out->size);
		JS_FreeValue(ctx, fn);
		return BRIDGE_NOT_FUNCTION;
	}
	if (!cfg->selftest) {
		JS_FreeValue(ctx, fn);
		out->data = dup_text("true", &out->size);
		return BRIDGE_DONE;
	}
	JSValue global = JS_GetGlobalObject(ctx);
	int rc = JS_SetPropertyStr(ctx, global, "tool", fn);
	JS_FreeValue(ctx, global);
	if (rc < 0)
		return s->killed ? s->killed : emit_exception(s, true, out);
	JSEvalOptions opts = {
		.version = JS_EVAL_OPTIONS_VERSION,
		.eval_flags = JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_ASYNC | JS_EVAL_FLAG_COMPILE_ONLY,
		.filename = "selftest.js",
		.line_num = 1,
	};
	JSValue p = JS_Eval2(ctx, cfg->selftest, cfg->selftest_len, &opts);
	if (JS_IsException(p)) {
		s->syntax = !s->killed; /* placed by the self-test's own map */
		return s->killed ? s->killed : emit_exception(s, true, out);
	}
	p = JS_EvalFunction(ctx, p);
	if (JS_IsException(p))
		return s->killed ? s->killed : emit_exception(s, true, out);
	JSValue verdict = eval_source(s, selftest_verdict, sizeof(selftest_verdict) - 1, "<codemode:selftest>");
	if (JS_IsException(verdict)) {
		JS_FreeValue(ctx, p);
		return s->killed ? s->killed : emit_exception(s, true, out);
	}
	s->program = JS_Call(ctx, verdict, JS_UNDEFINED, 1, &p);
	JS_FreeValue(ctx, verdict);
	JS_FreeValue(ctx, p);
	if (JS_IsException(s->program)) {
		s->program = JS_UNDEFINED;
		return s->killed ? s->killed : emit_exception(s, true, out);
	}
	return advance(s, out);
}

/* A script's completion value is its program, awaited (BRIDGE_MODE_SCRIPT):
 * the async wrapper's promise or, for a body with no await (wrapped in a
 * plain function, cfg->sync_body: see wrapScript in source.go), the
 * body's own value or throw. For the latter, what the async function
 * would have done with it is done here, so the two wrappers have one
 * outcome: a thenable value (a promise too: its then may be its own) is
 * adopted through a promise, and a thrown value is reported after the
 * jobs queued before the throw have run, as a rejection is. */

/* Whether v may be a thenable: an object with "then" somewhere on its
 * prototype chain, or a proxy on it (which could answer anything). Reads
 * own-property descriptors only, so no getter and no trap runs; the
 * promise v is then resolved with looks "then" up itself, once, as an
 * async function's return does. */
static bool maybe_thenable(JSContext *ctx, JSValueConst v)
{
	JSAtom then = JS_NewAtom(ctx, "then");
	if (then == JS_ATOM_NULL) {
		JS_FreeValue(ctx, JS_GetException(ctx));
		return true;
	}
	bool maybe = false;
	JSValue o = JS_DupValue(ctx, v);
	for (int depth = 0; JS_IsObject(o) && !maybe; depth++) {
		/* A chain is finite (a cycle is refused when made); the bound
		 * stops the walk where looking up "then" would cost more. */
		if (JS_IsProxy(o) || depth >= 64 || JS_GetOwnProperty(ctx, NULL, o, then) != 0) {
			maybe = true;
			break;
		}
		JSValue proto = JS_GetPrototype(ctx, o);
		JS_FreeValue(ctx, o);
		o = proto;
	}
	JS_FreeValue(ctx, o);
	if (JS_HasException(ctx))
		JS_FreeValue(ctx, JS_GetException(ctx));
	JS_FreeAtom(ctx, then);
	return maybe;
}

/* The program of a script whose completion value is v (consumed): v, or a
 * promise resolved with it when it may be a thenable. */
static JSValue adopt_thenable(bridge_slot *s, JSValue v)
{
	JSContext *ctx = s->ctx;
	if (!JS_IsObject(v) || !maybe_thenable(ctx, v))
		return v; /* a promise is adopted too: its then may be its own */
	JSValue fns[2];
	JSValue p = JS_NewPromiseCapability(ctx, fns);
	if (!JS_IsException(p)) {
		JSValue r = JS_Call(ctx, fns[0], JS_UNDEFINED, 1, (JSValueConst *)&v);
		JS_FreeValue(ctx, fns[0]);
		JS_FreeValue(ctx, fns[1]);
		if (JS_IsException(r)) {
			JS_FreeValue(ctx, p);
			p = r;
		}
	}
	JS_FreeValue(ctx, v);
	return p;
}

/* A script's body threw (the exception is pending): the jobs queued
 * before the throw run, then the thrown value is the outcome. */
static int32_t script_threw(bridge_slot *s, bridge_out *out)
{
	JSValue exc = JS_GetException(s->ctx);
	drain_jobs(s);
	int32_t st = check_kill(s) ? s->killed : emit_thrown(s, exc, true, out);
	JS_FreeValue(s->ctx, exc);
	return st;
}

static int32_t slot_run(bridge_slot *s, const bridge_config *cfg, const char *src, size_t len, bridge_out *out)
{
	memset(out, 0, sizeof(*out));
	/* A session's run goes on in the session's sandbox when it has one. */
	bool cont = cfg->session && s->session && s->open;
	s->session_run = cfg->session != 0;
	s->ckpt_taken = false;
	s->killed = 0;
	s->run_id = cfg->run_id;
	s->run_start = now_ns();
	s->deadline = s->run_start + cfg->budget_ns;
	if (!cont)
		s->heap_used = 0;
	s->heap_limit = cfg->memory;
	s->payload = cfg->payload;
	s->logs_limit = cfg->logs;
	s->program = s->unit = s->tool = JS_UNDEFINED;
	s->marked = s->bad_args = s->syntax = false;
	s->at_site = s->settle_site = -1;
	s->guard_polys = JS_UNDEFINED;
	s->guards_bc = cfg->guards_bc;
	s->guards_bc_len = cfg->guards_bc_len;
	s->retain = cfg->retain != 0;
	s->codec = cfg->mode == BRIDGE_MODE_EXECUTE;
	s->rng[0] = cfg->seed[0];
	s->rng[1] = cfg->seed[1] ? cfg->seed[1] : 1;
	s->effects = 0;
	s->from_unit = false;
	s->unitfn = s->date_orig = JS_UNDEFINED;

	s->det = cfg->det_clock != 0;
	s->det_start_ns = cfg->det_start_ns;
	s->det_ticks = 0;
	s->det_bc = cfg->det_bc;
	s->det_bc_len = cfg->det_bc_len;
	s->det_ready = cont && s->session_det;

	/* Memory admission: the slot's charge covers what it holds and what
	 * a new sandbox takes to open, or the run waits (Go) and comes again. */
	size_t held;
	if (!mb_admit(s, &held)) {
		out->status = BRIDGE_BUDGET;
		out->unstarted = 1;
		return BRIDGE_BUDGET;
	}
	int32_t st;
	int opened = cont ? session_checkpoint(s) : open_run(s, cfg);
	s->session_opened = !cont && opened == 0 && cfg->session;
	if (opened == 0 && cfg->session)
		s->session = true;
	s->heap_peak = s->heap_used;
	if (s->mb && held == 0) {
		/* What a new slot holds once open (or as far as it got), so the
		 * next run that waits for room knows what it needs. */
		int64_t fp = (int64_t)slot_footprint(s), e = __atomic_load_n(&s->mb->entry, __ATOMIC_RELAXED);
		while (fp > e &&
		       !__atomic_compare_exchange_n(&s->mb->entry, &e, fp, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
	}
	if (opened == 0 && !mb_charge(s, 0)) {
		/* Whatever the open built, restored or cloned, charged. */
		slot_kill(s, BRIDGE_BUDGET);
		opened = -1;
	}
	if (opened == 0 && s->det && !s->det_ready) {
		JS_UpdateStackTop(s->rt);
		if (det_install(s) < 0) {
			if (JS_HasException(s->ctx))
				JS_FreeValue(s->ctx, JS_GetException(s->ctx));
			opened = -1;
		} else if (cfg->session) {
			s->session_det = true;
		}
	}
	if (opened < 0) {
		st = s->killed ? s->killed : BRIDGE_INTERNAL;
		out->unstarted = st == BRIDGE_BUDGET;
		out->data = dup_text(st == BRIDGE_BUDGET ? "cannot build a sandbox within the memory budget"
		                                         : "cannot build a sandbox within the memory limit",
		                     &out->size);
	} else {
		JS_UpdateStackTop(s->rt);
		if (cfg->mode == BRIDGE_MODE_REGISTER) {
			st = start_register(s, cfg, src, len, out);
			if (JS_HasException(s->ctx))
				JS_FreeValue(s->ctx, JS_GetException(s->ctx));
		} else {
			/* A session's run declares its top-level names first: a name
			 * an earlier run declared fails it here, before it runs. */
			JSValue v = cfg->prologue_len ? eval_source(s, cfg->prologue, cfg->prologue_len, "<session>") : JS_UNDEFINED;
			if (JS_IsException(v)) {
				/* as the run's own throw */
			} else {
				JS_FreeValue(s->ctx, v);
				v = cfg->mode == BRIDGE_MODE_EXECUTE ? start_execute(s, cfg, src, len, out)
				    : cfg->mode == BRIDGE_MODE_TOOL  ? start_tool(s, cfg, src, len, out)
				                                     : load_source(s, cfg, src, len, out);
			}
			bool sync_body = cfg->mode == BRIDGE_MODE_SCRIPT && cfg->sync_body;
			if (JS_IsException(v) && sync_body && !s->killed && !s->syntax) {
				st = script_threw(s, out);
			} else if (JS_IsException(v)) {
				st = s->killed ? s->killed : emit_exception(s, !s->bad_args, out);
				if (st == BRIDGE_THROWN && s->bad_args)
					st = BRIDGE_BAD_ARGS;
				if (s->killed && JS_HasException(s->ctx))
					JS_FreeValue(s->ctx, JS_GetException(s->ctx));
			} else {
				if (sync_body)
					v = adopt_thenable(s, v);
				if (cfg->mode == BRIDGE_MODE_GLOBAL) {
					JS_FreeValue(s->ctx, v); /* global code: its jobs run; its completion value is not the outcome */
					v = JS_UNDEFINED;
				}
				s->program = v;
				st = advance(s, out);
			}
		}
	}
	out->syntax = s->syntax;
	return settle_run(s, st, out);
}

int32_t bridge_slot_run(bridge_slot *s, const bridge_config *cfg, const char *src, size_t len, const uint8_t *bc,
                        size_t bc_len, const char *entry, size_t entry_len, const uint8_t *entry_bc,
                        size_t entry_bc_len, const char *args, size_t args_len, const char *selftest,
                        size_t selftest_len, const char *prologue, size_t prologue_len, bridge_out *out)
{
	bridge_config c = *cfg; /* the inputs live as long as this call */
	c.prologue = prologue;
	c.prologue_len = prologue_len;
	c.bc = bc;
	c.bc_len = bc_len;
	c.entry = entry;
	c.entry_len = entry_len;
	c.entry_bc = entry_bc;
	c.entry_bc_len = entry_bc_len;
	c.args = args;
	c.args_len = args_len;
	c.selftest = selftest;
	c.selftest_len = selftest_len;
	return slot_run(s, &c, src, len, out);
}

int32_t bridge_slot_step(bridge_slot *s, int64_t budget_ns, bridge_out *out)
{
	memset(out, 0, sizeof(*out));
	if (!s->open) {
		out->status = BRIDGE_INTERNAL;
		return BRIDGE_INTERNAL;
	}
	JS_UpdateStackTop(s->rt);
	if (budget_ns > 0)
		s->deadline = now_ns() + budget_ns;
	fire_timers(s);
	if (s->retained) {
		drain_jobs(s);
		return conclude(s, s->killed ? s->killed : BRIDGE_PENDING, out);
	}
	return settle_run(s, advance(s, out), out);
}

void bridge_slot_rearm(bridge_slot *s, int64_t budget_ns)
{
	s->deadline = now_ns() + budget_ns;
}

int32_t bridge_slot_invoke(bridge_slot *s, int64_t budget_ns, double handle, const char *args, size_t len,
                           uint32_t *inv)
{
	if (!s->open || !s->retained)
		return BRIDGE_INTERNAL;
	JSContext *ctx = s->ctx;
	JS_UpdateStackTop(s->rt);
	s->deadline = now_ns() + budget_ns;
	uint32_t id = 0;
	while (id < s->ninvs && !JS_IsUndefined(s->invs[id]))
		id++;
	if (id == s->ninvs) {
		if (!grow_array(ctx, (void **)&s->invs, &s->invs_cap, s->ninvs, sizeof(*s->invs)))
			return s->killed ? s->killed : BRIDGE_MEMORY;
		s->invs[s->ninvs++] = JS_UNDEFINED;
	}
	JSValue a[2] = {JS_NewFloat64(ctx, handle), JS_NewStringLen(ctx, args, len)};
	JSValue p = JS_IsException(a[1]) ? JS_EXCEPTION : rt_call(s, "invoke", 2, a);
	JS_FreeValue(ctx, a[1]);
	if (JS_IsException(p)) {
		JS_FreeValue(ctx, JS_GetException(ctx));
		p = JS_UNDEFINED;
	}
	s->invs[id] = p;
	*inv = id;
	drain_jobs(s);
	return s->killed ? s->killed : BRIDGE_PENDING;
}

int32_t bridge_slot_invocation(bridge_slot *s, uint32_t inv, bridge_out *out)
{
	memset(out, 0, sizeof(*out));
	if (s->killed)
		return s->killed;
	if (!s->open || inv >= s->ninvs)
		return BRIDGE_INTERNAL;
	JSContext *ctx = s->ctx;
	JSValue p = s->invs[inv];
	if (JS_IsUndefined(p)) {
		static const char lost[] = "the handle call could not start";
		out->data = dup_text(lost, &out->size);
		return BRIDGE_THROWN;
	}
	int32_t st;
	JSValue r;
	switch (JS_PromiseState(ctx, p)) {
	case JS_PROMISE_PENDING:
		return BRIDGE_PENDING;
	case JS_PROMISE_FULFILLED:
		r = JS_PromiseResult(ctx, p);
		if (JS_IsString(r)) {
			size_t n;
			const char *q = JS_ToCStringLen(ctx, &n, r);
			if (q && (out->data = malloc(n + 1))) {
				memcpy(out->data, q, n + 1);
				out->size = n;
			}
			if (q)
				JS_FreeCString(ctx, q);
		} else {
			out->data = dup_text("null", &out->size);
		}
		st = out->data ? BRIDGE_DONE : (s->killed ? s->killed : BRIDGE_INTERNAL);
		break;
	default:
		r = JS_PromiseResult(ctx, p);
		st = emit_thrown(s, r, true, out);
		break;
	}
	JS_FreeValue(ctx, r);
	JS_FreeValue(ctx, p);
	s->invs[inv] = JS_UNDEFINED;
	return st;
}

void bridge_slot_invocation_drop(bridge_slot *s, uint32_t inv)
{
	if (!s->open || inv >= s->ninvs)
		return;
	JS_UpdateStackTop(s->rt);
	JS_FreeValue(s->ctx, s->invs[inv]);
	s->invs[inv] = JS_UNDEFINED;
}

size_t bridge_slot_release(bridge_slot *s)
{
	if (s->open || !s->ar)
		return 0;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	/* The arena's header stays (a slot without an image of its own keeps
	 * its size there); it fits in the first page. */
	_Static_assert(sizeof(arena) <= 4096, "the arena header fits a page");
	size_t from = (max_size(s->image_end, sizeof(arena)) + page - 1) & ~(page - 1);
	size_t upto = (max_size(max_size(s->dirty_end, s->resident), s->ar->hwm) + page - 1) & ~(page - 1);
	if (upto <= from)
		return 0;
	madvise((char *)s->ar + from, upto - from, MADV_DONTNEED);
	s->dirty_end = s->resident = from; /* zero above, as a fresh mapping */
	if (s->ar->hwm > from)
		s->ar->hwm = from; /* the next open sets it again */
	mb_settle(s);
	return upto - from;
}

size_t bridge_slot_held(bridge_slot *s) { return slot_footprint(s); }

size_t bridge_slot_charged(bridge_slot *s) { return s->charged; }

void bridge_slot_take_logs(bridge_slot *s, bridge_out *out)
{
	memset(out, 0, sizeof(*out));
	hand_over_logs(s, out);
}

static int32_t compile_as(const char *src, size_t len, const char *filename, int type, int flags,
                          const bridge_source *srcs, int32_t nsrcs, bridge_out *out);

int32_t bridge_compile(const char *src, size_t len, const char *filename, int32_t strip, bridge_out *out)
{
	int flags = strip == BRIDGE_STRIP_ALL      ? JS_WRITE_OBJ_STRIP_SOURCE | JS_WRITE_OBJ_STRIP_DEBUG
	            : strip == BRIDGE_STRIP_SOURCE ? JS_WRITE_OBJ_STRIP_SOURCE
	                                           : 0;
	return compile_as(src, len, filename, JS_EVAL_TYPE_GLOBAL, flags, NULL, 0, out);
}

int32_t bridge_compile_module(const bridge_source *srcs, int32_t n, int32_t index, bridge_out *out)
{
	return compile_as(srcs[index].src, srcs[index].len, srcs[index].name, JS_EVAL_TYPE_MODULE, 0, srcs, n, out);
}

/* The module sources a compile resolves imports against. */
typedef struct compile_sources {
	const bridge_source *srcs;
	int32_t n;
} compile_sources;

static JSModuleDef *compile_loader(JSContext *ctx, const char *name, void *opaque)
{
	const compile_sources *cs = opaque;
	for (int32_t i = 0; i < cs->n; i++) {
		if (strcmp(cs->srcs[i].name, name) != 0)
			continue;
		JSEvalOptions opts = {
			.version = JS_EVAL_OPTIONS_VERSION,
			.eval_flags = JS_EVAL_TYPE_MODULE | JS_EVAL_FLAG_COMPILE_ONLY,
			.filename = name,
			.line_num = 1,
		};
		JSValue m = JS_Eval2(ctx, cs->srcs[i].src, cs->srcs[i].len, &opts);
		if (JS_IsException(m))
			return NULL;
		JSModuleDef *def = JS_VALUE_GET_PTR(m);
		JS_FreeValue(ctx, m);
		return def;
	}
	JS_ThrowReferenceError(ctx, "could not load module '%s'", name);
	return NULL;
}

static int32_t compile_as(const char *src, size_t len, const char *filename, int type, int flags,
                          const bridge_source *srcs, int32_t nsrcs, bridge_out *out)
{
	memset(out, 0, sizeof(*out));
	compile_sources cs = {.srcs = srcs, .n = nsrcs};
	JSRuntime *rt = JS_NewRuntime();
	if (rt && srcs)
		JS_SetModuleLoaderFunc(rt, NULL, compile_loader, &cs);
	JSContext *ctx = rt ? JS_NewContextRaw(rt) : NULL;
	int32_t st = BRIDGE_INTERNAL;
	if (!ctx || JS_AddIntrinsicBaseObjects(ctx) || JS_AddIntrinsicEval(ctx) || JS_AddIntrinsicRegExp(ctx)) {
		out->data = dup_text("cannot build a compiler context", &out->size);
		goto cleanup;
	}
	JSEvalOptions opts = {
		.version = JS_EVAL_OPTIONS_VERSION,
		.eval_flags = type | JS_EVAL_FLAG_COMPILE_ONLY,
		.filename = filename,
		.line_num = 1,
	};
	JSValue fn = JS_Eval2(ctx, src, len, &opts);
	if (JS_IsException(fn)) {
		JSValue exc = JS_GetException(ctx);
		size_t n;
		const char *p = JS_ToCStringLen(ctx, &n, exc);
		if (p) {
			out->data = malloc(n + 1);
			if (out->data) {
				memcpy(out->data, p, n + 1);
				out->size = n;
			}
			JS_FreeCString(ctx, p);
		}
		JS_FreeValue(ctx, exc);
		st = BRIDGE_THROWN;
		goto cleanup;
	}
	size_t n = 0;
	uint8_t *bc = write_bytecode(ctx, fn, &n, flags);
	JS_FreeValue(ctx, fn);
	if (bc) {
		out->data = (char *)bc;
		out->size = n;
		st = BRIDGE_DONE;
	}
cleanup:
	if (ctx)
		JS_FreeContext(ctx);
	if (rt)
		JS_FreeRuntime(rt);
	out->status = st;
	return st;
}

void bridge_slot_close(bridge_slot *s, bridge_out *out)
{
	memset(out, 0, sizeof(*out));
	out->peak_heap = s->heap_peak;
	if (s->open && s->session_run) {
		/* A session's run abandoned (its deadline or cancel while it
		 * waited): rolled back like any failed run of the session. */
		session_end(s, false);
		out->charged = s->charged;
		hand_over_logs(s, out);
	} else if (s->open) {
		JS_UpdateStackTop(s->rt);
		finish(s, out);
	} else {
		hand_over_logs(s, out);
	}
}

bridge_slot *bridge_slot_new(bridge_membudget *mb)
{
	bridge_slot *s = calloc(1, sizeof(*s));
	if (s) {
		s->mb = mb;
		s->cover = mb ? 0 : SIZE_MAX;
		s->program = s->unit = s->tool = JS_UNDEFINED;
		s->rtobj = JS_UNDEFINED;
		s->marks = s->marks_get = s->marks_set = JS_UNDEFINED;
		guards_forget(s);
		s->calls_free = NO_CALL;
	}
	return s;
}

void bridge_slot_free(bridge_slot *s)
{
	if (!s)
		return;
	if (s->open)
		sandbox_close(s);
	session_free(s);
	for (int i = 0; i < NIMAGES; i++)
		if (s->images[i].bytes && s->images[i].mapped)
			munmap(s->images[i].bytes, s->images[i].mapped);
	if (s->ar)
		region_unmap(s->ar, s->ar->mapped, s->ar_window);
	if (s->mb && s->charged)
		__atomic_fetch_sub(&s->mb->used, (int64_t)s->charged, __ATOMIC_SEQ_CST);
	free(s->logs);
	free(s->json.p);
	free(s);
}

void bridge_slot_cancel(bridge_slot *s, int64_t run_id) { atomic_store(&s->cancel, run_id); }

void bridge_out_free(bridge_out *out)
{
	free(out->data);
	free(out->logs);
	free(out->bc);
	free(out->entry_bc);
	free(out->cap_name);
	out->data = out->logs = out->cap_name = NULL;
	out->bc = out->entry_bc = NULL;
}

uint64_t bridge_max_stack(void)
{
	size_t size = 0;
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) == 0) {
		pthread_attr_getstacksize(&attr, &size);
		pthread_attr_destroy(&attr);
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (size == 0 || rl.rlim_cur < size))
		size = rl.rlim_cur;
	if (size == 0)
		size = 2u << 20;
	/* Half of the smallest thread stack: the other half is headroom for the
	 * frames below the engine (Go's cgo entry, our shim). */
	return size / 2;
}

int64_t bridge_raw_lifecycle(bridge_slot *s, const bridge_config *cfg, const char *src, size_t len, const uint8_t *bc,
                             size_t bc_len)
{
	bridge_out out;
	int32_t st = bridge_slot_run(s, cfg, src, len, bc, bc_len, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, &out);
	int64_t n = st == BRIDGE_DONE ? (int64_t)out.size : -1;
	if (st == BRIDGE_PENDING) {
		bridge_out tail;
		bridge_slot_close(s, &tail);
		bridge_out_free(&tail);
	}
	bridge_out_free(&out);
	return n;
}
