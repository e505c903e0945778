/*
 * bridge_arena.c: where a sandbox's memory comes from, and when it stops.
 *
 * Owns the strbuf's slow path (sb_grow_put), the allocator over libc with
 * the slot's memory limit, the arena (one mmap'd region per slot, the
 * windows those regions live in, and the engine's allocator functions over
 * it) and the interrupt handler, which reads the deadline and the cancel
 * flag. The allocator, the arena and the interrupt check are the engine's
 * hottest callbacks: they live together here, and this unit calls no other.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bridge_internal.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

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

static bool mb_grow(bridge_slot *s, size_t extra);

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

/* A new block p of a libc sandbox, once heap_used counts it: kept if the
 * budget covers the heap, else freed, and the run killed. */
static void *heap_covered(bridge_slot *s, void *p)
{
	if (s->heap_used <= s->cover || mb_grow(s, 0))
		return p;
	s->heap_used -= malloc_usable_size(p);
	free(p);
	slot_kill(s, BRIDGE_BUDGET);
	return NULL;
}

static void *heap_calloc(void *opaque, size_t count, size_t size)
{
	bridge_slot *s = opaque;
	size_t n;
	if (__builtin_mul_overflow(count, size, &n) || !heap_admit(s, n))
		return NULL;
	void *p = calloc(count, size);
	if (p) {
		s->heap_used += malloc_usable_size(p), note_peak(s);
		p = heap_covered(s, p);
	}
	return p;
}

static void *heap_malloc(void *opaque, size_t size)
{
	bridge_slot *s = opaque;
	if (!heap_admit(s, size))
		return NULL;
	void *p = malloc(size);
	if (p) {
		s->heap_used += malloc_usable_size(p), note_peak(s);
		p = heap_covered(s, p);
	}
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
	if (size > old && s->heap_used + (size - old) > s->cover) {
		/* Charged before it grows: once moved, the old block is gone. */
		s->heap_used += size - old;
		bool ok = mb_grow(s, 0);
		s->heap_used -= size - old;
		if (!ok) {
			slot_kill(s, BRIDGE_BUDGET);
			return NULL;
		}
	}
	void *p = realloc(ptr, size);
	if (p)
		s->heap_used += malloc_usable_size(p) - old, note_peak(s);
	return p;
}

static size_t heap_usable(const void *ptr) { return malloc_usable_size((void *)ptr); }

static const JSMallocFunctions heap_funcs = {
	heap_calloc, heap_malloc, heap_free, heap_realloc, heap_usable,
};

const JSMallocFunctions *heap_allocator(void) { return &heap_funcs; }


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

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

typedef struct arena_block {
	size_t usable;
} arena_block;

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

/* ---------------------------------------------------------------------- */
/* Written-page restores. A restore copies the whole image back (some
 * 115 KiB for a plain sandbox: all of a tiny run's cost); a tiny run
 * writes 7 of its 28 pages. Linux (6.7 on) tracks which pages of a range
 * were written since they were write-protected: the windows are registered
 * with a userfaultfd for asynchronous write protection (a write to a
 * protected page unprotects it in the kernel, with no handler and no
 * signal), and the PAGEMAP_SCAN ioctl lists the unprotected pages. So a
 * restore copies back the pages written since the image was last copied
 * whole and protected, and leaves those unprotected: the pages every run
 * writes cost no fault, the rest stay protected and are never copied
 * (restores to a different image, or after the image changed, copy it
 * whole and protect it again). Every WP_DECAY_RESTORES restores (bridge_image.c) the pages are
 * protected again, so pages one run wrote (a collection marks every
 * object) are not copied forever. Pages the scan finds swapped out or
 * not present are copied too (wasmtime's pooling allocator, which does
 * the same, found swapped pages misreported: wasmtime#14357). Where the
 * kernel lacks any of it, or CODEMODE_RESTORE=copy, restores copy. */

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#define WP_FEATURE_ASYNC (1ULL << 15) /* UFFD_FEATURE_WP_ASYNC */

