/*
 * bridge.c: the C shim between codemode and QuickJS-ng.
 *
 * Ownership follows quickjs.h: a JSValue parameter is taken over by the
 * callee, a JSValueConst one is borrowed; every JSValue created here is
 * freed here, exactly once. A leak makes JS_FreeRuntime abort the process,
 * which is how the tests catch one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bridge.h"
#include "quickjs_api.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

struct bridge_slot {
	atomic_llong cancel; /* a run id, or -1 for every run: set from any thread */
	int64_t run_id;      /* the run in progress */
	int32_t killed;    /* BRIDGE_TIMEOUT, _CANCELED or _MEMORY once fired, else 0 */
	int64_t deadline;  /* absolute CLOCK_MONOTONIC ns */

	/* Heap accounting (the allocator's opaque is the slot). */
	size_t heap_used;
	size_t heap_limit;

	/* The open sandbox. */
	JSRuntime *rt;
	JSContext *ctx;
	JSValue program; /* the promise the wrapper returned */
	uint64_t payload;

	/* Console records: uint32 length + bytes each. */
	char *logs;
	size_t logs_len, logs_cap;
	size_t logs_used; /* text bytes + one per line, measured against logs_limit */
	size_t logs_limit;
	uint64_t logs_dropped;
};

static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---------------------------------------------------------------------- */
/* A growable C string with an optional size cap past which it only counts. */

typedef struct strbuf {
	char *p;
	size_t len, cap;
	size_t limit;  /* 0: unbounded */
	bool overflow; /* a write was refused (cap reached or malloc failed) */
} strbuf;

