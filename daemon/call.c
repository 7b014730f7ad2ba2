/*
 * onepathd calls: how a request in flight ends. Its reply is packed straight into the
 * nng message that is sent (no copy of a blob), sent on the call's own context (the
 * aio state machine of transport.c then re-arms the receive), and the request is logged
 * and counted once the reply has left, so the log write is not in the client's wait.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

/* Appends len bytes to m, growing it by doubling (nng grows a message to the size asked,
 * so growing by each write would copy all that was packed before it). */
static int msg_append(nng_msg *m, const void *buf, size_t len)
{
    size_t need = nng_msg_len(m) + len, cap = nng_msg_capacity(m);
    if (need > cap && nng_msg_reserve(m, need > 2 * cap ? need : 2 * cap) != 0)
        return -1;
    return nng_msg_append(m, buf, len) != 0 ? -1 : 0;
}

int opd_reply_flush(opd_reply *r)
{
    if (r->failed || !r->m)
        return -1;
    if (r->n && msg_append(r->m, r->buf, r->n) != 0) {
        r->failed = 1;
        return -1;
    }
    r->n = 0;
    return 0;
}

/* msgpack write callback: a small write is gathered, a large one appended after what is
 * gathered. */
static int msg_write(void *data, const char *buf, size_t len)
{
    opd_reply *r = data;
    if (r->failed || !r->m)
        return -1;
    if (len <= sizeof r->buf - r->n) {
        memcpy(r->buf + r->n, buf, len);
        r->n += len;
        return 0;
    }
    if (opd_reply_flush(r) != 0)
        return -1;
    if (len < sizeof r->buf) {
        memcpy(r->buf, buf, len);
        r->n = len;
        return 0;
    }
    if (msg_append(r->m, buf, len) != 0) {
        r->failed = 1;
        return -1;
    }
    return 0;
}

nng_msg *opd_reply_begin(opd_reply *r, size_t reserve)
{
    nng_msg *m = NULL;
    if (nng_msg_alloc(&m, 0) != 0 || nng_msg_reserve(m, reserve) != 0) {
        if (m)
            nng_msg_free(m);
        m = NULL;
    }
    opd_reply_resume(r, m);
    return m;
}

void opd_reply_resume(opd_reply *r, nng_msg *m)
{
    r->m = m;
    r->n = 0;
    r->failed = 0;
    msgpack_packer_init(&r->pk, r, msg_write);
}

int opd_reply_reserve(msgpack_packer *pk, size_t more)
{
    opd_reply *r = pk->data;
    if (opd_reply_flush(r) != 0 || nng_msg_reserve(r->m, nng_msg_len(r->m) + more) != 0)
        return -1;
    return 0;
}

void opd_reply_clear(opd_reply *r)
{
    if (r->m)
        nng_msg_clear(r->m);
    r->n = 0;
    r->failed = 0;
}

nng_msg *opd_reply_end(opd_reply *r)
{
    if (r->m && opd_reply_flush(r) != 0) {
        nng_msg_free(r->m);
        r->m = NULL;
    }
    return r->m;
}

void opd_call_error(opd_call *c, op_status code, const char *msg)
{
    opd_reply r;
    nng_msg *m = opd_reply_begin(&r, 256);
    if (m && op_rpc_reply_error(&r.pk, c->parsed ? &c->req : NULL, code, msg) != 0) {
        nng_msg_free(m);
        r.m = NULL;
    }
    opd_call_reply(c, opd_reply_end(&r), 0, op_status_name(code));
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
    const char *via;
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
    e->via = c->ops ? "http" : NULL;
    e->parsed = c->parsed;
    if (c->parsed)
        e->req = c->req; /* a shallow copy: the unpacked zone moves to e */
    e->in = c->in;
    c->parsed = 0;
    c->in = NULL;
    if (c->held) { /* a parked call answered without its method (route.c's queue) */
        nng_msg_free(c->held);
        c->held = NULL;
    }
    /* Counted before the reply goes out, so a client that has its reply sees the request
     * in the next metrics scrape or level.stats (the log line, I/O, waits until after). */
    opd_stats_request(&e->d->stats, e->method, e->ok, e->us);
}

static void end_finish(call_end *e)
{
    if (e->parsed)
        op_rpc_request_fini(&e->req);
    nng_msg_free(e->in);
    const char *m = e->method != OPD_M_UNKNOWN ? opd_method_names[e->method] : "unknown";
    opd_log_request(e->d, m, e->level[0] ? e->level : "-", (double)e->us / 1000.0,
                    e->ok ? "ok" : e->err_name, e->via);
}

void opd_call_reply(opd_call *c, nng_msg *msg, int ok, const char *err_name)
{
    opd_daemon *d = c->d;
    call_end e;
    end_take(c, ok, err_name, &e);
    if (c->ops) {
        /* Another transport's call (http.c): it sends and frees the call itself; the
         * drain count it took when the request came is released once it is logged. */
        c->ops->reply(c, msg, ok, err_name);
        end_finish(&e);
        atomic_fetch_sub(&d->inflight, 1);
        return;
    }
    /* nng may finish the send, and the aio callback release the call, before
     * nng_ctx_send has returned here: this thread holds the drain itself until it is
     * out of nng and has logged, or the teardown would close the socket and free the
     * aio under it. */
    atomic_fetch_add(&d->inflight, 1);
    if (!msg) {
        /* No memory for the reply: the client's request times out and is resent. */
        c->state = OPD_CALL_RECV;
        nng_ctx_recv(c->ctx, c->aio);
        atomic_fetch_sub(&d->inflight, 1);
    } else {
        c->state = OPD_CALL_SEND;
        nng_aio_set_msg(c->aio, msg);
        nng_ctx_send(c->ctx, c->aio);
    }
    end_finish(&e);
    atomic_fetch_sub(&d->inflight, 1);
}
