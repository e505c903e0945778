/*
 * bridge_image.c: which sandbox a run opens on.
 *
 * Owns the sandbox lifecycle (a runtime and context made with every
 * global and binding a run sees, and their end), snapshots (a sandbox built
 * once in the slot's arena and kept as an image), templates (one slot's
 * image cloned into others), the host-module loader, unit images (a
 * sandbox kept after a unit evaluated), and open_run, which picks among
 * them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bridge_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* How much of a new arena a build (ARENA_PREFAULT) and a clone
 * (CLONE_PREFAULT) fault in at once, and after how many clones a slot
 * builds its own image (CLONE_RUNS; see open_run). */
#define ARENA_PREFAULT (160u << 10)
#define CLONE_PREFAULT (8u << 10) /* past a clone's image: the run's first allocations */
#define CLONE_RUNS BRIDGE_CLONE_RUNS

/* ---------------------------------------------------------------------- */
/* The sandbox lifecycle (straightforward: a fresh runtime and context per
 * run, freed afterwards). */

static int sandbox_open(bridge_slot *s, const bridge_config *cfg, const JSMallocFunctions *mf)
{
	JSRuntime *rt = JS_NewRuntime2(mf, s);
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
	    JS_AddIntrinsicMapSet(ctx) || install_typed(ctx) || JS_AddIntrinsicPromise(ctx))
		return -1;
	JSValue o = JS_NewObject(ctx), a = JS_NewArray(ctx);
	s->cls_object = JS_GetClassID(o);
	s->cls_array = JS_GetClassID(a);
	JS_FreeValue(ctx, o);
	JS_FreeValue(ctx, a);
	if (JS_IsException(o) || JS_IsException(a))
		return -1;
	if (install_console(ctx) || install_timers(ctx) || install_random(ctx))
		return -1;
	s->handle = cfg->handle;
	s->cap_names = cfg->cap_names;
	s->cap_async = cfg->cap_async;
	s->ncaps = cfg->ncaps;
	if (install_marks(s) || install_at(s) || (s->ncaps > 0 && install_capabilities(s)) || install_web(ctx) || guards_install(s))
		return -1;
	return 0;
}

/* Forgets the slot's pointers into the heap that were a run's alone: its
 * host calls, timers, handle invocations, program and guards' slow paths. */
void forget_run(bridge_slot *s)
{
	s->calls = NULL;
	s->calls_len = s->calls_cap = s->pending_calls = 0;
	s->calls_free = NO_CALL;
	s->timers = NULL;
	s->ntimers = s->timers_cap = 0;
	s->invs = NULL;
	s->ninvs = s->invs_cap = 0;
	s->program = s->unit = s->tool = JS_UNDEFINED;
	s->guard_polys = JS_UNDEFINED;
}

/* Forgets the slot's pointers into a sandbox's heap. */
static void forget_sandbox(bridge_slot *s)
{
	forget_run(s);
	s->timer_ids = 0;
	s->timer_seq = 0;
	s->marks = s->marks_get = s->marks_set = s->lazy_getters = JS_UNDEFINED;
	guards_forget(s);
	s->rtobj = JS_UNDEFINED;
	s->retain = s->retained = false;
	s->ctx = NULL;
	s->rt = NULL;
	s->open = false;
}

/* Records how far the arena's allocations reached, for the next restore
 * to clear. */
void mark_dirty(bridge_slot *s)
{
	if (s->ar->hwm > s->dirty_end)
		s->dirty_end = s->ar->hwm;
	if (s->dirty_end > s->touched)
		s->touched = s->dirty_end;
	if (s->dirty_end > s->resident)
		s->resident = s->dirty_end;
}

/* Frees, value by value, what the slot holds of a run alone: its pending
 * host calls, its handle invocations and its timers, with their arrays
 * (a libc sandbox's end, a session run's commit). */
void run_values_free(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	for (uint32_t i = 0; i < s->calls_len; i++) {
		if (s->calls[i].used) {
			JS_FreeValue(ctx, s->calls[i].resolve);
			JS_FreeValue(ctx, s->calls[i].reject);
			JS_FreeValue(ctx, s->calls[i].provider);
			JS_FreeValue(ctx, s->calls[i].tool);
		}
	}
	js_free(ctx, s->calls);
	for (uint32_t i = 0; i < s->ninvs; i++)
		JS_FreeValue(ctx, s->invs[i]);
	js_free(ctx, s->invs);
	for (uint32_t i = 0; i < s->ntimers; i++)
		timer_free(ctx, &s->timers[i]);
	js_free(ctx, s->timers);
}

/* Ends the sandbox: a libc one is freed value by value, so a leaked
 * reference aborts in JS_FreeRuntime; an arena one is left for the next
 * restore, which overwrites it. So the run's own last references (the
 * program, its compiled source, a tool's function) are dropped here and
 * not as the run ends: freeing a large tool's 400 functions one by one
 * was a fifth of its call, all of it work the restore makes moot. */
