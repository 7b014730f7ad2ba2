/*
 * onepathd worker pool: a FIFO of jobs served by a fixed set of threads. Each worker
 * owns an output and a scratch arena (reset after every job), so tile builds reuse
 * their memory. Two pools run in the daemon: requests (edits, large messages and
 * re-dispatched long polls; never wait on a build) and builds (tile builds, as long as
 * a tile takes). Typical: 2..64 threads, queues of 0..10^5 jobs.
 */
#include <stdlib.h>

#include "daemon.h"

typedef struct job {
    opd_job_fn fn;
    void *arg;
    struct job *next;
} job;

struct opd_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *head, *tail;
    size_t queued;
    int stopping;
    int nthreads;
    pthread_t *threads;
};

static job *take(opd_pool *p)
{
    pthread_mutex_lock(&p->mu);
    while (!p->head && !p->stopping)
        pthread_cond_wait(&p->cv, &p->mu);
    job *j = p->head;
    if (j) {
        p->head = j->next;
        if (!p->head)
            p->tail = NULL;
        p->queued--;
    }
    pthread_mutex_unlock(&p->mu);
    return j;
}

static void *worker(void *arg)
{
    opd_pool *p = arg;
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    job *j;
    /* A job runs even without arenas: jobs that need them report OP_ENOMEM. */
    while ((j = take(p)) != NULL) {
        j->fn(j->arg, out, scratch);
        free(j);
        if (out)
            op_arena_reset(out);
        if (scratch)
            op_arena_reset(scratch);
    }
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    return NULL;
}

opd_pool *opd_pool_create(int threads)
{
    opd_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->threads = calloc((size_t)threads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0)
            break;
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        opd_pool_destroy(p);
        return NULL;
    }
    return p;
}

int opd_pool_submit(opd_pool *p, opd_job_fn fn, void *arg)
{
    job *j = malloc(sizeof *j);
    if (!j)
        return -1;
    j->fn = fn;
    j->arg = arg;
    j->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->stopping) {
        pthread_mutex_unlock(&p->mu);
        free(j);
        return -1;
    }
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    p->queued++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

size_t opd_pool_queued(opd_pool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->queued;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void opd_pool_destroy(opd_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1; /* workers finish the queue, then see an empty queue and exit */
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p);
}
