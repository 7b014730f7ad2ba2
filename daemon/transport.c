/*
 * onepathd transport (protocol §1): one nng REP0 socket listening on every --listen
 * URL, --contexts nng contexts, each an aio state machine
 *
 *   RECV --message--> WORK (route.c: answered here, or queued to the request pool; may
 *        park) --reply (call.c)--> SEND --> RECV
 *
 * nng callbacks never wait for a build or the disk: route answers reads that need only a
 * level's lock, queues the rest, and the aio is re-armed.
 *
 * Parked calls (a tile.get waiting for its build, a changes.since long poll) keep their
 * context, which nng needs to send the reply, but leave the count: at most --contexts
 * calls are armed (receiving, working or sending), and when one parks an idle call (or a
 * new one) starts receiving in its place. A call whose reply leaves while more than
 * --contexts are armed goes idle instead of receiving again. So a thousand long polls
 * hold a thousand small contexts and no receive, and ping is still answered. A message over
 * --max-message is dropped by nng with its connection (NNG_OPT_RECVMAXSZ on each listener), never
 * decoded. Every other request gets exactly one reply.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "onepath/nng_close.h"
#include <nng/protocol/reqrep0/rep.h>

/* How long shutdown waits for nng_close (a healthy one takes milliseconds). */
#define OPD_CLOSE_WAIT_MS 10000

/* After a reply: receive again, or go idle when a parked call's replacement already
 * receives (more than --contexts armed). */
static void rearm(opd_call *c)
{
    opd_daemon *d = c->d;
    int armed = atomic_load(&d->armed);
    while (armed > d->cfg.contexts)
        if (atomic_compare_exchange_weak(&d->armed, &armed, armed - 1)) {
            pthread_mutex_lock(&d->calls_mu);
            c->next_idle = d->idle;
            d->idle = c;
            pthread_mutex_unlock(&d->calls_mu);
            return;
        }
    nng_ctx_recv(c->ctx, c->aio);
}

static void on_recv(opd_call *c, int rv)
{
    if (rv == NNG_ECLOSED)
        return;
    if (rv != 0) {
        opd_daemon *d = c->d;
        atomic_fetch_add(&d->inflight, 1); /* no teardown while inside nng_ctx_recv */
        nng_ctx_recv(c->ctx, c->aio);
        atomic_fetch_sub(&d->inflight, 1);
        return;
    }
    c->in = nng_aio_get_msg(c->aio);
    nng_aio_set_msg(c->aio, NULL);
    c->state = OPD_CALL_WORK;
    c->parsed = 0;
    c->method = OPD_M_UNKNOWN;
    c->level[0] = '\0';
    c->wait.deadline_ns = 0;
    c->wait.next = NULL;
    c->woken = 0;
    c->t0_ns = opd_now_ns();
    atomic_fetch_add(&c->d->inflight, 1);
    opd_route_received(c);
}

static void call_cb(void *arg)
{
    opd_call *c = arg;
    int rv = nng_aio_result(c->aio);
    if (c->state == OPD_CALL_RECV) {
        on_recv(c, rv);
        return;
    }
    /* SEND done: on failure the message is still ours. */
    if (rv != 0)
        nng_msg_free(nng_aio_get_msg(c->aio));
    nng_aio_set_msg(c->aio, NULL);
    c->state = OPD_CALL_RECV;
    /* Released only once the receive is re-armed: from inflight 0 on, the loop may close
     * the socket and stop the aios, never while this thread is inside nng_ctx_recv. The
     * drain timer polls inflight: no wake here, the loop may be closing. */
    opd_daemon *d = c->d;
    if (rv != NNG_ECLOSED)
        rearm(c);
    atomic_fetch_sub(&d->inflight, 1);
}

static int listen_one(opd_daemon *d, const char *url, op_err *err)
{
    nng_listener l;
    /* nng would listen on tls+tcp:// with no certificate and fail every handshake. */
    if (!strncmp(url, "tls+", 4))
        return op_err_set(err, OP_EINVAL,
                          "listen %s: TLS needs a certificate and key, and onepathd has no TLS "
                          "flags yet (docs/security.md)",
                          url);
    int rv = nng_listener_create(&l, d->sock, url);
    if (rv == 0)
        rv = nng_listener_set_size(l, NNG_OPT_RECVMAXSZ, d->cfg.max_message);
    /* An ipc socket's mode is set, not left to the umask (0777 under umask 000 would let
     * any local user drop levels). */
    if (rv == 0 && !strncmp(url, "ipc://", 6))
        rv = nng_listener_set_int(l, NNG_OPT_IPC_PERMISSIONS, d->cfg.socket_mode);
    if (rv == 0)
        rv = nng_listener_start(l, 0);
    if (rv != 0)
        return op_err_set(err, OP_EIO, "listen %s: %s", url, nng_strerror(rv));
    return 0;
}