void sandbox_close(bridge_slot *s)
{
	if (s->snapshot) {
		if (s->ar)
			mark_dirty(s);
		forget_sandbox(s);
		mb_settle(s);
		return;
	}
	if (s->ctx) {
		JSContext *ctx = s->ctx;
		run_values_free(s);
		JS_FreeValue(ctx, s->rtobj);
		JS_FreeValue(ctx, s->marks);
		JS_FreeValue(ctx, s->marks_get);
		JS_FreeValue(ctx, s->marks_set);
		JS_FreeValue(ctx, s->lazy_getters);
		guards_free(s);
		JS_FreeValue(ctx, s->program);
		JS_FreeValue(ctx, s->tool);
		JS_FreeValue(ctx, s->unit);
		JS_FreeContext(ctx);
	}
	JSRuntime *rt = s->rt;
	forget_sandbox(s);
	if (rt)
		JS_FreeRuntime(rt);
	mb_settle(s);
}

/* ---------------------------------------------------------------------- */
/* Snapshots: build a sandbox once in the slot's arena (runtime, context,
 * intrinsics, console, timers, capabilities, marks, Math.random, the
 * runtime.js object), keep the used prefix of the region as an image, and
 * copy it back before every run. */

/* The region reserved per slot: the memory limit, room for fragmentation
 * and the image. Reserved, not committed (MAP_NORESERVE). */
static size_t region_size(uint64_t memory) { return (size_t)memory * 2 + (4u << 20); }

/* Image bytes live in the room after the slot's arena (or, past it, in a
 * mapping of their own: mapped says its size), never in malloc's heap, so
 * that a slot freed after a burst gives them back to the kernel. */
static uint8_t *image_alloc(bridge_slot *s, slot_image *im, size_t len)
{
	uint8_t *room = (uint8_t *)s->ar + s->ar->size + (size_t)(im - s->images) * IMAGE_ROOM;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (im->bytes && im->mapped) {
		munmap(im->bytes, im->mapped);
	} else if (im->bytes) {
		/* The room's pages past the new image go back: the budget counts
		 * an image's own. */
		size_t keep = len <= IMAGE_ROOM ? (len + page - 1) & ~(page - 1) : 0;
		size_t had = (im->len + page - 1) & ~(page - 1);
		if (had > keep)
			madvise(room + keep, had - keep, MADV_DONTNEED);
	}
	im->bytes = NULL;
	im->mapped = 0;
	if (len <= IMAGE_ROOM)
		return room;
	size_t want = (len + page - 1) & ~(page - 1);
	void *m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	im->mapped = want;
	return m;
}

/* Builds a sandbox afresh in the slot's arena. */
static int open_fresh(bridge_slot *s, const bridge_config *cfg)
{
	if (!s->ar) {
		if (!(s->ar = arena_new(region_size(cfg->memory), ARENA_PREFAULT, &s->ar_window)))
			return -1;
		s->resident = ARENA_PREFAULT;
	}
	arena_reset(s->ar);
	s->heap_used = 0;
	s->snapshot = true;
	int rc = sandbox_open(s, cfg, arena_allocator());
	if (rc == 0)
		JS_UpdateStackTop(s->rt);
	if (rc == 0 && cfg->runtime_bc) {
		s->rtobj = load_runtime(s, cfg);
		if (JS_IsException(s->rtobj)) {
			s->rtobj = JS_UNDEFINED;
			rc = -1;
		}
	}
	mark_dirty(s); /* whatever the build wrote, kept or not */
	s->image_end = 0;
	if (rc == 0)
		JS_SetGCThreshold(s->rt, s->heap_used + cfg->memory / 8);
	return rc;
}

/* Copies the arena as it is now into im (the slack above the top zeroed
 * first: an earlier run's), with what a restore puts back; unitfn is a
 * unit image's function, or undefined. -1 if the copy has no room. */
static int image_take(bridge_slot *s, const bridge_config *cfg, slot_image *im, JSValue unitfn)
{
	mark_dirty(s); /* what was written past the top until now: the next restore clears it */
	size_t len = (s->ar->top + 63) & ~(size_t)63;
	s->wp_bytes = s->wp_last = NULL; /* the bytes below may be the tracked image's */
	uint8_t *bytes = image_alloc(s, im, len);
	if (!bytes)
		return -1;
	memset((char *)s->ar + s->ar->top, 0, len - s->ar->top);
	memcpy(bytes, s->ar, len);
	*im = (slot_image){
		.bytes = bytes,
		.mapped = im->mapped,
		.len = len,
		.id = cfg->image_id,
		.stack = cfg->stack,
		.saved = {.rt = s->rt, .ctx = s->ctx, .rtobj = s->rtobj, .marks = s->marks, .marks_get = s->marks_get,
		          .marks_set = s->marks_set, .lazy_getters = s->lazy_getters, .guards = s->guards,
		          .heap_used = s->heap_used, .unitfn = unitfn},
	};
	s->ar->hwm = s->ar->top;
	s->image_end = len;
	return 0;
}

