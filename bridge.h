/*
 * bridge.h: the C shim between codemode's Go code and QuickJS-ng.
 *
 * Go includes only this header. It exposes opaque pointers, fixed-width
 * integers and (pointer, length) buffers, never a JSValue. Every entry that
 * may run JavaScript calls JS_UpdateStackTop first, because the calling
 * goroutine may have moved to another OS thread since the last entry.
 *
 * Buffers returned in bridge_out are malloc'd by C; Go copies them once and
 * releases them with bridge_out_free.
 */
#ifndef CODEMODE_BRIDGE_H
#define CODEMODE_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

/* Bumped whenever the shim changes what it compiles or how: part of the
 * bytecode cache key. */
#define BRIDGE_VERSION 3

/* Outcome of a run step (bridge_out.status). C decides the kind because C
 * has the facts; Go never classifies by message text. */
enum {
	BRIDGE_DONE = 0,     /* settled with a value: data is its JSON */
	BRIDGE_PENDING = 1,  /* waiting on host work; the sandbox stays open */
	BRIDGE_THROWN = 2,   /* settled by an uncaught exception: data is the rendered error */
	BRIDGE_TIMEOUT = 3,  /* the deadline fired (sticky) */
	BRIDGE_CANCELED = 4, /* the cancel flag was set (sticky) */
	BRIDGE_MEMORY = 5,   /* the memory limit refused an allocation (sticky) */
	BRIDGE_STALLED = 6,  /* the program's promise is pending with nothing outstanding */
	BRIDGE_TOO_LARGE = 7, /* the result's JSON is over the payload limit: size is its length */
	BRIDGE_INTERNAL = 8, /* the shim or the host-call glue failed: data says why, if C knows */
	BRIDGE_CAPABILITY = 9, /* a host call's failure escaped: data is its message, cap the capability's
	                          index, or -1 and cap_name the provider tool ("provider.tool") */
	BRIDGE_COMPILE = 10,   /* registering: the source did not parse or threw: data is the error */
	BRIDGE_NOT_FUNCTION = 11, /* registering: the source evaluated to data (a typeof name) */
	BRIDGE_BAD_ARGS = 12,     /* a tool run: the engine refused the argument JSON: data is why */
	BRIDGE_BUDGET = 13,       /* the memory budget refused the sandbox more memory (sticky); with
	                             out.unstarted, before any of the run's code ran */
};

/* What a run executes (bridge_config.mode). */
enum {
	BRIDGE_MODE_SCRIPT = 0,   /* src is a script whose completion value is the program */
	BRIDGE_MODE_EXECUTE = 1,  /* src is the program unit of an Execute request */
	BRIDGE_MODE_TOOL = 2,     /* src is a tool module; call it with args */
	BRIDGE_MODE_REGISTER = 3, /* src is a tool module; check it and run selftest */
	BRIDGE_MODE_GLOBAL = 4,   /* src is global code whose completion value is discarded (conformance tests) */
};

/* Status of a host call answered by Go (bridge_reply.status and the status
 * argument of bridge_slot_settle). */
enum {
	BRIDGE_CALL_OK = 0,       /* data is the result's JSON, NUL-terminated at [size] */
	BRIDGE_CALL_ERROR = 1,    /* data is the failure's message */
	BRIDGE_CALL_TIMEOUT = 2,  /* the handler returned after the deadline */
	BRIDGE_CALL_CANCELED = 3, /* the run's context ended during the call */
	BRIDGE_CALL_INTERNAL = 4, /* the Go glue failed; Go keeps the reason */
	BRIDGE_CALL_STRING = 5,   /* settle: data is a string to resolve with as it is */
	BRIDGE_CALL_TYPE_ERROR = 6, /* the arguments failed the capability's schema: data is the TypeError's message */
};

/* What go_capability_call hands back; data is malloc'd by Go, freed by C. */
typedef struct bridge_reply {
	int32_t status;
	char *data;
	size_t size;
	/* C's own room for a small reply: Go copies one that fits (NUL
	 * included) here and sets data to buf, which C then does not free;
	 * a larger one is malloc'd. */
	char *buf;
	size_t cap;
} bridge_reply;

