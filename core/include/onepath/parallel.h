/*
 * Tiles in parallel: a fixed pool of worker threads takes indices 0..n-1 from a
 * shared counter. Each worker owns two arenas (out and scratch) that are reset
 * before every index, so a job's memory never outlives it unless the job copies
 * it out. Results must be stored by index: nothing may depend on which worker ran
 * a job or in which order jobs finished.
 */
#ifndef ONEPATH_PARALLEL_H
#define ONEPATH_PARALLEL_H

#include "onepath/arena.h"
#include "onepath/status.h"

/* One job: build item index into the caller's storage. Runs concurrently with other
 * indices; must touch only its own slot of shared state. */
typedef op_status (*op_job_fn)(void *user, int index, op_arena *out, op_arena *scratch,
                               op_err *err);

/* Called after each finished job with the number done so far (serialised by a mutex). */
typedef void (*op_progress_fn)(void *ctx, int done, int total);

typedef struct op_parallel_opts {
    int threads;             /* 1..OP_MAX_THREADS; 0 = 1 */
    op_progress_fn progress; /* optional */
    void *progress_ctx;
} op_parallel_opts;

#define OP_MAX_THREADS 256

/* Runs fn for every index in [0, n). On failure the error reported is the one of the
 * LOWEST failing index (so the message does not depend on the thread count); jobs
 * still run to completion for every index below it. */
op_status op_parallel_for(int n, const op_parallel_opts *opts, op_job_fn fn, void *user,
                          op_err *err);

#endif
