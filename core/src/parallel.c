/*
 * Worker pool for tile builds (see parallel.h). Typical use: a few hundred to a few
 * hundred thousand tiles, each 0.1-10 ms, on 1-64 threads. Jobs are claimed one at a
 * time from an atomic counter (tiles vary a lot in cost, so static chunks would
 * leave threads idle), in index order or in the caller's order (heaviest first keeps
 * a long job from starting last).
 *
 * A call without a pool makes one for itself and destroys it after: one code path.
 * The pool's threads sleep on a condition variable between calls; a call bumps the
 * generation, wakes them, works as worker 0 and waits until every worker is back.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "onepath/parallel.h"
#include "parallel_internal.h"

#define WORKER_OUT_BLOCK     ((size_t)128 << 10)
#define WORKER_SCRATCH_BLOCK ((size_t)512 << 10)
#define POOL_SPIN_US         200.0

#define CACHE_LINE 64

/* One op_parallel_for call: its jobs and its outcome. The claim counter, written by
 * every claim of every worker, has a cache line of its own: the fields every claim
 * reads (n, order, fn, user, stop_below) stay shared in every worker's cache. */
typedef struct call {
    _Alignas(CACHE_LINE) atomic_int next;
    char next_line[CACHE_LINE - sizeof(atomic_int)];
    int n;
    const int *order; /* claim order, or NULL for 0, 1, ... */
    op_job_fn fn;
    void *user;
    atomic_int stop_below; /* indices >= this need not run (an error happened below) */
    pthread_mutex_t lock;  /* guards err_index, err, done */
    int err_index;
    op_err err;
    int done;
    op_progress_fn progress;
    void *progress_ctx;
} call;

typedef struct worker {
    op_pool *pool;
    int index; /* 0 is the calling thread */
    op_arena *out, *scratch;
} worker;

struct op_pool {
    int threads;
    worker *ws;      /* [threads] */
    pthread_t *tids; /* [threads]; tids[0] unused (the caller) */
    int started;     /* threads 1..started are running */
    pthread_mutex_t lock;
    pthread_cond_t wake; /* workers: a new generation or quit */
    pthread_cond_t back; /* the caller: a worker finished its part */
    atomic_uint gen;     /* bumped by every call (under lock; read without it to spin) */
    int active;          /* workers 0..active-1 take part in the current call */
    atomic_int running;  /* workers 1..active-1 not yet back (changed under lock) */
    int busy;            /* a call is in progress */
    int quit;
    call *cur;
    op_arena *spare;      /* the caller's temporaries between calls (op__pool_take_arena) */
    atomic_int spare_out; /* 1 while a caller has it */
};

static void record_error(call *c, int index, const op_err *e)
{
    pthread_mutex_lock(&c->lock);
    if (c->err_index < 0 || index < c->err_index) {
        c->err_index = index;
        c->err = *e;
    }
    pthread_mutex_unlock(&c->lock);
    int cur = atomic_load(&c->stop_below);
    while (index < cur && !atomic_compare_exchange_weak(&c->stop_below, &cur, index))
        ;
}

static void run_jobs(call *c, op_arena *out, op_arena *scratch)
{
    for (;;) {
        int k = atomic_fetch_add(&c->next, 1);
        if (k >= c->n)
            return;
        int i = c->order ? c->order[k] : k;
        /* With an order, a later claim can have a lower index: skip, do not stop. */
        if (i >= atomic_load(&c->stop_below)) {
            if (!c->order)
                return;
            continue;
        }
        op_arena_reset(out);
        op_arena_reset(scratch);
        op_err e;
        op_err_clear(&e);
        op_status st = c->fn(c->user, i, out, scratch, &e);
        if (st != OP_OK) {
            if (e.status == OP_OK)
                op_err_set(&e, st, "job %d failed: %s", i, op_strerror(st));
            record_error(c, i, &e);
        }
        if (c->progress) {
            pthread_mutex_lock(&c->lock);
            int done = ++c->done;
            c->progress(c->progress_ctx, done, c->n);
            pthread_mutex_unlock(&c->lock);
        }
    }
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
}