/* Per-run limits and identity. */
/* A host module (WithModules): its name and its bytecode, C memory. */
typedef struct bridge_module {
	const char *name;
	const uint8_t *bc;
	size_t len;
} bridge_module;

typedef struct bridge_config {
	uint64_t memory;   /* heap bytes the engine may hold */
	uint64_t stack;    /* JS stack bytes */
	uint64_t logs;     /* bytes of console text kept */
	uint64_t payload;  /* bytes of result JSON */
	int64_t budget_ns; /* wall-clock budget left when the run starts */
	int64_t run_id;    /* positive and unique per slot: what bridge_slot_cancel names */
	const char *filename; /* name of the program in stack traces (NUL-terminated) */
	uintptr_t handle;  /* cgo.Handle of the run, passed back to Go on host calls */
	const char *const *cap_names; /* ncaps capability names, C memory */
	const uint8_t *cap_async;     /* per capability: 1 if it returns a Promise */
	int32_t ncaps;
	const bridge_module *modules; /* nmodules host modules import() may load, C memory */
	int32_t nmodules;
	/* Execute programs (runtime_bc non-NULL): the runtime's bytecode, the
	 * generated entry source (NUL-terminated at [entry_len]) or its cached
	 * bytecode (entry_bc; with want_entry_bc, source compiled here is
	 * handed out in bridge_out.entry_bc as src's is in bc); src is then the
	 * program unit. The fields of Go memory (entry, entry_bc, bc, args,
	 * selftest) are set by bridge_slot_run from its arguments: a caller's
	 * are ignored. */
	const uint8_t *runtime_bc;
	size_t runtime_bc_len;
	const char *entry;
	size_t entry_len;
	const uint8_t *entry_bc;
	size_t entry_bc_len;
	int32_t want_entry_bc;
	int32_t retain; /* keep the sandbox after the program settles */
	int32_t mode;   /* BRIDGE_MODE_* */
	/* src's bytecode, from the cache (then src may be empty), or NULL:
	 * then src is compiled in the sandbox, and with want_bc its bytecode
	 * is handed out in bridge_out.bc by bridge_slot_run (take it before
	 * a step: steps start from a zeroed bridge_out). */
	const uint8_t *bc;
	size_t bc_len;
	int32_t want_bc;
	const char *args;     /* BRIDGE_MODE_TOOL: the argument JSON, NUL at [args_len] */
	size_t args_len;
	const char *selftest; /* BRIDGE_MODE_REGISTER: the self-test script or NULL */
	size_t selftest_len;
	/* Snapshot mode: the sandbox is restored from one of the slot's two
	 * images, each built on first use and whenever image_id (the
	 * capability set) or the stack limit changes: a plain one, or with
	 * runtime_bc (Execute programs) one that holds the runtime. Otherwise
	 * a fresh libc-backed runtime is built and freed, so JS_FreeRuntime's
	 * leak checks run. */
	int32_t snapshot;
	uintptr_t image_id;
	/* The bytecode of the guarded built-ins' slow paths (js/guards.js),
	 * read into a sandbox the first time a run needs one. */
	const uint8_t *guards_bc;
	size_t guards_bc_len;
	uint64_t seed[2]; /* Math.random's seed for this run, from a CSPRNG */
	/* Snapshot mode: the templates of image_id's capability set, from
	 * which a slot without an image of its own clones one (NULL: none). */
	struct bridge_tmpls *tmpls;
	/* Snapshot mode, Execute and tool runs: unit_key names the unit (the
	 * entry of a provider set, a tool's bytecode); with unit_image set, a
	 * slot keeps an image taken after the unit evaluated (bridge_image.c,
	 * Units). */
	int32_t unit_image;
	uint8_t unit_key[32];
	/* A virtual clock for the run (Determinism): Date starts at
	 * det_start_ns (ns since the Unix epoch) and it and performance.now
	 * advance 1 us per read. The seed above is then the caller's. */
	int32_t det_clock;
	int64_t det_start_ns;
	/* With det_clock: the bytecode of the Date put in front of the
	 * engine's (js/clock.js, compiled once by the host). */
	const uint8_t *det_bc;
	size_t det_bc_len;
	/* BRIDGE_MODE_SCRIPT: the body has no await and runs in a plain
	 * function (see wrapScript in source.go), so its completion value is
	 * the body's own: adopted if a thenable, and a throw is reported
	 * after the jobs queued before it, as the async function would. */
	int32_t sync_body;
	/* A session's run (bridge_session.c): it goes on in the slot's
	 * session sandbox when there is one (else it opens it) and is a
	 * transaction on it; it runs the prologue (global code declaring the
	 * run's top-level names, set by bridge_slot_run) before its source. */
	int32_t session;
	const char *prologue;
	size_t prologue_len;
} bridge_config;