/* The PAGEMAP_SCAN ioctl's ABI (include/uapi/linux/fs.h, Linux 6.7), for
 * headers that predate it. */
typedef struct {
	uint64_t start, end, categories;
} wp_region;
typedef struct {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
	    category_anyof_mask, return_mask;
} wp_scan_arg;
#define WP_PAGEMAP_SCAN _IOWR('f', 16, wp_scan_arg)
#define WP_IS_WRITTEN (1ULL << 1)
#define WP_IS_PRESENT (1ULL << 3)
#define WP_IS_SWAPPED (1ULL << 4)

#define WP_REGIONS 32

static int wp_uffd = -1, wp_pagemap = -1;
static int wp_state;          /* 0 untried, 1 on, -1 off (windows_mu) */
static const char *wp_reason; /* why off */
static uint64_t wp_stats[3];  /* restores whole, restores by written pages, pages copied */

/* Turns written-page restores off (wp_init only: no other thread has the
 * descriptors yet). */
static bool wp_off(const char *why)
{
	if (wp_uffd >= 0)
		close(wp_uffd);
	if (wp_pagemap >= 0)
		close(wp_pagemap);
	wp_uffd = wp_pagemap = -1;
	wp_reason = why;
	__atomic_store_n(&wp_state, -1, __ATOMIC_RELEASE);
	return false;
}

/* Checks the whole scheme on three pages of its own before trusting it:
 * written, protected, the middle one written again, then exactly that one
 * is reported written, and once protected again none is. */
static bool wp_probe(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 3 * page;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return false;
	bool ok = false;
	struct uffdio_register reg = {.range = {.start = (uintptr_t)m, .len = len}, .mode = UFFDIO_REGISTER_MODE_WP};
	if (ioctl(wp_uffd, UFFDIO_REGISTER, &reg) == 0) {
		memset(m, 1, len);
		struct uffdio_writeprotect wp = {.range = {.start = (uintptr_t)m, .len = len},
		                                 .mode = UFFDIO_WRITEPROTECT_MODE_WP};
		wp_region regs[4];
		wp_scan_arg a = {.size = sizeof(a),
		                 .start = (uintptr_t)m,
		                 .end = (uintptr_t)m + len,
		                 .vec = (uintptr_t)regs,
		                 .vec_len = 4,
		                 .category_mask = WP_IS_WRITTEN,
		                 .return_mask = WP_IS_WRITTEN};
		if (ioctl(wp_uffd, UFFDIO_WRITEPROTECT, &wp) == 0) {
			m[page + 7] = 2;
			long n = ioctl(wp_pagemap, WP_PAGEMAP_SCAN, &a);
			ok = n == 1 && regs[0].start == (uintptr_t)m + page && regs[0].end == (uintptr_t)m + 2 * page &&
			     m[7] == 1 && m[page + 7] == 2;
			if (ok && ioctl(wp_uffd, UFFDIO_WRITEPROTECT, &wp) == 0)
				ok = ioctl(wp_pagemap, WP_PAGEMAP_SCAN, &a) == 0;
			else
				ok = false;
		}
		struct uffdio_range r = {.start = (uintptr_t)m, .len = len};
		ioctl(wp_uffd, UFFDIO_UNREGISTER, &r);
	}
	munmap(m, len);
	return ok;
}

