/*
 * onepathd transport (protocol §1): one nng REP0 socket listening on every --listen
 * URL, --contexts nng contexts, each an aio state machine
 *
 *   RECV --message--> WORK (answered here, or queued to the request pool; may park)
 *        --reply--> SEND --> RECV
 *
 * nng callbacks never wait for a build or the disk: they answer reads that need only a
 * level's lock (dispatch.c decides), queue the rest, and re-arm the aio. A message over
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

/* Longest log line written in one piece; a longer one (a long error message) is
 * written in parts, still under the lock. */
#define OPD_LOG_LINE 512

void opd_log(opd_daemon *d, const char *fmt, ...)
{
    /* The line is formatted here, outside the lock, and written with one write (an
     * unbuffered stderr would otherwise take one per part). */
    char line[OPD_LOG_LINE];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%03ldZ ", ts.tv_nsec / 1000000);
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int m = vsnprintf(line + n, sizeof line - n, fmt, ap);
    int whole = m >= 0 && (size_t)m + 1 < sizeof line - n;
    pthread_mutex_lock(&d->log_mu);
    FILE *f = d->log ? d->log : stderr;
    if (whole) {
        line[n + (size_t)m] = '\n';
        fwrite(line, 1, n + (size_t)m + 1, f);
    } else {
        fwrite(line, 1, n, f);
        vfprintf(f, fmt, ap2);
        fputc('\n', f);
    }
    fflush(f);
    pthread_mutex_unlock(&d->log_mu);
    va_end(ap2);
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

/* msgpack write callback: appends to the reply message, growing it by doubling. */
static int msg_write(void *data, const char *buf, size_t len)
{
    nng_msg *m = data;
    if (!m)
        return -1;
    size_t need = nng_msg_len(m) + len, cap = nng_msg_capacity(m);
    if (need > cap && nng_msg_reserve(m, need > 2 * cap ? need : 2 * cap) != 0)
        return -1;
    return nng_msg_append(m, buf, len) != 0 ? -1 : 0;
}

nng_msg *opd_reply_begin(msgpack_packer *pk, size_t reserve)
{
    nng_msg *m = NULL;
    if (nng_msg_alloc(&m, 0) != 0 || nng_msg_reserve(m, reserve) != 0) {
        if (m)
            nng_msg_free(m);
        m = NULL;
    }
    msgpack_packer_init(pk, m, msg_write);
    return m;
}

int opd_reply_reserve(msgpack_packer *pk, size_t more)
{
    nng_msg *m = pk->data;
    return m && nng_msg_reserve(m, nng_msg_len(m) + more) == 0 ? 0 : -1;
}

void opd_call_error(opd_call *c, op_status code, const char *msg)
{
    msgpack_packer pk;
    nng_msg *m = opd_reply_begin(&pk, 256);
    if (m && op_rpc_reply_error(&pk, c->parsed ? &c->req : NULL, code, msg) != 0) {
        nng_msg_free(m);
        m = NULL;
    }
    opd_call_reply(c, m, 0, op_status_name(code));
}

/* What is left of a call once its reply is sent: the request's memory, freed, and the
 * figures of its log line (a call belongs to its next request as soon as the send
 * starts, so they are taken before). */
typedef struct call_end {
    opd_daemon *d;
    opd_method method;
    char level[65];
    uint64_t us;
    int ok, parsed;
    const char *err_name;
    op_rpc_request req;
    nng_msg *in;
} call_end;

static void end_take(opd_call *c, int ok, const char *err_name, call_end *e)
{
    e->d = c->d;
    e->method = c->method;
    memcpy(e->level, c->level, sizeof e->level);
    e->us = (opd_now_ns() - c->t0_ns) / 1000;
    e->ok = ok;
    e->err_name = err_name;
    e->parsed = c->parsed;
    if (c->parsed)
        e->req = c->req; /* a shallow copy: the unpacked zone moves to e */
    e->in = c->in;
    c->parsed = 0;
    c->in = NULL;
}

/* Frees the request and logs it, after the reply left: the log write (a syscall) is not
 * in the client's wait. */
static void end_finish(call_end *e)
{
    if (e->parsed)
        op_rpc_request_fini(&e->req);
    nng_msg_free(e->in);
    opd_stats_request(&e->d->stats, e->method, e->ok, e->us);
    const char *m = e->method != OPD_M_UNKNOWN ? opd_method_names[e->method] : "unknown";
    opd_log(e->d, "%s level=%s ms=%.3f %s", m, e->level[0] ? e->level : "-", (double)e->us / 1000.0,
            e->ok ? "ok" : e->err_name);
}

void opd_call_reply(opd_call *c, nng_msg *msg, int ok, const char *err_name)
{
    opd_daemon *d = c->d;
    call_end e;
    end_take(c, ok, err_name, &e);
    /* nng may finish the send, and call_cb release the call, before nng_ctx_send has
     * returned here: this thread holds the drain itself until it is out of nng and has
     * logged, or the teardown would close the socket and free the aio under it. */
    atomic_fetch_add(&d->inflight, 1);
    if (!msg) {
        /* No memory for the reply: the client's request times out and is resent. */
        c->state = S_RECV;
        nng_ctx_recv(c->ctx, c->aio);
        atomic_fetch_sub(&d->inflight, 1);
    } else {
        c->state = S_SEND;
        nng_aio_set_msg(c->aio, msg);
        nng_ctx_send(c->ctx, c->aio);
    }
    end_finish(&e);
    atomic_fetch_sub(&d->inflight, 1);
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
    c->state = S_WORK;
    c->parsed = 0;
    c->method = OPD_M_UNKNOWN;
    c->level[0] = '\0';
    c->deadline_ns = 0;
    c->next_wait = NULL;
    c->woken = 0;
    c->t0_ns = opd_now_ns();
    atomic_fetch_add(&c->d->inflight, 1);
    opd_dispatch_received(c);
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