typedef struct bridge_out {
	int32_t status;
	char *data;       /* result JSON or error text; malloc'd, may be NULL */
	size_t size;      /* bytes in data (BRIDGE_TOO_LARGE: the result's length) */
	char *logs;       /* records: native-endian uint32 length, then the bytes */
	size_t logs_size;
	uint64_t logs_dropped; /* console lines dropped past the log limit */
	int32_t cap;      /* BRIDGE_CAPABILITY: the capability's index, or -1 for a provider tool */
	char *cap_name;   /* BRIDGE_CAPABILITY with cap -1: "provider.tool"; malloc'd */
	size_t cap_name_len;
	int32_t cap_site; /* BRIDGE_CAPABILITY: the failed call's site (jspos.Sites), or -1 */
	uint8_t *bc;      /* the bytecode of src, when want_bc compiled it */
	size_t bc_len;
	uint8_t *entry_bc; /* the entry's, when want_entry_bc compiled it */
	size_t entry_bc_len;
	int64_t wait_ns;  /* BRIDGE_PENDING: ns until the next timer is due, -1 if none */
	int32_t syntax;   /* data is the error of compiling src (its parser refused it) */
	uint64_t peak_heap; /* the most engine heap the run has held, in bytes */
	int32_t unstarted;  /* BRIDGE_BUDGET: refused before any of the run's code ran (it may run again) */
	uint64_t charged;   /* once the run ended: what the slot's memory budget charges it */
} bridge_out;

/* The Go functions C calls back (//export, in capability.go). In a cgo
 * build the units that call Go include _cgo_export.h, so the compiler
 * checks these against cgo's own declarations. */
void go_capability_call(uintptr_t handle, int32_t index, char *args, size_t n, bridge_reply *reply);
int32_t go_capability_start(uintptr_t handle, int32_t index, uint32_t id, char *args, size_t n);
int32_t go_dispatch_start(uintptr_t handle, uint32_t id, char *provider, size_t np, char *tool, size_t nt, char *args,
                          size_t na);
/* The text of a function as the model wrote it, when text (its source as
 * compiled) holds codemode's markers (positions.go): a malloc'd copy, its
 * length in *len, or NULL to keep text. */
char *go_source_text(uintptr_t handle, char *text, size_t n, size_t *len);
/* Compiles js/web.js once per process and hands it to bridge_set_web
 * (web.go): 0, or -1 if it does not compile. */
int32_t go_load_web(void);
/* The URL Standard's domain to ASCII (UTS #46) for a domain with a code
 * point past ASCII (idna.go): 0 with a malloc'd ASCII form in *out and its
 * length in *len; 1 if the domain is not valid; 2 if a label is past the
 * bound IDNA is run on (maxIDNALabel). */
int32_t go_domain_to_ascii(char *domain, size_t n, char **out, size_t *len);
/* The Encoding Standard's encoding for a TextDecoder label (ASCII, stripped
 * of ASCII whitespace and lowercased) that js/web.js does not decode itself
 * (textdecoder.go): its id, its name copied to name (at most cap bytes, the
 * length in *len); -1 for a label of no encoding. */
int32_t go_text_label(char *label, size_t n, char *name, size_t cap, size_t *len);
/* Decodes in[0, n) with encoding id's decoder from *state (updated), the
 * end of the stream if flags & 1, stopping at the first error if flags & 2,
 * into out (cap at least 3 * (n + 3) + 3 bytes of UTF-8): the length
 * written; -1 at an error when fatal; -2 if Go failed. Go keeps neither
 * pointer. */
