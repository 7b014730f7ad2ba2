/*
 * nng_close with a bounded wait, for the client library and the daemon (header-only: only
 * the code that links nng includes it).
 *
 * nng 1.5.2 (Debian 12) can wedge its reaper thread when a peer drops connections in the
 * middle of large sends: a request over the daemon's --max-message, resent on every
 * reconnect, did it in about one `onepath put` of two. From then on every nng_close in the
 * process waits forever, on the socket that saw the drops and on a fresh one alike
 * (protocol.md §1.7 has the evidence). op_nng_close_bounded runs nng_close on a detached
 * thread and waits at most wait_ms for it; a close that does not end in time is abandoned,
 * with its thread and socket: a workaround for the library, not a design.
 */
#ifndef OP_NNG_CLOSE_H
#define OP_NNG_CLOSE_H

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <nng/nng.h>

/* One close; whoever of the closing thread and the waiter comes last frees it. */
typedef struct op_nng_closer {
    nng_socket sock;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, abandoned;
} op_nng_closer;

static inline void op_nng_closer_free(op_nng_closer *k)
{
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

static inline void *op_nng_closer_main(void *arg)
{
    op_nng_closer *k = arg;
    nng_close(k->sock);
    pthread_mutex_lock(&k->mu);
    k->done = 1;
    int abandoned = k->abandoned;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    if (abandoned)
        op_nng_closer_free(k);
    return NULL;
}

/* Closes sock; returns 0 when nng_close returned within wait_ms, -1 when it was left
 * running (the socket is then unusable but still holds its memory and thread). */
static inline int op_nng_close_bounded(nng_socket sock, int wait_ms)
{
    op_nng_closer *k = calloc(1, sizeof *k);
    if (!k) {
        nng_close(sock); /* no memory for a thread either: close here */
        return 0;
    }
    k->sock = sock;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&k->mu, NULL);
    pthread_attr_t ta;
    pthread_t t;
    pthread_attr_init(&ta);
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    int rv = pthread_create(&t, &ta, op_nng_closer_main, k);
    pthread_attr_destroy(&ta);
    if (rv != 0) {
        op_nng_closer_free(k);
        nng_close(sock); /* out of threads: close here */
        return 0;
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&k->mu);
    while (!k->done)
        if (pthread_cond_timedwait(&k->cv, &k->mu, &until) == ETIMEDOUT)
            break;
    int done = k->done;
    k->abandoned = !done;
    pthread_mutex_unlock(&k->mu);
    if (done)
        op_nng_closer_free(k);
    return done ? 0 : -1;
}

#endif