static int build_image(bridge_slot *s, const bridge_config *cfg, slot_image *im)
{
	/* An image's bytes are all the engine's doing: memory is handed out
	 * and taken back zeroed while it is built, so no byte of it is left
	 * over from an earlier use (a stale byte of an address next to a live
	 * field made the word look like a pointer to a template). */
	s->building = true;
	int rc = open_fresh(s, cfg);
	if (rc == 0)
		JS_RunGC(s->rt);
	s->building = false;
	if (rc < 0)
		return -1;
	/* A run's first collection comes once it has allocated an eighth of
	 * its limit, not where building the sandbox left the threshold (a few
	 * hundred KiB above it: a 2,000-line tool's call paid a full
	 * collection of the intrinsics, a tenth of its time). Only cyclic
	 * garbage waits for a collection (the rest is freed as its last
	 * reference drops), and after the first one the engine's 1.5x rule
	 * applies as before, so a run fits its limit as it did. */
	JS_SetGCThreshold(s->rt, s->heap_used + cfg->memory / 8);
	return image_take(s, cfg, im, JS_UNDEFINED);
}

/* How many restores by written pages before the pages are protected
 * again (bridge_arena.c says why). */
#define WP_DECAY_RESTORES 64

/* How many whole restores of the same image in a row before its pages are
 * protected (copy_image says why). */
#define WP_AFTER 8

/* Beyond this many dirty bytes the tail is handed back to the kernel
 * (zero-filled on the next touch) instead of cleared by hand. */
#define SCRUB_MADVISE (8u << 20)

/* Copies the image bytes of len back into the arena's prefix: the pages
 * written since the last restore of the same image (wp_copy_written), when
 * tracked is set and this window's pages are tracked; else all of it, and
 * once the slot has restored that image whole WP_AFTER times in a row,
 * protects its pages, so the next restore of this image copies what a run
 * wrote. An image restored whole untracked (a template's
 * clone, a session's checkpoint) forgets the tracked one. */
static void copy_image(bridge_slot *s, const uint8_t *bytes, size_t len, bool tracked)
{
	void *base = s->ar;
	tracked = tracked && s->ar_window && wp_enabled();
	if (tracked && s->wp_bytes == bytes && s->wp_len == len) {
		if (wp_copy_written(base, bytes, len) >= 0) {
			if (++s->wp_since < WP_DECAY_RESTORES || wp_protect(base, len)) {
				if (s->wp_since >= WP_DECAY_RESTORES)
					s->wp_since = 0;
				return;
			}
		}
	}
	memcpy(base, bytes, len);
	wp_count_whole();
	s->wp_bytes = NULL;
	/* Protected once the slot has restored the same image whole
	 * WP_AFTER times in a row: protecting costs an ioctl and the next run
	 * a fault per page it writes (some 12 faults for a tiny run, ~10 µs
	 * here), which a written-page restore saves back only over some
	 * restores (~1 µs each): a slot made for a run or two of a burst never
	 * pays for it. */
	if (tracked && s->wp_last == bytes && s->wp_len == len) {
		if (++s->wp_whole >= WP_AFTER && wp_protect(base, len)) {
			s->wp_bytes = bytes;
			s->wp_since = 0;
		}
	} else {
		s->wp_whole = 1;
	}
	s->wp_last = tracked ? bytes : NULL;
	s->wp_len = len;
}

/* Puts a sandbox's bytes back: zeroes over whatever differs from zero
 * past them (another image, the last run's allocations), then the
 * region's prefix and the slot's pointers into it. */
static void restore_into(bridge_slot *s, const uint8_t *bytes, size_t len, const saved_state *saved, bool tracked)
{
	char *base = (char *)s->ar;
	if (s->dirty_end > len) {
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		size_t from = len, upto = s->dirty_end;
		if (upto - from > SCRUB_MADVISE) {
			size_t aligned = (from + page - 1) & ~(page - 1);
			memset(base + from, 0, aligned - from);
			madvise(base + aligned, ((upto + page - 1) & ~(page - 1)) - aligned, MADV_DONTNEED);
			if (s->resident <= ((upto + page - 1) & ~(page - 1)))
				s->resident = aligned;
		} else {
			memset(base + from, 0, upto - from);
		}
	}
	copy_image(s, bytes, len, tracked);
	s->dirty_end = s->image_end = len;
	s->rt = saved->rt;
	s->ctx = saved->ctx;
	s->rtobj = saved->rtobj;
	s->marks = saved->marks;
	s->marks_get = saved->marks_get;
	s->marks_set = saved->marks_set;
	s->lazy_getters = saved->lazy_getters;
	s->guards = saved->guards;
	s->heap_used = saved->heap_used;
	s->ar->hwm = s->ar->top;
}