/* Opens one more call on the socket (under calls_mu). NULL: no memory or no context. */
static opd_call *call_new(opd_daemon *d, int *rv)
{
    if (d->ncalls == d->calls_cap) {
        int cap = d->calls_cap ? 2 * d->calls_cap : 64;
        opd_call **all = realloc(d->calls, (size_t)cap * sizeof *all);
        if (!all)
            return NULL;
        d->calls = all;
        d->calls_cap = cap;
    }
    opd_call *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->d = d;
    if ((*rv = nng_ctx_open(&c->ctx, d->sock)) != 0) {
        free(c);
        return NULL;
    }
    if ((*rv = nng_aio_alloc(&c->aio, call_cb, c)) != 0) {
        nng_ctx_close(c->ctx);
        free(c);
        return NULL;
    }
    d->calls[d->ncalls++] = c;
    return c;
}

/* Starts one more receiving call: an idle one, or a new one. */
static int arm_one(opd_daemon *d, int *rv)
{
    pthread_mutex_lock(&d->calls_mu);
    opd_call *c = d->idle;
    if (c)
        d->idle = c->next_idle;
    else
        c = call_new(d, rv);
    pthread_mutex_unlock(&d->calls_mu);
    if (!c)
        return -1;
    c->next_idle = NULL;
    c->state = OPD_CALL_RECV;
    atomic_fetch_add(&d->armed, 1);
    nng_ctx_recv(c->ctx, c->aio);
    return 0;
}

void opd_transport_parked(opd_daemon *d)
{
    atomic_fetch_sub(&d->armed, 1);
    if (atomic_load(&d->stopping))
        return; /* nothing new is received while draining */
    int rv = 0;
    atomic_fetch_add(&d->inflight, 1); /* no teardown while inside nng_ctx_recv */
    if (arm_one(d, &rv) != 0)
        opd_log(d, "OP-CONTEXT-FAILED no context to replace a parked call: %s",
                rv ? nng_strerror(rv) : "out of memory");
    atomic_fetch_sub(&d->inflight, 1);
}

void opd_transport_unparked(opd_call *c)
{
    if (!c->ops)
        atomic_fetch_add(&c->d->armed, 1);
}

int opd_transport_start(opd_daemon *d, op_err *err)
{
    int rv = nng_rep0_open(&d->sock);
    if (rv != 0)
        return op_err_set(err, OP_EIO, "nng_rep0_open: %s", nng_strerror(rv));
    nng_socket_set_size(d->sock, NNG_OPT_RECVMAXSZ, d->cfg.max_message);
    for (int i = 0; i < d->cfg.nlisten; i++)
        if (listen_one(d, d->cfg.listen[i], err))
            return err->status;
    for (int i = 0; i < d->cfg.contexts; i++) {
        rv = 0;
        if (arm_one(d, &rv) != 0)
            return rv ? op_err_set(err, OP_EIO, "nng context %d: %s", i, nng_strerror(rv))
                      : op_err_set(err, OP_ENOMEM, "out of memory for %d contexts",
                                   d->cfg.contexts);
    }
    return 0;
}

int opd_transport_stop(opd_daemon *d)
{
    /* nng 1.5.2 can wedge its reaper (protocol §1.7): then the calls stay nng's, and the
     * daemon exits without freeing them rather than never. */
    if (op_nng_close_bounded(d->sock, OPD_CLOSE_WAIT_MS) != 0) {
        opd_log(d,
                "OP-CLOSE-STUCK nng_close did not return within %d ms (an nng 1.5.2 "
                "defect): exiting without teardown",
                OPD_CLOSE_WAIT_MS);
        return -1;
    }
    for (int i = 0; i < d->ncalls; i++) {
        opd_call *c = d->calls[i];
        nng_aio_stop(c->aio);
        nng_aio_free(c->aio);
        if (c->in)
            nng_msg_free(c->in);
        free(c);
    }
    free(d->calls);
    d->calls = NULL;
    d->ncalls = d->calls_cap = 0;
    d->idle = NULL;
    return 0;
}
