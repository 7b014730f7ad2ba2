/*
 * onepathd transport (protocol §1): one nng REP0 socket listening on every --listen
 * URL, --contexts nng contexts, each an aio state machine
 *
 *   RECV --message--> WORK (route.c: answered here, or queued to the request pool; may
 *        park) --reply (call.c)--> SEND --> RECV
 *
 * nng callbacks never wait for a build or the disk: route answers reads that need only a
 * level's lock, queues the rest, and the aio is re-armed. A message over --max-message
 * is dropped by nng with its connection (NNG_OPT_RECVMAXSZ on each listener), never
 * decoded. Every other request gets exactly one reply.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include <nng/protocol/reqrep0/rep.h>

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
        nng_ctx_recv(c->ctx, c->aio);
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

int opd_transport_start(opd_daemon *d, op_err *err)
{
    int rv = nng_rep0_open(&d->sock);
    if (rv != 0)
        return op_err_set(err, OP_EIO, "nng_rep0_open: %s", nng_strerror(rv));
    nng_socket_set_size(d->sock, NNG_OPT_RECVMAXSZ, d->cfg.max_message);
    for (int i = 0; i < d->cfg.nlisten; i++)
        if (listen_one(d, d->cfg.listen[i], err))
            return err->status;
    d->calls = calloc((size_t)d->cfg.contexts, sizeof *d->calls);
    if (!d->calls)
        return op_err_set(err, OP_ENOMEM, "out of memory for %d contexts", d->cfg.contexts);
    for (int i = 0; i < d->cfg.contexts; i++) {
        opd_call *c = &d->calls[i];
        c->d = d;
        if ((rv = nng_ctx_open(&c->ctx, d->sock)) != 0 ||
            (rv = nng_aio_alloc(&c->aio, call_cb, c)) != 0)
            return op_err_set(err, OP_EIO, "nng context %d: %s", i, nng_strerror(rv));
        d->ncalls = i + 1;
        c->state = OPD_CALL_RECV;
        nng_ctx_recv(c->ctx, c->aio);
    }
    return 0;
}

void opd_transport_stop(opd_daemon *d)
{
    nng_close(d->sock);
    for (int i = 0; i < d->ncalls; i++) {
        nng_aio_stop(d->calls[i].aio);
        nng_aio_free(d->calls[i].aio);
        if (d->calls[i].in)
            nng_msg_free(d->calls[i].in);
    }
    free(d->calls);
    d->calls = NULL;
    d->ncalls = 0;
}
