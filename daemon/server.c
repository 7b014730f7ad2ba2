/*
 * onepathd transport (protocol §1): one nng REP0 socket listening on every --listen
 * URL, --contexts nng contexts, each an aio state machine
 *
 *   RECV --message--> WORK (queued to the request pool; may park) --reply--> SEND --> RECV
 *
 * nng callbacks never block: they only queue work and re-arm the aio. A message over
 * --max-message is dropped by nng with its connection (NNG_OPT_RECVMAXSZ on each
 * listener), never decoded. Every other request gets exactly one reply.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "daemon.h"
#include <nng/protocol/reqrep0/rep.h>

enum { S_RECV, S_WORK, S_SEND };

uint64_t opd_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void opd_daemon_wake(opd_daemon *d)
{
    if (d->wake)
        uv_async_send(d->wake);
}

void opd_log(opd_daemon *d, const char *fmt, ...)
{
    char stamp[40];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(stamp + n, sizeof stamp - n, ".%03ldZ", ts.tv_nsec / 1000000);
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&d->log_mu);
    FILE *f = d->log ? d->log : stderr;
    fprintf(f, "%s ", stamp);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    fflush(f);
    pthread_mutex_unlock(&d->log_mu);
    va_end(ap);
}

static void job_dispatch(void *arg, op_arena *out, op_arena *scratch)
{
    (void)out;
    (void)scratch;
    opd_dispatch(arg);
}

void opd_call_redispatch(opd_call *c)
{
    if (opd_pool_submit(c->d->requests, job_dispatch, c) != 0)
        opd_call_error(c, OP_EBUSY, "onepathd is shutting down");
}

void opd_call_error(opd_call *c, op_status code, const char *msg)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    op_rpc_reply_error(&pk, c->parsed ? &c->req : NULL, code, msg);
    opd_call_reply(c, &sb, 0, op_status_name(code));
    msgpack_sbuffer_destroy(&sb);
}

static void log_call(opd_call *c, int ok, const char *err_name)
{
    opd_daemon *d = c->d;
    uint64_t us = (opd_now_ns() - c->t0_ns) / 1000;
    opd_stats_request(&d->stats, c->method, ok, us);
    const char *m = c->method != OPD_M_UNKNOWN ? opd_method_names[c->method] : "unknown";
    opd_log(d, "%s level=%s ms=%.3f %s", m, c->level[0] ? c->level : "-", (double)us / 1000.0,
            ok ? "ok" : err_name);
}

void opd_call_reply(opd_call *c, const msgpack_sbuffer *sb, int ok, const char *err_name)
{
    log_call(c, ok, err_name);
    if (c->parsed)
        op_rpc_request_fini(&c->req);
    c->parsed = 0;
    nng_msg_free(c->in);
    c->in = NULL;
    nng_msg *msg = NULL;
    if (nng_msg_alloc(&msg, 0) != 0 || nng_msg_append(msg, sb->data, sb->size) != 0) {
        /* No memory for the reply: the client's request times out and is resent. */
        nng_msg_free(msg);
        atomic_fetch_sub(&c->d->inflight, 1);
        c->state = S_RECV;
        nng_ctx_recv(c->ctx, c->aio);
        return;
    }
    c->state = S_SEND;
    nng_aio_set_msg(c->aio, msg);
    nng_ctx_send(c->ctx, c->aio);
}

static void on_recv(opd_call *c, int rv)
{
    if (rv == NNG_ECLOSED)
        return;
    if (rv != 0) {
        nng_ctx_recv(c->ctx, c->aio);
        return;
    }
    c->in = nng_aio_get_msg(c->aio);
    nng_aio_set_msg(c->aio, NULL);
    c->state = S_WORK;
    c->parsed = 0;
    c->method = OPD_M_UNKNOWN;
    c->level[0] = '\0';
    c->deadline_ns = 0;
    c->next_wait = NULL;
    c->t0_ns = opd_now_ns();
    atomic_fetch_add(&c->d->inflight, 1);
    if (opd_pool_submit(c->d->requests, job_dispatch, c) != 0)
        opd_call_error(c, OP_EBUSY, "onepathd is shutting down");
}

static void call_cb(void *arg)
{
    opd_call *c = arg;
    int rv = nng_aio_result(c->aio);
    if (c->state == S_RECV) {
        on_recv(c, rv);
        return;
    }
    /* S_SEND done: on failure the message is still ours. */
    if (rv != 0)
        nng_msg_free(nng_aio_get_msg(c->aio));
    nng_aio_set_msg(c->aio, NULL);
    c->state = S_RECV;
    /* The drain timer polls inflight: no wake here, the loop may be closing. */
    atomic_fetch_sub(&c->d->inflight, 1);
    if (rv != NNG_ECLOSED)
        nng_ctx_recv(c->ctx, c->aio);
}

static int listen_one(opd_daemon *d, const char *url, op_err *err)
{
    nng_listener l;
    int rv = nng_listener_create(&l, d->sock, url);
    if (rv == 0)
        rv = nng_listener_set_size(l, NNG_OPT_RECVMAXSZ, d->cfg.max_message);
    if (rv == 0)
        rv = nng_listener_start(l, 0);
    if (rv != 0)
        return op_err_set(err, OP_EIO, "listen %s: %s", url, nng_strerror(rv));
    return 0;
}

int opd_server_start(opd_daemon *d, op_err *err)
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
        c->state = S_RECV;
        nng_ctx_recv(c->ctx, c->aio);
    }
    return 0;
}

void opd_server_stop(opd_daemon *d)
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
