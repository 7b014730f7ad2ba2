/*
 * Tiles in parallel: a fixed pool of worker threads takes indices 0..n-1 from a
 * shared counter. Each worker owns two arenas (out and scratch) that are reset
 * before every index, so a job's memory never outlives it unless the job copies
 * it out. Results must be stored by index: nothing may depend on which worker ran
 * a job or in which order jobs finished.
 *
 * The workers either live for one call (op_parallel_opts.threads) or in an op_pool
 * that the caller keeps across calls (op_parallel_opts.pool): a program that builds
 * again and again (a daemon, a farm, the benchmark) then starts its threads once, and
 * each call's first tiles find warm arenas instead of new threads on cold memory.
 */
#ifndef ONEPATH_PARALLEL_H
#define ONEPATH_PARALLEL_H

#include <stdint.h>

#include "onepath/arena.h"
#include "onepath/status.h"

/* One job: build item index into the caller's storage. Runs concurrently with other
 * indices; must touch only its own slot of shared state. */
typedef op_status (*op_job_fn)(void *user, int index, op_arena *out, op_arena *scratch,
                               op_err *err);

/* Called after each finished job with the number done so far (serialised by a mutex). */
typedef void (*op_progress_fn)(void *ctx, int done, int total);

typedef struct op_pool op_pool;

typedef struct op_parallel_opts {
    int threads;             /* 1..OP_MAX_THREADS; 0 = 1, or all of the pool's */
    op_progress_fn progress; /* optional */
    void *progress_ctx;
    op_pool *pool; /* optional: run on this pool's workers (threads <= its size) */
} op_parallel_opts;

#define OP_MAX_THREADS 256

/* Starts threads - 1 worker threads (the calling thread of each op_parallel_for is the
 * first worker) and every worker's two arenas. threads 1..OP_MAX_THREADS, else
 * OP_ERANGE; OP_ENOMEM naming the worker when memory or a thread cannot be had (none
 * is left running then). The arenas keep their largest block between calls (about a
 * tile build's peak each), and so does a spare arena for op_level_create_pool's
 * temporaries (16 bytes a triangle); op_pool_destroy gives everything back. Between
 * calls the workers sleep, after watching for the next call for up to 200 us. */
op_status op_pool_create(int threads, op_pool **out, op_err *err);
/* Stops and joins the workers, frees their arenas. NULL is a no-op. Must not be called
 * while a call runs on the pool. */
void op_pool_destroy(op_pool *pool);
int op_pool_threads(const op_pool *pool);

/* Runs fn for every index in [0, n). On failure the error reported is the one of the
 * LOWEST failing index (so the message does not depend on the thread count); jobs
 * still run to completion for every index below it. With opts->pool: one call at a
 * time on a pool; a second call while one runs (from another thread, or from a job
 * of the pool's own call) gets OP_EBUSY and runs nothing; threads above the pool's
 * size is OP_ERANGE. */
op_status op_parallel_for(int n, const op_parallel_opts *opts, op_job_fn fn, void *user,
                          op_err *err);

/* The same, workers taking the indices in the given order: order is a permutation of
 * 0..n-1 (else OP_EINVAL), e.g. heaviest first (op_parallel_order_by_cost) so that no
 * long job starts last and leaves the other workers idle. Only the schedule changes:
 * each index runs once, and the error reported is still the lowest failing index's.
 * order NULL: 0, 1, ... as op_parallel_for. */
op_status op_parallel_for_ordered(int n, const op_parallel_opts *opts, const int *order,
                                  op_job_fn fn, void *user, op_err *err);

/* Fills order[0..n-1] with 0..n-1 sorted by decreasing cost[i], equal costs by
 * increasing index (so the order depends only on the costs). OP_ENOMEM when its
 * temporary (8 bytes an index) cannot be had. */
op_status op_parallel_order_by_cost(int n, const uint32_t *cost, int *order, op_err *err);

#endif