void restore_bytes(bridge_slot *s, const uint8_t *bytes, size_t len, const saved_state *saved)
{
	restore_into(s, bytes, len, saved, false);
}

/* A slot's own image: its bytes change only as image_take rewrites them,
 * which forgets the tracking. */
static void restore_image(bridge_slot *s, const slot_image *im) { restore_into(s, im->bytes, im->len, &im->saved, true); }

/* ---------------------------------------------------------------------- */
/* Templates: building a sandbox is the engine making its intrinsics, some
 * 100 us; a burst of a thousand new slots (a thousand runs awaiting I/O at
 * once) spent most of its time there. A template is one slot's image kept
 * for its capability set; a slot with no image of its own clones it: it
 * copies the bytes and adds the distance between the two regions to every
 * word that points into the arena, and sets every word that points into
 * the slot to its own. Which words those are is learnt once, from a second
 * image of the same sandbox built in another slot: a word that holds a
 * pointer into its arena in both images is a pointer, one equal in both is
 * not, and any other difference is refused (the slots then build their
 * images as before). Words that differ but are neither (the engine's
 * shape hashes, which hash prototype addresses; its stack bounds, which
 * every entry resets; its own unused Math.random seed) keep the template's
 * value: a clone's shape hashes are then stale but consistent (a shape is
 * filed and unlinked under the hash it holds), so a lookup by a new
 * address misses and the engine makes an equal shape; Map and WeakMap
 * keys hash the low 32 bits of an address, which region alignment
 * (REGION_ALIGN) keeps. The second image's own pointers into the
 * template's arena are the check: any word pointing into one arena must
 * point into the other (or be NULL there), else the template is refused. */

/* More differing words than this outside the arena, the slot and the
 * shape hashes, and the template is refused: the engine keeps state we do
 * not know. */
#define TMPL_MAX_OTHERS 16

typedef struct tmpl {
	pthread_mutex_t mu;
	atomic_int state; /* BRIDGE_TMPL_*: READY is final, and set after every field */
	/* What the sandbox was built for. */
	uintptr_t id;
	size_t stack, arena_size;
	/* The image, where it was taken, and the slot's pointers into it. */
	uint8_t *bytes;
	size_t len, mapped;
	uintptr_t base, slot;
	saved_state saved;
	JSClassID cls_object, cls_array;
	/* Word indexes of the pointers into the arena and into the slot. */
	uint32_t *reloc, *self;
	size_t nreloc, nself;
	uint64_t hashes, others;
	atomic_ullong clones;
} tmpl;

struct bridge_tmpls {
	tmpl t[NIMAGES];
};

bridge_tmpls *bridge_tmpls_new(void)
{
	bridge_tmpls *ts = calloc(1, sizeof(*ts));
	if (ts)
		for (int i = 0; i < NIMAGES; i++)
			pthread_mutex_init(&ts->t[i].mu, NULL);
	return ts;
}

void bridge_tmpls_free(bridge_tmpls *ts)
{
	if (!ts)
		return;
	for (int i = 0; i < NIMAGES; i++) {
		tmpl *t = &ts->t[i];
		if (t->bytes)
			munmap(t->bytes, t->mapped);
		free(t->reloc);
		free(t->self);
		pthread_mutex_destroy(&t->mu);
	}
	free(ts);
}

void bridge_tmpls_stats(bridge_tmpls *ts, int32_t runtime, bridge_tmpl_stats *out)
{
	tmpl *t = &ts->t[runtime ? IMAGE_RUNTIME : IMAGE_PLAIN];
	pthread_mutex_lock(&t->mu);
	*out = (bridge_tmpl_stats){
		.state = atomic_load(&t->state),
		.words = t->len / 8,
		.reloc = t->nreloc,
		.self = t->nself,
		.hashes = t->hashes,
		.others = t->others,
		.clones = atomic_load(&t->clones),
	};
	pthread_mutex_unlock(&t->mu);
}

/* A value that points to the heap (the engine's JS_VALUE_HAS_REF_COUNT);
 * on 64-bit targets a JSValue is a pointer-or-scalar and a tag, which the
 * relocation below relies on. */
#define HOLDS_POINTER(v) ((unsigned)JS_VALUE_GET_TAG(v) >= (unsigned)JS_TAG_FIRST)
_Static_assert(sizeof(JSValue) == 2 * sizeof(void *) && sizeof(void *) == 8, "templates need 64-bit unboxed JSValues");

/* The JS values a saved state holds. */
#define SAVED_NVALUES (5 + NGUARDS + NINTRINSICS)

static void saved_values(saved_state *st, JSValue *v[SAVED_NVALUES])
{
	int n = 0;
	v[n++] = &st->rtobj;
	v[n++] = &st->marks;
	v[n++] = &st->marks_get;
	v[n++] = &st->marks_set;
	v[n++] = &st->lazy_getters;
	for (int i = 0; i < NGUARDS; i++)
		v[n++] = &st->guards.fn[i];
	for (int i = 0; i < NINTRINSICS; i++)
		v[n++] = &st->guards.intrinsics[i];
}

