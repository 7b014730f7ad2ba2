/*
 * onepathd route: from a received message to a reply. A request is decoded once
 * (the bounded pre-scan and strict parse of proto/), refused while the daemon drains,
 * and its method runs either right here on nng's callback thread (small reads: they
 * take a level's lock for microseconds and never wait for a build) or on the request
 * pool (edits, which prepare levels and fsync, and messages over 64 KiB). A method that
 * must wait parks the call's waiter; the wake-up below is how every parked call comes
 * back: run again here (by the build worker that built its tile) or on the request pool.
 */
#include <stddef.h>
#include <string.h>

#include "daemon.h"

/* Requests up to this size are decoded on nng's callback thread (reads are a few
 * dozen bytes); larger ones (mesh uploads) on a request thread. */
#define OPD_INLINE_MAX_BYTES ((size_t)64 << 10)
/* First capacity of a reply message; tile replies reserve their blobs' size. */
#define OPD_REPLY_RESERVE 512

static const opd_method_fn methods[OPD_M_COUNT] = {
    [OPD_M_PING] = opd_m_ping,
    [OPD_M_LEVEL_PUT] = opd_m_level_put,
    [OPD_M_LEVEL_DROP] = opd_m_level_drop,
    [OPD_M_LEVEL_LIST] = opd_m_level_list,
    [OPD_M_LEVEL_INFO] = opd_m_level_info,
    [OPD_M_MESH_PUT] = opd_m_mesh_put,
    [OPD_M_MESH_DROP] = opd_m_mesh_drop,
    [OPD_M_TILE_GET] = opd_m_tile_get,
    [OPD_M_TILE_RANGE] = opd_m_tile_range,
    [OPD_M_LEVEL_BAKE] = opd_m_level_bake,
    [OPD_M_CHANGES_SINCE] = opd_m_changes_since,
    [OPD_M_STATS] = opd_m_stats,
    [OPD_M_PATH] = opd_m_path,
    [OPD_M_VOLUME_PUT] = opd_m_volume_put,
    [OPD_M_VOLUME_DROP] = opd_m_volume_drop,
};

/* A request of the REP socket that begins with the key "id": one whose first four bytes
 * (a map's head, "v", 1) nng took for a hop, because its client's nng 1.5.2 REQ ids went
 * past 0xffffffff (protocol §1.8). Refused as any malformed request (it is not run); the
 * log line and the message name the cause. */
static op_status cut_by_wrap(opd_call *c, size_t len, op_err *err)
{
    opd_log(c->d, "OP-REQ-ID-WRAP a request without its first 4 bytes (its client's nng REQ "
                  "ids went past 0xffffffff, protocol §1.8): refused, not run");
    return op_err_set(err, OP_EPROTO,
                      "request without its first 4 bytes (%zu left, starting with \"id\"): the "
                      "client's nng REQ ids went past 0xffffffff (nng 1.5.2, protocol §1.8); "
                      "send it again on a fresh socket",
                      len);
}

static op_status parse(opd_call *c, op_err *err)
{
    size_t len = nng_msg_len(c->in);
    const uint8_t *body = nng_msg_body(c->in);
    op_status st = op_rpc_request_parse(body, len, &c->d->limits, &c->req, err);
    c->parsed = 1;
    c->method = OPD_M_UNKNOWN;
    static const uint8_t id_key[3] = {0xa2, 'i', 'd'};
    if (st != OP_OK && !c->ops && len >= 3 && !memcmp(body, id_key, 3))
        return cut_by_wrap(c, len, err);
    if (st != OP_OK)
        return st;
    /* Before the method is looked at: without the token a client learns nothing but that
     * it needs one (protocol.md §2.7). */
    const opd_config *cfg = &c->d->cfg;
    if (cfg->token_len) {
        if (!c->req.has_token)
            return op_err_set(err, OP_EPERM,
                              "this onepathd wants a 'token' in every request (its --token-file)");
        if (!op_token_equal(cfg->token, cfg->token_len, c->req.token, c->req.token_len))
            return op_err_set(err, OP_EPERM, "wrong token");
    }
    for (int m = 0; m < OPD_M_UNKNOWN; m++)
        if (!strcmp(c->req.method, opd_method_names[m]))
            c->method = (opd_method)m;
    if (c->method == OPD_M_UNKNOWN)
        return op_err_set(err, OP_EPROTO, "unknown method '%s'", c->req.method);
    if (c->allow && !(c->allow & (1u << c->method)))
        return op_err_set(err, OP_EINVAL, "method '%s' is not served here (docs/spec/http.md §3)",
                          c->req.method);
    return OP_OK;
}

