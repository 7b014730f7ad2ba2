/* The tile worker pool: every index runs once, results by index, lowest error wins. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "onepath/parallel.h"

typedef struct job_state {
    int n;
    atomic_int *runs;
    long *slot;
    int fail_from; /* indices >= fail_from that are multiples of 7 fail */
} job_state;

static op_status job(void *user, int i, op_arena *out, op_arena *scratch, op_err *err)
{
    job_state *s = user;
    atomic_fetch_add(&s->runs[i], 1);
    /* Use both arenas so that reset-between-jobs is exercised. */
    long *a = op_arena_alloc(out, 64 * sizeof(long));
    long *b = op_arena_alloc(scratch, 1000);
    cr_assert(a && b);
    a[0] = (long)i * i;
    s->slot[i] = a[0];
    if (i >= s->fail_from && i % 7 == 0)
        return op_err_set(err, OP_ELIMIT, "job %d: pretend limit", i);
    return OP_OK;
}

static void progress(void *ctx, int done, int total)
{
    int *last = ctx;
    cr_assert(done == *last + 1 && done <= total);
    *last = done;
}

static void run_on(op_pool *pool, int n, int threads, int fail_from, op_status want,
                   const char *want_msg)
{
    atomic_int runs[200];
    long slot[200];
    for (int i = 0; i < n; i++)
        atomic_init(&runs[i], 0);
    memset(slot, 0, sizeof slot);
    job_state s = {n, runs, slot, fail_from};
    int last = 0;
    op_parallel_opts o = {threads, progress, &last, pool};
    op_err e;
    op_status st = op_parallel_for(n, &o, job, &s, &e);
    cr_assert_eq(st, want, "threads %d: %s", threads, e.msg);
    if (want == OP_OK) {
        cr_assert_eq(last, n);
        for (int i = 0; i < n; i++) {
            cr_assert_eq(atomic_load(&runs[i]), 1, "index %d ran %d times", i,
                         atomic_load(&runs[i]));
            cr_assert_eq(slot[i], (long)i * i);
        }
    } else {
        cr_assert_str_eq(e.msg, want_msg);
        /* Every index below the failing one ran. */
        for (int i = 0; i < fail_from; i++)
            cr_assert_eq(atomic_load(&runs[i]), 1);
    }
}

static void run(int n, int threads, int fail_from, op_status want, const char *want_msg)
{
    run_on(NULL, n, threads, fail_from, want, want_msg);
}

Test(parallel, every_index_once_at_any_thread_count)
{
    for (int t = 1; t <= 8; t++)
        run(200, t, 1 << 30, OP_OK, NULL);
    run(0, 4, 1 << 30, OP_OK, NULL);
    run(1, 8, 1 << 30, OP_OK, NULL);
}

Test(parallel, lowest_failing_index_is_reported_whatever_the_threads)
{
    /* Indices 70, 77, 84, ... fail; the report must always name 70. */
    for (int t = 1; t <= 8; t++)
        run(200, t, 70, OP_ELIMIT, "job 70: pretend limit");
}

Test(parallel, bad_arguments)
{
    op_err e;
    op_parallel_opts o = {OP_MAX_THREADS + 1, NULL, NULL, NULL};
    cr_assert_eq(op_parallel_for(10, &o, job, NULL, &e), OP_ERANGE);
    cr_assert_eq(op_parallel_for(-1, NULL, job, NULL, &e), OP_EINVAL);
    cr_assert_eq(op_parallel_for(1, NULL, NULL, NULL, &e), OP_EINVAL);
}

