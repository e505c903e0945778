/*
 * bridge_internal.h: what the C units of the shim share. Go never
 * includes it: bridge.h is the seam.
 *
 * One unit per concern, as the Go side has one file per concept. A unit
 * calls only the units below it, never one that calls it back:
 *
 *   bridge_arena.c   strbuf, the allocator, the arena, interrupts
 *   bridge_web.c     web globals, lazy globals, typed arrays
 *   bridge_json.c    plain JSON, binary envelopes, rendering   (arena, web)
 *   bridge_console.c console, Math.random                      (arena, json)
 *   bridge_host.c    marks, capabilities, async host calls     (arena, web, json)
 *   bridge_timers.c  timers, the job queue                     (arena, json, console, host)
 *   bridge_guards.c  the guarded built-ins                     (web)
 *   bridge_clock.c   determinism: the virtual clock
 *   bridge_image.c   lifecycle, snapshots, templates, units    (arena, web, console, host, timers, guards)
 *   bridge.c         the seam: the run loop, compile, the slot API (arena, json, host, timers, guards, clock, image)
 *   bridge_plain.c   the plain engine (conformance tests)      (arena)
 *   bridge_check.c   the engine's parser as a syntax check
 *
 * Ownership follows quickjs.h: a JSValue parameter is taken over by the
 * callee, a JSValueConst one is borrowed; every JSValue the shim creates
 * is freed by the shim, exactly once. A leak makes JS_FreeRuntime abort
 * the process, which is how the tests catch one.
 */
#ifndef CODEMODE_BRIDGE_INTERNAL_H
#define CODEMODE_BRIDGE_INTERNAL_H

#include "bridge.h"
#include "quickjs_api.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The guarded built-ins (bridge_guards.c), and the intrinsics their slow
 * paths use. */
#define NGUARDS 44
#define NINTRINSICS 25
/* The intrinsic that is Int32Array: undefined until typed_ensure made the
 * typed arrays, null if that failed. */
#define INTRINSIC_INT32ARRAY 11

/* An async host call waiting for Go to settle it. */
typedef struct host_call {
	JSValue resolve, reject;
	/* A provider tool's call (native.call): its provider and tool names,
	 * and its answer is an envelope C opens; JS_UNDEFINED otherwise. */
	JSValue provider, tool;
	int32_t cap;   /* capability index, or -1 for a provider dispatch */
	int32_t site;  /* the call's site (__codemode_at), or -1 */
	bool used;     /* false while the entry is on the free list */
	uint32_t next; /* free list link */
} host_call;

/* The pinned text a call meets once the program has settled. */
#define MSG_COMPLETED "Execution has already completed."

/* What a provider tool's call meets when the dispatch answers outside the
 * result envelope (runtime.js has it as native.outside). */
#define MSG_OUTSIDE "The dispatch answered outside the result envelope."

/* The codec's tags (codec.go's BinaryTag and HandleTag): a binary value's
 * envelope key and a function handle's. */
#define BINARY_TAG "__executor_binary_v1__"
#define HANDLE_TAG "__executor_handle_v1__"

/* A setTimeout/setInterval registration. */
typedef struct js_timer {
	int64_t due;      /* CLOCK_MONOTONIC ns */
	int64_t interval; /* ns between firings, -1 for a one-shot timer */
	uint64_t seq;     /* order among timers due at the same time */
	int32_t id;
	int argc;
	JSValue fn;
	JSValue *argv;
} js_timer;

/* Bounds on what one sandbox may keep outstanding. */
#define MAX_PENDING_CALLS 65536
#define MAX_TIMERS 10000
#define NO_CALL UINT32_MAX

typedef struct arena arena;

/* The arena's header, at its region's start (bridge_arena.c, which says
 * how blocks are laid out; the image and run units read its extent). */
#define ARENA_SMALL 1024
#define ARENA_GRAIN 8
#define ARENA_NSMALL (ARENA_SMALL / ARENA_GRAIN + 1)
#define ARENA_NLARGE 256