/* A new request: parsed, and refused while the daemon drains. */
static op_status admit(opd_call *c, op_err *err)
{
    op_status st = parse(c, err);
    if (st == OP_OK && atomic_load(&c->d->stopping))
        st = op_err_set(err, OP_EBUSY, "onepathd is shutting down");
    return st;
}

/* Runs the method of a parsed request (st: the parse result) and replies, unless the
 * call parks. The reply is packed into the message that is sent. A call that parks
 * keeps that message with the reply's head packed (c->held, set before the method runs:
 * once parked, c may be run again on another thread at once), and the run after its
 * wake-up packs its result after that head. */
static void answer(opd_call *c, op_status st, op_err *err)
{
    opd_daemon *d = c->d;
    int rep = c->ops == NULL; /* read now: once parked, c may be answered and gone */
    int again = c->parked;    /* woken from a park: still counted as parked */
    opd_reply r;
    nng_msg *msg = c->held;
    c->held = NULL;
    if (msg) {
        nng_msg_realloc(msg, c->held_len); /* the head alone: shrinking never fails */
        opd_reply_resume(&r, msg);
    } else if ((msg = opd_reply_begin(&r, OPD_REPLY_RESERVE)) != NULL && st == OP_OK) {
        if (op_rpc_reply_ok(&r.pk, &c->req) != 0 || opd_reply_flush(&r) != 0)
            st = op_err_set(err, OP_ENOMEM, "reply: out of memory");
    }
    if (st == OP_OK) {
        if (msg) { /* the method may park c: then c, and this message, are not ours */
            c->held = msg;
            c->held_len = nng_msg_len(msg);
        }
        st = methods[c->method](c, c->req.params, &r.pk, err);
        if (st == OPD_PARKED) {
            /* c may already be answered: not touched again. A call parked again after a
             * wake-up is still out of the count (a waiting tile.range page parks once a
             * tile): no other context is armed for it. */
            if (rep && !again)
                opd_transport_parked(d);
            return; /* run again when its tile lands or its poll ends */
        }
        c->held = NULL;
    }
    if (again)
        opd_transport_unparked(c); /* answered now: it counts as working until its reply */
    if (st != OP_OK && msg) {
        opd_reply_clear(&r);
        if (op_rpc_reply_error(&r.pk, c->parsed ? &c->req : NULL, st, err->msg) != 0) {
            nng_msg_free(msg);
            r.m = NULL;
        }
    }
    opd_call_reply(c, opd_reply_end(&r), st == OP_OK, st == OP_OK ? NULL : op_status_name(st));
}

/* Runs c on this thread: a call admitted on nng's thread, or parked, is already parsed
 * (a parked one was accepted before the drain began). */
static void run(opd_call *c)
{
    op_err err;
    op_err_clear(&err);
    op_status st = c->parsed ? OP_OK : admit(c, &err);
    answer(c, st, &err);
}

static void run_job(void *arg, op_arena *out, op_arena *scratch)
{
    (void)out;
    (void)scratch;
    run(arg);
}

static void queue(opd_call *c)
{
    if (opd_pool_submit(c->d->requests, run_job, c) != 0)
        opd_call_error(c, OP_EBUSY, "onepathd is shutting down");
}

/* The completion of every parked call. */
static void on_wake(opd_waiter *w, opd_wake_how how)
{
    opd_call *c = (opd_call *)((char *)w - offsetof(opd_call, wait));
    c->parked = 1; /* answer() counts it back in when it is answered, not parked again */
    if (how == OPD_WAKE_HERE) {
        c->woken = 1; /* should its tile be gone again, no nested build on this stack */
        run(c);
    } else {
        queue(c);
    }
}

/* Edits prepare a level (CPU) and persist it (fsync), a path query may build a mesh:
 * never on an nng thread. */
static int answers_inline(opd_method m)
{
    return m != OPD_M_LEVEL_PUT && m != OPD_M_LEVEL_DROP && m != OPD_M_MESH_PUT &&
           m != OPD_M_MESH_DROP && m != OPD_M_VOLUME_PUT && m != OPD_M_VOLUME_DROP &&
           m != OPD_M_PATH; /* path: may stitch a whole mesh */
}

void opd_route_received(opd_call *c)
{
    op_err err;
    op_err_clear(&err);
    c->wait.wake = on_wake;
    if (nng_msg_len(c->in) <= OPD_INLINE_MAX_BYTES) {
        op_status st = admit(c, &err);
        if (st != OP_OK || answers_inline(c->method)) {
            answer(c, st, &err);
            return;
        }
    }
    queue(c);
}
