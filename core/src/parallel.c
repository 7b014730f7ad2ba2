/*
 * Worker pool for tile builds (see parallel.h). Typical use: a few hundred to a few
 * hundred thousand tiles, each 0.1-10 ms, on 1-64 threads. Jobs are claimed one at a
 * time from an atomic counter (tiles vary a lot in cost, so static chunks would
 * leave threads idle), in index order or in the caller's order (heaviest first keeps
 * a long job from starting last).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/parallel.h"

#define WORKER_OUT_BLOCK     ((size_t)128 << 10)
#define WORKER_SCRATCH_BLOCK ((size_t)512 << 10)

typedef struct pool {
    int n;
    const int *order; /* claim order, or NULL for 0, 1, ... */
    op_job_fn fn;
    void *user;
    atomic_int next;
    atomic_int stop_below; /* indices >= this need not run (an error happened below) */
    pthread_mutex_t lock;  /* guards err_index, err, done */
    int err_index;
    op_err err;
    int done;
    op_progress_fn progress;
    void *progress_ctx;
} pool;

static void record_error(pool *p, int index, const op_err *e)
{
    pthread_mutex_lock(&p->lock);
    if (p->err_index < 0 || index < p->err_index) {
        p->err_index = index;
        p->err = *e;
    }
    pthread_mutex_unlock(&p->lock);
    int cur = atomic_load(&p->stop_below);
    while (index < cur && !atomic_compare_exchange_weak(&p->stop_below, &cur, index))
        ;
}

static void run_jobs(pool *p, op_arena *out, op_arena *scratch)
{
    for (;;) {
        int k = atomic_fetch_add(&p->next, 1);
        if (k >= p->n)
            return;
        int i = p->order ? p->order[k] : k;
        /* With an order, a later claim can have a lower index: skip, do not stop. */
        if (i >= atomic_load(&p->stop_below)) {
            if (!p->order)
                return;
            continue;
        }
        op_arena_reset(out);
        op_arena_reset(scratch);
        op_err e;
        op_err_clear(&e);
        op_status st = p->fn(p->user, i, out, scratch, &e);
        if (st != OP_OK) {
            if (e.status == OP_OK)
                op_err_set(&e, st, "job %d failed: %s", i, op_strerror(st));
            record_error(p, i, &e);
        }
        if (p->progress) {
            pthread_mutex_lock(&p->lock);
            int done = ++p->done;
            p->progress(p->progress_ctx, done, p->n);
            pthread_mutex_unlock(&p->lock);
        }
    }
}

typedef struct worker {
    pool *p;
    op_arena *out, *scratch;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    run_jobs(w->p, w->out, w->scratch);
    return NULL;
}

static op_status alloc_fail(pool *p)
{
    op_err e;
    op_err_set(&e, OP_ENOMEM, "parallel: out of memory creating a worker");
    record_error(p, -1, &e);
    return OP_ENOMEM;
}

/* 1 when order is a permutation of 0..n-1, 0 when not, -1 out of memory. */
static int is_permutation(const int *order, int n)
{
    unsigned char *seen = calloc((size_t)(n > 0 ? n : 1), 1);
    if (!seen)
        return -1;
    int ok = 1;
    for (int k = 0; ok && k < n; k++) {
        int i = order[k];
        ok = i >= 0 && i < n && !seen[i];
        if (ok)
            seen[i] = 1;
    }
    free(seen);
    return ok;
}