/* The saved state of a sandbox at base, moved by delta. */
static saved_state saved_moved(const saved_state *from, uintptr_t base, size_t size, uintptr_t delta)
{
	saved_state st = *from;
	st.rt = (JSRuntime *)((uintptr_t)st.rt + delta);
	st.ctx = (JSContext *)((uintptr_t)st.ctx + delta);
	JSValue *v[SAVED_NVALUES];
	saved_values(&st, v);
	for (int i = 0; i < SAVED_NVALUES; i++) {
		if (!HOLDS_POINTER(*v[i]))
			continue;
		uintptr_t p = (uintptr_t)JS_VALUE_GET_PTR(*v[i]);
		if (p - base < size)
			*v[i] = JS_MKPTR(JS_VALUE_GET_TAG(*v[i]), (void *)(p + delta));
	}
	return st;
}

static bool saved_same(saved_state *a, saved_state *b)
{
	if (a->rt != b->rt || a->ctx != b->ctx || a->heap_used != b->heap_used ||
	    a->guards.atom_length != b->guards.atom_length || a->guards.atom_to_json != b->guards.atom_to_json ||
	    a->guards.atom_to_string_tag != b->guards.atom_to_string_tag)
		return false;
	JSValue *va[SAVED_NVALUES], *vb[SAVED_NVALUES];
	saved_values(a, va);
	saved_values(b, vb);
	for (int i = 0; i < SAVED_NVALUES; i++)
		if (memcmp(va[i], vb[i], sizeof(JSValue)) != 0)
			return false;
	return true;
}

static bool tmpl_matches(const tmpl *t, const bridge_config *cfg, size_t arena_size)
{
	return t->id == cfg->image_id && t->stack == cfg->stack && t->arena_size == arena_size;
}

/* Keeps the slot's new image as the template's first. */
static void tmpl_keep(tmpl *t, bridge_slot *s, const bridge_config *cfg, const slot_image *im)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t want = (im->len + page - 1) & ~(page - 1);
	void *m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return;
	memcpy(m, im->bytes, im->len);
	t->bytes = m;
	t->mapped = want;
	t->len = im->len;
	t->id = cfg->image_id;
	t->stack = cfg->stack;
	t->arena_size = s->ar->size;
	t->base = (uintptr_t)s->ar;
	t->slot = (uintptr_t)s;
	t->saved = im->saved;
	t->cls_object = s->cls_object;
	t->cls_array = s->cls_array;
	atomic_store(&t->state, BRIDGE_TMPL_FIRST);
}

static bool push_index(uint32_t **list, size_t *n, size_t *cap, size_t i)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 1024;
		uint32_t *p = realloc(*list, c * sizeof(**list));
		if (!p)
			return false;
		*list = p;
		*cap = c;
	}
	(*list)[(*n)++] = (uint32_t)i;
	return true;
}

/* Tells the template's pointers from the second image, the same sandbox
 * built in slot s; READY or REFUSED. */
static int tmpl_learn(tmpl *t, bridge_slot *s, const slot_image *im)
{
	const uint64_t *a = (const uint64_t *)t->bytes, *b = (const uint64_t *)im->bytes;
	uintptr_t ba = t->base, bb = (uintptr_t)s->ar, sa = t->slot, sb = (uintptr_t)s;
	size_t size = t->arena_size, ncap = 0, scap = 0;
	if (im->len != t->len || im->len / 8 > UINT32_MAX)
		return BRIDGE_TMPL_REFUSED;
	saved_state moved = saved_moved(&t->saved, ba, size, bb - ba), theirs = im->saved;
	if (!saved_same(&moved, &theirs))
		return BRIDGE_TMPL_REFUSED;
	for (size_t i = 0; i < im->len / 8; i++) {
		uint64_t x = a[i], y = b[i];
		if (x == y)
			continue;
		bool ia = x - ba < size, ib = y - bb < size;
		if (ia && (ib || y == 0)) {
			if (!push_index(&t->reloc, &t->nreloc, &ncap, i))
				return BRIDGE_TMPL_REFUSED;
		} else if (x == 0 && ib) {
			/* NULL in the template (a shape hash chain's end): stays */
		} else if (x - sa < sizeof(bridge_slot) && x - sa == y - sb) {
			if (!push_index(&t->self, &t->nself, &scap, i))
				return BRIDGE_TMPL_REFUSED;
		} else if (ia || ib) {
			return BRIDGE_TMPL_REFUSED;
		} else if ((uint32_t)x == (uint32_t)y) {
			t->hashes++;
		} else if (++t->others > TMPL_MAX_OTHERS) {
			return BRIDGE_TMPL_REFUSED;
		}
	}
	return BRIDGE_TMPL_READY;
}