struct arena {
	size_t size;   /* the arena's bytes: its hard cap */
	size_t mapped; /* the region's: the arena, then room for the images */
	size_t start; /* offset of the first block */
	size_t top;   /* bump offset: end of the last block */
	size_t hwm;   /* the highest top since the last reset or restore */
	void *small[ARENA_NSMALL];
	void *large[ARENA_NLARGE];
};

/* Room reserved after the arena for each of the slot's images: one
 * mapping per slot holds its sandbox and its images, so that making a slot
 * takes the process's address-space lock once (a burst of new slots made
 * on two threads was serialized on it). */
#define IMAGE_ROOM (16u << 20)

/* Regions start on a 4 GiB boundary, so the distance between two of them
 * leaves an address's low 32 bits alone: the engine hashes Map and
 * WeakMap keys by those bits, and a template's clone (Templates, in
 * bridge_image.c) keeps its hash tables only if they hash alike. */
#define REGION_ALIGN ((uintptr_t)1 << 32)

/* A growable C string with an optional size cap past which it only counts
 * (sb_put; its slow path is bridge_arena.c's). */
typedef struct strbuf {
	char *p;
	size_t len, cap;
	size_t limit;  /* 0: unbounded */
	bool overflow; /* a write was refused (cap reached or malloc failed) */
} strbuf;

void sb_grow_put(strbuf *b, const char *s, size_t n);

static inline void sb_put(strbuf *b, const char *s, size_t n)
{
	if (b->len + n < b->cap && (!b->limit || b->len + n <= b->limit)) { /* room: most writes */
		memcpy(b->p + b->len, s, n);
		b->len += n;
		b->p[b->len] = '\0';
		return;
	}
	sb_grow_put(b, s, n);
}