/* Before sleeping, a worker watches for the next call a short while: a build makes
 * calls in quick succession (preparation phases, then the tiles), and waking a
 * sleeping thread takes 50-700 us on the 2-core VMs we measure on, as long as a
 * dungeon tile. Bounded, so an idle pool costs no CPU. */
static void spin_for_next_call(op_pool *p, unsigned seen)
{
    double until = now_us() + POOL_SPIN_US;
    for (int i = 0; atomic_load_explicit(&p->gen, memory_order_relaxed) == seen; i++) {
        cpu_relax();
        if ((i & 63) == 63 && now_us() > until)
            return;
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    op_pool *p = w->pool;
    /* Generation 0 is the pool's creation: a call made before this thread got here
     * has already bumped it, and must not be missed. */
    unsigned seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (atomic_load(&p->gen) == seen && !p->quit) {
            pthread_mutex_unlock(&p->lock);
            spin_for_next_call(p, seen);
            pthread_mutex_lock(&p->lock);
        }
        while (atomic_load(&p->gen) == seen && !p->quit)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->quit)
            break;
        seen = atomic_load(&p->gen);
        if (w->index >= p->active)
            continue; /* not needed this call, and not counted in running */
        call *c = p->cur;
        pthread_mutex_unlock(&p->lock);
        run_jobs(c, w->out, w->scratch);
        pthread_mutex_lock(&p->lock);
        if (atomic_fetch_sub(&p->running, 1) == 1)
            pthread_cond_signal(&p->back);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int op_pool_threads(const op_pool *pool)
{
    return pool ? pool->threads : 0;
}

op_arena *op__pool_take_arena(op_pool *p)
{
    int free_ = 0;
    return atomic_compare_exchange_strong(&p->spare_out, &free_, 1) ? p->spare : NULL;
}

void op__pool_give_arena(op_pool *p, op_arena *a)
{
    op_arena_reset(a); /* keeps one block as large as the peak: warm for the next caller */
    atomic_store(&p->spare_out, 0);
}

void op_pool_destroy(op_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->quit = 1;
    atomic_fetch_add(&p->gen, 1); /* ends the spinning of workers that just finished */
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int t = 1; t <= p->started; t++)
        pthread_join(p->tids[t], NULL);
    for (int t = 0; t < p->threads; t++) {
        op_arena_destroy(p->ws[t].out);
        op_arena_destroy(p->ws[t].scratch);
    }
    op_arena_destroy(p->spare);
    pthread_cond_destroy(&p->back);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p->ws);
    free(p->tids);
    free(p);
}

op_status op_pool_create(int threads, op_pool **out, op_err *err)
{
    *out = NULL;
    if (threads < 1 || threads > OP_MAX_THREADS)
        return op_err_set(err, OP_ERANGE, "parallel: threads = %d outside 1..%d", threads,
                          OP_MAX_THREADS);
    op_pool *p = calloc(1, sizeof *p);
    if (!p)
        return op_err_set(err, OP_ENOMEM, "parallel: out of memory creating a pool");
    p->ws = calloc((size_t)threads, sizeof *p->ws);
    p->tids = calloc((size_t)threads, sizeof *p->tids);
    /* Synchronisation objects first, so that destroy can always run. */
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->back, NULL);
    atomic_init(&p->gen, 0);
    atomic_init(&p->running, 0);
    p->threads = threads;
    p->spare = op_arena_create(0);
    atomic_init(&p->spare_out, 0);
    if (!p->ws || !p->tids || !p->spare) {
        p->threads = 0;
        op_pool_destroy(p);
        return op_err_set(err, OP_ENOMEM, "parallel: out of memory creating a pool");
    }
    for (int t = 0; t < threads; t++) {
        worker *w = &p->ws[t];
        w->pool = p;
        w->index = t;
        /* First blocks near a typical tile's peak (results tens of KiB, scratch a few
         * hundred KiB; a bigger tile chains blocks, and the reset merges them). Taken
         * here, on the creating thread, they come from that thread's heap, not from a
         * new thread's heap that glibc trims when the thread ends. */
        w->out = op_arena_create(WORKER_OUT_BLOCK);
        w->scratch = op_arena_create(WORKER_SCRATCH_BLOCK);
        if (w->out)
            op_arena_reset(w->out);
        if (w->scratch)
            op_arena_reset(w->scratch);
        if (!w->out || !w->scratch) {
            op_pool_destroy(p);
            return op_err_set(err, OP_ENOMEM, "parallel: out of memory for worker %d's arenas", t);
        }
    }
    for (int t = 1; t < threads; t++) {
        int rc = pthread_create(&p->tids[t], NULL, worker_main, &p->ws[t]);
        if (rc != 0) {
            op_pool_destroy(p);
            return op_err_set(err, OP_ENOMEM, "parallel: cannot start worker thread %d: %s", t,
                              strerror(rc));
        }
        p->started = t;
    }
    op_err_clear(err);
    *out = p;
    return OP_OK;
}

