/* floor.h: the raw QuickJS-ng floor of the benchmark suite: the whole
 * fresh-sandbox lifecycle in one C call, with the stock JS_NewRuntime and
 * JS_NewContext, JS_SetMemoryLimit, a stack limit and a CLOCK_MONOTONIC
 * deadline, and no Go in between. */
#ifndef CODEMODE_BENCH_FLOOR_H
#define CODEMODE_BENCH_FLOOR_H

#include <stddef.h>
#include <stdint.h>

/* Evaluates src (NUL at [len]) in a fresh runtime and context; with host,
 * a C function hcall(i) returns i+1. Copies the result's JSON into out and
 * returns its length, or -1. */
int64_t floor_run(const char *src, size_t len, int host, char *out, size_t cap);

/* Compiles src into bytecode (malloc'd, *n bytes); NULL on error. */
uint8_t *floor_compile(const char *src, size_t len, size_t *n);

/* Like floor_run, evaluating bytecode instead of source. */
int64_t floor_run_bytecode(const uint8_t *bc, size_t n, char *out, size_t cap);

/* Runs for (;;) {} in a fresh sandbox whose deadline is budget_ns away;
 * 0 once the deadline stopped it. */
int floor_spin(int64_t budget_ns);

void floor_free(void *p);

#endif