/* Turns written-page restores on, once, under windows_mu. */
static void wp_init(void)
{
	if (wp_state != 0)
		return;
	const char *env = getenv("CODEMODE_RESTORE");
	if (env && strcmp(env, "copy") == 0) {
		wp_off("CODEMODE_RESTORE=copy");
		return;
	}
	wp_uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (wp_uffd < 0) {
		wp_off(errno == ENOSYS ? "no userfaultfd" : "userfaultfd refused");
		return;
	}
	struct uffdio_api api = {.api = UFFD_API, .features = WP_FEATURE_ASYNC};
	if (ioctl(wp_uffd, UFFDIO_API, &api) != 0 || !(api.features & WP_FEATURE_ASYNC)) {
		wp_off("no asynchronous write protection (Linux 6.7)");
		return;
	}
	wp_pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (wp_pagemap < 0) {
		wp_off("no /proc/self/pagemap");
		return;
	}
	/* PAGEMAP_SCAN itself, on an empty range. */
	wp_scan_arg a = {.size = sizeof(a), .return_mask = WP_IS_WRITTEN};
	if (ioctl(wp_pagemap, WP_PAGEMAP_SCAN, &a) < 0) {
		wp_off("no PAGEMAP_SCAN (Linux 6.7)");
		return;
	}
	if (!wp_probe()) {
		wp_off("written pages misreported");
		return;
	}
	__atomic_store_n(&wp_state, 1, __ATOMIC_RELEASE);
}

/* Registers a reservation's windows for write protection (windows_mu).
 * Windows the kernel refuses stay unregistered: protecting them fails, so
 * their slots restore whole (copy_image), and the descriptors other
 * threads use stay open: only wp_init, before any use, closes them. */
static void wp_register(uintptr_t at, size_t len)
{
	wp_init();
	if (wp_state != 1)
		return;
	struct uffdio_register reg = {.range = {.start = at, .len = len}, .mode = UFFDIO_REGISTER_MODE_WP};
	(void)ioctl(wp_uffd, UFFDIO_REGISTER, &reg);
}

bool wp_enabled(void) { return __atomic_load_n(&wp_state, __ATOMIC_ACQUIRE) == 1; }

static size_t page_up(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return (n + page - 1) & ~(page - 1);
}

/* Write-protects the pages of [base, base+len): a write unprotects its
 * page, and the next scan lists it. */
bool wp_protect(void *base, size_t len)
{
	struct uffdio_writeprotect wp = {.range = {.start = (uintptr_t)base, .len = page_up(len)},
	                                 .mode = UFFDIO_WRITEPROTECT_MODE_WP};
	return ioctl(wp_uffd, UFFDIO_WRITEPROTECT, &wp) == 0;
}

/* Copies back from bytes the pages of [base, base+len) written since they
 * were protected (or swapped out, or not present). Returns the pages copied, or -1 when the
 * scan failed (the caller copies it all). */
long wp_copy_written(void *base, const uint8_t *bytes, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)base, hi = lo + page_up(len);
	wp_region regs[WP_REGIONS];
	long pages = 0;
	for (uintptr_t from = lo; from < hi;) {
		wp_scan_arg a = {.size = sizeof(a),
		                 .start = from,
		                 .end = hi,
		                 .vec = (uintptr_t)regs,
		                 .vec_len = WP_REGIONS,
		                 .category_inverted = WP_IS_PRESENT,
		                 .category_anyof_mask = WP_IS_WRITTEN | WP_IS_PRESENT | WP_IS_SWAPPED,
		                 .return_mask = WP_IS_WRITTEN | WP_IS_PRESENT | WP_IS_SWAPPED};
		long n = ioctl(wp_pagemap, WP_PAGEMAP_SCAN, &a);
		if (n < 0)
			return -1;
		for (long i = 0; i < n; i++) {
			uintptr_t s = regs[i].start < lo ? lo : regs[i].start, e = regs[i].end > lo + len ? lo + len : regs[i].end;
			if (e > s) {
				memcpy((void *)s, bytes + (s - lo), e - s);
				pages += (long)((e - s + page - 1) / page);
			}
		}
		if (a.walk_end <= from)
			return -1;
		from = a.walk_end;
	}
	__atomic_fetch_add(&wp_stats[1], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&wp_stats[2], (uint64_t)pages, __ATOMIC_RELAXED);
	return pages;
}

void wp_count_whole(void) { __atomic_fetch_add(&wp_stats[0], 1, __ATOMIC_RELAXED); }

