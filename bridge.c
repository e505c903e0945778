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
#include "bridge_internal.h"
#ifndef BRIDGE_LINT
#include "_cgo_export.h"
#endif

#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static inline size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---------------------------------------------------------------------- */
/* strbuf (sb_put and sb_puts are bridge_internal.h's) */

void sb_grow_put(strbuf *b, const char *s, size_t n)
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

/* The run's high-water mark of engine heap (RunStats.PeakMemory). */
static inline void note_peak(bridge_slot *s)
{
	if (s->heap_used > s->heap_peak)
		s->heap_peak = s->heap_used;
}

static void *heap_calloc(void *opaque, size_t count, size_t size)
{
	bridge_slot *s = opaque;
	size_t n;
	if (__builtin_mul_overflow(count, size, &n) || !heap_admit(s, n))
		return NULL;
	void *p = calloc(count, size);
	if (p)
		s->heap_used += malloc_usable_size(p), note_peak(s);
	return p;
}

static void *heap_malloc(void *opaque, size_t size)
{
	bridge_slot *s = opaque;
	if (!heap_admit(s, size))
		return NULL;
	void *p = malloc(size);
	if (p)
		s->heap_used += malloc_usable_size(p), note_peak(s);
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
		s->heap_used += malloc_usable_size(p) - old, note_peak(s);
	return p;
}

static size_t heap_usable(const void *ptr) { return malloc_usable_size((void *)ptr); }

static const JSMallocFunctions heap_funcs = {
	heap_calloc, heap_malloc, heap_free, heap_realloc, heap_usable,
};


/* ---------------------------------------------------------------------- */
/* The arena: one mmap'd region per slot holding every allocation of its
 * sandbox, with the allocator's own state at the region's start, so a byte
 * image of the region's used prefix is a complete sandbox. Blocks carry an
 * 8-byte header with their usable size, which is their size class:
 * multiples of 8 up to 1 KiB, then four classes per power of two, so every
 * block is 8-byte aligned (all the engine needs: its widest scalars are
 * doubles, 64-bit integers and pointers). Freed blocks go to their class's
 * free list and are reused; the last block is returned to the bump pointer.
 * The region's end is a hard cap. A snapshot image is mostly headers and
 * small objects, so the header's width is paid on every restore: at 16
 * bytes it was a sixth of the image. */

#define ARENA_SMALL 1024
#define ARENA_GRAIN 8
#define ARENA_NSMALL (ARENA_SMALL / ARENA_GRAIN + 1)
#define ARENA_NLARGE 256
#define ARENA_PREFAULT (160u << 10)
#define CLONE_PREFAULT (8u << 10) /* past a clone's image: the run's first allocations */
#define CLONE_RUNS BRIDGE_CLONE_RUNS
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

typedef struct arena_block {
	size_t usable;
} arena_block;

struct arena {
	size_t size;   /* the arena's bytes: its hard cap */
	size_t mapped; /* the region's: the arena, then room for the images */
	size_t start; /* offset of the first block */
	size_t top;   /* bump offset: end of the last block */
	size_t hwm;   /* the highest top since the last reset or restore */
	void *small[ARENA_NSMALL];
	void *large[ARENA_NLARGE];
};

static size_t class_of(size_t n, int *small, int *idx)
{
	if (n == 0)
		n = 1;
	if (n <= ARENA_SMALL) {
		size_t r = (n + ARENA_GRAIN - 1) & ~(size_t)(ARENA_GRAIN - 1);
		*small = 1;
		*idx = (int)(r / ARENA_GRAIN);
		return r;
	}
	int p = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^p < n <= 2^(p+1) */
	size_t base = (size_t)1 << p, step = base >> 2;
	size_t k = (n - base + step - 1) / step; /* 1..4 */
	*small = 0;
	*idx = (p - 10) * 4 + (int)k - 1;
	return base + k * step;
}

static size_t arena_class(size_t n)
{
	int small, idx;
	return class_of(n, &small, &idx);
}

/* Room reserved after the arena for each of the slot's images: one
 * mapping per slot holds its sandbox and its images, so that making a slot
 * takes the process's address-space lock once (a burst of new slots made
 * on two threads was serialized on it). */
#define IMAGE_ROOM (16u << 20)

/* Regions start on a 4 GiB boundary, so the distance between two of them
 * leaves an address's low 32 bits alone: the engine hashes Map and
 * WeakMap keys by those bits, and a template's clone (Templates, below)
 * keeps its hash tables only if they hash alike. */
#define REGION_ALIGN ((uintptr_t)1 << 32)

/* Windows: a region of at most REGION_ALIGN bytes lives in a window of
 * that size carved from a reservation of many, mapped read-write and
 * uncommitted (MAP_NORESERVE: a page costs memory once written). Making a
 * slot takes no system call but the prefault, and freeing one hands its
 * pages back (MADV_DONTNEED) and keeps the window for the next: mapping
 * and unmapping a region per slot was a quarter of a burst of new slots,
 * most of it the address-space lock. Windows are shared by the process's
 * executors and never unmapped (address space only). */
#define WINDOWS_PER_RESERVATION 64

static pthread_mutex_t windows_mu = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t *windows_free; /* room for every window reserved */
static size_t windows_nfree, windows_cap, windows_total;

/* Reserves n windows at a REGION_ALIGN boundary; false when the address
 * space (or RLIMIT_AS, or strict overcommit) refuses them. */