int64_t go_text_decode(int32_t id, uint32_t *state, uint8_t *in, size_t n, int32_t flags, char *out, size_t cap);

/* A slot is the long-lived C shell one sandbox runs in: its cancel flag,
 * its kill state, its log buffer. Only one goroutine uses a slot at a time;
 * bridge_slot_cancel may be called from any thread. */
typedef struct bridge_slot bridge_slot;

/* A memory budget (memory.go): the engine memory of every slot that shares
 * it, charged as their sandboxes grow, in chunks, and given back as they
 * give pages back. used is read and written atomically, by C
 * and Go alike (__atomic builtins, sync/atomic); limit, reserve and small
 * too, as Go may raise them. */
typedef struct bridge_membudget {
	int64_t used;    /* bytes charged to the slots */
	int64_t limit;   /* the budget */
	int64_t reserve; /* bytes a sandbox past small may not take, and a new run not half of */
	int64_t small;   /* a sandbox up to this size may grow into the reserve */
	int64_t entry;   /* the most a new slot held once its sandbox was open (learnt) */
} bridge_membudget;

/* Called back (//export, in memory.go) when a running sandbox's budget
 * has no room for it to grow, need bytes short: the idle sandboxes of the
 * executors sharing mb give that much back, if they hold it. 1 if they
 * gave any (try the charge again), else 0. */
int32_t go_membudget_reclaim(bridge_membudget *mb, int64_t need);

/* A new slot charging mb (NULL: none; mb outlives the slot). */
bridge_slot *bridge_slot_new(bridge_membudget *mb);
void bridge_slot_free(bridge_slot *s);
/* Stops run run_id of the slot at its next engine poll; a stale id is
 * ignored, -1 stops every run of the slot from now on. */
void bridge_slot_cancel(bridge_slot *s, int64_t run_id);

/* Builds a fresh sandbox in the slot and runs src (src[len] must be '\0')
 * until it settles or waits on host work. Unless the status is
 * BRIDGE_PENDING the sandbox is already gone and out holds the logs. The
 * inputs only the first slice reads (see bridge_config: bc, entry,
 * entry_bc, args, selftest; NULL for none; entry, args and selftest
 * NUL-terminated at their length) are arguments and not cfg fields, which
 * are ignored: they are Go memory, which cgo lets C read during the call
 * without pinning it (a pin per run was contended by runs sharing a cached
 * bytecode). */
int32_t bridge_slot_run(bridge_slot *s, const bridge_config *cfg, const char *src, size_t len, const uint8_t *bc,
                        size_t bc_len, const char *entry, size_t entry_len, const uint8_t *entry_bc,
                        size_t entry_bc_len, const char *args, size_t args_len, const char *selftest,
                        size_t selftest_len, const char *prologue, size_t prologue_len, bridge_out *out);

/* Settles async host call `call` of a pending run: resolves its promise
 * with the JSON in data (BRIDGE_CALL_OK; data[len] must be '\0') or
 * rejects it with an Error carrying the message (BRIDGE_CALL_ERROR),
 * marked as the failure of its capability or, for a provider call, of the
 * tool name[0:nlen] ("provider.tool"; NULL for none). Runs no user code:
 * follow with bridge_slot_step. nested: called from inside a host call's
 * callback, on the stack of the JavaScript that made it (the stack top is
 * left as that run's entry set it). */
void bridge_slot_settle(bridge_slot *s, uint32_t call, int32_t status, const char *data, size_t len, const char *name,
                        size_t nlen, int32_t nested);

/* Advances a pending run: fires the timers that are due, runs the jobs
 * that follow, and reports where the program stands, like bridge_slot_run. */
int32_t bridge_slot_step(bridge_slot *s, int64_t budget_ns, bridge_out *out);
/* bridge_slot_rearm sets a run's deadline budget_ns from now, from inside
 * a synchronous capability's callback (the run waited for its execution
 * right, and that wait was not its time). It runs no JavaScript. */
void bridge_slot_rearm(bridge_slot *s, int64_t budget_ns);