/* Whether slot s should build an image and offer it: the template has
 * none, or one from another slot and no verdict yet. */
static bool tmpl_wants(tmpl *t, bridge_slot *s)
{
	int st = atomic_load(&t->state);
	return st == BRIDGE_TMPL_EMPTY || (st == BRIDGE_TMPL_FIRST && t->slot != (uintptr_t)s);
}

/* Offers the image slot s just built to the template. */
static void tmpl_offer(tmpl *t, bridge_slot *s, const bridge_config *cfg, const slot_image *im)
{
	pthread_mutex_lock(&t->mu);
	int st = atomic_load(&t->state);
	if (st == BRIDGE_TMPL_EMPTY) {
		tmpl_keep(t, s, cfg, im);
	} else if (st == BRIDGE_TMPL_FIRST && tmpl_matches(t, cfg, s->ar->size) && (uintptr_t)s->ar != t->base &&
	           (((uintptr_t)s->ar - t->base) & (REGION_ALIGN - 1)) == 0) {
		st = tmpl_learn(t, s, im);
		if (st == BRIDGE_TMPL_REFUSED) {
			free(t->reloc);
			free(t->self);
			t->reloc = t->self = NULL;
			t->nreloc = t->nself = 0;
		}
		atomic_store(&t->state, st);
	}
	pthread_mutex_unlock(&t->mu);
}

/* Makes the run's sandbox a clone of the template, in the arena: a slot
 * that clones keeps no image of its own and clones again for every run.
 * Its own image would be a second copy of the same bytes, and the one a
 * slot among a thousand restores from has left the caches by then, while
 * the template every slot clones stays in them: a burst's restores were a
 * fifth of its time, in memcpy from cold images (and an image is 120 KiB
 * of memory per slot). The relocation costs a few microseconds. 0, or 1
 * when it cannot (no verdict yet, another capability set or limit, an
 * unaligned region: build instead), -1 when the region cannot be mapped. */
static int tmpl_clone(tmpl *t, bridge_slot *s, const bridge_config *cfg)
{
	if (atomic_load(&t->state) != BRIDGE_TMPL_READY)
		return 1;
	if (!s->ar && (s->ar = arena_new(region_size(cfg->memory), t->len + CLONE_PREFAULT, &s->ar_window)))
		s->resident = t->len + CLONE_PREFAULT;
	if (!s->ar)
		return -1;
	uintptr_t delta = (uintptr_t)s->ar - t->base;
	if (!tmpl_matches(t, cfg, s->ar->size) || (delta & (REGION_ALIGN - 1)) != 0)
		return 1;
	saved_state saved = saved_moved(&t->saved, t->base, t->arena_size, delta);
	restore_bytes(s, t->bytes, t->len, &saved);
	uint64_t *w = (uint64_t *)s->ar;
	for (size_t i = 0; i < t->nreloc; i++)
		w[t->reloc[i]] += delta;
	for (size_t i = 0; i < t->nself; i++)
		w[t->self[i]] += (uintptr_t)s - t->slot;
	s->image_end = 0; /* the slot keeps no image */
	s->snapshot = true;
	s->cls_object = t->cls_object;
	s->cls_array = t->cls_array;
	s->cap_names = cfg->cap_names;
	s->cap_async = cfg->cap_async;
	s->ncaps = cfg->ncaps;
	atomic_fetch_add(&t->clones, 1);
	return 0;
}

/* Host modules: import() and import declarations load the run's modules
 * by name (from their bytecode, compiled once per executor) and nothing
 * else, as before. */