static int cmp_key(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

op_status op_parallel_order_by_cost(int n, const uint32_t *cost, int *order, op_err *err)
{
    if (n < 0)
        return op_err_set(err, OP_EINVAL, "parallel: bad job count %d", n);
    /* One key per index: (max - cost) above, the index below, so an ascending sort
     * gives decreasing cost and ties by increasing index; keys are all distinct. */
    uint64_t *key = malloc((size_t)(n > 0 ? n : 1) * sizeof *key);
    if (!key)
        return op_err_set(err, OP_ENOMEM, "parallel: out of memory (%zu bytes of job order)",
                          (size_t)n * sizeof *key);
    for (int i = 0; i < n; i++)
        key[i] = ((uint64_t)(UINT32_MAX - cost[i]) << 32) | (uint32_t)i;
    qsort(key, (size_t)n, sizeof *key, cmp_key);
    for (int k = 0; k < n; k++)
        order[k] = (int)(key[k] & 0xffffffffu);
    free(key);
    op_err_clear(err);
    return OP_OK;
}

op_status op_parallel_for(int n, const op_parallel_opts *opts, op_job_fn fn, void *user,
                          op_err *err)
{
    return op_parallel_for_ordered(n, opts, NULL, fn, user, err);
}

op_status op_parallel_for_ordered(int n, const op_parallel_opts *opts, const int *order,
                                  op_job_fn fn, void *user, op_err *err)
{
    int threads = (opts && opts->threads > 0) ? opts->threads : 1;
    if (threads > OP_MAX_THREADS)
        return op_err_set(err, OP_ERANGE, "parallel: threads = %d > %d", threads, OP_MAX_THREADS);
    if (n < 0 || !fn)
        return op_err_set(err, OP_EINVAL, "parallel: bad job count %d or NULL job", n);
    if (threads > n)
        threads = n > 0 ? n : 1;
    int perm = order ? is_permutation(order, n) : 1;
    if (perm < 0)
        return op_err_set(err, OP_ENOMEM, "parallel: out of memory (%d bytes to check the order)",
                          n);
    if (!perm)
        return op_err_set(err, OP_EINVAL, "parallel: the job order is not a permutation of 0..%d",
                          n - 1);
    pool p;
    memset(&p, 0, sizeof p);
    p.n = n;
    p.order = order;
    p.fn = fn;
    p.user = user;
    atomic_init(&p.next, 0);
    atomic_init(&p.stop_below, n);
    p.err_index = -1;
    p.progress = opts ? opts->progress : NULL;
    p.progress_ctx = opts ? opts->progress_ctx : NULL;
    pthread_mutex_init(&p.lock, NULL);

    worker *ws = calloc((size_t)threads, sizeof *ws);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    int started = 0;
    if (!ws || !tids) {
        alloc_fail(&p);
        goto done;
    }
    for (int t = 0; t < threads; t++) {
        ws[t].p = &p;
        /* First blocks near a typical tile's peak (results tens of KiB, scratch a few
         * hundred KiB; a bigger tile chains blocks, and the reset merges them). Kept small,
         * all workers' blocks together stay under the C library's trim threshold (glibc:
         * twice its mmap threshold, which reaches 1 MiB after one such block is freed), so
         * freeing them leaves the memory in the heap and the next call's tiles reuse it
         * instead of faulting every page in again (1 MiB blocks: ~400 page faults per
         * dungeon build and 2 brk calls per call; now a few). */
        ws[t].out = op_arena_create(WORKER_OUT_BLOCK);
        ws[t].scratch = op_arena_create(WORKER_SCRATCH_BLOCK);
        /* Each arena's first block is taken here, on the calling thread: it then comes
         * from (and goes back to) the caller's heap, which keeps it between calls,
         * rather than from a new thread's heap that is trimmed when the thread ends
         * (every page faulted in again on the next call). */
        if (ws[t].out)
            op_arena_reset(ws[t].out);
        if (ws[t].scratch)
            op_arena_reset(ws[t].scratch);
        if (!ws[t].out || !ws[t].scratch) {
            alloc_fail(&p);
            threads = t + 1;
            goto join;
        }
    }
    /* Worker 0 is this thread: one fewer thread to create, and threads = 1 creates none. */
    for (int t = 1; t < threads; t++) {
        if (pthread_create(&tids[t], NULL, worker_main, &ws[t]) != 0)
            break;
        started = t;
    }
    run_jobs(&p, ws[0].out, ws[0].scratch);
join:
    for (int t = 1; t <= started; t++)
        pthread_join(tids[t], NULL);
    for (int t = 0; t < threads; t++) {
        op_arena_destroy(ws[t].out);
        op_arena_destroy(ws[t].scratch);
    }
done:
    free(ws);
    free(tids);
    pthread_mutex_destroy(&p.lock);
    if (p.err_index != -1 || p.err.status != OP_OK) {
        if (err)
            *err = p.err;
        return p.err.status;
    }
    op_err_clear(err);
    return OP_OK;
}