/* Retained sandboxes (cfg.retain): after the program settled the sandbox
 * stays open; bridge_slot_step (budget_ns > 0 re-arms the deadline for the
 * work it does) keeps its timers firing and reports BRIDGE_PENDING while it
 * lives. bridge_slot_invoke calls handle `handle` with the codec-encoded
 * argument array args (NUL at [len]) and names the invocation in *inv;
 * bridge_slot_invocation reports it: BRIDGE_PENDING, BRIDGE_DONE (data is
 * the codec-encoded result) or BRIDGE_THROWN, after which the name is free.
 * A kill while retained frees the sandbox and is the status of the call. */
int32_t bridge_slot_invoke(bridge_slot *s, int64_t budget_ns, double handle, const char *args, size_t len,
                           uint32_t *inv);
int32_t bridge_slot_invocation(bridge_slot *s, uint32_t inv, bridge_out *out);
/* Gives up on a pending invocation (its deadline passed, or nothing it
 * waits on is outstanding): its name is free, a late settlement is lost. */
void bridge_slot_invocation_drop(bridge_slot *s, uint32_t inv);
/* ns until the slot's next timer is due, or -1; whether it holds a sandbox. */
int64_t bridge_slot_wait(bridge_slot *s);
int32_t bridge_slot_alive(bridge_slot *s);
/* A session's slot between runs: its checkpoint's pages go back
 * (bridge_session.c). */
void bridge_slot_rest(bridge_slot *s);
/* Whether every byte of the arena above what the current sandbox and its
 * image use, up to the furthest any run or build ever wrote, is zero: the
 * restore's scrub at work (tests). */
int32_t bridge_slot_zero_above(bridge_slot *s);
/* Bytes a run restores from the slot's image of a kind: 0 the plain one,
 * 1 the one Execute programs use, 2 the unit image; 0 if it is not built. */
size_t bridge_slot_image_size(bridge_slot *s, int32_t kind);
/* An idle slot gives the arena pages above its image back to the kernel
 * (and their charge to its budget); returns the bytes released. */
size_t bridge_slot_release(bridge_slot *s);

/* How sandboxes are restored: 1 by written pages (PAGEMAP_SCAN), 0 by
 * copying whole images (*reason says why); restores whole and by written
 * pages so far, and the pages the latter copied. */
int bridge_restore_info(const char **reason, uint64_t *whole, uint64_t *written, uint64_t *pages);
/* The bytes the slot's budget has charged it (0 without one). */
size_t bridge_slot_charged(bridge_slot *s);

/* The bytes of the slot that may be resident: its arena up to the
 * furthest write since its pages were last released, and its images (the
 * arena's own accounting, which a sanitizer's allocator does not blur as
 * it does the RSS); 0 for a slot without an arena (checked mode). */
size_t bridge_slot_held(bridge_slot *s);
/* Hands over the console lines gathered since the last hand-over. */
void bridge_slot_take_logs(bridge_slot *s, bridge_out *out);

/* Templates: a sandbox built in one slot, copied into another and its
 * pointers relocated, so that a new slot costs a copy and not a build
 * (bridge_image.c, Templates). One set per capability set, one template per
 * image kind; owned by Go and freed once no slot can use it again. */
typedef struct bridge_tmpls bridge_tmpls;

bridge_tmpls *bridge_tmpls_new(void);
void bridge_tmpls_free(bridge_tmpls *t);

enum {
	BRIDGE_TMPL_EMPTY,   /* no image offered yet */
	BRIDGE_TMPL_FIRST,   /* one image kept, waiting for a second to tell its pointers */
	BRIDGE_TMPL_READY,   /* slots clone it */
	BRIDGE_TMPL_REFUSED, /* two images differed in a way relocation cannot mend */
};

/* Runs a slot serves on clones of its template before it builds an image
 * of its own (a clone's shape hashes are the template's: each of its runs
 * remakes the shapes it looks up). */
#define BRIDGE_CLONE_RUNS 8

/* What a template learnt from its two images (tests). */
typedef struct bridge_tmpl_stats {
	int32_t state;  /* BRIDGE_TMPL_* */
	uint64_t words; /* 8-byte words in the image */
	uint64_t reloc; /* pointers into the arena, relocated */
	uint64_t self;  /* pointers into the slot, relocated */
	uint64_t hashes; /* words differing in their upper half only: address hashes, kept */
	uint64_t others; /* other differing words, kept (stack bounds, seeds) */
	uint64_t clones; /* slots cloned from it */
} bridge_tmpl_stats;

