/*
 * bridge_internal.h: what the C files of the shim share (bridge.c, the
 * sandbox and its host calls; bridge_guards.c, the guarded built-ins).
 * Go never includes it.
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
	int32_t cap;   /* capability index, or -1 for a provider dispatch */
	bool used;     /* false while the entry is on the free list */
	uint32_t next; /* free list link */
} host_call;

/* The pinned text a call meets once the program has settled. */
#define MSG_COMPLETED "Execution has already completed."

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

/* A growable C string with an optional size cap past which it only counts
 * (sb_put). */
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
} slot_image;

/* A slot's images: a plain sandbox, one that also holds the runtime
 * Execute programs need (a quarter bigger: a Run restores less), and one
 * taken after a unit evaluated (an Execute entry's provider scope, or a
 * registered tool's module), so a run of the same unit reads and
 * evaluates nothing of it (Units, in bridge.c). */
enum { IMAGE_PLAIN, IMAGE_RUNTIME, IMAGE_UNIT, NIMAGES };

struct bridge_slot {
	atomic_llong cancel; /* a run id, or -1 for every run: set from any thread */
	int64_t run_id;      /* the run in progress */
	int32_t killed;    /* BRIDGE_TIMEOUT, _CANCELED or _MEMORY once fired, else 0 */
	int64_t deadline;  /* absolute CLOCK_MONOTONIC ns */

	/* Heap accounting (the allocator's opaque is the slot). */
	size_t heap_used;
	size_t heap_limit;

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
	/* Determinism: a virtual clock (bridge.c, Determinism). */
	bool det;
	int64_t det_start_ns;
	uint64_t det_ticks;
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
};

/* Typed arrays, made on first use (bridge.c): 0, or -1 with an exception. */
int typed_ensure(bridge_slot *s);
/* Turns the lazy globals a property key may name (every one when key is
 * undefined) into their values, as a read would, if they still wait
 * (bridge.c): 0, or -1 with an exception. */
int lazy_settle(bridge_slot *s, JSValueConst key);

/* Guarded built-ins (bridge_guards.c). */
int guards_install(bridge_slot *s);
void guards_forget(bridge_slot *s);
void guards_free(bridge_slot *s);

#endif /* CODEMODE_BRIDGE_INTERNAL_H */