static inline void sb_puts(strbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

/* A malloc'd copy of msg, its length in *n. */
static inline char *dup_text(const char *msg, size_t *n)
{
	*n = strlen(msg);
	return strdup(msg);
}

/* The guarded built-ins of a sandbox (bridge_guards.c): the engine's own
 * methods the guards stand in front of, and the intrinsics their slow paths
 * use, captured before any user code ran. */
typedef struct guard_state {
	JSValue fn[NGUARDS];
	JSValue intrinsics[NINTRINSICS];
	JSAtom atom_length;
	JSAtom atom_to_json;        /* json_text's */
	JSAtom atom_to_string_tag; /* Symbol.toStringTag: json_text's, for the codec */
} guard_state;

/* What a snapshot restores besides the arena's bytes: the slot's pointers
 * into the arena as they were when the image was taken. */
typedef struct saved_state {
	JSRuntime *rt;
	JSContext *ctx;
	JSValue rtobj, marks, marks_get, marks_set;
	JSValue lazy_getters;
	guard_state guards;
	size_t heap_used;
	/* A unit image's evaluated unit (see IMAGE_UNIT): the entry's inner
	 * function or the tool's function; undefined in the other kinds. Not
	 * among the values a template relocates: units have no templates. */
	JSValue unitfn;
} saved_state;

/* A fully set-up sandbox kept as the used prefix of the arena. */
typedef struct slot_image {
	uint8_t *bytes;    /* NULL until built: in the arena's room, or a mapping of mapped bytes */
	size_t mapped;
	size_t len;        /* bytes of the region the image covers */
	uintptr_t id;      /* which capability set it was built with */
	size_t stack;      /* and which stack limit */
	saved_state saved;
	/* How many runs of this kind opened a sandbox for this capability set
	 * and stack without this image (fresh, or a clone of the template):
	 * after one fresh run the next builds the image, after CLONE_RUNS
	 * clones the next does. */
	uint32_t seen;
	uintptr_t seen_id;
	size_t seen_stack;
	uint8_t key[32]; /* IMAGE_UNIT: which unit it holds evaluated */
	bool det;        /* IMAGE_UNIT: taken by a deterministic run (its Date is the virtual clock's) */
} slot_image;

/* A slot's images: a plain sandbox, one that also holds the runtime
 * Execute programs need (a quarter bigger: a Run restores less), and one
 * taken after a unit evaluated (an Execute entry's provider scope, or a
 * registered tool's module), so a run of the same unit reads and
 * evaluates nothing of it (Units, in bridge_image.c). */
enum { IMAGE_PLAIN, IMAGE_RUNTIME, IMAGE_UNIT, NIMAGES };

struct bridge_slot {
	atomic_llong cancel; /* a run id, or -1 for every run: set from any thread */
	int64_t run_id;      /* the run in progress */
	int32_t killed;    /* BRIDGE_TIMEOUT, _CANCELED or _MEMORY once fired, else 0 */
	int64_t deadline;  /* absolute CLOCK_MONOTONIC ns */

	/* Heap accounting (the allocator's opaque is the slot). */
	size_t heap_used;
	size_t heap_limit;
	/* Memory admission (bridge_arena.c, Budgets): the budget the slot
	 * charges (NULL: none), what it has charged, and how far its sandbox
	 * may grow before it charges again: the arena's high-water mark in a
	 * snapshot sandbox, heap_used in a libc one (SIZE_MAX without a
	 * budget, so the allocators' check never fires). */
	bridge_membudget *mb;
	size_t charged;
	size_t cover;

	/* The open sandbox. */
	bool open;      /* a sandbox is live: running, pending or retained */
	bool snapshot;  /* it lives in the arena (else libc, freed per run) */
	bool codec;     /* results go through runtime.js's codec (Execute) */
	JSRuntime *rt;
	JSContext *ctx;
	JSValue program; /* the promise the wrapper returned */
	JSValue unit;    /* the run's compiled source, which holds its functions' bytecode */
	JSValue tool;    /* the function a tool run called */
	uint64_t payload;

	/* Host calls (cfg fields of the run). */
	uintptr_t handle;
	const char *const *cap_names;
	const uint8_t *cap_async;
	int32_t ncaps;
	/* Capability failures, marked host-side so attribution survives a
	 * catch-and-rethrow and cannot be forged: a WeakMap from the Error
	 * objects we made to [index, message], and its get/set as they were
	 * before any user code ran. */
	JSValue marks, marks_get, marks_set;
	/* The getters of the lazy globals (an array: the typed arrays', by
	 * typed_globals order, then the web globals', by web_names order): a
	 * global whose getter is one of them still waits for its value. */
	JSValue lazy_getters;
	bool marked; /* the run made a marked Error: only then is a throw looked up */
	/* The site __codemode_at recorded for the host call about to start
	 * (-1: none), and the site of the call whose answer is being opened
	 * (what runtime.js's open fails with is that call's). */
	int32_t at_site, settle_site;
	bool bad_args; /* a tool run's arguments did not parse */
	bool syntax;   /* the run's source did not compile */
	/* Async calls in flight, indexed by call id (engine heap). */
	host_call *calls;
	uint32_t calls_len, calls_cap, calls_free, pending_calls;
	/* Execute programs: the runtime object (runtime.js's result), whether
	 * the sandbox outlives its program, and host invocations of handles in
	 * flight (engine heap; JS_UNDEFINED marks a free entry). */
	JSValue rtobj;
	bool retain;   /* the run asked to keep its sandbox */
	bool retained; /* the program settled and the sandbox is kept */
	JSValue *invs;
	uint32_t ninvs, invs_cap;
	/* Timers (engine heap), unordered. */
	js_timer *timers;
	uint32_t ntimers, timers_cap;
	int32_t timer_ids;
	uint64_t timer_seq;

	/* Snapshot mode: the arena, its images, and how far into the region
	 * bytes may differ from zero (past an image: what runs and builds
	 * wrote since the last restore, which the next restore clears). */
	arena *ar;
	bool ar_window; /* its region is one of the process's windows */
	bool building;  /* an image is being built: allocations are zeroed */
	slot_image images[NIMAGES];
	size_t dirty_end;
	size_t image_end; /* the length of the image the arena holds now */
	size_t touched; /* the furthest dirty_end has ever reached (for tests) */
	size_t resident; /* the furthest the arena's pages may be resident: written since last handed back */
	/* Written-page restores (copy_image): the image the arena's pages
	 * were last made equal to and write-protected against (NULL: none),
	 * the image last restored whole (tracked), their length, and the
	 * restores since the pages were last protected. */
	const uint8_t *wp_bytes, *wp_last;
	size_t wp_len;
	uint32_t wp_since, wp_whole; /* wp_whole: whole restores of wp_last in a row */

	/* Guarded built-ins: their state, and their slow paths (guards.js),
	 * loaded on a run's first need (engine heap; undefined until then) from
	 * the run's bytecode of them. */
	guard_state guards;
	JSValue guard_polys;
	const uint8_t *guards_bc;
	size_t guards_bc_len;

	/* Plain-data JSON (json_plain_write): the classes of {} and [],
	 * learnt when a sandbox opens, and a scratch buffer. */
	JSClassID cls_object, cls_array;
	strbuf json;

	/* Math.random: xorshift128+ reseeded per run from the host's CSPRNG,
	 * outside the arena, so a restored image never replays a sequence. */
	uint64_t rng[2];
	/* Unit images: what the run's unit evaluation did that a restore would
	 * not redo (random numbers, the clock, logs, timers, host calls),
	 * counted while it evaluates; whether the run was restored from the
	 * unit image, and its unit; the key of the last unit the slot
	 * evaluated without an image (the second run in a row builds one);
	 * the global Date while it is watched. */
	uint32_t effects;
	/* Determinism: a virtual clock (bridge_clock.c). */
	bool det;
	int64_t det_start_ns;
	uint64_t det_ticks;
	const uint8_t *det_bc;
	size_t det_bc_len;
	bool det_ready; /* the run's sandbox came with the virtual clock's Date (a deterministic unit image) */
	/* The most heap the run has held (RunStats.PeakMemory). */
	size_t heap_peak;
	bool from_unit;
	bool unit_seen_ok;
	uint8_t unit_seen[32];
	JSValue unitfn;
	JSValue date_orig;
	int64_t run_start; /* CLOCK_MONOTONIC ns when the run began: performance.now()'s zero */
	const bridge_module *modules; /* the run's host modules (bridge_config) */
	int32_t nmodules;

	/* Console records: uint32 length + bytes each. */
	char *logs;
	size_t logs_len, logs_cap;
	size_t logs_used; /* text bytes + one per line, measured against logs_limit */
	size_t logs_limit;
	uint64_t logs_dropped;

	/* Sessions (bridge_session.c): the sandbox is a session's and outlives
	 * its runs; the run in progress is one of its runs; the sandbox has
	 * the virtual clock's Date; and the checkpoint the run rolls back to
	 * (a mapping of ckpt_mapped bytes, ckpt_len of them the arena's). */
	bool session;
	bool session_run;
	bool session_det;
	bool session_opened; /* the run in progress opened the session's sandbox */
	bool ckpt_taken;
	uint8_t *ckpt;
	size_t ckpt_mapped, ckpt_len;
	size_t ckpt_resident; /* how much of it may be resident: 0 once at rest */
	saved_state ckpt_saved;
};

/* Sessions (bridge_session.c): the checkpoint a session's run starts from
 * (-1 if it has no room); the end of the run, kept (ok) or rolled back;
 * the slot's checkpoint given back. */
int session_checkpoint(bridge_slot *s);
void session_end(bridge_slot *s, bool ok);
void session_free(bridge_slot *s);
/* bridge_image.c: how far the arena was written (for the next restore),
 * and a restore of bytes taken from it. */
void mark_dirty(bridge_slot *s);
void run_values_free(bridge_slot *s);
void forget_run(bridge_slot *s);
void restore_bytes(bridge_slot *s, const uint8_t *bytes, size_t len, const saved_state *saved);

/* Budgets (bridge_arena.c): what the slot holds resident; charging for
 * it and extra bytes more as the sandbox grows, false if the budget
 * refuses; admitting a run (*held: what the slot held before), charging
 * what a new sandbox takes to open; giving back what the slot no longer
 * holds. */
size_t slot_footprint(const bridge_slot *s);
bool mb_charge(bridge_slot *s, size_t extra);
bool mb_admit(bridge_slot *s, size_t *held);
void mb_settle(bridge_slot *s);

/* Small helpers more than one unit calls, inline where they are called. */

static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Records the first kill of the run (why: a BRIDGE_* kill). */
static inline void slot_kill(bridge_slot *s, int32_t why)
{
	if (!s->killed)
		s->killed = why;
}

/* The next 64 bits of the run's generator: xorshift128+ over the slot's
 * state, which each run seeds from the host (see bridge_config.seed). */
static inline uint64_t rng_next(bridge_slot *s)
{
	s->effects++;
	uint64_t s1 = s->rng[0];
	const uint64_t s0 = s->rng[1];
	s->rng[0] = s0;
	s1 ^= s1 << 23;
	s->rng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
	return s->rng[1] + s0;
}

/* Calls method name of the runtime object with argc arguments. */
static inline JSValue rt_call(bridge_slot *s, const char *name, int argc, JSValueConst *argv)
{
	JSValue fn = JS_GetPropertyStr(s->ctx, s->rtobj, name);
	if (JS_IsException(fn))
		return fn;
	JSValue r = JS_Call(s->ctx, fn, s->rtobj, argc, argv);
	JS_FreeValue(s->ctx, fn);
	return r;
}

/* Evaluates src as global code in the sandbox: its completion value. */
static inline JSValue eval_source(bridge_slot *s, const char *src, size_t len, const char *filename)
{
	JSEvalOptions opts = {
		.version = JS_EVAL_OPTIONS_VERSION,
		.eval_flags = JS_EVAL_TYPE_GLOBAL,
		.filename = filename,
		.line_num = 1, /* the wrappers share the first line with the user's source */
	};
	return JS_Eval2(s->ctx, src, len, &opts);
}

/* bridge_arena.c: the engine's allocator functions, over libc (the slot's
 * memory limit enforced) and over the slot's arena. */
const JSMallocFunctions *heap_allocator(void);
const JSMallocFunctions *arena_allocator(void);
/* A new arena of size bytes (the first prefault of them faulted in);
 * *in_window says whether its region is a window. */
arena *arena_new(size_t size, size_t prefault, bool *in_window);
void arena_reset(arena *a);
void region_unmap(void *m, size_t size, bool window);
/* Written-page restores (bridge_arena.c): whether they are on, and
 * restoring len bytes of an image into a window's arena by them. */
bool wp_enabled(void);
bool wp_protect(void *base, size_t len);
long wp_copy_written(void *base, const uint8_t *bytes, size_t len);
void wp_count_whole(void);
/* The interrupt check: 1 once the run is killed (the deadline, a cancel,
 * memory), else 0; on_interrupt is the engine's handler over it. */
int check_kill(bridge_slot *s);
int on_interrupt(JSRuntime *rt, void *opaque);
/* bridge_host.c. Stops the run from inside a C function the script called
 * (why: a BRIDGE_* kill, kept if one fired first): the engine unwinds with
 * an uncatchable error; the outcome comes from the kill. */
JSValue throw_kill(bridge_slot *s, int32_t why);

/* bridge_web.c. Typed arrays, made on first use: 0, or -1 with an
 * exception. */
int typed_ensure(bridge_slot *s);
/* Turns the lazy globals a property key may name (every one when key is
 * undefined) into their values, as a read would, if they still wait: 0,
 * or -1 with an exception. */
int lazy_settle(bridge_slot *s, JSValueConst key);
/* Defines global.name as the accessor get/set, which it consumes: 0 or -1. */
int lazy_define(JSContext *ctx, JSValueConst global, const char *name, JSValue get, JSValue set);
/* Defines native.name as a C function; -1 with native released on failure. */
int set_native(JSContext *ctx, JSValue *native, const char *name, JSCFunction *fn, int length);
/* Runs one of our factories (bytecode whose completion value is a function
 * of the native bindings) with native, which it consumes. */
JSValue call_factory(JSContext *ctx, const uint8_t *bc, size_t len, JSValue native);
/* native.typed(), and the typed arrays' hand-over to runtime.js. */
JSValue js_typed_make(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv);
int typed_hand_over(bridge_slot *s, JSValueConst global);
int install_typed(JSContext *ctx);
int install_web(JSContext *ctx);

/* bridge_json.c. */
/* What json_text found. */
enum { JSON_TEXT, JSON_NONE, JSON_TOO_LARGE, JSON_THREW };

/* How json_text writes: JSON.stringify's JSON, that with binary data as
 * envelopes (results, arguments), or runtime.js's codec (Execute). */
enum { JSON_STRINGIFY, JSON_BINARY, JSON_CODEC };

int json_text(bridge_slot *s, JSValueConst v, uint64_t max, int mode, size_t *n);

#define JSON_SCRATCH_KEEP (64 << 10)

/* Gives back the memory a large value made the scratch buffer take. */
static inline void json_scratch_trim(bridge_slot *s)
{
	if (s->json.cap > JSON_SCRATCH_KEEP) {
		free(s->json.p);
		s->json = (strbuf){0};
	}
}

/* A capability's result parsed from JSON, its envelopes revived. */
JSValue parse_result(JSContext *ctx, const char *data, size_t len);
/* v as text into b (describe: a console argument; render_thrown: a thrown
 * value). */
int describe(bridge_slot *s, JSValueConst v, strbuf *b);
void render_thrown(bridge_slot *s, JSValueConst exc, strbuf *b);

/* bridge_console.c. */
void logs_append(bridge_slot *s, const char *p, size_t n);
int install_console(JSContext *ctx);
int install_random(JSContext *ctx);

/* bridge_host.c. */
int install_marks(bridge_slot *s);
/* Defines __codemode_at, the instrumentation's call-site mark. */
int install_at(bridge_slot *s);
int install_capabilities(bridge_slot *s);
/* If v is a marked capability Error, reports what failed into out and
 * returns true. */
bool capability_of(bridge_slot *s, JSValueConst v, bridge_out *out);
/* Makes room for one more element in an engine-heap array of *cap
 * elements holding len; false on out-of-memory. */
bool grow_array(JSContext *ctx, void **arr, uint32_t *cap, uint32_t len, size_t elem);
/* Loads the runtime (from bytecode) and hands it the native bindings. */
JSValue load_runtime(bridge_slot *s, const bridge_config *cfg);

/* bridge_timers.c. */
void timer_free(JSContext *ctx, js_timer *t);
int install_timers(JSContext *ctx);
/* The timer due first (ties: the one set first), or -1. */
int earliest_timer(bridge_slot *s);
void fire_timers(bridge_slot *s);
/* Runs queued jobs until none is runnable or a kill fires. */
void drain_jobs(bridge_slot *s);

/* Guarded built-ins (bridge_guards.c). */
int guards_install(bridge_slot *s);
void guards_forget(bridge_slot *s);
void guards_free(bridge_slot *s);

/* bridge_clock.c: puts the virtual clock's Date in front of the engine's. */
int det_install(bridge_slot *s);

/* bridge_image.c. Opens the run's sandbox (an image, a template's clone or
 * a fresh one): 0 or -1. */
int open_run(bridge_slot *s, const bridge_config *cfg);
void sandbox_close(bridge_slot *s);
/* Around a unit's evaluation: unit_begin says whether a unit image may
 * follow, unit_end takes it. */
bool unit_begin(bridge_slot *s, const bridge_config *cfg);
void unit_end(bridge_slot *s, const bridge_config *cfg, bool want, JSValueConst fn);

#endif /* CODEMODE_BRIDGE_INTERNAL_H */