void bridge_tmpls_stats(bridge_tmpls *t, int32_t runtime, bridge_tmpl_stats *out);

/* Compiles src (NUL at [len]) to bytecode in a throwaway runtime: out.data
 * is the bytecode (BRIDGE_DONE), or the rendered error (BRIDGE_THROWN).
 * strip: BRIDGE_STRIP_ALL leaves out the source text and the debug
 * information (file, line numbers): the functions' toString is [native
 * code], as a platform's are; BRIDGE_STRIP_SOURCE the source text only
 * (frames keep their file and line). */
enum { BRIDGE_STRIP_NONE = 0, BRIDGE_STRIP_ALL = 1, BRIDGE_STRIP_SOURCE = 2 };
int32_t bridge_compile(const char *src, size_t len, const char *filename, int32_t strip, bridge_out *out);
/* A host module's source, for compiling (bridge_compile_module). */
typedef struct bridge_source {
	const char *name;
	const char *src; /* NUL at [len] */
	size_t len;
} bridge_source;

/* Compiles module srcs[index] (as bridge_compile does a script); the
 * modules it imports are compiled from srcs to check its imports, and
 * none but them loads. */
int32_t bridge_compile_module(const bridge_source *srcs, int32_t n, int32_t index, bridge_out *out);

/* Ends a pending run: frees the sandbox and hands back the logs. */
void bridge_slot_close(bridge_slot *s, bridge_out *out);

void bridge_out_free(bridge_out *out);

/* The largest JS stack a run may ask for on this process's threads. */
uint64_t bridge_max_stack(void);

/* Whether src[0:len] (NUL-terminated at len) is a valid script, by the
 * engine's parser in a runtime made and freed for the check, under the
 * given stack and memory limits (bridge_check.c): 1 yes, 0 no or a limit
 * refused it. Nothing is evaluated. */
int32_t bridge_syntax_ok(const char *src, size_t len, uint64_t stack, uint64_t memory);

/* Runs src[0:len] in the plain engine (bridge_plain.c): the same engine
 * and intrinsics as a sandbox and nothing of codemode's, on a runtime of
 * its own, as global code or (body set) as the body of an async function
 * whose promise is the outcome: BRIDGE_DONE, BRIDGE_THROWN (data: String of
 * the thrown value; syntax: it did not compile), BRIDGE_TIMEOUT or
 * BRIDGE_STALLED (the body's promise never settled). logs holds what
 * print printed, one '\n'-terminated line per call. For the differential
 * conformance tests. Free out with bridge_out_free. */
int32_t bridge_plain_run(const char *src, size_t len, int32_t body, int64_t budget_ns, uint64_t memory,
                         uint64_t stack, bridge_out *out);

/* The bytecode of js/web.js, the web globals' source, and of js/url.js
 * (URL and URLSearchParams, which web.js reads on demand), held by the
 * caller for the life of the process (set once, by go_load_web, when a run
 * first reads a web global). */
void bridge_set_web(const uint8_t *bc, size_t len, const uint8_t *url, size_t url_len);

/* The floor for benchmarks: one whole run (sandbox, eval, jobs, result
 * JSON, teardown) in a single C call with no Go in between. Returns the
 * result's JSON length, or -1 if the run did not produce a value. */
int64_t bridge_raw_lifecycle(bridge_slot *s, const bridge_config *cfg, const char *src, size_t len, const uint8_t *bc,
                             size_t bc_len);

/* The floor of a run on a snapshot (benchmarks): restore the slot's plain
 * image, read and evaluate bc (a compiled expression) in it, and take its
 * value's JSON; nothing else (no wrapper, no jobs, no logs, no limits
 * beyond the memory the image was built with). The JSON's length, or -1
 * (no image: run the slot once first). */
int64_t bridge_image_floor(bridge_slot *s, const uint8_t *bc, size_t bc_len);

#endif /* CODEMODE_BRIDGE_H */