static JSModuleDef *module_loader(JSContext *ctx, const char *name, void *opaque)
{
	bridge_slot *s = opaque;
	for (int32_t i = 0; i < s->nmodules; i++) {
		if (strcmp(s->modules[i].name, name) != 0)
			continue;
		JSValue m = JS_ReadObject(ctx, s->modules[i].bc, s->modules[i].len, JS_READ_OBJ_BYTECODE);
		if (JS_IsException(m))
			return NULL;
		if (JS_VALUE_GET_TAG(m) != JS_TAG_MODULE) {
			JS_FreeValue(ctx, m);
			JS_ThrowInternalError(ctx, "codemode: module '%s' is not a module", name);
			return NULL;
		}
		JSModuleDef *def = JS_VALUE_GET_PTR(m);
		JS_FreeValue(ctx, m); /* the runtime's module list keeps it */
		return def;
	}
	JS_ThrowReferenceError(ctx, "could not load module '%s'", name);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Units: an Execute run's entry (its provider scope) and a registered
 * tool's module are the same for every run of their provider set or tool,
 * and reading and evaluating them was most of a small Execute and of a
 * large tool's call. A slot that evaluates the same unit twice in a row
 * keeps a third image, taken right after the unit evaluated and before
 * anything of the run's own (the program, the arguments) is read: a run of
 * that unit restores it and calls the evaluated function.
 *
 * An image freezes what the evaluation computed, so it is taken only when
 * the evaluation did nothing a restore would fail to redo: it read no
 * random number (Math.random, crypto), no clock (performance.now, and
 * the global Date, watched through an accessor while the unit evaluates:
 * new Date() and Date.now() both start with reading it), wrote no log,
 * set no timer, called no host function, and left no job queued. A unit
 * that did evaluates afresh on every run, as without images. */

static JSValue js_date_watch_get(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	(void)argc;
	(void)argv;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	s->effects++;
	return JS_DupValue(ctx, s->date_orig);
}

static int date_define(JSContext *ctx, JSValueConst v)
{
	JSValue global = JS_GetGlobalObject(ctx);
	int rc = JS_DefinePropertyValueStr(ctx, global, "Date", JS_DupValue(ctx, v), JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
	JS_FreeValue(ctx, global);
	return rc < 0 ? -1 : 0;
}

static JSValue js_date_watch_set(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	s->effects++;
	if (date_define(ctx, argc > 0 ? argv[0] : JS_UNDEFINED) < 0)
		return JS_EXCEPTION;
	return JS_UNDEFINED;
}

/* Puts an accessor in front of the global Date for the unit's evaluation;
 * -1 (no image this run) if it cannot. */
static int date_watch(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	JSValue global = JS_GetGlobalObject(ctx);
	JSValue date = JS_GetPropertyStr(ctx, global, "Date");
	int rc = JS_IsException(date)
	             ? -1
	             : lazy_define(ctx, global, "Date", JS_NewCFunction2(ctx, js_date_watch_get, "get Date", 0, JS_CFUNC_generic, 0),
	                           JS_NewCFunction2(ctx, js_date_watch_set, "set Date", 1, JS_CFUNC_generic, 0));
	JS_FreeValue(ctx, global);
	if (rc < 0) {
		JS_FreeValue(ctx, date);
		if (JS_HasException(ctx))
			JS_FreeValue(ctx, JS_GetException(ctx));
		return -1;
	}
	s->date_orig = date;
	return 0;
}

/* Takes the accessor away again: Date is the data property it was, unless
 * the unit deleted it or (the setter) replaced it; either counts. */
static void date_unwatch(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	JSValue global = JS_GetGlobalObject(ctx);
	JSAtom atom = JS_NewAtom(ctx, "Date");
	JSPropertyDescriptor d;
	int has = atom == JS_ATOM_NULL ? -1 : JS_GetOwnProperty(ctx, &d, global, atom);
	if (has > 0) {
		if (d.flags & JS_PROP_GETSET) {
			if (date_define(ctx, s->date_orig) < 0)
				s->effects++;
		}
		JS_FreeValue(ctx, d.value);
		JS_FreeValue(ctx, d.getter);
		JS_FreeValue(ctx, d.setter);
	} else {
		s->effects++;
	}
	if (JS_HasException(ctx)) {
		JS_FreeValue(ctx, JS_GetException(ctx));
		s->effects++;
	}
	JS_FreeAtom(ctx, atom);
	JS_FreeValue(ctx, global);
	JS_FreeValue(ctx, s->date_orig);
	s->date_orig = JS_UNDEFINED;
}

/* Whether this run may take a unit image: a snapshot run of a unit the
 * slot evaluated last time too. */
static bool unit_wanted(const bridge_slot *s, const bridge_config *cfg)
{
	return s->snapshot && cfg->unit_image && !s->from_unit && s->unit_seen_ok &&
	       memcmp(s->unit_seen, cfg->unit_key, sizeof(s->unit_seen)) == 0;
}

/* Before the unit evaluates: its effects are counted from here, and Date
 * is watched if an image may follow. Returns whether one may. */
bool unit_begin(bridge_slot *s, const bridge_config *cfg)
{
	s->effects = 0;
	return unit_wanted(s, cfg) && date_watch(s) == 0;
}

/* After the unit evaluated to fn (want: unit_begin's verdict): takes the
 * unit image if nothing of the evaluation stands in the way. */
void unit_end(bridge_slot *s, const bridge_config *cfg, bool want, JSValueConst fn)
{
	if (want)
		date_unwatch(s);
	if (s->snapshot && cfg->unit_image) {
		memcpy(s->unit_seen, cfg->unit_key, sizeof(s->unit_seen));
		s->unit_seen_ok = true;
	}
	if (!want || !JS_IsFunction(s->ctx, fn) || s->killed || s->effects || JS_IsJobPending(s->rt) ||
	    !JS_IsUndefined(s->guard_polys))
		return;
	slot_image *im = &s->images[IMAGE_UNIT];
	size_t len = (s->ar->top + 63) & ~(size_t)63, had = im->bytes ? im->len : 0;
	if (!mb_charge(s, len > had ? len - had : 0))
		return; /* a cache the budget has no room for */
	JSValue held = JS_DupValue(s->ctx, fn); /* the image's own reference: never dropped */
	JS_RunGC(s->rt);
	JS_SetGCThreshold(s->rt, s->heap_used + s->heap_limit / 8);
	if (image_take(s, cfg, im, held) < 0) {
		im->len = 0;
		return;
	}
	mb_charge(s, 0); /* charged above: this sets how far the run may grow now */
	memcpy(im->key, cfg->unit_key, sizeof(im->key));
	/* A deterministic run's unit image holds the virtual clock's Date,
	 * which reads the slot's clock fields of whichever run restores it:
	 * deterministic runs restore it without installing one again, and
	 * the others do not restore it. */
	im->det = s->det;
}

/* Opens the run from the slot's unit image if it holds this unit. */
static bool unit_restore(bridge_slot *s, const bridge_config *cfg)
{
	const slot_image *im = &s->images[IMAGE_UNIT];
	if (!cfg->unit_image || !im->bytes || im->id != cfg->image_id || im->stack != cfg->stack ||
	    memcmp(im->key, cfg->unit_key, sizeof(im->key)) != 0 || (im->det && !s->det))
		return false;
	restore_image(s, im);
	s->det_ready = im->det;
	s->snapshot = true;
	s->from_unit = true;
	s->unitfn = im->saved.unitfn;
	return true;
}

/* Opens the run's sandbox: from the image (building it first when there is
 * none or it was built for other capabilities), or fresh on libc. */
int open_run(bridge_slot *s, const bridge_config *cfg)
{
	if (!cfg->snapshot) {
		s->snapshot = false;
		if (sandbox_open(s, cfg, heap_allocator()) < 0)
			return -1;
	} else if (unit_restore(s, cfg)) {
		/* the unit image is the whole sandbox */
	} else {
		int kind = cfg->runtime_bc ? IMAGE_RUNTIME : IMAGE_PLAIN;
		slot_image *im = &s->images[kind];
		if (im->bytes && im->id == cfg->image_id && im->stack == cfg->stack) {
			s->snapshot = true;
			restore_image(s, im);
		} else {
			/* A run on a slot without an image of its own runs on a clone
			 * of the template or, without one, on a fresh sandbox (a slot
			 * that serves one run and is freed once idle pays no copy and
			 * no collection), and the slot's second run builds its image.
			 * Until the template has its two images, slots build theirs at
			 * once and offer them. A slot that keeps serving runs builds
			 * its own image after CLONE_RUNS clones: a clone's shape
			 * hashes are the template's, so every run of a clone remakes
			 * the shapes it looks up (a run on a clone took twice as long
			 * as on an own image), and the slots a pool keeps warm are
			 * the ones that serve run after run. */
			uint32_t runs = im->seen_id == cfg->image_id && im->seen_stack == cfg->stack ? im->seen : 0;
			tmpl *t = cfg->tmpls ? &cfg->tmpls->t[kind] : NULL;
			int rc = t && runs < CLONE_RUNS ? tmpl_clone(t, s, cfg) : 1;
			if (rc < 0)
				return -1;
			if (rc > 0) {
				bool offer = t && tmpl_wants(t, s);
				if (runs > 0 || offer) {
					if (build_image(s, cfg, im) < 0)
						return -1;
					if (offer)
						tmpl_offer(t, s, cfg, im);
				} else if (open_fresh(s, cfg) < 0) {
					return -1;
				}
			}
			im->seen = runs < UINT32_MAX ? runs + 1 : runs;
			im->seen_id = cfg->image_id;
			im->seen_stack = cfg->stack;
		}
	}
	s->handle = cfg->handle;
	s->modules = cfg->modules;
	s->nmodules = cfg->nmodules;
	if (s->nmodules > 0)
		JS_SetModuleLoaderFunc(s->rt, NULL, module_loader, s);
	s->open = true;
	return 0;
}

int64_t bridge_image_floor(bridge_slot *s, const uint8_t *bc, size_t bc_len)
{
	const slot_image *im = &s->images[IMAGE_PLAIN];
	if (!im->bytes || s->open)
		return -1;
	restore_image(s, im);
	s->snapshot = true;
	s->open = true;
	s->killed = 0;
	s->deadline = INT64_MAX;
	JS_UpdateStackTop(s->rt);
	JSContext *ctx = s->ctx;
	JSValue v = JS_EvalFunction(ctx, JS_ReadObject(ctx, bc, bc_len, JS_READ_OBJ_BYTECODE));
	size_t n = 0;
	int r = JS_IsException(v) ? JSON_THREW : json_text(s, v, UINT64_MAX, JSON_STRINGIFY, &n);
	JS_FreeValue(ctx, v);
	if (JS_HasException(ctx))
		JS_FreeValue(ctx, JS_GetException(ctx));
	sandbox_close(s);
	return r == JSON_TEXT ? (int64_t)n : -1;
}