Test(parallel, a_pool_serves_many_calls_at_any_thread_count, .timeout = 60)
{
    op_pool *pool;
    op_err e;
    cr_assert_eq(op_pool_create(8, &pool, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_pool_threads(pool), 8);
    /* Calls of every size, on every subset of the workers, failing and not, one after
     * another: each must see only its own jobs, and no worker may miss a call. */
    for (int round = 0; round < 3; round++)
        for (int t = 0; t <= 8; t++) {
            run_on(pool, 200, t, 1 << 30, OP_OK, NULL);
            run_on(pool, 200, t, 70, OP_ELIMIT, "job 70: pretend limit");
            run_on(pool, 1, t, 1 << 30, OP_OK, NULL);
            run_on(pool, 0, t, 1 << 30, OP_OK, NULL);
        }
    op_pool_destroy(pool);
}

Test(parallel, pool_arguments)
{
    op_pool *pool = (op_pool *)&pool;
    op_err e;
    cr_assert_eq(op_pool_create(0, &pool, &e), OP_ERANGE);
    cr_assert_null(pool);
    cr_assert_str_eq(e.msg, "parallel: threads = 0 outside 1..256");
    cr_assert_eq(op_pool_create(OP_MAX_THREADS + 1, &pool, &e), OP_ERANGE);
    cr_assert_eq(op_pool_create(2, &pool, &e), OP_OK, "%s", e.msg);
    op_parallel_opts o = {3, NULL, NULL, pool};
    cr_assert_eq(op_parallel_for(10, &o, job, NULL, &e), OP_ERANGE);
    cr_assert_str_eq(e.msg, "parallel: threads = 3 > the pool's 2");
    op_pool_destroy(pool);
    op_pool_destroy(NULL);
    cr_assert_eq(op_pool_threads(NULL), 0);
}

/* A job that calls op_parallel_for on the pool it runs on. */
typedef struct nested {
    op_pool *pool;
    atomic_int busy, ran;
} nested;

static op_status inner_job(void *user, int i, op_arena *out, op_arena *scratch, op_err *err)
{
    (void)i, (void)out, (void)scratch, (void)err;
    atomic_fetch_add(&((nested *)user)->ran, 1);
    return OP_OK;
}

static op_status outer_job(void *user, int i, op_arena *out, op_arena *scratch, op_err *err)
{
    (void)i, (void)out, (void)scratch;
    nested *s = user;
    op_parallel_opts o = {0, NULL, NULL, s->pool};
    op_status st = op_parallel_for(4, &o, inner_job, s, err);
    if (st == OP_EBUSY)
        atomic_fetch_add(&s->busy, 1);
    return OP_OK;
}

Test(parallel, a_call_from_the_pools_own_job_is_busy_not_a_deadlock, .timeout = 60)
{
    op_pool *pool;
    op_err e;
    cr_assert_eq(op_pool_create(2, &pool, &e), OP_OK, "%s", e.msg);
    nested s = {pool, 0, 0};
    op_parallel_opts o = {0, NULL, NULL, pool};
    cr_assert_eq(op_parallel_for(6, &o, outer_job, &s, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(atomic_load(&s.busy), 6, "every nested call refused");
    cr_assert_eq(atomic_load(&s.ran), 0, "and none ran a job");
    /* The pool still works afterwards. */
    cr_assert_eq(op_parallel_for(4, &o, inner_job, &s, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(atomic_load(&s.ran), 4);
    op_pool_destroy(pool);
}

/* One slow job per call, the others instant: whoever ends last, the call returns only
 * after it, and its result is seen (the caller watches for the return a while, then
 * sleeps: waits under and over that while, on a kept pool and on a call's own). */
typedef struct slow_state {
    int slow;         /* the index that waits */
    long wait_us;     /* how long */
    long slot[16];    /* written by each job, read by the test after the call */
    atomic_int ended; /* jobs that ended */
} slow_state;

static op_status slow_job(void *user, int i, op_arena *out, op_arena *scratch, op_err *err)
{
    (void)out;
    (void)scratch;
    (void)err;
    slow_state *s = user;
    if (i == s->slow) {
        struct timespec ts = {0, s->wait_us * 1000};
        nanosleep(&ts, NULL);
    }
    s->slot[i] = 1000 + i;
    atomic_fetch_add(&s->ended, 1);
    return OP_OK;
}

Test(parallel, a_call_returns_after_its_slowest_job_short_or_long, .timeout = 60)
{
    static const long waits[] = {0, 30, 150, 400, 3000};
    op_pool *pool;
    op_err e;
    cr_assert_eq(op_pool_create(4, &pool, &e), OP_OK, "%s", e.msg);
    for (int use_pool = 0; use_pool < 2; use_pool++)
        for (int t = 2; t <= 4; t++)
            for (size_t w = 0; w < sizeof waits / sizeof waits[0]; w++)
                for (int slow = 0; slow < 16; slow += 5) {
                    slow_state s = {slow, waits[w], {0}, 0};
                    op_parallel_opts o = {t, NULL, NULL, use_pool ? pool : NULL};
                    cr_assert_eq(op_parallel_for(16, &o, slow_job, &s, &e), OP_OK, "%s", e.msg);
                    cr_assert_eq(atomic_load(&s.ended), 16, "returned before every job ended");
                    for (int i = 0; i < 16; i++)
                        cr_assert_eq(s.slot[i], 1000 + i, "job %d's result not seen", i);
                }
    op_pool_destroy(pool);
}
