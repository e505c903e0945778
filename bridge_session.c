/*
 * bridge_session.c: sessions, a sandbox whose realm outlives its runs.
 *
 * A session's sandbox lives in the slot's arena like any other, and is not
 * closed when a run ends. Each run is a transaction on it: as the run
 * starts, the arena's used prefix is copied aside (the checkpoint, the
 * same bytes an image holds); a run that ends well drops what belongs to
 * it alone (its program, its timers, its pending host calls) and keeps
 * everything else; a run that ends any other way (thrown, timed out, out
 * of memory, cancelled, a result past the payload) gets the checkpoint
 * copied back, and the sandbox is exactly as the run found it. The first
 * run of a session opens the sandbox: one that fails closes it, and the
 * next run opens a fresh one, which is the same thing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bridge_internal.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int session_checkpoint(bridge_slot *s)
{
	if (!s->ar || !s->snapshot)
		return -1;
	mark_dirty(s);
	size_t len = (s->ar->top + 63) & ~(size_t)63;
	if (len > s->ar->size)
		len = s->ar->size;
	if (len > s->ckpt_mapped) {
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		size_t want = (len + len / 4 + page - 1) & ~(page - 1);
		void *m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return -1;
		if (s->ckpt)
			munmap(s->ckpt, s->ckpt_mapped);
		s->ckpt = m;
		s->ckpt_mapped = want;
	}
	/* Past the top the arena hands out zeroed memory: the copy holds
	 * zeros there, as an image does. */
	memset((char *)s->ar + s->ar->top, 0, len - s->ar->top);
	memcpy(s->ckpt, s->ar, len);
	s->ckpt_len = len;
	if (s->ckpt_resident < len)
		s->ckpt_resident = (len + 4095) & ~(size_t)4095;
	s->ckpt_saved = (saved_state){.rt = s->rt, .ctx = s->ctx, .rtobj = s->rtobj, .marks = s->marks,
	                              .marks_get = s->marks_get, .marks_set = s->marks_set,
	                              .lazy_getters = s->lazy_getters, .guards = s->guards,
	                              .heap_used = s->heap_used, .unitfn = JS_UNDEFINED};
	s->ar->hwm = s->ar->top;
	s->ckpt_taken = true;
	return 0;
}

/* Keeps the run's work: drops its program, its compiled source, the
 * timers it left and the host calls it did not wait for (their promises
 * never settle), value by value, in the sandbox's own heap. */
static void session_commit(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	run_values_free(s);
	JS_FreeValue(ctx, s->program);
	JS_FreeValue(ctx, s->unit);
	JS_FreeValue(ctx, s->tool);
	JS_FreeValue(ctx, s->guard_polys);
	forget_run(s);
	mark_dirty(s);
}

void session_end(bridge_slot *s, bool ok)
{
	s->session_run = false;
	if (ok) {
		session_commit(s);
	} else if (s->ckpt_taken) {
		mark_dirty(s); /* what the run wrote past the checkpoint: the restore clears it, the budget counts it */
		restore_bytes(s, s->ckpt, s->ckpt_len, &s->ckpt_saved);
		forget_run(s);
	} else if (s->session_opened) {
		sandbox_close(s); /* the run that opened it: the session has no sandbox yet */
		s->session = s->session_det = false;
		return;
	} else {
		return; /* a continuing run that could not take its checkpoint ran nothing */
	}
	s->ckpt_taken = false;
	mb_settle(s);
}

/* At rest a session holds its sandbox and not a second copy of it: the
 * checkpoint's pages go back to the kernel, and the memory budget's charge
 * with them. Not after every run: the next run's copy would fault every
 * page in again, five times the copy's own cost. */
void bridge_slot_rest(bridge_slot *s)
{
	if (s->ckpt && s->ckpt_resident) {
		madvise(s->ckpt, s->ckpt_mapped, MADV_DONTNEED);
		s->ckpt_resident = 0;
		mb_settle(s);
	}
}

void session_free(bridge_slot *s)
{
	if (s->ckpt)
		munmap(s->ckpt, s->ckpt_mapped);
	s->ckpt = NULL;
	s->ckpt_mapped = s->ckpt_len = s->ckpt_resident = 0;
}