static bool windows_reserve(size_t n)
{
	const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	size_t want = (n + 1) * REGION_ALIGN;
	void *r = mmap(NULL, want, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (r == MAP_FAILED)
		return false;
	uintptr_t lo = (uintptr_t)r, at = (lo + REGION_ALIGN - 1) & ~(REGION_ALIGN - 1);
	uintptr_t end = at + n * REGION_ALIGN, hi = lo + want;
	if (windows_total + n > windows_cap) {
		size_t cap = windows_cap ? windows_cap * 2 : 256;
		while (cap < windows_total + n)
			cap *= 2;
		uintptr_t *p = realloc(windows_free, cap * sizeof(*p));
		if (!p) {
			munmap(r, want);
			return false;
		}
		windows_free = p;
		windows_cap = cap;
	}
	if (at > lo)
		munmap(r, at - lo);
	if (hi > end)
		munmap((void *)end, hi - end);
	for (size_t i = n; i-- > 0;) /* the lowest handed out first */
		windows_free[windows_nfree++] = at + i * REGION_ALIGN;
	windows_total += n;
	return true;
}

static void *window_get(void)
{
	void *w = NULL;
	pthread_mutex_lock(&windows_mu);
	if (windows_nfree == 0)
		for (size_t n = WINDOWS_PER_RESERVATION; n >= 1 && !windows_reserve(n); n /= 4)
			;
	if (windows_nfree > 0)
		w = (void *)windows_free[--windows_nfree];
	pthread_mutex_unlock(&windows_mu);
	return w;
}

/* Gives a window back, its first used bytes written or not. */
static void window_put(void *w, size_t used)
{
	madvise(w, used, MADV_DONTNEED);
	pthread_mutex_lock(&windows_mu);
	windows_free[windows_nfree++] = (uintptr_t)w;
	pthread_mutex_unlock(&windows_mu);
}

/* Maps a region of size bytes: a window, or past REGION_ALIGN bytes (or
 * when no window can be reserved) a mapping of its own, wherever the
 * kernel puts it (such a slot builds its sandboxes instead of cloning). */
static void *region_map(size_t size, bool *window)
{
	*window = size <= REGION_ALIGN;
	if (*window) {
		void *w = window_get();
		if (w)
			return w;
		*window = false;
	}
	return mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

static void region_unmap(void *m, size_t size, bool window)
{
	if (window)
		window_put(m, size);
	else
		munmap(m, size);
}

/* A new arena; *in_window says whether its region is a window (the
 * arena's header is part of every image, so the slot keeps that). */
static arena *arena_new(size_t size, size_t prefault, bool *in_window)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size = (size + page - 1) & ~(page - 1);
	size_t mapped = size + NIMAGES * (size_t)IMAGE_ROOM;
	bool window;
	void *m = region_map(mapped, &window);
	if (m == MAP_FAILED)
		return NULL;
	/* A sandbox's build or clone writes the first prefault bytes: fault them
	 * in with one call, not one fault per page (ignored where unsupported).
	 * Making pages is most of what a new slot costs, so no more. */
	madvise(m, size < prefault ? size : prefault, MADV_POPULATE_WRITE);
	arena *a = m;
	memset(a, 0, sizeof(*a));
	a->size = size;
	a->mapped = mapped;
	*in_window = window;
	a->start = (sizeof(*a) + 63) & ~(size_t)63;
	a->top = a->hwm = a->start;
	return a;
}

static void arena_reset(arena *a)
{
	memset(a->small, 0, sizeof(a->small));
	memset(a->large, 0, sizeof(a->large));
	a->top = a->hwm = a->start;
}

static void **arena_list(arena *a, int small, int idx)
{
	if (small)
		return &a->small[idx];
	return idx < ARENA_NLARGE ? &a->large[idx] : NULL;
}

static void *arena_alloc(arena *a, size_t n)
{
	int small, idx;
	size_t cs = class_of(n, &small, &idx);
	void **list = arena_list(a, small, idx);
	if (list && *list) {
		void *p = *list;
		*list = *(void **)p;
		return p;
	}
	if (cs > a->size - a->top - sizeof(arena_block))
		return NULL;
	arena_block *b = (arena_block *)((char *)a + a->top);
	b->usable = cs;
	a->top += sizeof(arena_block) + cs;
	if (a->top > a->hwm)
		a->hwm = a->top;
	return b + 1;
}

static size_t arena_usable(const void *p) { return p ? ((const arena_block *)p - 1)->usable : 0; }

static bool arena_is_last(arena *a, void *p)
{
	return (char *)p + arena_usable(p) == (char *)a + a->top;
}

static void arena_free(arena *a, void *p)
{
	if (!p)
		return;
	size_t cs = arena_usable(p);
	if (arena_is_last(a, p)) {
		a->top -= sizeof(arena_block) + cs;
		return;
	}
	int small, idx;
	class_of(cs, &small, &idx);
	void **list = arena_list(a, small, idx);
	if (list) {
		*(void **)p = *list;
		*list = p;
	}
}

static void *arena_realloc(arena *a, void *p, size_t n)
{
	if (!p)
		return arena_alloc(a, n);
	size_t old = arena_usable(p);
	if (n <= old)
		return p;
	size_t cs = arena_class(n);
	if (arena_is_last(a, p) && cs - old <= a->size - a->top) {
		((arena_block *)p - 1)->usable = cs;
		a->top += cs - old;
		if (a->top > a->hwm)
			a->hwm = a->top;
		return p;
	}
	void *q = arena_alloc(a, n);
	if (!q)
		return NULL;
	memcpy(q, p, old);
	arena_free(a, p);
	return q;
}

/* The engine's allocator functions over the slot's arena, with the memory
 * limit checked against the size class a request will occupy. */
static void *ar_malloc(void *opaque, size_t size)
{
	bridge_slot *s = opaque;
	if (!heap_admit(s, arena_class(size)))
		return NULL;
	void *p = arena_alloc(s->ar, size);
	if (!p) {
		slot_kill(s, BRIDGE_MEMORY);
		return NULL;
	}
	s->heap_used += arena_usable(p);
	note_peak(s);
	if (s->building)
		memset(p, 0, arena_usable(p));
	return p;
}

static void *ar_calloc(void *opaque, size_t count, size_t size)
{
	size_t n;
	if (__builtin_mul_overflow(count, size, &n))
		return NULL;
	void *p = ar_malloc(opaque, n);
	if (p)
		memset(p, 0, n);
	return p;
}

static void ar_free(void *opaque, void *ptr)
{
	bridge_slot *s = opaque;
	if (!ptr)
		return;
	s->heap_used -= arena_usable(ptr);
	if (s->building)
		memset(ptr, 0, arena_usable(ptr));
	arena_free(s->ar, ptr);
}

static void *ar_realloc(void *opaque, void *ptr, size_t size)
{
	bridge_slot *s = opaque;
	if (s->building && ptr) { /* through ar_malloc and ar_free, which zero */
		void *q = ar_malloc(opaque, size);
		if (q) {
			size_t old = arena_usable(ptr);
			memcpy(q, ptr, old < size ? old : size);
			ar_free(opaque, ptr);
		}
		return q;
	}
	size_t old = arena_usable(ptr);
	size_t cs = arena_class(size);
	if (cs > old && !heap_admit(s, cs - old))
		return NULL;
	void *p = arena_realloc(s->ar, ptr, size);
	if (!p) {
		slot_kill(s, BRIDGE_MEMORY);
		return NULL;
	}
	s->heap_used += arena_usable(p) - old;
	note_peak(s);
	return p;
}

static const JSMallocFunctions arena_funcs = {
	ar_calloc, ar_malloc, ar_free, ar_realloc, arena_usable,
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
/* JSON of plain data without the engine's JSON.stringify, which builds a
 * key array, a cycle stack and a JS string per value: it was half the cost
 * of a host call and a third of a small run. json_plain_write takes the
 * values whose JSON.stringify can run no script: strings, numbers,
 * booleans, null, and arrays and objects of the intrinsic Array and Object
 * classes over the intrinsic prototypes, whose own enumerable properties
 * are all data, with no holes and no toJSON on the value or a prototype.
 * It reads them without side effects and declines anything else
 * (accessors, proxies, toJSON, class instances, boxed primitives,
 * functions, BigInt, holes, nesting past JSON_PLAIN_DEPTH and so cycles,
 * output past the strbuf's limit); the caller then gives the whole value
 * to JS_JSONStringify. What it writes is byte for byte what
 * JS_JSONStringify gives (json_test.go holds it to that). */

#define JSON_PLAIN_DEPTH 64

typedef struct json_plain {
	JSContext *ctx;
	strbuf *b;
	JSClassID cls_object, cls_array;
	void *object_proto, *array_proto;
	JSAtom to_json;
} json_plain;

/* Drops the exception an engine call left, so the caller's fallback meets
 * the same condition afresh (a kill is sticky in the slot, not here). */
static bool jp_decline(JSContext *ctx)
{
	JS_FreeValue(ctx, JS_GetException(ctx));
	return false;
}

static void jp_int(strbuf *b, int64_t v)
{
	char buf[24], *p = buf + sizeof(buf);
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	sb_put(b, p, (size_t)(buf + sizeof(buf) - p));
}

/* Quotes UTF-8 as JSON.stringify quotes the string it came from: the
 * engine's UTF-8 (JS_ToCStringLen) joins surrogate pairs and writes a
 * lone surrogate as its three-byte form, which becomes \udxxx. */
static void jp_quote(strbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *p = (const uint8_t *)s, *run = p, *end = p + n;
	sb_put(b, "\"", 1);
	while (p < end) {
		uint8_t c = *p;
		if (c >= 0x20 && c != '"' && c != '\\' && !(c == 0xed && p + 2 < end && p[1] >= 0xa0)) {
			p++;
			continue;
		}
		sb_put(b, (const char *)run, (size_t)(p - run));
		char esc[6] = {'\\', 0};
		size_t len = 2, used = 1;
		unsigned cp = c;
		switch (c) {
		case '"': case '\\': esc[1] = (char)c; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			if (c == 0xed) { /* a lone surrogate, U+D800..U+DFFF */
				cp = 0xd000 | (unsigned)(p[1] & 0x3f) << 6 | (unsigned)(p[2] & 0x3f);
				used = 3;
			}
			esc[1] = 'u';
			esc[2] = hex[cp >> 12 & 15];
			esc[3] = hex[cp >> 8 & 15];
			esc[4] = hex[cp >> 4 & 15];
			esc[5] = hex[cp & 15];
			len = 6;
		}
		sb_put(b, esc, len);
		p += used;
		run = p;
	}
	sb_put(b, (const char *)run, (size_t)(p - run));
	sb_put(b, "\"", 1);
}

static bool jp_string(json_plain *j, JSValueConst v)
{
	size_t n;
	const char *p = JS_ToCStringLen(j->ctx, &n, v);
	if (!p)
		return jp_decline(j->ctx);
	jp_quote(j->b, p, n);
	JS_FreeCString(j->ctx, p);
	return true;
}

static bool jp_value(json_plain *j, JSValueConst v, int depth);

/* Whether obj has no own toJSON, of any kind. */
static bool jp_no_to_json(json_plain *j, JSValueConst obj)
{
	int r = JS_GetOwnProperty(j->ctx, NULL, obj, j->to_json);
	if (r < 0)
		jp_decline(j->ctx);
	return r == 0;
}

/* Reads an own data property; false (declined) if it is absent, an
 * accessor, or reading it failed. */
static bool jp_own(json_plain *j, JSValueConst obj, JSAtom key, JSValue *val)
{
	JSPropertyDescriptor d;
	int r = JS_GetOwnProperty(j->ctx, &d, obj, key);
	if (r <= 0)
		return r < 0 ? jp_decline(j->ctx) : false;
	JS_FreeValue(j->ctx, d.getter);
	JS_FreeValue(j->ctx, d.setter);
	if (d.flags & JS_PROP_GETSET) {
		JS_FreeValue(j->ctx, d.value);
		return false;
	}
	*val = d.value;
	return true;
}

static bool jp_array(json_plain *j, JSValueConst arr, int depth)
{
	JSContext *ctx = j->ctx;
	int64_t len;
	if (JS_GetLength(ctx, arr, &len))
		return jp_decline(ctx);
	sb_put(j->b, "[", 1);
	for (int64_t i = 0; i < len; i++) {
		if (j->b->overflow)
			return false;
		if (i > 0)
			sb_put(j->b, ",", 1);
		JSAtom key = JS_NewAtomUInt32(ctx, (uint32_t)i);
		if (key == JS_ATOM_NULL)
			return jp_decline(ctx);
		JSValue v;
		bool ok = jp_own(j, arr, key, &v);
		JS_FreeAtom(ctx, key);
		if (!ok)
			return false; /* a hole reads through to the prototypes */
		if (JS_IsUndefined(v) || JS_IsSymbol(v)) {
			sb_put(j->b, "null", 4);
		} else {
			ok = jp_value(j, v, depth + 1);
		}
		JS_FreeValue(ctx, v);
		if (!ok)
			return false;
	}
	sb_put(j->b, "]", 1);
	return true;
}

static bool jp_object(json_plain *j, JSValueConst obj, int depth)
{
	JSContext *ctx = j->ctx;
	JSPropertyEnum *tab;
	uint32_t n;
	if (JS_GetOwnPropertyNames(ctx, &tab, &n, obj, JS_GPN_STRING_MASK | JS_GPN_ENUM_ONLY) < 0)
		return jp_decline(ctx);
	bool ok = true, first = true;
	sb_put(j->b, "{", 1);
	for (uint32_t i = 0; i < n && ok && !j->b->overflow; i++) {
		JSValue v;
		if (!(ok = jp_own(j, obj, tab[i].atom, &v)))
			break;
		if (!JS_IsUndefined(v) && !JS_IsSymbol(v)) {
			size_t klen;
			const char *k = JS_AtomToCStringLen(ctx, &klen, tab[i].atom);
			if (k) {
				if (!first)
					sb_put(j->b, ",", 1);
				first = false;
				jp_quote(j->b, k, klen);
				JS_FreeCString(ctx, k);
				sb_put(j->b, ":", 1);
				ok = jp_value(j, v, depth + 1);
			} else {
				ok = jp_decline(ctx);
			}
		}
		JS_FreeValue(ctx, v);
	}
	JS_FreePropertyEnum(ctx, tab, n);
	sb_put(j->b, "}", 1);
	return ok;
}

static bool jp_value(json_plain *j, JSValueConst v, int depth)
{
	switch (JS_VALUE_GET_TAG(v)) {
	case JS_TAG_NULL:
		sb_put(j->b, "null", 4);
		return true;
	case JS_TAG_BOOL:
		if (JS_VALUE_GET_BOOL(v))
			sb_put(j->b, "true", 4);
		else
			sb_put(j->b, "false", 5);
		return true;
	case JS_TAG_INT:
		jp_int(j->b, JS_VALUE_GET_INT(v));
		return true;
	case JS_TAG_FLOAT64: {
		double d = JS_VALUE_GET_FLOAT64(v);
		if (!isfinite(d)) {
			sb_put(j->b, "null", 4);
		} else if (d == trunc(d) && fabs(d) < 0x1p53) { /* -0 too: "0" */
			jp_int(j->b, (int64_t)d);
		} else { /* the engine's shortest round-trip form */
			size_t n;
			const char *p = JS_ToCStringLen(j->ctx, &n, v);
			if (!p)
				return jp_decline(j->ctx);
			sb_put(j->b, p, n);
			JS_FreeCString(j->ctx, p);
		}
		return true;
	}
	case JS_TAG_STRING:
	case JS_TAG_STRING_ROPE:
		return jp_string(j, v);
	case JS_TAG_OBJECT:
		break;
	default: /* undefined and symbols (the callers place them), BigInt */
		return false;
	}
	if (depth >= JSON_PLAIN_DEPTH)
		return false;
	JSClassID cls = JS_GetClassID(v);
	void *want = cls == j->cls_object ? j->object_proto : cls == j->cls_array ? j->array_proto : NULL;
	if (!want)
		return false;
	JSValue proto = JS_GetPrototype(j->ctx, v);
	bool ours = JS_IsObject(proto) && JS_VALUE_GET_PTR(proto) == want;
	JS_FreeValue(j->ctx, proto);
	if (!ours || !jp_no_to_json(j, v))
		return false;
	return cls == j->cls_array ? jp_array(j, v, depth) : jp_object(j, v, depth);
}

/* Writes v's JSON to b (empty on entry); false if v is not plain data or
 * b's limit was reached, and b's contents are then meaningless. undefined
 * and symbols are declined: JSON.stringify gives undefined for them. */
static bool json_plain_write(bridge_slot *s, JSValueConst v, strbuf *b)
{
	JSContext *ctx = s->ctx;
	json_plain j = {.ctx = ctx, .b = b, .cls_object = s->cls_object, .cls_array = s->cls_array};
	if (!JS_IsObject(v))
		return jp_value(&j, v, 0) && !b->overflow;
	if (s->cls_object == s->cls_array) /* not learnt (see sandbox_open) */
		return false;
	JSValue op = JS_GetClassProto(ctx, s->cls_object), ap = JS_GetClassProto(ctx, s->cls_array);
	JSValue app = JS_GetPrototype(ctx, ap);
	j.object_proto = JS_VALUE_GET_PTR(op);
	j.array_proto = JS_VALUE_GET_PTR(ap);
	j.to_json = JS_NewAtom(ctx, "toJSON");
	/* No toJSON where a plain object's or array's lookup would find one. */
	bool ok = j.to_json != JS_ATOM_NULL && JS_IsObject(op) && JS_IsObject(ap) && JS_IsObject(app) &&
	          JS_VALUE_GET_PTR(app) == j.object_proto && jp_no_to_json(&j, op) && jp_no_to_json(&j, ap) &&
	          jp_value(&j, v, 0) && !b->overflow;
	if (j.to_json == JS_ATOM_NULL)
		jp_decline(ctx);
	JS_FreeAtom(ctx, j.to_json);
	JS_FreeValue(ctx, app);
	JS_FreeValue(ctx, ap);
	JS_FreeValue(ctx, op);
	return ok;
}

#define JSON_SCRATCH_KEEP (64 << 10)

/* The slot's scratch buffer for json_plain_write, emptied, refusing
 * output past max (> 0) bytes. */
static strbuf *json_scratch(bridge_slot *s, uint64_t max)
{
	strbuf *b = &s->json;
	b->len = 0;
	b->overflow = false;
	b->limit = max < SIZE_MAX ? (size_t)max : SIZE_MAX;
	return b;
}

/* Gives back the memory a large value made the scratch buffer take. */
static void json_scratch_trim(bridge_slot *s)
{
	if (s->json.cap > JSON_SCRATCH_KEEP) {
		free(s->json.p);
		s->json = (strbuf){0};
	}
}

/* ---------------------------------------------------------------------- */
/* Binary data in JSON: an ArrayBuffer, a DataView or a typed array in a
 * run's result or a capability's arguments crosses as the envelope
 * Execute's codec uses, {"__executor_binary_v1__": "<Type>", "data":
 * "<base64>"} (a view's visible bytes), and an envelope in a capability's
 * result revives as what it names. */

static const char binary_tag[] = "__executor_binary_v1__";

/* JSTypedArrayEnum order. */
static const char *const typed_names[] = {
	"Uint8ClampedArray", "Int8Array",    "Uint8Array",   "Int16Array",   "Uint16Array",  "Int32Array",
	"Uint32Array",       "BigInt64Array", "BigUint64Array", "Float16Array", "Float32Array", "Float64Array",
};
#define NTYPED ((int)(sizeof(typed_names) / sizeof(typed_names[0])))

static const char b64_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The envelope of len bytes at p, of the given type. */
static JSValue binary_envelope(JSContext *ctx, const char *type, const uint8_t *p, size_t len)
{
	if (len > (SIZE_MAX / 4) * 3 - 3)
		return JS_ThrowRangeError(ctx, "binary data too large");
	size_t n = (len + 2) / 3 * 4;
	char *text = js_malloc(ctx, n + 1);
	if (!text)
		return JS_EXCEPTION;
	char *o = text;
	size_t i = 0;
	for (; i + 3 <= len; i += 3) {
		uint32_t w = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = b64_digits[w >> 18];
		*o++ = b64_digits[(w >> 12) & 63];
		*o++ = b64_digits[(w >> 6) & 63];
		*o++ = b64_digits[w & 63];
	}
	if (i < len) {
		uint32_t w = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
		*o++ = b64_digits[w >> 18];
		*o++ = b64_digits[(w >> 12) & 63];
		*o++ = i + 1 < len ? b64_digits[(w >> 6) & 63] : '=';
		*o++ = '=';
	}
	JSValue data = JS_NewStringLen(ctx, text, n);
	js_free(ctx, text);
	if (JS_IsException(data))
		return data;
	JSValue env = JS_NewObject(ctx);
	if (JS_IsException(env) ||
	    JS_DefinePropertyValueStr(ctx, env, binary_tag, JS_NewStringLen(ctx, type, strlen(type)), JS_PROP_C_W_E) < 0 ||
	    JS_DefinePropertyValueStr(ctx, env, "data", JS_DupValue(ctx, data), JS_PROP_C_W_E) < 0) {
		JS_FreeValue(ctx, data);
		JS_FreeValue(ctx, env);
		return JS_EXCEPTION;
	}
	JS_FreeValue(ctx, data);
	return env;
}

/* A byte count read from a DataView's getter. */
static int view_size(JSContext *ctx, JSValueConst view, const char *name, size_t *out)
{
	JSValue v = JS_GetPropertyStr(ctx, view, name);
	int64_t n;
	int rc = JS_ToInt64(ctx, &n, v);
	JS_FreeValue(ctx, v);
	if (rc < 0)
		return -1;
	*out = n < 0 ? 0 : (size_t)n;
	return 0;
}

/* JSON.stringify's replacer for results and arguments: binary data
 * becomes its envelope, anything else stays. */
static JSValue js_binary_replacer(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	JSValueConst v = argc > 1 ? argv[1] : JS_UNDEFINED;
	if (!JS_IsObject(v))
		return JS_DupValue(ctx, v);
	const char *type;
	JSValue buf;
	size_t off = 0, len = 0;
	int ta = JS_GetTypedArrayType(v);
	if (ta >= 0 && ta < NTYPED) {
		size_t bpe;
		buf = JS_GetTypedArrayBuffer(ctx, v, &off, &len, &bpe);
		if (JS_IsException(buf))
			return buf;
		type = typed_names[ta];
	} else if (JS_IsArrayBuffer(v)) {
		buf = JS_DupValue(ctx, v);
		len = SIZE_MAX;
		type = "ArrayBuffer";
	} else if (JS_IsDataView(v)) {
		buf = JS_GetPropertyStr(ctx, v, "buffer");
		if (JS_IsException(buf))
			return buf;
		if (view_size(ctx, v, "byteOffset", &off) < 0 || view_size(ctx, v, "byteLength", &len) < 0) {
			JS_FreeValue(ctx, buf);
			return JS_EXCEPTION;
		}
		type = "DataView";
	} else {
		return JS_DupValue(ctx, v);
	}
	size_t size = 0;
	uint8_t *p = JS_IsArrayBuffer(buf) ? JS_GetArrayBuffer(ctx, &size, buf) : NULL;
	if (len == SIZE_MAX)
		len = size;
	JSValue env;
	if (!p && size == 0 && len == 0)
		env = binary_envelope(ctx, type, (const uint8_t *)"", 0); /* empty or detached */
	else if (!p || off > size || len > size - off)
		env = JS_ThrowTypeError(ctx, "%s: its bytes are out of bounds", type);
	else
		env = binary_envelope(ctx, type, p + off, len);
	JS_FreeValue(ctx, buf);
	return env;
}

/* Base64 decoding (standard alphabet, padding optional); -1 if invalid. */
static int b64_value(uint8_t c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static uint8_t *b64_decode(JSContext *ctx, const char *in, size_t n, size_t *out_len)
{
	while (n > 0 && in[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return NULL;
	uint8_t *out = js_malloc(ctx, n / 4 * 3 + 3);
	if (!out)
		return NULL;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		int d = b64_value((uint8_t)in[i]);
		if (d < 0) {
			js_free(ctx, out);
			return NULL;
		}
		acc = acc << 6 | (uint32_t)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	*out_len = o;
	return out;
}

/* What an envelope revives as, in *res: 1, or 0 when v is none (or names
 * no type we know, or its data is not base64), -1 with an exception. */
static int revive_envelope(JSContext *ctx, JSValueConst v, JSValue *res)
{
	JSValue t = JS_GetPropertyStr(ctx, v, binary_tag);
	JSValue d = JS_GetPropertyStr(ctx, v, "data");
	JSValue out = JS_UNDEFINED;
	bool hit = false;
	if (JS_IsString(t) && JS_IsString(d)) {
		size_t tn, dn, blen = 0;
		const char *type = JS_ToCStringLen(ctx, &tn, t);
		const char *data = JS_ToCStringLen(ctx, &dn, d);
		uint8_t *bytes = type && data ? b64_decode(ctx, data, dn, &blen) : NULL;
		if (bytes && typed_ensure(JS_GetContextOpaque(ctx)) < 0) {
			js_free(ctx, bytes);
			bytes = NULL;
			out = JS_EXCEPTION;
			hit = true;
		}
		if (bytes) {
			JSValue ab = JS_NewArrayBufferCopy(ctx, bytes, blen);
			js_free(ctx, bytes);
			if (JS_IsException(ab)) {
				out = ab;
				hit = true;
			} else if (strcmp(type, "ArrayBuffer") == 0) {
				out = ab;
				hit = true;
			} else {
				int k = -1;
				for (int i = 0; i < NTYPED; i++)
					if (strcmp(type, typed_names[i]) == 0)
						k = i;
				if (k >= 0) {
					static const uint8_t size_log2[] = {0, 0, 0, 1, 1, 2, 2, 3, 3, 1, 2, 3};
					size_t esz = (size_t)1 << size_log2[k];
					if (blen % esz == 0) {
						JSValue args[3] = {ab, JS_NewInt32(ctx, 0), JS_NewFloat64(ctx, (double)(blen / esz))};
						out = JS_NewTypedArray(ctx, 3, args, (JSTypedArrayEnum)k);
						hit = true;
					}
				} else if (strcmp(type, "DataView") == 0) {
					JSValue global = JS_GetGlobalObject(ctx);
					JSValue ctor = JS_GetPropertyStr(ctx, global, "DataView");
					JS_FreeValue(ctx, global);
					if (JS_IsFunction(ctx, ctor)) {
						out = JS_CallConstructor(ctx, ctor, 1, (JSValueConst *)&ab);
						hit = true;
					}
					JS_FreeValue(ctx, ctor);
				}
				JS_FreeValue(ctx, ab);
			}
		}
		JS_FreeCString(ctx, type);
		JS_FreeCString(ctx, data);
	}
	JS_FreeValue(ctx, t);
	JS_FreeValue(ctx, d);
	*res = out;
	if (!hit)
		return 0;
	return JS_IsException(out) ? -1 : 1;
}

#define REVIVE_DEPTH 256

/* Replaces every binary envelope in a value parsed from JSON (plain
 * objects and arrays only) by what it names; -1 with an exception. */
static int revive_binary(JSContext *ctx, JSValueConst v, int depth)
{
	if (!JS_IsObject(v) || depth >= REVIVE_DEPTH)
		return 0;
	JSPropertyEnum *props;
	uint32_t n;
	if (JS_GetOwnPropertyNames(ctx, &props, &n, v, JS_GPN_STRING_MASK | JS_GPN_ENUM_ONLY) < 0)
		return -1;
	int rc = 0;
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		JSValue e = JS_GetProperty(ctx, v, props[i].atom);
		if (JS_IsException(e)) {
			rc = -1;
			break;
		}
		if (JS_IsObject(e) && !JS_IsArray(e)) {
			JSValue r;
			int hit = revive_envelope(ctx, e, &r);
			if (hit < 0) {
				rc = -1;
			} else if (hit > 0) {
				/* Defined, not set: an own "__proto__" stays a property. */
				rc = JS_DefinePropertyValue(ctx, v, props[i].atom, r, JS_PROP_C_W_E) < 0 ? -1 : 0;
				JS_FreeValue(ctx, e);
				continue;
			}
		}
		if (rc == 0)
			rc = revive_binary(ctx, e, depth + 1);
		JS_FreeValue(ctx, e);
	}
	JS_FreePropertyEnum(ctx, props, n);
	return rc;
}

/* A capability's result parsed from JSON, its envelopes revived. */
static JSValue parse_result(JSContext *ctx, const char *data, size_t len)
{
	/* The commonest small results without the parser: an int32, a
	 * boolean, null. */
	if (len > 0 && len <= 10) {
		size_t i = data[0] == '-' ? 1 : 0;
		int64_t v = 0;
		bool digits = i < len && !(data[i] == '0' && len > i + 1);
		for (size_t k = i; k < len && digits; k++) {
			if (data[k] < '0' || data[k] > '9')
				digits = false;
			else
				v = v * 10 + (data[k] - '0');
		}
		if (digits && !(i == 1 && v == 0)) { /* "-0" is a double */
			v = i ? -v : v;
			if (v >= INT32_MIN && v <= INT32_MAX)
				return JS_NewInt32(ctx, (int32_t)v);
		}
		if (len == 4 && memcmp(data, "true", 4) == 0)
			return JS_NewBool(ctx, true);
		if (len == 5 && memcmp(data, "false", 5) == 0)
			return JS_NewBool(ctx, false);
		if (len == 4 && memcmp(data, "null", 4) == 0)
			return JS_NULL;
	}
	JSValue v = JS_ParseJSON(ctx, data, len, "<capability>");
	if (JS_IsException(v) || !JS_IsObject(v) || !memmem(data, len, binary_tag, sizeof(binary_tag) - 1))
		return v;
	if (!JS_IsArray(v)) {
		JSValue r;
		if (revive_envelope(ctx, v, &r) != 0) {
			JS_FreeValue(ctx, v);
			return r;
		}
	}
	if (revive_binary(ctx, v, 0) < 0) {
		JS_FreeValue(ctx, v);
		return JS_EXCEPTION;
	}
	return v;
}

static JSValue rt_call(bridge_slot *s, const char *name, int argc, JSValueConst *argv);

/* What json_text found. */
enum { JSON_TEXT, JSON_NONE, JSON_TOO_LARGE, JSON_THREW };

/* How json_text writes: JSON.stringify's JSON, that with binary data as
 * envelopes (results, arguments), or runtime.js's codec (Execute). */
enum { JSON_STRINGIFY, JSON_BINARY, JSON_CODEC };

/* The JSON text of v, byte for byte what JSON.stringify(v) gives (with
 * codec, runtime.js's encode), in the slot's scratch buffer s->json:
 * JSON_TEXT; JSON_NONE when there is none (undefined, functions, symbols);
 * JSON_TOO_LARGE when it is longer than max, with its first max bytes in
 * the buffer; JSON_THREW with the exception pending. *n is its length in
 * every case but the last. Plain data is written directly; anything else,
 * and every codec value, goes to the engine whole. The caller trims the
 * buffer (json_scratch_trim) once done with the text. */
static int json_text(bridge_slot *s, JSValueConst v, uint64_t max, int mode, size_t *n)
{
	JSContext *ctx = s->ctx;
	strbuf *b = json_scratch(s, max);
	if (mode != JSON_CODEC && json_plain_write(s, v, b)) {
		*n = b->len;
		return JSON_TEXT;
	}
	JSValue json;
	if (mode == JSON_CODEC) {
		json = rt_call(s, "encode", 1, &v);
	} else if (mode == JSON_BINARY) {
		JSValue replacer = JS_NewCFunction2(ctx, js_binary_replacer, "replacer", 2, JS_CFUNC_generic, 0);
		if (JS_IsException(replacer))
			return JSON_THREW;
		json = JS_JSONStringify(ctx, v, replacer, JS_UNDEFINED);
		JS_FreeValue(ctx, replacer);
	} else {
		json = JS_JSONStringify(ctx, v, JS_UNDEFINED, JS_UNDEFINED);
	}
	if (JS_IsException(json))
		return JSON_THREW;
	if (!JS_IsString(json)) {
		JS_FreeValue(ctx, json);
		*n = 0;
		return JSON_NONE;
	}
	const char *p = JS_ToCStringLen(ctx, n, json);
	JS_FreeValue(ctx, json);
	if (!p)
		return JSON_THREW;
	b = json_scratch(s, max);
	sb_put(b, p, *n); /* truncated at max */
	JS_FreeCString(ctx, p);
	if (*n > max)
		return JSON_TOO_LARGE;
	if (b->overflow) { /* libc refused the copy */
		JS_ThrowOutOfMemory(ctx);
		return JSON_THREW;
	}
	return JSON_TEXT;
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
	size_t n;
	int r = json_text(s, v, b->limit ? b->limit : UINT64_MAX, JSON_STRINGIFY, &n);
	if (r == JSON_TEXT || r == JSON_TOO_LARGE) /* b keeps what fits */
		sb_put(b, s->json.p, s->json.len);
	if (r == JSON_TOO_LARGE)
		b->overflow = true;
	json_scratch_trim(s);
	if (r == JSON_TEXT || r == JSON_TOO_LARGE)
		return 0;
	if (r == JSON_THREW) {
		if (s->killed)
			return -1;
		JS_FreeValue(ctx, JS_GetException(ctx));
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
/* Puts String(v) when v is an object that says what it is (a toString
 * of its own or its class's, as test262's Test262Error has): true, or
 * false when it only says [object ...] (or refuses). */
static bool own_string(bridge_slot *s, JSValueConst v, strbuf *b)
{
	JSContext *ctx = s->ctx;
	if (!JS_IsObject(v) || JS_IsArray(v) || JS_IsFunction(ctx, v))
		return false;
	JSValue str = JS_ToString(ctx, v);
	if (JS_IsException(str)) {
		if (!s->killed)
			JS_FreeValue(ctx, JS_GetException(ctx));
		return false;
	}
	size_t n;
	const char *p = JS_ToCStringLen(ctx, &n, str);
	bool own = p && !(n >= 8 && memcmp(p, "[object ", 8) == 0);
	if (own)
		sb_put(b, p, n);
	if (p)
		JS_FreeCString(ctx, p);
	JS_FreeValue(ctx, str);
	return own;
}

static void render_thrown(bridge_slot *s, JSValueConst exc, strbuf *b)
{
	if (!JS_IsError(exc)) {
		sb_puts(b, "Uncaught ");
		if (!own_string(s, exc, b) && !s->killed)
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

/* The next 64 bits of the run's generator: xorshift128+ over the slot's
 * state, which each run seeds from the host (see bridge_config.seed). */
static uint64_t rng_next(bridge_slot *s)
{
	s->effects++;
	uint64_t s1 = s->rng[0];
	const uint64_t s0 = s->rng[1];
	s->rng[0] = s0;
	s1 ^= s1 << 23;
	s->rng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
	return s->rng[1] + s0;
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

static int install_random(JSContext *ctx)
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

/* ---------------------------------------------------------------------- */
/* The web globals (js/web.js: TextEncoder, URL, crypto...). Each is an
 * accessor on the global object until a script reads one: then web.js's
 * bytecode (compiled once per process, bridge_set_web) is evaluated, and
 * every global still an accessor becomes a data property holding its
 * value. A run that never reads one pays nothing but the accessors in the
 * image; one that assigns one first simply gets its own value. */

static const char *const web_names[] = {
	"TextEncoder", "TextDecoder", "atob",           "btoa",            "structuredClone", "performance", "crypto",
	"URL",         "URLSearchParams", "AbortController", "AbortSignal", "Event",           "EventTarget", "DOMException",
	/* Only in a sandbox whose host grants the network (fetch_capability). */
	"fetch",       "Request",     "Response",       "Headers",
};
#define NWEB ((int)(sizeof(web_names) / sizeof(web_names[0])))
#define NWEB_FETCH 4

/* The internal capability that serves fetch (Go's WithOutbound): moved
 * off the global object into the web accessors' data. */
static const char fetch_capability[] = "__codemode_fetch";

/* URL and URLSearchParams are js/url.js, a unit of its own that web.js
 * reads only when a run first needs them (native.url): reading bytecode is
 * most of what a first read of a web global costs. */
#define WEB_URL 7
#define WEB_URLSEARCHPARAMS 8
static bool web_in_url(int i)
{
	return i == WEB_URL || i == WEB_URLSEARCHPARAMS;
}

static _Atomic(const uint8_t *) web_bc;
static _Atomic size_t web_bc_len;
static _Atomic(const uint8_t *) url_bc;
static _Atomic size_t url_bc_len;

void bridge_set_web(const uint8_t *bc, size_t len, const uint8_t *url, size_t url_len)
{
	atomic_store(&url_bc_len, url_len);
	atomic_store(&url_bc, url);
	atomic_store(&web_bc_len, len);
	atomic_store(&web_bc, bc); /* last: web.js's bytecode set means url.js's is */
}

/* native.url(): url.js's factory (web.js calls it once, with its helpers). */
static JSValue js_web_url(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	(void)argc;
	(void)argv;
	const uint8_t *bc = atomic_load(&url_bc);
	if (!bc)
		return JS_ThrowInternalError(ctx, "codemode: the web globals do not compile");
	JSValue fn = JS_ReadObject(ctx, bc, atomic_load(&url_bc_len), JS_READ_OBJ_BYTECODE);
	return JS_IsException(fn) ? fn : JS_EvalFunction(ctx, fn);
}

/* performance.now(): milliseconds since the run began. */
static JSValue js_web_now(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	(void)argc;
	(void)argv;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	s->effects++;
	if (s->det)
		return JS_NewFloat64(ctx, (double)(s->det_ticks++) / 1e3);
	return JS_NewFloat64(ctx, (double)(now_ns() - s->run_start) / 1e6);
}

/* crypto's bytes: the run's generator (Math.random's, seeded per run from
 * the host's CSPRNG) into a Uint8Array. */
static JSValue js_web_fill(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	size_t n;
	uint8_t *p = argc > 0 ? JS_GetUint8Array(ctx, &n, argv[0]) : NULL;
	if (!p)
		return JS_EXCEPTION;
	for (size_t i = 0; i < n; i += 8) {
		uint64_t w = rng_next(s);
		for (size_t k = 0; k < 8 && i + k < n; k++)
			p[i + k] = (uint8_t)(w >> (8 * k));
	}
	return JS_UNDEFINED;
}

/* native.toASCII(domain): URL's host parser's domain to ASCII, for a
 * domain with a code point past ASCII (the Go side's golang.org/x/net/idna:
 * pure computation, no authority). The ASCII form; null if the domain is
 * not valid; false if a label is past the bound IDNA runs on. */
static JSValue js_web_to_ascii(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	size_t n;
	const char *in = argc > 0 ? JS_ToCStringLen(ctx, &n, argv[0]) : NULL;
	if (!in)
		return JS_EXCEPTION;
	char *out = NULL;
	size_t len = 0;
	int32_t rc = go_domain_to_ascii((char *)in, n, &out, &len);
	JS_FreeCString(ctx, in);
	if (rc != 0)
		return rc == 1 ? JS_NULL : JS_FALSE;
	JSValue r = JS_NewStringLen(ctx, out, len);
	free(out);
	return r;
}

/* Defines native.name as a C function (defined, not assigned: native has
 * no prototype, and no setter a script put on Object.prototype runs); -1
 * with native released on failure. */
static int set_native(JSContext *ctx, JSValue *native, const char *name, JSCFunction *fn, int length)
{
	JSValue f = JS_NewCFunction2(ctx, fn, name, length, JS_CFUNC_generic, 0);
	if (JS_IsException(f) || JS_DefinePropertyValueStr(ctx, *native, name, f, JS_PROP_C_W_E) < 0) {
		JS_FreeValue(ctx, *native);
		*native = JS_EXCEPTION;
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Lazy globals (the typed arrays, the web globals): accessors on the global
 * object until first read. */

/* An assignment before any read: the global becomes the value given. */
static JSValue lazy_assign(JSContext *ctx, const char *name, int argc, JSValueConst *argv)
{
	JSValue global = JS_GetGlobalObject(ctx);
	JSValue v = argc > 0 ? JS_DupValue(ctx, argv[0]) : JS_UNDEFINED;
	int rc = JS_DefinePropertyValueStr(ctx, global, name, v, JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
	JS_FreeValue(ctx, global);
	return rc < 0 ? JS_EXCEPTION : JS_UNDEFINED;
}

/* Defines global.name as the accessor get/set, which it consumes: 0 or -1. */
static int lazy_define(JSContext *ctx, JSValueConst global, const char *name, JSValue get, JSValue set)
{
	JSAtom atom = JS_NewAtom(ctx, name);
	if (atom == JS_ATOM_NULL || JS_IsException(get) || JS_IsException(set)) {
		JS_FreeValue(ctx, get);
		JS_FreeValue(ctx, set);
		if (atom != JS_ATOM_NULL)
			JS_FreeAtom(ctx, atom);
		return -1;
	}
	int rc = JS_DefinePropertyGetSet(ctx, global, atom, get, set, JS_PROP_CONFIGURABLE) < 0 ? -1 : 0;
	JS_FreeAtom(ctx, atom);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Typed arrays (ArrayBuffer, the typed arrays, DataView, Atomics) were an
 * eighth of every image, and most runs never touch one: their globals are
 * accessors until the first read of any of them, which makes the engine's
 * intrinsics then (typed_ensure). A global the run assigned or deleted
 * before that stays as the run left it. Engine paths that make binary
 * data from C (revived binary envelopes) and the guards' slow paths (which
 * use Int32Array) ensure them first. */

static const char *const typed_globals[] = {
	"ArrayBuffer", "SharedArrayBuffer", "Uint8ClampedArray", "Int8Array",   "Uint8Array",   "Int16Array",
	"Uint16Array", "Int32Array",        "Uint32Array",       "BigInt64Array", "BigUint64Array", "Float16Array",
	"Float32Array", "Float64Array",     "DataView",          "Atomics",
};
#define NTYPED_GLOBALS ((int)(sizeof(typed_globals) / sizeof(typed_globals[0])))

/* Whether a global's property is the lazy accessor whose getter is
 * lazy_getters[i] (a typed array's, or past NTYPED_GLOBALS a web
 * global's). */
static bool lazy_ours(bridge_slot *s, int i, const JSPropertyDescriptor *d)
{
	if (!(d->flags & JS_PROP_GETSET) || !JS_IsObject(d->getter))
		return false;
	JSValue mine = JS_GetPropertyUint32(s->ctx, s->lazy_getters, (uint32_t)i);
	bool ours = JS_IsObject(mine) && JS_VALUE_GET_PTR(mine) == JS_VALUE_GET_PTR(d->getter);
	JS_FreeValue(s->ctx, mine);
	return ours;
}

/* Hands the typed arrays as the engine just made them (global's, before
 * the run's own globals are put back) to the runtime, if the sandbox has
 * one: runtime.js's typedInit. */
static int typed_hand_over(bridge_slot *s, JSValueConst global)
{
	JSContext *ctx = s->ctx;
	if (!JS_IsObject(s->rtobj))
		return 0;
	JSValue init = JS_GetPropertyStr(ctx, s->rtobj, "typedInit");
	JSValue g = JS_NewObject(ctx); /* own properties: what a program put on Object.prototype is not read */
	int rc = JS_IsFunction(ctx, init) && !JS_IsException(g) ? 0 : -1;
	for (int i = 0; i < NTYPED_GLOBALS && rc == 0; i++) {
		JSValue v = JS_GetPropertyStr(ctx, global, typed_globals[i]);
		if (JS_IsException(v) || JS_DefinePropertyValueStr(ctx, g, typed_globals[i], v, JS_PROP_C_W_E) < 0)
			rc = -1;
	}
	if (rc == 0) {
		JSValue r = JS_Call(ctx, init, JS_UNDEFINED, 1, (JSValueConst *)&g);
		if (JS_IsException(r))
			rc = -1;
		JS_FreeValue(ctx, r);
	}
	JS_FreeValue(ctx, g);
	JS_FreeValue(ctx, init);
	return rc;
}

/* runtime.js's native.typed(): makes the typed arrays. */
static JSValue js_typed_make(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	(void)argc;
	(void)argv;
	return typed_ensure(JS_GetContextOpaque(ctx)) < 0 ? JS_EXCEPTION : JS_UNDEFINED;
}

/* Which lazy globals a property key may name: LAZY_TYPED, LAZY_WEB, both
 * (an object, whose string only its own code can say), or neither. */
enum { LAZY_TYPED = 1, LAZY_WEB = 2 };

static int lazy_named(JSContext *ctx, JSValueConst key)
{
	if (JS_IsObject(key))
		return LAZY_TYPED | LAZY_WEB;
	if (!JS_IsString(key))
		return 0;
	size_t n;
	const char *k = JS_ToCStringLen(ctx, &n, key);
	if (!k)
		return JS_FreeValue(ctx, JS_GetException(ctx)), 0;
	int r = 0;
	for (int i = 0; i < NTYPED_GLOBALS && !r; i++)
		if (strcmp(k, typed_globals[i]) == 0)
			r = LAZY_TYPED;
	for (int i = 0; i < NWEB && !r; i++)
		if (strcmp(k, web_names[i]) == 0)
			r = LAZY_WEB;
	JS_FreeCString(ctx, k);
	return r;
}

int lazy_settle(bridge_slot *s, JSValueConst key)
{
	JSContext *ctx = s->ctx;
	int which = JS_IsUndefined(key) ? LAZY_TYPED | LAZY_WEB : lazy_named(ctx, key);
	if ((which & LAZY_TYPED) && JS_IsUndefined(s->guards.intrinsics[INTRINSIC_INT32ARRAY]) && typed_ensure(s) < 0)
		return -1;
	if (!(which & LAZY_WEB))
		return 0;
	/* A getter loads its unit's globals (web.js's, or url.js's): the key's
	 * own getter is called, or for any key every one still waiting. */
	const char *k = JS_IsString(key) ? JS_ToCStringLen(ctx, NULL, key) : NULL;
	if (JS_IsString(key) && !k)
		return -1;
	JSValue global = JS_GetGlobalObject(ctx);
	int rc = 0;
	for (int i = 0; i < NWEB && rc == 0; i++) {
		if (k && strcmp(k, web_names[i]) != 0)
			continue;
		JSAtom atom = JS_NewAtom(ctx, web_names[i]);
		JSPropertyDescriptor d;
		int has = atom == JS_ATOM_NULL ? -1 : JS_GetOwnProperty(ctx, &d, global, atom);
		if (atom != JS_ATOM_NULL)
			JS_FreeAtom(ctx, atom);
		if (has <= 0) {
			rc = has;
			continue;
		}
		if (lazy_ours(s, NTYPED_GLOBALS + i, &d)) {
			JSValue v = JS_Call(ctx, d.getter, global, 0, NULL);
			rc = JS_IsException(v) ? -1 : 0;
			JS_FreeValue(ctx, v);
		}
		JS_FreeValue(ctx, d.value);
		JS_FreeValue(ctx, d.getter);
		JS_FreeValue(ctx, d.setter);
	}
	JS_FreeCString(ctx, k);
	JS_FreeValue(ctx, global);
	return rc;
}

int typed_ensure(bridge_slot *s)
{
	JSValue *mark = &s->guards.intrinsics[INTRINSIC_INT32ARRAY];
	if (!JS_IsUndefined(*mark))
		return JS_IsNull(*mark) ? (JS_ThrowTypeError(s->ctx, "typed arrays are unavailable in this run"), -1) : 0;
	JSContext *ctx = s->ctx;
	JSValue global = JS_GetGlobalObject(ctx);
	/* What the run made of each global before: put back after. */
	JSPropertyDescriptor kept[NTYPED_GLOBALS];
	int state[NTYPED_GLOBALS]; /* 1: still our accessor, 0: absent, 2: the run's own */
	int rc = 0;
	for (int i = 0; i < NTYPED_GLOBALS; i++) {
		JSAtom atom = JS_NewAtom(ctx, typed_globals[i]);
		int has = JS_GetOwnProperty(ctx, &kept[i], global, atom);
		JS_FreeAtom(ctx, atom);
		if (has < 0) {
			rc = -1;
			state[i] = 0;
			continue;
		}
		state[i] = has == 0 ? 0 : lazy_ours(s, i, &kept[i]) ? 1 : 2;
	}
	/* The engine defines each global afresh (and aborts on an Atomics
	 * already there): none may be left. A run that made one of them
	 * non-configurable goes without typed arrays. */
	for (int i = 0; i < NTYPED_GLOBALS && rc == 0; i++) {
		if (state[i] == 0)
			continue;
		JSAtom atom = JS_NewAtom(ctx, typed_globals[i]);
		if (JS_DeleteProperty(ctx, global, atom, 0) <= 0) {
			if (!JS_HasException(ctx))
				JS_ThrowTypeError(ctx, "typed arrays are unavailable: the global %s cannot be replaced",
				                  typed_globals[i]);
			rc = -1;
		}
		JS_FreeAtom(ctx, atom);
	}
	if (rc == 0 && JS_AddIntrinsicTypedArrays(ctx) < 0)
		rc = -1;
	JSValue int32 = rc == 0 ? JS_GetPropertyStr(ctx, global, "Int32Array") : JS_EXCEPTION;
	*mark = JS_IsException(int32) ? JS_NULL : int32;
	if (rc == 0 && (JS_IsException(int32) || typed_hand_over(s, global) < 0))
		rc = -1;
	for (int i = 0; i < NTYPED_GLOBALS; i++) {
		if (state[i] != 1 && rc == 0) {
			JSAtom atom = JS_NewAtom(ctx, typed_globals[i]);
			int r;
			if (state[i] == 0)
				r = JS_DeleteProperty(ctx, global, atom, 0);
			else if (kept[i].flags & JS_PROP_GETSET)
				r = JS_DefinePropertyGetSet(ctx, global, atom, JS_DupValue(ctx, kept[i].getter),
				                            JS_DupValue(ctx, kept[i].setter),
				                            kept[i].flags & (JS_PROP_ENUMERABLE | JS_PROP_CONFIGURABLE));
			else
				r = JS_DefinePropertyValue(ctx, global, atom, JS_DupValue(ctx, kept[i].value),
				                           kept[i].flags & (JS_PROP_WRITABLE | JS_PROP_ENUMERABLE | JS_PROP_CONFIGURABLE));
			JS_FreeAtom(ctx, atom);
			if (r < 0)
				rc = -1;
		}
		if (state[i] != 0) {
			JS_FreeValue(ctx, kept[i].value);
			JS_FreeValue(ctx, kept[i].getter);
			JS_FreeValue(ctx, kept[i].setter);
		}
	}
	JS_FreeValue(ctx, global);
	return rc;
}

static JSValue js_typed_get(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int magic)
{
	(void)this_val;
	(void)argc;
	(void)argv;
	if (typed_ensure(JS_GetContextOpaque(ctx)) < 0)
		return JS_EXCEPTION;
	JSValue global = JS_GetGlobalObject(ctx);
	JSValue v = JS_GetPropertyStr(ctx, global, typed_globals[magic]);
	JS_FreeValue(ctx, global);
	return v;
}

static JSValue js_typed_set(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int magic)
{
	(void)this_val;
	return lazy_assign(ctx, typed_globals[magic], argc, argv);
}

static int install_typed(JSContext *ctx)
{
	bridge_slot *s = JS_GetContextOpaque(ctx);
	JSValue global = JS_GetGlobalObject(ctx);
	s->lazy_getters = JS_NewArray(ctx);
	int rc = JS_IsException(s->lazy_getters) ? -1 : 0;
	if (rc < 0)
		s->lazy_getters = JS_UNDEFINED;
	for (int i = 0; i < NTYPED_GLOBALS && rc == 0; i++) {
		JSValue get = JS_NewCFunctionMagic(ctx, js_typed_get, typed_globals[i], 0, JS_CFUNC_generic_magic, i);
		JSValue set = JS_NewCFunctionMagic(ctx, js_typed_set, typed_globals[i], 1, JS_CFUNC_generic_magic, i);
		if (!JS_IsException(get) &&
		    JS_DefinePropertyValueUint32(ctx, s->lazy_getters, (uint32_t)i, JS_DupValue(ctx, get), JS_PROP_C_W_E) < 0)
			rc = -1; /* the array's reference went with the failure; ours goes below */
		if (rc < 0) {
			JS_FreeValue(ctx, get);
			JS_FreeValue(ctx, set);
		} else {
			rc = lazy_define(ctx, global, typed_globals[i], get, set);
		}
	}
	JS_FreeValue(ctx, global);
	return rc;
}

/* Runs one of our factories (runtime.js, web.js: bytecode whose completion
 * value is a function of the native bindings) with native, which it
 * consumes: what the factory returns. */
static JSValue call_factory(JSContext *ctx, const uint8_t *bc, size_t len, JSValue native)
{
	JSValue r = JS_EXCEPTION;
	JSValue fn = JS_IsException(native) ? JS_EXCEPTION : JS_ReadObject(ctx, bc, len, JS_READ_OBJ_BYTECODE);
	JSValue factory = JS_IsException(fn) ? JS_EXCEPTION : JS_EvalFunction(ctx, fn);
	if (!JS_IsException(factory))
		r = JS_Call(ctx, factory, JS_UNDEFINED, 1, (JSValueConst *)&native);
	JS_FreeValue(ctx, factory);
	JS_FreeValue(ctx, native);
	return r;
}

/* Turns every web global still an accessor, of url.js's (url) or of the
 * rest, into its value in web (the object of the globals): 0, or -1. */
static int web_settle(JSContext *ctx, JSValueConst web, bool url)
{
	JSValue global = JS_GetGlobalObject(ctx);
	int r = 0;
	for (int i = 0; i < NWEB && r >= 0; i++) {
		if (web_in_url(i) != url)
			continue;
		JSAtom atom = JS_NewAtom(ctx, web_names[i]);
		if (atom == JS_ATOM_NULL)
			break;
		JSPropertyDescriptor d;
		r = JS_GetOwnProperty(ctx, &d, global, atom);
		if (r > 0) {
			bool accessor = (d.flags & JS_PROP_GETSET) != 0;
			JS_FreeValue(ctx, d.value);
			JS_FreeValue(ctx, d.getter);
			JS_FreeValue(ctx, d.setter);
			if (accessor) {
				JSValue v = JS_GetProperty(ctx, web, atom);
				if (JS_IsException(v) ||
				    JS_DefinePropertyValue(ctx, global, atom, v, JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0)
					r = -1;
			}
		}
		JS_FreeAtom(ctx, atom);
	}
	JS_FreeValue(ctx, global);
	return r < 0 ? -1 : 0;
}

/* Evaluates web.js and turns every global still an accessor, but url.js's,
 * into its value: the object of the globals. fetch is the host's fetch
 * capability, or undefined. */
static JSValue web_load(JSContext *ctx, JSValueConst fetch)
{
	const uint8_t *bc = atomic_load(&web_bc);
	if (!bc && (go_load_web() != 0 || !(bc = atomic_load(&web_bc)))) /* the first read in the process */
		return JS_ThrowInternalError(ctx, "codemode: the web globals do not compile");
	JSValue native = JS_NewObjectProto(ctx, JS_NULL);
	if (!JS_IsException(native) && set_native(ctx, &native, "now", js_web_now, 0) == 0 &&
	    set_native(ctx, &native, "fill", js_web_fill, 1) == 0 &&
	    set_native(ctx, &native, "toASCII", js_web_to_ascii, 1) == 0 &&
	    set_native(ctx, &native, "url", js_web_url, 0) == 0 &&
	    JS_DefinePropertyValueStr(ctx, native, "fetch", JS_DupValue(ctx, fetch), JS_PROP_C_W_E) < 0) {
		JS_FreeValue(ctx, native);
		native = JS_EXCEPTION;
	}
	JSValue web = call_factory(ctx, bc, atomic_load(&web_bc_len), native);
	if (!JS_IsException(web) && web_settle(ctx, web, false) < 0) {
		JS_FreeValue(ctx, web);
		return JS_EXCEPTION;
	}
	return web;
}

/* A web global's getter. data[0] is the host's fetch (or undefined);
 * data[1] the sandbox's holder of web.js's globals object, which every
 * getter shares: web.js is evaluated once per sandbox, and url.js, which
 * it reads on demand, once too. */
static JSValue js_web_get(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int magic,
                          JSValueConst *data)
{
	(void)this_val;
	(void)argc;
	(void)argv;
	JSValue web = JS_GetPropertyUint32(ctx, data[1], 0);
	if (JS_IsUndefined(web)) {
		web = web_load(ctx, data[0]);
		if (JS_IsException(web) ||
		    JS_DefinePropertyValueUint32(ctx, data[1], 0, JS_DupValue(ctx, web), JS_PROP_C_W_E) < 0) {
			JS_FreeValue(ctx, web);
			return JS_EXCEPTION;
		}
	}
	if (JS_IsException(web))
		return web;
	JSValue v = JS_GetPropertyStr(ctx, web, web_names[magic]);
	if (!JS_IsException(v) && web_in_url(magic) && web_settle(ctx, web, true) < 0) {
		JS_FreeValue(ctx, v);
		v = JS_EXCEPTION;
	}
	JS_FreeValue(ctx, web);
	return v;
}

static JSValue js_web_set(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int magic)
{
	(void)this_val;
	return lazy_assign(ctx, web_names[magic], argc, argv);
}

static int install_web(JSContext *ctx)
{
	JSValue global = JS_GetGlobalObject(ctx);
	/* The host's fetch, if it grants the network: off the global object. */
	JSAtom fa = JS_NewAtom(ctx, fetch_capability);
	if (fa == JS_ATOM_NULL) {
		JS_FreeValue(ctx, global);
		return -1;
	}
	JSValue fetch = JS_UNDEFINED;
	int has = JS_HasProperty(ctx, global, fa);
	if (has > 0) {
		fetch = JS_GetProperty(ctx, global, fa);
		if (JS_IsException(fetch) || JS_DeleteProperty(ctx, global, fa, 0) < 0)
			has = -1;
	}
	JS_FreeAtom(ctx, fa);
	int rc = has < 0 ? -1 : 0;
	int n = JS_IsUndefined(fetch) ? NWEB - NWEB_FETCH : NWEB;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	JSValue data[2] = {fetch, JS_NewObjectProto(ctx, JS_NULL)}; /* the holder: js_web_get */
	if (JS_IsException(data[1]))
		rc = -1;
	for (int i = 0; i < n && rc == 0; i++) {
		JSValue get = JS_NewCFunctionData(ctx, js_web_get, 0, i, 2, (JSValueConst *)data);
		if (!JS_IsException(get) && JS_DefinePropertyValueUint32(ctx, s->lazy_getters, (uint32_t)(NTYPED_GLOBALS + i),
		                                                         JS_DupValue(ctx, get), JS_PROP_C_W_E) < 0) {
			JS_FreeValue(ctx, get);
			rc = -1;
			break;
		}
		rc = lazy_define(ctx, global, web_names[i], get,
		                 JS_NewCFunctionMagic(ctx, js_web_set, web_names[i], 1, JS_CFUNC_generic_magic, i));
	}
	JS_FreeValue(ctx, data[1]);
	JS_FreeValue(ctx, fetch);
	JS_FreeValue(ctx, global);
	return rc;
}

static int install_console(JSContext *ctx)
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

/* ---------------------------------------------------------------------- */
/* Capability failures: Error objects carrying the handler's message exactly,
 * marked in the slot's WeakMap so the run's outcome can be attributed from
 * host-side state. */

static int install_marks(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	JSValue global = JS_GetGlobalObject(ctx);
	JSValue ctor = JS_GetPropertyStr(ctx, global, "WeakMap");
	JSValue proto = JS_GetPropertyStr(ctx, ctor, "prototype");
	s->marks = JS_CallConstructor(ctx, ctor, 0, NULL);
	s->marks_get = JS_GetPropertyStr(ctx, proto, "get");
	s->marks_set = JS_GetPropertyStr(ctx, proto, "set");
	JS_FreeValue(ctx, proto);
	JS_FreeValue(ctx, ctor);
	JS_FreeValue(ctx, global);
	return JS_IsException(s->marks) || JS_IsException(s->marks_get) || JS_IsException(s->marks_set) ? -1 : 0;
}

/* A new Error whose message is msg[0:len], marked as the failure of
 * capability cap, or (cap < 0, name[0:nlen] set) of the provider tool
 * "provider.tool" a dispatch served; neither: a plain Error. */
static JSValue capability_error(bridge_slot *s, int32_t cap, const char *name, size_t nlen, const char *msg,
                                size_t len)
{
	JSContext *ctx = s->ctx;
	JSValue err = JS_NewError(ctx);
	if (JS_IsException(err))
		return err;
	JSValue m = JS_NewStringLen(ctx, msg, len);
	if (JS_IsException(m)) {
		JS_FreeValue(ctx, err);
		return m;
	}
	if ((cap < 0 && !name) || JS_IsUndefined(s->marks)) {
		if (JS_DefinePropertyValueStr(ctx, err, "message", m, JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
			JS_FreeValue(ctx, err);
			return JS_EXCEPTION;
		}
		return err;
	}
	JSValue mark = JS_NewArray(ctx);
	JSValue who = name ? JS_NewStringLen(ctx, name, nlen) : JS_UNDEFINED;
	if (JS_IsException(mark) || JS_IsException(who) ||
	    JS_DefinePropertyValueStr(ctx, err, "message", JS_DupValue(ctx, m), JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0 ||
	    JS_DefinePropertyValueUint32(ctx, mark, 0, JS_NewInt32(ctx, cap), JS_PROP_C_W_E) < 0 ||
	    JS_DefinePropertyValueUint32(ctx, mark, 1, JS_DupValue(ctx, m), JS_PROP_C_W_E) < 0 ||
	    JS_DefinePropertyValueUint32(ctx, mark, 2, JS_DupValue(ctx, who), JS_PROP_C_W_E) < 0) {
		JS_FreeValue(ctx, who);
		JS_FreeValue(ctx, mark);
		JS_FreeValue(ctx, m);
		JS_FreeValue(ctx, err);
		return JS_EXCEPTION;
	}
	JS_FreeValue(ctx, who);
	JS_FreeValue(ctx, m);
	JSValue args[2] = {err, mark};
	JSValue r = JS_Call(ctx, s->marks_set, s->marks, 2, args);
	JS_FreeValue(ctx, mark);
	if (JS_IsException(r)) {
		JS_FreeValue(ctx, err);
		return r;
	}
	JS_FreeValue(ctx, r);
	s->marked = true;
	return err;
}

/* A copy of the string v in libc memory (NUL-terminated), or NULL. */
static char *dup_js_string(JSContext *ctx, JSValueConst v, size_t *n)
{
	if (!JS_IsString(v))
		return NULL;
	const char *p = JS_ToCStringLen(ctx, n, v);
	if (!p)
		return NULL;
	char *c = malloc(*n + 1);
	if (c)
		memcpy(c, p, *n + 1);
	JS_FreeCString(ctx, p);
	return c;
}

/* If v is a marked capability Error, reports what failed (out->cap, and
 * for a provider tool out->cap_name) and its original message into out
 * and returns true. */
static bool capability_of(bridge_slot *s, JSValueConst v, bridge_out *out)
{
	JSContext *ctx = s->ctx;
	if (!s->marked || !JS_IsObject(v))
		return false;
	JSValue mark = JS_Call(ctx, s->marks_get, s->marks, 1, &v);
	if (JS_IsException(mark)) {
		JS_FreeValue(ctx, JS_GetException(ctx));
		return false;
	}
	bool found = false;
	if (JS_IsArray(mark)) {
		JSValue idx = JS_GetPropertyUint32(ctx, mark, 0);
		JSValue msg = JS_GetPropertyUint32(ctx, mark, 1);
		JSValue who = JS_GetPropertyUint32(ctx, mark, 2);
		size_t n = 0, nn = 0;
		char *m = JS_VALUE_GET_TAG(idx) == JS_TAG_INT ? dup_js_string(ctx, msg, &n) : NULL;
		char *w = m && JS_VALUE_GET_INT(idx) < 0 ? dup_js_string(ctx, who, &nn) : NULL;
		if (m && (JS_VALUE_GET_INT(idx) >= 0 || w)) {
			out->data = m;
			out->size = n;
			out->cap = JS_VALUE_GET_INT(idx);
			out->cap_name = w;
			out->cap_name_len = nn;
			found = true;
		} else {
			free(m);
			free(w);
		}
		JS_FreeValue(ctx, who);
		JS_FreeValue(ctx, msg);
		JS_FreeValue(ctx, idx);
	}
	JS_FreeValue(ctx, mark);
	if (JS_HasException(ctx))
		JS_FreeValue(ctx, JS_GetException(ctx));
	return found;
}

/* Stops the run from inside a host call (why: a BRIDGE_* kill). The engine
 * unwinds with an uncatchable error; the outcome comes from the kill. */
static JSValue throw_kill(bridge_slot *s, int32_t why)
{
	slot_kill(s, why);
	JSValue e = JS_ThrowInternalError(s->ctx, "interrupted");
	JSValue exc = JS_GetException(s->ctx);
	JS_SetUncatchableError(s->ctx, exc);
	JS_Throw(s->ctx, exc);
	return e;
}

/* Whether the program has settled: from then on every host call meets the
 * completion text and never reaches Go. */
static bool program_settled(bridge_slot *s)
{
	return s->retained || (JS_IsObject(s->program) && JS_PromiseState(s->ctx, s->program) != JS_PROMISE_PENDING);
}

static JSValue throw_message(bridge_slot *s, const char *msg, size_t len)
{
	JSValue err = capability_error(s, -1, NULL, 0, msg, len);
	return JS_IsException(err) ? err : JS_Throw(s->ctx, err);
}

static JSValue throw_completed(bridge_slot *s) { return throw_message(s, MSG_COMPLETED, sizeof(MSG_COMPLETED) - 1); }

/* ---------------------------------------------------------------------- */
/* Capabilities: one global C function each, addressed by index (the magic
 * argument). The name is used as a property key, never spliced into source. */

static JSValue call_async(bridge_slot *s, int32_t cap, const char *args, size_t n);

static JSValue js_capability(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int cap)
{
	(void)this_val;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	s->effects++;
	const char *name = s->cap_names[cap];
	if (program_settled(s))
		return throw_completed(s);
	JSValueConst arg = argc > 0 ? argv[0] : JS_UNDEFINED;
	const char *args = "{}";
	size_t n = 2;
	if (!JS_IsUndefined(arg)) { /* no argument: {} */
		if (!JS_IsObject(arg) || JS_IsArray(arg) || JS_IsFunction(ctx, arg))
			return JS_ThrowTypeError(ctx, "%s expects one argument object", name);
		switch (json_text(s, arg, s->payload, JSON_BINARY, &n)) {
		case JSON_TEXT:
			args = s->json.p;
			break;
		case JSON_NONE: /* its toJSON said so */
			json_scratch_trim(s);
			return JS_ThrowTypeError(ctx, "%s expects one argument object", name);
		case JSON_TOO_LARGE:
			json_scratch_trim(s);
			return JS_ThrowRangeError(ctx,
			                          "%s: the arguments are %zu bytes of JSON, over the payload limit of %llu bytes",
			                          name, n, (unsigned long long)s->payload);
		default:
			json_scratch_trim(s);
			return JS_EXCEPTION;
		}
	}
	JSValue ret;
	if (s->cap_async[cap]) {
		ret = call_async(s, cap, args, n);
	} else {
		char room[256];
		bridge_reply r = {.buf = room, .cap = sizeof(room)};
		go_capability_call(s->handle, cap, (char *)args, n, &r);
		switch (r.status) {
		case BRIDGE_CALL_OK:
			ret = parse_result(ctx, r.data ? r.data : "null", r.data ? r.size : 4);
			if (JS_IsException(ret) && !s->killed) {
				JS_FreeValue(ctx, JS_GetException(ctx));
				static const char bad[] = "the capability returned invalid JSON";
				JSValue err = capability_error(s, cap, NULL, 0, bad, sizeof(bad) - 1);
				ret = JS_IsException(err) ? err : JS_Throw(ctx, err);
			}
			break;
		case BRIDGE_CALL_ERROR: {
			JSValue err = capability_error(s, cap, NULL, 0, r.data ? r.data : "", r.data ? r.size : 0);
			ret = JS_IsException(err) ? err : JS_Throw(ctx, err);
			break;
		}
		case BRIDGE_CALL_TYPE_ERROR: /* NUL-terminated by Go */
			ret = JS_ThrowTypeError(ctx, "%s", r.data ? r.data : "");
			break;
		case BRIDGE_CALL_TIMEOUT:
			ret = throw_kill(s, BRIDGE_TIMEOUT);
			break;
		case BRIDGE_CALL_CANCELED:
			ret = throw_kill(s, BRIDGE_CANCELED);
			break;
		default:
			ret = throw_kill(s, BRIDGE_INTERNAL);
			break;
		}
		if (r.data != room)
			free(r.data);
	}
	json_scratch_trim(s);
	return ret;
}

static int install_capabilities(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	JSValue global = JS_GetGlobalObject(ctx);
	int rc = 0;
	for (int32_t i = 0; i < s->ncaps && rc == 0; i++) {
		JSValue f = JS_NewCFunctionMagic(ctx, js_capability, s->cap_names[i], 1, JS_CFUNC_generic_magic, i);
		if (JS_IsException(f) ||
		    JS_DefinePropertyValueStr(ctx, global, s->cap_names[i], f, JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0)
			rc = -1;
	}
	JS_FreeValue(ctx, global);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Async host calls: the call gets a Promise at once and an id; Go starts
 * the handler and later settles the id from its event loop. */

/* Makes room for one more element in an engine-heap array of *cap
 * elements holding len; false on out-of-memory. */
static bool grow_array(JSContext *ctx, void **arr, uint32_t *cap, uint32_t len, size_t elem)
{
	if (len < *cap)
		return true;
	uint32_t n = *cap ? *cap * 2 : 8;
	void *p = js_realloc(ctx, *arr, n * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = n;
	return true;
}

/* Registers a call in flight and returns its promise; *pid names it. */
static JSValue new_call(bridge_slot *s, int32_t cap, const char *name, uint32_t *pid)
{
	JSContext *ctx = s->ctx;
	if (s->pending_calls >= MAX_PENDING_CALLS)
		return JS_ThrowRangeError(ctx, "%s: too many host calls in flight (%d)", name, MAX_PENDING_CALLS);
	uint32_t id = s->calls_free;
	if (id == NO_CALL) {
		if (!grow_array(ctx, (void **)&s->calls, &s->calls_cap, s->calls_len, sizeof(*s->calls)))
			return JS_EXCEPTION;
		id = s->calls_len++;
		s->calls[id].used = false;
	} else {
		s->calls_free = s->calls[id].next;
	}
	JSValue funcs[2];
	JSValue promise = JS_NewPromiseCapability(ctx, funcs);
	if (JS_IsException(promise)) {
		s->calls[id].next = s->calls_free;
		s->calls_free = id;
		return promise;
	}
	s->calls[id] = (host_call){.resolve = funcs[0], .reject = funcs[1], .cap = cap, .used = true, .next = NO_CALL};
	s->pending_calls++;
	*pid = id;
	return promise;
}

static JSValue call_async(bridge_slot *s, int32_t cap, const char *args, size_t n)
{
	uint32_t id;
	JSValue promise = new_call(s, cap, s->cap_names[cap], &id);
	if (JS_IsException(promise))
		return promise;
	if (go_capability_start(s->handle, cap, id, (char *)args, n) != 0) {
		JS_FreeValue(s->ctx, promise);
		return throw_kill(s, BRIDGE_INTERNAL);
	}
	return promise;
}

/* native.dispatch(provider, tool, argsJson) of runtime.js: one provider
 * call, measured against the payload bound before it leaves the sandbox.
 * Resolves to the dispatch's answer, a string. */
static JSValue js_dispatch(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	s->effects++;
	if (program_settled(s))
		return throw_completed(s);
	if (argc < 3)
		return JS_ThrowTypeError(ctx, "dispatch expects a provider, a tool and the arguments");
	const char *p[3] = {NULL, NULL, NULL};
	size_t n[3] = {0, 0, 0};
	JSValue ret = JS_UNDEFINED;
	for (int i = 0; i < 3; i++) {
		if (!(p[i] = JS_ToCStringLen(ctx, &n[i], argv[i]))) {
			ret = JS_EXCEPTION;
			goto cleanup;
		}
	}
	size_t total = n[0] + n[1] + n[2];
	if (total > s->payload) {
		char msg[256];
		int len = snprintf(msg, sizeof(msg),
		                   "The tool call is %zu bytes (provider, tool and arguments), over the payload limit of %llu "
		                   "bytes; it was not delivered.",
		                   total, (unsigned long long)s->payload);
		ret = throw_message(s, msg, (size_t)len);
		goto cleanup;
	}
	uint32_t id;
	ret = new_call(s, -1, "dispatch", &id);
	if (JS_IsException(ret))
		goto cleanup;
	if (go_dispatch_start(s->handle, id, (char *)p[0], n[0], (char *)p[1], n[1], (char *)p[2], n[2]) != 0) {
		JS_FreeValue(ctx, ret);
		ret = throw_kill(s, BRIDGE_INTERNAL);
	}
cleanup:
	for (int i = 0; i < 3; i++)
		if (p[i])
			JS_FreeCString(ctx, p[i]);
	return ret;
}

/* native.fail(provider, tool, message) of runtime.js: the Error a provider
 * tool's envelope failure throws, marked as that tool's. */
static JSValue js_fail(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	bridge_slot *s = JS_GetContextOpaque(ctx);
	if (argc < 3)
		return JS_ThrowTypeError(ctx, "fail expects a provider, a tool and a message");
	const char *p[3] = {NULL, NULL, NULL};
	size_t n[3] = {0, 0, 0};
	JSValue ret = JS_EXCEPTION;
	strbuf name = {0};
	for (int i = 0; i < 3; i++)
		if (!(p[i] = JS_ToCStringLen(ctx, &n[i], argv[i])))
			goto cleanup;
	sb_put(&name, p[0], n[0]);
	sb_put(&name, ".", 1);
	sb_put(&name, p[1], n[1]);
	if (name.overflow) {
		ret = JS_ThrowOutOfMemory(ctx);
		goto cleanup;
	}
	ret = capability_error(s, -1, name.p, name.len, p[2], n[2]);
cleanup:
	free(name.p);
	for (int i = 0; i < 3; i++)
		if (p[i])
			JS_FreeCString(ctx, p[i]);
	return ret;
}

void bridge_slot_settle(bridge_slot *s, uint32_t id, int32_t status, const char *data, size_t len, const char *name,
                        size_t nlen)
{
	if (!s->open || id >= s->calls_len || !s->calls[id].used)
		return;
	JS_UpdateStackTop(s->rt);
	JSContext *ctx = s->ctx;
	if (!data)
		data = "";
	host_call c = s->calls[id];
	s->calls[id].used = false;
	s->calls[id].next = s->calls_free;
	s->calls_free = id;
	s->pending_calls--;

	JSValue v = JS_UNDEFINED, fn = c.resolve;
	if (status == BRIDGE_CALL_STRING) {
		v = JS_NewStringLen(ctx, data, len);
	} else if (status == BRIDGE_CALL_OK) {
		v = parse_result(ctx, data, len);
		if (JS_IsException(v) && !s->killed) {
			JS_FreeValue(ctx, JS_GetException(ctx));
			static const char bad[] = "the capability returned invalid JSON";
			v = capability_error(s, c.cap, name, nlen, bad, sizeof(bad) - 1);
			fn = c.reject;
		}
	} else if (status == BRIDGE_CALL_TYPE_ERROR) {
		JS_ThrowTypeError(ctx, "%.*s", (int)(len < INT32_MAX ? len : INT32_MAX), data);
		v = JS_GetException(ctx);
		fn = c.reject;
	} else {
		v = capability_error(s, c.cap, name, nlen, data, len);
		fn = c.reject;
	}
	if (JS_IsException(v)) {
		JS_FreeValue(ctx, JS_GetException(ctx));
	} else {
		JSValue r = JS_Call(ctx, fn, JS_UNDEFINED, 1, &v);
		if (JS_IsException(r))
			JS_FreeValue(ctx, JS_GetException(ctx));
		JS_FreeValue(ctx, r);
		JS_FreeValue(ctx, v);
	}
	JS_FreeValue(ctx, c.resolve);
	JS_FreeValue(ctx, c.reject);
}

/* ---------------------------------------------------------------------- */
/* Timers: setTimeout/setInterval and their clear functions. They fire from
 * the event loop (bridge_slot_step), never after the run has settled. */

static void timer_free(JSContext *ctx, js_timer *t)
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

static int install_timers(JSContext *ctx)
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
static int earliest_timer(bridge_slot *s)
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

static void drain_jobs(bridge_slot *s);
static void log_uncaught(bridge_slot *s);

/* Fires, in order, the timers due at entry, each followed by its jobs. An
 * interval re-armed meanwhile waits for the next step. */
static void fire_timers(bridge_slot *s)
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

/* ---------------------------------------------------------------------- */
/* The sandbox lifecycle (straightforward: a fresh runtime and context per
 * run, freed afterwards). */

static int install_random(JSContext *ctx);
static int install_web(JSContext *ctx);
static int install_typed(JSContext *ctx);

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
	if (install_marks(s) || (s->ncaps > 0 && install_capabilities(s)) || install_web(ctx) || guards_install(s))
		return -1;
	return 0;
}

/* Forgets the slot's pointers into a sandbox's heap. */
static void forget_sandbox(bridge_slot *s)
{
	s->calls = NULL;
	s->calls_len = s->calls_cap = s->pending_calls = 0;
	s->calls_free = NO_CALL;
	s->timers = NULL;
	s->ntimers = s->timers_cap = 0;
	s->timer_ids = 0;
	s->timer_seq = 0;
	s->marks = s->marks_get = s->marks_set = s->lazy_getters = JS_UNDEFINED;
	guards_forget(s);
	s->rtobj = JS_UNDEFINED;
	s->retain = s->retained = false;
	s->invs = NULL;
	s->ninvs = s->invs_cap = 0;
	s->program = s->unit = s->tool = JS_UNDEFINED;
	s->ctx = NULL;
	s->rt = NULL;
	s->open = false;
}

/* Records how far the arena's allocations reached, for the next restore
 * to clear. */
static void mark_dirty(bridge_slot *s)
{
	if (s->ar->hwm > s->dirty_end)
		s->dirty_end = s->ar->hwm;
	if (s->dirty_end > s->touched)
		s->touched = s->dirty_end;
}

/* Ends the sandbox: a libc one is freed value by value, so a leaked
 * reference aborts in JS_FreeRuntime; an arena one is left for the next
 * restore, which overwrites it. So the run's own last references (the
 * program, its compiled source, a tool's function) are dropped here and
 * not as the run ends: freeing a large tool's 400 functions one by one
 * was a fifth of its call, all of it work the restore makes moot. */
static void sandbox_close(bridge_slot *s)
{
	if (s->snapshot) {
		if (s->ar)
			mark_dirty(s);
		forget_sandbox(s);
		return;
	}
	if (s->ctx) {
		JSContext *ctx = s->ctx;
		for (uint32_t i = 0; i < s->calls_len; i++) {
			if (s->calls[i].used) {
				JS_FreeValue(ctx, s->calls[i].resolve);
				JS_FreeValue(ctx, s->calls[i].reject);
			}
		}
		js_free(ctx, s->calls);
		for (uint32_t i = 0; i < s->ninvs; i++)
			JS_FreeValue(ctx, s->invs[i]);
		js_free(ctx, s->invs);
		JS_FreeValue(ctx, s->rtobj);
		for (uint32_t i = 0; i < s->ntimers; i++)
			timer_free(ctx, &s->timers[i]);
		js_free(ctx, s->timers);
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
}

/* ---------------------------------------------------------------------- */
/* Snapshots: build a sandbox once in the slot's arena (runtime, context,
 * intrinsics, console, timers, capabilities, marks, Math.random, the
 * runtime.js object), keep the used prefix of the region as an image, and
 * copy it back before every run. */

static JSValue load_runtime(bridge_slot *s, const bridge_config *cfg);

/* The region reserved per slot: the memory limit, room for fragmentation
 * and the image. Reserved, not committed (MAP_NORESERVE). */
static size_t region_size(uint64_t memory) { return (size_t)memory * 2 + (4u << 20); }

/* Image bytes live in the room after the slot's arena (or, past it, in a
 * mapping of their own: mapped says its size), never in malloc's heap, so
 * that a slot freed after a burst gives them back to the kernel. */
static uint8_t *image_alloc(bridge_slot *s, slot_image *im, size_t len)
{
	if (im->bytes && im->mapped)
		munmap(im->bytes, im->mapped);
	im->bytes = NULL;
	im->mapped = 0;
	if (len <= IMAGE_ROOM)
		return (uint8_t *)s->ar + s->ar->size + (size_t)(im - s->images) * IMAGE_ROOM;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
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
	if (!s->ar && !(s->ar = arena_new(region_size(cfg->memory), ARENA_PREFAULT, &s->ar_window)))
		return -1;
	arena_reset(s->ar);
	s->heap_used = 0;
	s->snapshot = true;
	int rc = sandbox_open(s, cfg, &arena_funcs);
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
	size_t len = (s->ar->top + 63) & ~(size_t)63;
	uint8_t *bytes = image_alloc(s, im, len);
	if (!bytes)
		return -1;
	memset((char *)s->ar + s->ar->top, 0, len - s->ar->top); /* the slack, from an earlier run */
	memcpy(bytes, s->ar, len);
	*im = (slot_image){
		.bytes = bytes,
		.mapped = im->mapped,
		.len = len,
		.id = cfg->image_id,
		.stack = cfg->stack,
		.saved = {.rt = s->rt, .ctx = s->ctx, .rtobj = s->rtobj, .marks = s->marks, .marks_get = s->marks_get,
		          .marks_set = s->marks_set, .lazy_getters = s->lazy_getters, .guards = s->guards,
		          .heap_used = s->heap_used},
	};
	s->ar->hwm = s->ar->top;
	s->image_end = len;
	return 0;
}

/* Beyond this many dirty bytes the tail is handed back to the kernel
 * (zero-filled on the next touch) instead of cleared by hand. */
#define SCRUB_MADVISE (8u << 20)

/* Puts a sandbox's bytes back: zeroes over whatever differs from zero
 * past them (another image, the last run's allocations), then the
 * region's prefix and the slot's pointers into it. */
static void restore_bytes(bridge_slot *s, const uint8_t *bytes, size_t len, const saved_state *saved)
{
	char *base = (char *)s->ar;
	if (s->dirty_end > len) {
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		size_t from = len, upto = s->dirty_end;
		if (upto - from > SCRUB_MADVISE) {
			size_t aligned = (from + page - 1) & ~(page - 1);
			memset(base + from, 0, aligned - from);
			madvise(base + aligned, ((upto + page - 1) & ~(page - 1)) - aligned, MADV_DONTNEED);
		} else {
			memset(base + from, 0, upto - from);
		}
	}
	memcpy(base, bytes, len);
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

static void restore_image(bridge_slot *s, const slot_image *im) { restore_bytes(s, im->bytes, im->len, &im->saved); }

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
	    a->guards.atom_length != b->guards.atom_length)
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
	if (!s->ar && !(s->ar = arena_new(region_size(cfg->memory), t->len + CLONE_PREFAULT, &s->ar_window)))
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

/* Opens the run's sandbox: from the image (building it first when there is
 * none or it was built for other capabilities), or fresh on libc. */
/* ---------------------------------------------------------------------- */
/* Determinism (bridge_config.det_clock): the run's clock is virtual. It
 * starts at det_start_ns (wall time) and advances 1 us per read, shared by
 * Date and performance.now (which starts at 0), so two runs that read it
 * alike see the same values and a loop waiting on it still ends. The
 * engine's Date reads the machine's clock, so the run gets a Date in front
 * of it whose clock is this one; the sandbox is the run's own. */

static const char det_date_src[] =
	"(function (now) {\n"
	"'use strict';\n"
	"const D = Date, construct = Reflect.construct, define = Object.defineProperty;\n"
	"const F = function Date(...args) {\n"
	"\tif (new.target === undefined) return construct(D, [now()], F).toString();\n"
	"\treturn construct(D, args.length === 0 ? [now()] : args, new.target);\n"
	"};\n"
	"const method = (value) => ({value, writable: true, configurable: true});\n"
	"define(F, 'prototype', {value: D.prototype});\n"
	"define(F, 'length', {value: 7, configurable: true});\n"
	"define(F, 'now', method(function now() { return now_(); }));\n"
	"const now_ = now;\n"
	"define(F, 'parse', method(D.parse));\n"
	"define(F, 'UTC', method(D.UTC));\n"
	"define(D.prototype, 'constructor', method(F));\n"
	"define(globalThis, 'Date', method(F));\n"
	"})";

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

static JSValue eval_source(bridge_slot *s, const char *src, size_t len, const char *filename);

static int det_install(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	JSValue f = eval_source(s, det_date_src, sizeof(det_date_src) - 1, "<codemode:clock>");
	JSValue now = JS_NewCFunction2(ctx, js_det_now, "now", 0, JS_CFUNC_generic, 0);
	JSValue r = JS_IsException(f) || JS_IsException(now) ? JS_EXCEPTION : JS_Call(ctx, f, JS_UNDEFINED, 1, &now);
	int rc = JS_IsException(r) ? -1 : 0;
	JS_FreeValue(ctx, r);
	JS_FreeValue(ctx, now);
	JS_FreeValue(ctx, f);
	return rc;
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
	return s->snapshot && cfg->unit_image && !s->from_unit && !s->det && s->unit_seen_ok &&
	       memcmp(s->unit_seen, cfg->unit_key, sizeof(s->unit_seen)) == 0;
}

/* Before the unit evaluates: its effects are counted from here, and Date
 * is watched if an image may follow. Returns whether one may. */
static bool unit_begin(bridge_slot *s, const bridge_config *cfg)
{
	s->effects = 0;
	return unit_wanted(s, cfg) && date_watch(s) == 0;
}

/* After the unit evaluated to fn (want: unit_begin's verdict): takes the
 * unit image if nothing of the evaluation stands in the way. */
static void unit_end(bridge_slot *s, const bridge_config *cfg, bool want, JSValueConst fn)
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
	JSValue held = JS_DupValue(s->ctx, fn); /* the image's own reference: never dropped */
	JS_RunGC(s->rt);
	JS_SetGCThreshold(s->rt, s->heap_used + s->heap_limit / 8);
	size_t len = (s->ar->top + 63) & ~(size_t)63;
	uint8_t *bytes = image_alloc(s, im, len);
	if (!bytes) {
		im->len = 0;
		return;
	}
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
		          .heap_used = s->heap_used, .unitfn = held},
	};
	memcpy(im->key, cfg->unit_key, sizeof(im->key));
	s->ar->hwm = s->ar->top;
	s->image_end = len;
}

/* Opens the run from the slot's unit image if it holds this unit. */
static bool unit_restore(bridge_slot *s, const bridge_config *cfg)
{
	const slot_image *im = &s->images[IMAGE_UNIT];
	if (!cfg->unit_image || !im->bytes || im->id != cfg->image_id || im->stack != cfg->stack ||
	    memcmp(im->key, cfg->unit_key, sizeof(im->key)) != 0)
		return false;
	restore_image(s, im);
	s->snapshot = true;
	s->from_unit = true;
	s->unitfn = im->saved.unitfn;
	return true;
}

static int open_run(bridge_slot *s, const bridge_config *cfg)
{
	if (!cfg->snapshot) {
		s->snapshot = false;
		if (sandbox_open(s, cfg, &heap_funcs) < 0)
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

/* Calls method name of the runtime object with argc arguments. */
static JSValue rt_call(bridge_slot *s, const char *name, int argc, JSValueConst *argv)
{
	JSValue fn = JS_GetPropertyStr(s->ctx, s->rtobj, name);
	if (JS_IsException(fn))
		return fn;
	JSValue r = JS_Call(s->ctx, fn, s->rtobj, argc, argv);
	JS_FreeValue(s->ctx, fn);
	return r;
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
	return st == BRIDGE_TIMEOUT || st == BRIDGE_CANCELED || st == BRIDGE_MEMORY || st == BRIDGE_INTERNAL;
}

/* Ends the run unless it waits on host work or is retained, in which case
 * out says how long until the next timer. */
static int32_t conclude(bridge_slot *s, int32_t st, bridge_out *out)
{
	out->wait_ns = -1;
	out->peak_heap = s->heap_peak;
	if ((s->retained && !is_kill(st) && s->open) || st == BRIDGE_PENDING) {
		out->wait_ns = bridge_slot_wait(s);
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

static JSValue eval_source(bridge_slot *s, const char *src, size_t len, const char *filename)
{
	JSEvalOptions opts = {
		.version = JS_EVAL_OPTIONS_VERSION,
		.eval_flags = JS_EVAL_TYPE_GLOBAL,
		.filename = filename,
		.line_num = 1, /* the wrappers share the first line with the user's source */
	};
	return JS_Eval2(s->ctx, src, len, &opts);
}

/* Loads the runtime (from bytecode) and hands it the native bindings. */
static JSValue load_runtime(bridge_slot *s, const bridge_config *cfg)
{
	JSContext *ctx = s->ctx;
	JSValue native = JS_NewObjectProto(ctx, JS_NULL);
	if (!JS_IsException(native) && set_native(ctx, &native, "dispatch", js_dispatch, 3) == 0 &&
	    set_native(ctx, &native, "fail", js_fail, 3) == 0)
		set_native(ctx, &native, "typed", js_typed_make, 0);
	JSValue rt = call_factory(ctx, cfg->runtime_bc, cfg->runtime_bc_len, native);
	if (JS_IsException(rt) || JS_IsUndefined(s->guards.intrinsics[INTRINSIC_INT32ARRAY]))
		return rt;
	/* The typed arrays were made before the runtime came: hand them over. */
	JSValue saved = s->rtobj, global = JS_GetGlobalObject(ctx);
	s->rtobj = rt;
	int rc = JS_IsNull(s->guards.intrinsics[INTRINSIC_INT32ARRAY]) ? 0 : typed_hand_over(s, global);
	s->rtobj = saved;
	JS_FreeValue(ctx, global);
	if (rc < 0) {
		JS_FreeValue(ctx, rt);
		return JS_EXCEPTION;
	}
	return rt;
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

static int32_t slot_run(bridge_slot *s, const bridge_config *cfg, const char *src, size_t len, bridge_out *out)
{
	memset(out, 0, sizeof(*out));
	s->killed = 0;
	s->run_id = cfg->run_id;
	s->run_start = now_ns();
	s->deadline = s->run_start + cfg->budget_ns;
	s->heap_used = 0;
	s->heap_limit = cfg->memory;
	s->payload = cfg->payload;
	s->logs_limit = cfg->logs;
	s->program = s->unit = s->tool = JS_UNDEFINED;
	s->marked = s->bad_args = s->syntax = false;
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

	int32_t st;
	int opened = open_run(s, cfg);
	s->heap_peak = s->heap_used;
	if (opened == 0 && s->det) {
		JS_UpdateStackTop(s->rt);
		if (det_install(s) < 0) {
			if (JS_HasException(s->ctx))
				JS_FreeValue(s->ctx, JS_GetException(s->ctx));
			opened = -1;
		}
	}
	if (opened < 0) {
		st = s->killed ? s->killed : BRIDGE_INTERNAL;
		out->data = dup_text("cannot build a sandbox within the memory limit", &out->size);
	} else {
		JS_UpdateStackTop(s->rt);
		if (cfg->mode == BRIDGE_MODE_REGISTER) {
			st = start_register(s, cfg, src, len, out);
			if (JS_HasException(s->ctx))
				JS_FreeValue(s->ctx, JS_GetException(s->ctx));
		} else {
			JSValue v = cfg->mode == BRIDGE_MODE_EXECUTE ? start_execute(s, cfg, src, len, out)
			            : cfg->mode == BRIDGE_MODE_TOOL  ? start_tool(s, cfg, src, len, out)
			                                             : load_source(s, cfg, src, len, out);
			if (JS_IsException(v)) {
				st = s->killed ? s->killed : emit_exception(s, !s->bad_args, out);
				if (st == BRIDGE_THROWN && s->bad_args)
					st = BRIDGE_BAD_ARGS;
				if (s->killed && JS_HasException(s->ctx))
					JS_FreeValue(s->ctx, JS_GetException(s->ctx));
			} else {
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
                        size_t selftest_len, bridge_out *out)
{
	bridge_config c = *cfg; /* the inputs live as long as this call */
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
	size_t upto = (s->dirty_end + page - 1) & ~(page - 1);
	if (upto <= from)
		return 0;
	madvise((char *)s->ar + from, upto - from, MADV_DONTNEED);
	s->dirty_end = from; /* zero above, as a fresh mapping */
	return upto - from;
}

size_t bridge_slot_held(bridge_slot *s)
{
	if (!s->ar)
		return 0;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return (max_size(s->dirty_end, s->image_end) + page - 1) & ~(page - 1);
}

void bridge_slot_take_logs(bridge_slot *s, bridge_out *out)
{
	memset(out, 0, sizeof(*out));
	hand_over_logs(s, out);
}

static int32_t compile_as(const char *src, size_t len, const char *filename, int type, int flags,
                          const bridge_source *srcs, int32_t nsrcs, bridge_out *out);

int32_t bridge_compile(const char *src, size_t len, const char *filename, int32_t strip, bridge_out *out)
{
	return compile_as(src, len, filename, JS_EVAL_TYPE_GLOBAL,
	                  strip ? JS_WRITE_OBJ_STRIP_SOURCE | JS_WRITE_OBJ_STRIP_DEBUG : 0, NULL, 0, out);
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
	if (s->open) {
		JS_UpdateStackTop(s->rt);
		finish(s, out);
	} else {
		hand_over_logs(s, out);
	}
}

bridge_slot *bridge_slot_new(void)
{
	bridge_slot *s = calloc(1, sizeof(*s));
	if (s) {
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
	for (int i = 0; i < NIMAGES; i++)
		if (s->images[i].bytes && s->images[i].mapped)
			munmap(s->images[i].bytes, s->images[i].mapped);
	if (s->ar)
		region_unmap(s->ar, s->ar->mapped, s->ar_window);
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
	int32_t st = bridge_slot_run(s, cfg, src, len, bc, bc_len, NULL, 0, NULL, 0, NULL, 0, NULL, 0, &out);
	int64_t n = st == BRIDGE_DONE ? (int64_t)out.size : -1;
	if (st == BRIDGE_PENDING) {
		bridge_out tail;
		bridge_slot_close(s, &tail);
		bridge_out_free(&tail);
	}
	bridge_out_free(&out);
	return n;
}