static void sb_put(strbuf *b, const char *s, size_t n)
{
	if (b->limit && b->len + n > b->limit) {
		n = b->len < b->limit ? b->limit - b->len : 0;
		b->overflow = true;
	}
	if (n == 0)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->overflow = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_puts(strbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

/* ---------------------------------------------------------------------- */
/* The allocator: libc, with the slot's memory limit enforced here so the
 * host side knows for certain when it fired (JS_SetMemoryLimit refuses
 * inside the engine, where we could not see it). usable_size is exact, so
 * the engine's own accounting and GC triggers keep working. */

static void slot_kill(bridge_slot *s, int32_t why)
{
	if (!s->killed)
		s->killed = why;
}

static bool heap_admit(bridge_slot *s, size_t n)
{
	if (n > s->heap_limit || s->heap_used > s->heap_limit - n) {
		slot_kill(s, BRIDGE_MEMORY);
		return false;
	}
	return true;
}

static void *heap_calloc(void *opaque, size_t count, size_t size)
{
	bridge_slot *s = opaque;
	size_t n;
	if (__builtin_mul_overflow(count, size, &n) || !heap_admit(s, n))
		return NULL;
	void *p = calloc(count, size);
	if (p)
		s->heap_used += malloc_usable_size(p);
	return p;
}

static void *heap_malloc(void *opaque, size_t size)
{
	bridge_slot *s = opaque;
	if (!heap_admit(s, size))
		return NULL;
	void *p = malloc(size);
	if (p)
		s->heap_used += malloc_usable_size(p);
	return p;
}

static void heap_free(void *opaque, void *ptr)
{
	bridge_slot *s = opaque;
	if (!ptr)
		return;
	s->heap_used -= malloc_usable_size(ptr);
	free(ptr);
}

static void *heap_realloc(void *opaque, void *ptr, size_t size)
{
	bridge_slot *s = opaque;
	size_t old = ptr ? malloc_usable_size(ptr) : 0;
	if (size > old && !heap_admit(s, size - old))
		return NULL;
	void *p = realloc(ptr, size);
	if (p)
		s->heap_used += malloc_usable_size(p) - old;
	return p;
}

static size_t heap_usable(const void *ptr) { return malloc_usable_size((void *)ptr); }

static const JSMallocFunctions heap_funcs = {
	heap_calloc, heap_malloc, heap_free, heap_realloc, heap_usable,
};

/* ---------------------------------------------------------------------- */
/* Interrupts: the deadline and the cancel flag are read here, in C, on the
 * engine's own polls (a Go timer would fire hundreds of µs late). Once a
 * kill has fired every later poll interrupts again, so catching the
 * uncatchable error or the out-of-memory error changes nothing. */

static int check_kill(bridge_slot *s)
{
	if (s->killed)
		return 1;
	long long c = atomic_load_explicit(&s->cancel, memory_order_relaxed);
	if (c == s->run_id || c == -1) {
		slot_kill(s, BRIDGE_CANCELED);
		return 1;
	}
	if (now_ns() >= s->deadline) {
		slot_kill(s, BRIDGE_TIMEOUT);
		return 1;
	}
	return 0;
}

static int on_interrupt(JSRuntime *rt, void *opaque)
{
	(void)rt;
	return check_kill(opaque);
}

/* ---------------------------------------------------------------------- */
/* Rendering values as text: strings as they are, other values as compact
 * JSON, and String(v) when JSON has nothing to say. Returns -1 only when a
 * kill fired meanwhile; the pending exception then propagates. */

static int put_string(JSContext *ctx, JSValueConst v, strbuf *b)
{
	size_t n;
	const char *p = JS_ToCStringLen(ctx, &n, v);
	if (!p)
		return -1;
	sb_put(b, p, n);
	JS_FreeCString(ctx, p);
	return 0;
}

static int describe(bridge_slot *s, JSValueConst v, strbuf *b)
{
	JSContext *ctx = s->ctx;
	if (JS_IsString(v))
		return put_string(ctx, v, b) < 0 && s->killed ? -1 : 0;
	if (JS_IsSymbol(v)) { /* String(symbol), which JS_ToString refuses */
		sb_puts(b, "Symbol(");
		JSValue d = JS_GetPropertyStr(ctx, v, "description");
		if (JS_IsString(d))
			put_string(ctx, d, b);
		JS_FreeValue(ctx, d);
		if (s->killed)
			return -1;
		if (JS_HasException(ctx))
			JS_FreeValue(ctx, JS_GetException(ctx));
		sb_puts(b, ")");
		return 0;
	}
	JSValue json = JS_JSONStringify(ctx, v, JS_UNDEFINED, JS_UNDEFINED);
	if (JS_IsException(json)) {
		if (s->killed)
			return -1;
		JS_FreeValue(ctx, JS_GetException(ctx));
	} else if (JS_IsString(json)) {
		int rc = put_string(ctx, json, b);
		JS_FreeValue(ctx, json);
		if (rc == 0)
			return 0;
		if (s->killed)
			return -1;
		JS_FreeValue(ctx, JS_GetException(ctx));
	} else {
		JS_FreeValue(ctx, json); /* undefined: functions, symbols, undefined */
	}
	JSValue str = JS_ToString(ctx, v);
	if (JS_IsException(str)) {
		if (s->killed)
			return -1;
		JS_FreeValue(ctx, JS_GetException(ctx));
		sb_puts(b, "[unprintable value]");
		return 0;
	}
	int rc = put_string(ctx, str, b);
	JS_FreeValue(ctx, str);
	if (rc < 0) {
		if (s->killed)
			return -1;
		JS_FreeValue(ctx, JS_GetException(ctx));
	}
	return 0;
}

/* Reads obj[name] as a string into b; false if absent, not a string, or it
 * threw (cleared unless a kill fired). */
static bool put_prop(bridge_slot *s, JSValueConst obj, const char *name, strbuf *b)
{
	JSValue v = JS_GetPropertyStr(s->ctx, obj, name);
	if (JS_IsException(v)) {
		if (!s->killed)
			JS_FreeValue(s->ctx, JS_GetException(s->ctx));
		return false;
	}
	bool ok = false;
	if (JS_IsString(v)) {
		size_t before = b->len;
		ok = put_string(s->ctx, v, b) == 0 && b->len > before;
		if (!ok && !s->killed && JS_HasException(s->ctx))
			JS_FreeValue(s->ctx, JS_GetException(s->ctx));
	}
	JS_FreeValue(s->ctx, v);
	return ok;
}

/* Renders a thrown value: "Name: message" plus the stack for an Error,
 * "Uncaught <value>" for anything else. */
static void render_thrown(bridge_slot *s, JSValueConst exc, strbuf *b)
{
	if (!JS_IsError(exc)) {
		sb_puts(b, "Uncaught ");
		describe(s, exc, b);
		return;
	}
	if (!put_prop(s, exc, "name", b))
		sb_puts(b, "Error");
	if (s->killed)
		return;
	strbuf msg = {0};
	if (put_prop(s, exc, "message", &msg)) {
		sb_puts(b, ": ");
		sb_put(b, msg.p, msg.len);
	}
	free(msg.p);
	if (s->killed)
		return;
	strbuf stack = {0};
	if (put_prop(s, exc, "stack", &stack)) {
		size_t n = stack.len;
		while (n > 0 && (stack.p[n - 1] == '\n' || stack.p[n - 1] == ' '))
			n--;
		if (n > 0) {
			sb_puts(b, "\n");
			sb_put(b, stack.p, n);
		}
	}
	free(stack.p);
}

/* ---------------------------------------------------------------------- */
/* console: log, info, warn, error, debug append one line each to the
 * slot's records, bounded by logs_limit; past it lines are only counted. */

static const char *const console_names[] = {"log", "info", "warn", "error", "debug"};
static const char *const console_prefix[] = {"", "[info] ", "[warn] ", "[error] ", "[debug] "};

static void logs_append(bridge_slot *s, const char *p, size_t n)
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

static int install_console(JSContext *ctx)
{
	JSValue con = JS_NewObject(ctx);
	if (JS_IsException(con))
		return -1;
	for (int i = 0; i < (int)(sizeof(console_names) / sizeof(console_names[0])); i++) {
		JSValue f = JS_NewCFunctionMagic(ctx, js_console, console_names[i], 0, JS_CFUNC_generic_magic, i);
		if (JS_IsException(f) || JS_SetPropertyStr(ctx, con, console_names[i], f) < 0) {
			JS_FreeValue(ctx, con);
			return -1;
		}
	}
	JSValue global = JS_GetGlobalObject(ctx);
	int rc = JS_DefinePropertyValueStr(ctx, global, "console", con, JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
	JS_FreeValue(ctx, global);
	return rc < 0 ? -1 : 0;
}

/* ---------------------------------------------------------------------- */
/* The sandbox lifecycle (straightforward: a fresh runtime and context per
 * run, freed afterwards). */

static int sandbox_open(bridge_slot *s, const bridge_config *cfg)
{
	JSRuntime *rt = JS_NewRuntime2(&heap_funcs, s);
	if (!rt)
		return -1;
	s->rt = rt;
	JS_SetRuntimeOpaque(rt, s);
	JS_SetMaxStackSize(rt, cfg->stack);
	JS_SetInterruptHandler(rt, on_interrupt, s);
	JSContext *ctx = JS_NewContextRaw(rt);
	if (!ctx)
		return -1;
	s->ctx = ctx;
	JS_SetContextOpaque(ctx, s);
	if (JS_AddIntrinsicBaseObjects(ctx) || JS_AddIntrinsicDate(ctx) || JS_AddIntrinsicEval(ctx) ||
	    JS_AddIntrinsicRegExp(ctx) || JS_AddIntrinsicJSON(ctx) || JS_AddIntrinsicProxy(ctx) ||
	    JS_AddIntrinsicMapSet(ctx) || JS_AddIntrinsicTypedArrays(ctx) || JS_AddIntrinsicPromise(ctx))
		return -1;
	return install_console(ctx);
}

static void sandbox_close(bridge_slot *s)
{
	if (s->ctx) {
		JS_FreeValue(s->ctx, s->program);
		JS_FreeContext(s->ctx);
	}
	if (s->rt)
		JS_FreeRuntime(s->rt);
	s->program = JS_UNDEFINED;
	s->ctx = NULL;
	s->rt = NULL;
}

/* Runs queued jobs (promise reactions) until none is runnable or a kill
 * fires; a job flood that never reaches an engine poll is still bounded by
 * the clock check every 128 jobs. */
static void drain_jobs(bridge_slot *s)
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

static int32_t emit_thrown(bridge_slot *s, JSValueConst exc, bridge_out *out)
{
	if (s->killed)
		return s->killed;
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

/* Takes the pending exception and renders it. */
static int32_t emit_exception(bridge_slot *s, bridge_out *out)
{
	JSValue exc = JS_GetException(s->ctx);
	int32_t st = emit_thrown(s, exc, out);
	JS_FreeValue(s->ctx, exc);
	return st;
}

static int32_t emit_result(bridge_slot *s, JSValueConst val, bridge_out *out)
{
	JSContext *ctx = s->ctx;
	JSValue json = JS_JSONStringify(ctx, val, JS_UNDEFINED, JS_UNDEFINED);
	if (s->killed) {
		if (JS_IsException(json))
			JS_FreeValue(ctx, JS_GetException(ctx));
		JS_FreeValue(ctx, json);
		return s->killed;
	}
	if (JS_IsException(json))
		return emit_exception(s, out);
	if (!JS_IsString(json)) { /* undefined, a function, a symbol */
		JS_FreeValue(ctx, json);
		out->data = strdup("null");
		out->size = 4;
		return out->data ? BRIDGE_DONE : BRIDGE_INTERNAL;
	}
	size_t n;
	const char *p = JS_ToCStringLen(ctx, &n, json);
	JS_FreeValue(ctx, json);
	if (!p) {
		JS_FreeValue(ctx, JS_GetException(ctx));
		return s->killed ? s->killed : BRIDGE_INTERNAL;
	}
	int32_t st = BRIDGE_DONE;
	out->size = n;
	if (n > s->payload) {
		st = BRIDGE_TOO_LARGE;
	} else if ((out->data = malloc(n + 1)) != NULL) {
		memcpy(out->data, p, n + 1);
	} else {
		st = BRIDGE_INTERNAL;
	}
	JS_FreeCString(ctx, p);
	return st;
}

/* Runs jobs, then reports where the program stands. */
static int32_t advance(bridge_slot *s, bridge_out *out)
{
	drain_jobs(s);
	if (s->killed)
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
		st = emit_thrown(s, r, out);
		JS_FreeValue(s->ctx, r);
		return st;
	case JS_PROMISE_PENDING:
		return BRIDGE_STALLED;
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
	hand_over_logs(s, out);
}

static char *dup_text(const char *msg, size_t *n)
{
	*n = strlen(msg);
	return strdup(msg);
}

int32_t bridge_slot_run(bridge_slot *s, const bridge_config *cfg, const char *src, size_t len, bridge_out *out)
{
	memset(out, 0, sizeof(*out));
	s->killed = 0;
	s->run_id = cfg->run_id;
	s->deadline = now_ns() + cfg->budget_ns;
	s->heap_used = 0;
	s->heap_limit = cfg->memory;
	s->payload = cfg->payload;
	s->logs_limit = cfg->logs;
	s->program = JS_UNDEFINED;

	int32_t st;
	if (sandbox_open(s, cfg) < 0) {
		st = BRIDGE_INTERNAL;
		out->data = dup_text("cannot build a sandbox within the memory limit", &out->size);
	} else {
		JS_UpdateStackTop(s->rt);
		JSEvalOptions opts = {
			.version = JS_EVAL_OPTIONS_VERSION,
			.eval_flags = JS_EVAL_TYPE_GLOBAL,
			.filename = cfg->filename,
			.line_num = 0, /* the wrapper's own line; the script starts on line 1 */
		};
		JSValue v = JS_Eval2(s->ctx, src, len, &opts);
		if (JS_IsException(v)) {
			st = s->killed ? s->killed : emit_exception(s, out);
			if (s->killed && JS_HasException(s->ctx))
				JS_FreeValue(s->ctx, JS_GetException(s->ctx));
		} else {
			s->program = v;
			st = advance(s, out);
		}
	}
	if (st != BRIDGE_PENDING)
		finish(s, out);
	out->status = st;
	return st;
}

void bridge_slot_close(bridge_slot *s, bridge_out *out)
{
	memset(out, 0, sizeof(*out));
	if (s->rt)
		JS_UpdateStackTop(s->rt);
	finish(s, out);
}

bridge_slot *bridge_slot_new(void)
{
	bridge_slot *s = calloc(1, sizeof(*s));
	if (s)
		s->program = JS_UNDEFINED;
	return s;
}

void bridge_slot_free(bridge_slot *s)
{
	if (!s)
		return;
	if (s->rt)
		sandbox_close(s);
	free(s->logs);
	free(s);
}

void bridge_slot_cancel(bridge_slot *s, int64_t run_id) { atomic_store(&s->cancel, run_id); }

void bridge_out_free(bridge_out *out)
{
	free(out->data);
	free(out->logs);
	out->data = out->logs = NULL;
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

int64_t bridge_raw_lifecycle(bridge_slot *s, const bridge_config *cfg, const char *src, size_t len)
{
	bridge_out out;
	int32_t st = bridge_slot_run(s, cfg, src, len, &out);
	int64_t n = st == BRIDGE_DONE ? (int64_t)out.size : -1;
	if (st == BRIDGE_PENDING) {
		bridge_out tail;
		bridge_slot_close(s, &tail);
		bridge_out_free(&tail);
	}
	bridge_out_free(&out);
	return n;
}