int bridge_restore_info(const char **reason, uint64_t *whole, uint64_t *written, uint64_t *pages)
{
	pthread_mutex_lock(&windows_mu);
	wp_init();
	int on = wp_state == 1;
	*reason = wp_reason ? wp_reason : "";
	pthread_mutex_unlock(&windows_mu);
	*whole = __atomic_load_n(&wp_stats[0], __ATOMIC_RELAXED);
	*written = __atomic_load_n(&wp_stats[1], __ATOMIC_RELAXED);
	*pages = __atomic_load_n(&wp_stats[2], __ATOMIC_RELAXED);
	return on;
}

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
	wp_register(at, n * REGION_ALIGN);
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

void region_unmap(void *m, size_t size, bool window)
{
	if (window)
		window_put(m, size);
	else
		munmap(m, size);
}

/* A new arena; *in_window says whether its region is a window (the
 * arena's header is part of every image, so the slot keeps that). */
arena *arena_new(size_t size, size_t prefault, bool *in_window)
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

void arena_reset(arena *a)
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
	size_t hwm = s->ar->hwm;
	void *p = arena_alloc(s->ar, size);
	if (!p) {
		slot_kill(s, BRIDGE_MEMORY);
		return NULL;
	}
	if (s->ar->hwm > s->cover && !mb_grow(s, 0)) {
		arena_free(s->ar, p);
		s->ar->hwm = hwm; /* nothing was written past it */
		slot_kill(s, BRIDGE_BUDGET);
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
	/* Charged before it grows (in place or by a move, at most a block of
	 * cs past the top): once moved, the old block is gone. */
	size_t reach = s->ar->top + sizeof(arena_block) + cs;
	if (cs > old && reach > s->cover && !mb_grow(s, reach > s->ar->hwm ? reach - s->ar->hwm : 0)) {
		slot_kill(s, BRIDGE_BUDGET);
		return NULL;
	}
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

const JSMallocFunctions *arena_allocator(void) { return &arena_funcs; }

/* ---------------------------------------------------------------------- */
/* Budgets: the engine memory of every slot that shares a budget, bounded
 * as a sum (memory.go says why and how it is sized). A slot is charged
 * for what it holds resident, its footprint (its arena's pages up to the
 * furthest written since they were last handed back, its images' pages;
 * a libc sandbox's heap), in chunks: before a run opens, as the sandbox
 * grows past what its charge covers (the allocators compare one field),
 * and it gives back what it no longer holds as the run ends and as its
 * pages go back: then its charge is what it holds, to the page, not to
 * the chunk (a thousand idle sandboxes holding a page or two each were
 * charged a chunk each, 256 times what they held). A sandbox that cannot
 * grow asks Go to take the idle sandboxes' pages first (mb_grow). Caps, so runs that stay small are not starved by ones
 * that grow: a sandbox larger than small grows only while the sum stays
 * below limit - reserve; a new run opens only below limit - reserve/2; a
 * small sandbox grows up to limit - reserve/4, and a tiny one (what a new
 * sandbox holds once open, and two chunks) up to the limit itself: a run
 * just admitted finishes its small work while sandboxes that are still
 * small but growing fight over the rest. */

#define MB_CHUNK ((size_t)256 << 10)

static inline size_t round_to(size_t n, size_t to) { return (n + to - 1) / to * to; }

static inline int64_t mb_load(int64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* The slot's footprint; *below is what its cover is measured past: the
 * images, for a snapshot sandbox (its arena grows), or the whole arena,
 * for a libc one (its heap grows). */
static size_t footprint(const bridge_slot *s, size_t *below)
{
	size_t imgs = 0, arena = 0;
	if (s->ar) {
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		size_t ext = s->resident;
		if (s->dirty_end > ext)
			ext = s->dirty_end;
		if (s->ar->hwm > ext)
			ext = s->ar->hwm;
		for (int i = 0; i < NIMAGES; i++)
			if (s->images[i].bytes)
				imgs += round_to(s->images[i].len, page);
		imgs += s->ckpt_resident; /* a session's checkpoint, unless at rest */
		arena = round_to(ext, page) + imgs;
	}
	bool libc = !s->snapshot && s->rt;
	*below = libc ? arena : imgs;
	return libc ? arena + s->heap_used : arena;
}

size_t slot_footprint(const bridge_slot *s)
{
	size_t below;
	return footprint(s, &below);
}

/* Sets how far the sandbox may grow before it charges again: what its
 * charge covers past below (footprint's). */
static void mb_cover(bridge_slot *s, size_t below) { s->cover = s->charged > below ? s->charged - below : 0; }

/* Charges the slot for its footprint fp and extra bytes more; when the
 * budget refuses and short_by is not NULL, *short_by is the room missing. */
static bool charge(bridge_slot *s, size_t fp, size_t below, size_t extra, bool admit, int64_t *short_by)
{
	bridge_membudget *b = s->mb;
	size_t want = round_to(fp + extra, MB_CHUNK);
	if (want > s->charged) {
		int64_t limit = mb_load(&b->limit), reserve = mb_load(&b->reserve);
		int64_t tiny = mb_load(&b->entry) + 2 * (int64_t)MB_CHUNK;
		int64_t cap = admit                                ? limit - reserve / 2
		              : (int64_t)want > mb_load(&b->small) ? limit - reserve
		              : (int64_t)want > tiny               ? limit - reserve / 4
		                                                  : limit;
		int64_t need = (int64_t)(want - s->charged);
		int64_t used = mb_load(&b->used);
		do {
			if (used + need > cap) {
				if (short_by)
					*short_by = used + need - cap;
				return false;
			}
		} while (!__atomic_compare_exchange_n(&b->used, &used, used + need, true, __ATOMIC_RELAXED,
		                                      __ATOMIC_RELAXED));
		s->charged = want;
	}
	mb_cover(s, below);
	return true;
}

bool mb_charge(bridge_slot *s, size_t extra)
{
	if (!s->mb)
		return true;
	size_t below, fp = footprint(s, &below);
	return charge(s, fp, below, extra, false, NULL);
}

/* Charges a sandbox that grows, like mb_charge; when the budget has no
 * room, the idle sandboxes of the executors sharing it give back the room
 * missing, if they hold that much (go_membudget_reclaim: synchronously, on
 * this thread, under no lock of ours; it never touches this slot, which is
 * not idle), and the charge is tried once more. Not once the run was
 * stopped: what it allocates on its way out fails at once, without asking
 * again. */
static bool mb_grow(bridge_slot *s, size_t extra)
{
	if (!s->mb)
		return true;
	size_t below, fp = footprint(s, &below);
	int64_t short_by = 0;
	if (charge(s, fp, below, extra, false, &short_by))
		return true;
	if (s->killed)
		return false;
#ifndef BRIDGE_LINT
	if (!go_membudget_reclaim(s->mb, short_by))
		return false;
#endif
	return charge(s, fp, below, extra, false, NULL);
}

bool mb_admit(bridge_slot *s, size_t *held)
{
	*held = 0;
	if (!s->mb)
		return true;
	size_t below, fp = footprint(s, &below);
	size_t entry = (size_t)mb_load(&s->mb->entry);
	*held = fp;
	return charge(s, fp, below, entry > fp ? entry - fp : 0, true, NULL);
}

void mb_settle(bridge_slot *s)
{
	if (!s->mb)
		return;
	size_t below, fp = footprint(s, &below);
	/* To the page: the next growth charges by the chunk again. */
	if (fp < s->charged) {
		__atomic_fetch_sub(&s->mb->used, (int64_t)(s->charged - fp), __ATOMIC_SEQ_CST);
		s->charged = fp;
	}
	mb_cover(s, below);
}

/* ---------------------------------------------------------------------- */
/* Interrupts: the deadline and the cancel flag are read here, in C, on the
 * engine's own polls (a Go timer would fire hundreds of µs late). Once a
 * kill has fired every later poll interrupts again, so catching the
 * uncatchable error or the out-of-memory error changes nothing. */

int check_kill(bridge_slot *s)
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

int on_interrupt(JSRuntime *rt, void *opaque)
{
	(void)rt;
	return check_kill(opaque);
}