/* The caller, its own jobs done, watches for the other workers' return a short while
 * before sleeping: the last worker back is then seen at once, where a wake-up from
 * pthread_cond_wait costs 50-700 us on the VMs we measure on (as long as a small tile,
 * at the end of every call). Bounded as the workers' watch for the next call. */
static void spin_for_return(op_pool *p)
{
    double until = now_us() + POOL_SPIN_US;
    for (int i = 0; atomic_load(&p->running) > 0; i++) {
        cpu_relax();
        if ((i & 63) == 63 && now_us() > until)
            return;
    }
}

/* Runs the call on workers 0..active-1 of p; OP_EBUSY when p already runs one. */
static op_status pool_run(op_pool *p, call *c, int active, op_err *err)
{
    pthread_mutex_lock(&p->lock);
    if (p->busy) {
        pthread_mutex_unlock(&p->lock);
        return op_err_set(err, OP_EBUSY,
                          "parallel: the pool already runs a call (one call at a time, and "
                          "not from its own jobs)");
    }
    p->busy = 1;
    p->cur = c;
    p->active = active;
    atomic_store(&p->running, active - 1);
    if (active > 1) {
        atomic_fetch_add(&p->gen, 1);
        pthread_cond_broadcast(&p->wake);
    }
    pthread_mutex_unlock(&p->lock);
    run_jobs(c, p->ws[0].out, p->ws[0].scratch);
    if (active > 1)
        spin_for_return(p);
    pthread_mutex_lock(&p->lock);
    while (atomic_load(&p->running) > 0)
        pthread_cond_wait(&p->back, &p->lock);
    p->cur = NULL;
    p->busy = 0;
    pthread_mutex_unlock(&p->lock);
    return OP_OK;
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
    op_pool *pool = opts ? opts->pool : NULL;
    int threads = (opts && opts->threads > 0) ? opts->threads : pool ? pool->threads : 1;
    if (threads > OP_MAX_THREADS)
        return op_err_set(err, OP_ERANGE, "parallel: threads = %d > %d", threads, OP_MAX_THREADS);
    if (pool && threads > pool->threads)
        return op_err_set(err, OP_ERANGE, "parallel: threads = %d > the pool's %d", threads,
                          pool->threads);
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
    op_pool *own = NULL;
    if (!pool) {
        op_status st = op_pool_create(threads, &own, err);
        if (st != OP_OK)
            return st;
        pool = own;
    }
    call c;
    memset(&c, 0, sizeof c);
    c.n = n;
    c.order = order;
    c.fn = fn;
    c.user = user;
    atomic_init(&c.next, 0);
    atomic_init(&c.stop_below, n);
    c.err_index = -1;
    c.progress = opts ? opts->progress : NULL;
    c.progress_ctx = opts ? opts->progress_ctx : NULL;
    pthread_mutex_init(&c.lock, NULL);
    op_status st = pool_run(pool, &c, threads, err);
    pthread_mutex_destroy(&c.lock);
    op_pool_destroy(own);
    if (st != OP_OK)
        return st;
    if (c.err_index != -1) {
        if (err)
            *err = c.err;
        return c.err.status;
    }
    op_err_clear(err);
    return OP_OK;
}
