/*
 * libonepath-client transport: one nng REQ0 socket per client, one context per call in
 * flight (so calls from several threads run at once), a deadline per call covering send
 * and receive. The client keeps one context and its aio open for the next call (taken by
 * whichever call finds it free; a call that finds it taken opens one of its own), so a
 * client making one call at a time opens no context per call. Replies are scanned with
 * the bounded pre-scan before they are unpacked: the client trusts its daemon no more
 * than the daemon trusts its clients.
 *
 * nng 1.5.2's REQ numbers a socket's requests from a random start in [2^31, 2^32) and, past
 * 0xffffffff, goes on from 0 (its id counter is 32 bits and its wrap test can never hold):
 * ids without the high bit, which a REP reads as a hop of a device in between. The REP then
 * takes the request's first four bytes as the end of its backtrace, the daemon refuses the
 * rest as malformed (it starts inside the map: never run), and the reply comes back behind
 * those four bytes, which no longer decodes ("msgpack: message ends at byte 106 inside a
 * value"), and so for every request of the socket from the wrap on: a socket meets it with
 * a probability of about (its requests) / 2^31. nng does not show a request's id, but such
 * a reply is plain to see: it starts with the request's first four bytes and then a reply's
 * head. The exchange is then sent again on a fresh socket (a new random start) that takes
 * the old one's place; the old one stays open (calls may still be in flight on it) until
 * op_client_close (protocol §1.8).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "client_internal.h"
#include "onepath/mpscan.h"
#include "onepath/nng_close.h"
#include "onepath/token.h"

/* Largest reply accepted (a tile.range reply is at most its max_bytes plus overhead). */
#define OP_CLIENT_MAX_REPLY ((size_t)1 << 30)

struct op_client {
    /* The socket new calls use and its generation; earlier ones (each replaced after a
     * request past nng's request-id wrap) stay open in retired until op_client_close.
     * Under sock_mu. */
    pthread_mutex_t sock_mu;
    nng_socket sock;
    unsigned gen;
    nng_socket *retired;
    int nretired;
    atomic_uint_fast64_t next_id;
    char *url; /* named in transport errors: in a fleet, which member failed */
    /* The daemon's --max-message as its ping said (0: not asked yet, or to ask again). */
    atomic_uint_fast64_t max_message;
    int name_member;  /* a fleet member's: every error names url (op_fleet_member_open) */
    size_t token_len; /* 0: requests carry no token */
    char token[OP_TOKEN_MAX + 1];
    /* The kept context: used by the call that sets kept_busy from 0 to 1, opened by the
     * first such call (kept_open), closed after a call on it failed (a reply that comes
     * late then has no context to reach). */
    atomic_int kept_busy;
    int kept_open;
    unsigned kept_gen; /* the generation of the socket the kept context is on */
    nng_ctx kept_ctx;
    nng_aio *kept_aio;
    /* The resend time last set on the kept context (0: none yet): set again only when a
     * call's timeout differs (a call at a time holds the kept context). */
    int kept_resend_ms;
};

/* The context and aio of one call: the client's kept ones, or its own. */
typedef struct call_chan {
    nng_ctx ctx;
    nng_aio *aio;
    int kept;
    unsigned gen; /* of the socket ctx is on */
} call_chan;

/* How long op_client_close waits for nng_close before leaving it to its own thread
 * (onepath/nng_close.h): a healthy close takes milliseconds, even under ASan on a loaded
 * machine. */
#define OP_CLIENT_CLOSE_WAIT_MS 1000

void op_client_name_member(op_client *c)
{
    c->name_member = 1;
}

op_status op_client_named(const op_client *c, op_status st, op_err *err)
{
    /* Transport errors name the URL already; a daemon's error reply and a malformed
     * reply do not, and with several members the reader must know which one said it. */
    if (st == OP_OK || !c->name_member || !err || strstr(err->msg, c->url))
        return st;
    char msg[OP_ERR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return op_err_set(err, st, "%s: %s", c->url, msg);
}

/* A REQ socket dialing url, with the client's options: 0, or nng's error. */
static int socket_open(const char *url, nng_socket *out)
{
    int rv = nng_req0_open(out);
    if (rv != 0)
        return rv;
    rv = nng_socket_set_size(*out, NNG_OPT_RECVMAXSZ, OP_CLIENT_MAX_REPLY);
    if (rv == 0) {
        nng_socket_set_ms(*out, NNG_OPT_RECONNMINT, 20);
        nng_socket_set_ms(*out, NNG_OPT_RECONNMAXT, 500);
        rv = nng_dial(*out, url, NULL, NNG_FLAG_NONBLOCK);
    }
    if (rv != 0)
        op_nng_close_bounded(*out, OP_CLIENT_CLOSE_WAIT_MS);
    return rv;
}

op_status op_client_open(const char *url, op_client **out, op_err *err)
{
    *out = NULL;
    op_client *c = calloc(1, sizeof *c);
    if (!c)
        return op_err_set(err, OP_ENOMEM, "client: out of memory");
    atomic_init(&c->next_id, 1);
    atomic_init(&c->max_message, 0);
    atomic_init(&c->kept_busy, 0);
    if (!(c->url = strdup(url))) {
        free(c);
        return op_err_set(err, OP_ENOMEM, "client: out of memory");
    }
    int rv = socket_open(url, &c->sock);
    if (rv != 0) {
        free(c->url);
        free(c);
        return op_err_set(err, rv == NNG_EADDRINVAL || rv == NNG_ENOTSUP ? OP_EINVAL : OP_EIO,
                          "client: dial %s: %s", url, nng_strerror(rv));
    }
    pthread_mutex_init(&c->sock_mu, NULL);
    *out = c;
    return OP_OK;
}

/* Replaces the socket of generation gen (the one a call just used) by a fresh one, unless
 * another call did already; the old one is kept open for calls still on it. When no fresh
 * socket can be had, the old one stays. */
static void socket_renew(op_client *c, unsigned gen)
{
    pthread_mutex_lock(&c->sock_mu);
    nng_socket fresh;
    nng_socket *more;
    if (c->gen == gen &&
        (more = realloc(c->retired, sizeof *more * (size_t)(c->nretired + 1))) != NULL) {
        c->retired = more;
        if (socket_open(c->url, &fresh) == 0) {
            c->retired[c->nretired++] = c->sock;
            c->sock = fresh;
            c->gen++;
        }
    }
    pthread_mutex_unlock(&c->sock_mu);
}

void op_client_close(op_client *c)
{
    if (!c)
        return;
    if (c->kept_open) { /* no call in flight: the kept aio is idle */
        nng_ctx_close(c->kept_ctx);
        nng_aio_free(c->kept_aio);
    }
    op_nng_close_bounded(c->sock, OP_CLIENT_CLOSE_WAIT_MS);
    for (int i = 0; i < c->nretired; i++)
        op_nng_close_bounded(c->retired[i], OP_CLIENT_CLOSE_WAIT_MS);
    free(c->retired);
    pthread_mutex_destroy(&c->sock_mu);
    free(c->url);
    op_token_wipe(c->token, sizeof c->token);
    free(c);
}

op_status op_client_set_token(op_client *c, const char *token, size_t len, op_err *err)
{
    op_status st = op_token_check(token, len, "client", err);
    if (st != OP_OK)
        return st;
    memcpy(c->token, token, len);
    c->token[len] = '\0';
    c->token_len = len;
    return OP_OK;
}

op_status op_client_set_token_file(op_client *c, const char *path, op_err *err)
{
    char tok[OP_TOKEN_MAX + 1];
    size_t len;
    op_status st = op_token_read_file(path, tok, &len, err);
    if (st == OP_OK)
        st = op_client_set_token(c, tok, len, err);
    op_token_wipe(tok, sizeof tok);
    return st;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static op_status nng_status(const op_client *c, int rv, const char *what, op_err *err)
{
    op_status st = rv == NNG_ETIMEDOUT ? OP_ETIMEDOUT : rv == NNG_ENOMEM ? OP_ENOMEM : OP_EIO;
    return op_err_set(err, st, "client: %s: %s: %s", c->url, what, nng_strerror(rv));
}

/* nng's request id, in front of every request on the wire: the daemon's --max-message
 * counts it (protocol §1.3). */
#define OP_REQ_HEADER 4
/* The smallest --max-message a daemon takes: a request within it needs no check. */
#define OP_MIN_MAX_MESSAGE 1024

/* A request larger than the daemon's --max-message would be dropped with its connection,
 * unread, and resent on every reconnect until the timeout (protocol §1.3, §1.7): refused
 * here instead, OP_ELIMIT naming both sizes. The limit is asked once per client (a ping
 * within the call's own timeout), only for a request past the smallest limit a daemon
 * takes. OP_OK: send it (also when the daemon could not say); else the error to return. */
static op_status check_size(op_client *c, size_t len, int64_t deadline, op_err *err)
{
    uint64_t wire = (uint64_t)len + OP_REQ_HEADER;
    if (wire <= OP_MIN_MAX_MESSAGE)
        return OP_OK;
    uint64_t lim = atomic_load(&c->max_message);
    if (lim == 0) {
        int64_t left = deadline - now_ms();
        op_client_ping_result p;
        op_err perr;
        op_status st = op_client_ping(c, left > 0 ? (int)left : 1, &p, &perr);
        if (st == OP_ETIMEDOUT) {
            *err = perr;
            return st;
        }
        if (st == OP_OK && p.max_message >= OP_MIN_MAX_MESSAGE)
            atomic_store(&c->max_message, lim = p.max_message);
    }
    if (lim && wire > lim)
        return op_err_set(err, OP_ELIMIT,
                          "client: %s: the request is %" PRIu64
                          " bytes (with nng's 4-byte header), more than the daemon's "
                          "--max-message of %" PRIu64 " bytes: not sent (the daemon would "
                          "drop it unread)",
                          c->url, wire, lim);
    return OP_OK;
}

/* The kept context when no other call holds it (opened on first use), else one of the
 * call's own. 0, or nng's error. */
static int chan_take(op_client *c, call_chan *ch)
{
    pthread_mutex_lock(&c->sock_mu);
    nng_socket sock = c->sock;
    ch->gen = c->gen;
    pthread_mutex_unlock(&c->sock_mu);
    ch->kept = !atomic_exchange(&c->kept_busy, 1);
    if (ch->kept && c->kept_open && c->kept_gen != ch->gen) {
        /* On a socket replaced since: new calls go to the fresh one. */
        nng_aio_free(c->kept_aio);
        nng_ctx_close(c->kept_ctx);
        c->kept_open = 0;
    }
    if (ch->kept && !c->kept_open) {
        if (nng_ctx_open(&c->kept_ctx, sock) == 0) {
            if (nng_aio_alloc(&c->kept_aio, NULL, NULL) == 0) {
                c->kept_open = 1;
                c->kept_gen = ch->gen;
                c->kept_resend_ms = 0;
            } else {
                nng_ctx_close(c->kept_ctx);
            }
        }
        if (!c->kept_open) { /* try again on a later call; this one opens its own */
            atomic_store(&c->kept_busy, 0);
            ch->kept = 0;
        }
    }
    if (ch->kept) {
        ch->ctx = c->kept_ctx;
        ch->aio = c->kept_aio;
        return 0;
    }
    int rv = nng_ctx_open(&ch->ctx, sock);
    if (rv != 0)
        return rv;
    if ((rv = nng_aio_alloc(&ch->aio, NULL, NULL)) != 0)
        nng_ctx_close(ch->ctx);
    return rv;
}

/* Ends a call's use of ch; ok 0: its exchange failed, and a kept context is closed too. */
static void chan_give(op_client *c, call_chan *ch, int ok)
{
    if (ch->kept && ok) {
        atomic_store(&c->kept_busy, 0);
        return;
    }
    nng_aio_free(ch->aio);
    nng_ctx_close(ch->ctx);
    if (ch->kept) {
        c->kept_open = 0;
        atomic_store(&c->kept_busy, 0);
    }
}

/* Whether reply is what a REP sends back for a request whose id was past nng's wrap: the
 * request's first four bytes (taken for a hop), then the head every onepathd reply starts
 * with (a map of 4, "v", the protocol version), where a reply of its own has "id". */
static int past_wrap(const void *req, size_t len, nng_msg *reply)
{
    static const uint8_t head[4] = {0x84, 0xa1, 'v', OP_PROTOCOL_VERSION};
    const uint8_t *b = nng_msg_body(reply);
    return len >= 4 && nng_msg_len(reply) >= 8 && !memcmp(b, req, 4) && !memcmp(b + 4, head, 4);
}

/* One exchange on the current socket: the reply message in *reply (the caller frees it) and
 * the socket's generation in *gen. */
static op_status exchange(op_client *c, const void *req, size_t len, int timeout_ms,
                          nng_msg **reply, unsigned *gen, op_err *err);

/* One exchange: the reply message in *reply (the caller frees it). An exchange whose id
 * was past nng's wrap (the daemon got the request without its first four bytes and refused
 * it unrun) is sent again, once, on a fresh socket, within the same timeout. */
static op_status call_msg(op_client *c, const void *req, size_t len, int timeout_ms,
                          nng_msg **reply, op_err *err)
{
    int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    for (int attempt = 0;; attempt++) {
        unsigned gen = 0;
        int left = attempt ? (int)(deadline - now_ms()) : timeout_ms;
        if (attempt && left <= 0)
            return op_err_set(err, OP_ETIMEDOUT,
                              "client: %s: timed out sending again past nng's request-id wrap",
                              c->url);
        op_status st = exchange(c, req, len, left, reply, &gen, err);
        if (st != OP_OK)
            return st;
        if (!past_wrap(req, len, *reply))
            return OP_OK;
        nng_msg_free(*reply);
        *reply = NULL;
        if (attempt > 0)
            return op_err_set(err, OP_EIO,
                              "client: %s: the request reached the daemon cut short again, on a "
                              "fresh socket (nng's request ids past 0xffffffff)",
                              c->url);
        socket_renew(c, gen);
    }
}

static op_status exchange(op_client *c, const void *req, size_t len, int timeout_ms,
                          nng_msg **reply, unsigned *gen, op_err *err)
{
    *reply = NULL;
    if (timeout_ms <= 0)
        return op_err_set(err, OP_EINVAL, "client: timeout %d ms must be > 0", timeout_ms);
    int64_t t0 = now_ms();
    op_status cst = check_size(c, len, t0 + timeout_ms, err);
    if (cst != OP_OK)
        return cst;
    if (now_ms() - t0 >= timeout_ms)
        return op_err_set(err, OP_ETIMEDOUT, "client: %s: timed out asking the daemon's limits",
                          c->url);
    timeout_ms -= (int)(now_ms() - t0);
    call_chan ch;
    nng_msg *msg = NULL;
    int rv = chan_take(c, &ch);
    if (rv != 0)
        return nng_status(c, rv, "context", err);
    *gen = ch.gen;
    /* Resend only when the connection drops: a long poll must not be sent twice. */
    if (!ch.kept || c->kept_resend_ms != timeout_ms) {
        nng_ctx_set_ms(ch.ctx, NNG_OPT_REQ_RESENDTIME, timeout_ms);
        if (ch.kept)
            c->kept_resend_ms = timeout_ms;
    }
    int64_t deadline = now_ms() + timeout_ms;
    if ((rv = nng_msg_alloc(&msg, 0)) != 0 || (rv = nng_msg_append(msg, req, len)) != 0) {
        nng_msg_free(msg);
        chan_give(c, &ch, 1); /* nothing was sent on it */
        return nng_status(c, rv, "request", err);
    }
    nng_aio_set_timeout(ch.aio, timeout_ms);
    nng_aio_set_msg(ch.aio, msg);
    nng_ctx_send(ch.ctx, ch.aio);
    nng_aio_wait(ch.aio);
    if ((rv = nng_aio_result(ch.aio)) != 0) {
        nng_msg_free(nng_aio_get_msg(ch.aio));
        nng_aio_set_msg(ch.aio, NULL);
        chan_give(c, &ch, 0);
        return nng_status(c, rv, "send", err);
    }
    int64_t left = deadline - now_ms();
    nng_aio_set_timeout(ch.aio, left > 0 ? (nng_duration)left : 1);
    nng_ctx_recv(ch.ctx, ch.aio);
    nng_aio_wait(ch.aio);
    rv = nng_aio_result(ch.aio);
    msg = rv == 0 ? nng_aio_get_msg(ch.aio) : NULL;
    nng_aio_set_msg(ch.aio, NULL);
    chan_give(c, &ch, rv == 0);
    if (rv != 0) {
        /* The daemon may have restarted with another --max-message: ask again next time. */
        if (len + OP_REQ_HEADER > OP_MIN_MAX_MESSAGE)
            atomic_store(&c->max_message, 0);
        return nng_status(c, rv, "receive", err);
    }
    *reply = msg;
    return OP_OK;
}

op_status op_client_call_raw(op_client *c, const void *req, size_t len, int timeout_ms,
                             uint8_t **reply, size_t *reply_len, op_err *err)
{
    *reply = NULL;
    *reply_len = 0;
    nng_msg *msg;
    op_status st = call_msg(c, req, len, timeout_ms, &msg, err);
    if (st != OP_OK)
        return st;
    size_t n = nng_msg_len(msg);
    *reply = malloc(n ? n : 1);
    if (!*reply) {
        nng_msg_free(msg);
        return op_err_set(err, OP_ENOMEM, "client: out of memory for a %zu-byte reply", n);
    }
    memcpy(*reply, nng_msg_body(msg), n);
    *reply_len = n;
    nng_msg_free(msg);
    return OP_OK;
}

/* ---- requests ---- */

void op_creq_begin(op_client *c, op_creq *q, const char *method, int nparams)
{
    msgpack_sbuffer_init(&q->sb);
    msgpack_packer_init(&q->pk, &q->sb, msgpack_sbuffer_write);
    msgpack_pack_map(&q->pk, c->token_len ? 5 : 4);
    op_rpc_pack_key(&q->pk, "v");
    msgpack_pack_unsigned_int(&q->pk, OP_PROTOCOL_VERSION);
    op_rpc_pack_key(&q->pk, "id");
    msgpack_pack_uint64(&q->pk, (uint64_t)atomic_fetch_add(&c->next_id, 1));
    op_rpc_pack_key(&q->pk, "method");
    op_rpc_pack_key(&q->pk, method);
    if (c->token_len) {
        op_rpc_pack_key(&q->pk, "token");
        msgpack_pack_str_with_body(&q->pk, c->token, c->token_len);
    }
    op_rpc_pack_key(&q->pk, "params");
    msgpack_pack_map(&q->pk, (size_t)nparams);
}

void op_creq_fini(op_creq *q)
{
    msgpack_sbuffer_destroy(&q->sb);
}

void op_creply_fini(op_creply *r)
{
    msgpack_unpacked_destroy(&r->un);
    if (r->msg)
        nng_msg_free(r->msg);
    r->msg = NULL;
    r->result = NULL;
}

/* Decodes the reply in place: its strings and blobs point into the message, kept until
 * op_creply_fini (no copy of a tile.range page). */
static op_status decode_reply(op_creply *r, op_err *err)
{
    const uint8_t *raw = nng_msg_body(r->msg);
    size_t len = nng_msg_len(r->msg);
    op_mp_limits lim;
    op_mp_limits_default(&lim);
    lim.max_bytes = OP_CLIENT_MAX_REPLY;
    op_status st = op_mp_scan(raw, len, &lim, err);
    if (st != OP_OK)
        return st;
    size_t off = 0;
    if (msgpack_unpack_next(&r->un, (const char *)raw, len, &off) != MSGPACK_UNPACK_SUCCESS ||
        off != len || r->un.data.type != MSGPACK_OBJECT_MAP)
        return op_err_set(err, OP_EPROTO, "client: the reply is not one msgpack map");
    const msgpack_object *top = &r->un.data;
    const msgpack_object *ok = op_rpc_get(top, "ok");
    if (!ok || ok->type != MSGPACK_OBJECT_BOOLEAN)
        return op_err_set(err, OP_EPROTO, "client: the reply has no 'ok'");
    if (ok->via.boolean) {
        r->result = op_rpc_get(top, "result");
        if (!r->result || r->result->type != MSGPACK_OBJECT_MAP)
            return op_err_set(err, OP_EPROTO, "client: the reply has no 'result' map");
        return OP_OK;
    }
    const msgpack_object *e = op_rpc_get(top, "error");
    const msgpack_object *code = e ? op_rpc_get(e, "code") : NULL;
    const msgpack_object *msg = e ? op_rpc_get(e, "message") : NULL;
    if (!code || code->type != MSGPACK_OBJECT_POSITIVE_INTEGER || code->via.u64 == 0 ||
        code->via.u64 > 1000)
        return op_err_set(err, OP_EPROTO, "client: the error reply has no code");
    int ml = msg && msg->type == MSGPACK_OBJECT_STR ? (int)msg->via.str.size : 0;
    return op_err_set(err, (op_status)code->via.u64, "%.*s", ml > 240 ? 240 : ml,
                      ml ? msg->via.str.ptr : "");
}

op_status op_client_call(op_client *c, op_creq *q, int timeout_ms, op_creply *r, op_err *err)
{
    memset(r, 0, sizeof *r);
    msgpack_unpacked_init(&r->un);
    op_status st = call_msg(c, q->sb.data, q->sb.size, timeout_ms, &r->msg, err);
    op_creq_fini(q);
    if (st == OP_OK)
        st = decode_reply(r, err);
    if (st != OP_OK)
        op_creply_fini(r);
    return op_client_named(c, st, err);
}

/* ---- result getters ---- */

op_status op_cget_i64(const msgpack_object *m, const char *key, int64_t *out, op_err *err)
{
    return op_rpc_get_int(m, key, INT64_MIN, INT64_MAX, 0, out, NULL, err);
}

op_status op_cget_u64(const msgpack_object *m, const char *key, uint64_t *out, op_err *err)
{
    const msgpack_object *v = op_rpc_get(m, key);
    if (!v || v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return op_err_set(err, OP_EPROTO, "client: result '%s' is not an unsigned integer", key);
    *out = v->via.u64;
    return OP_OK;
}

op_status op_cget_bool(const msgpack_object *m, const char *key, int *out, op_err *err)
{
    const msgpack_object *v = op_rpc_get(m, key);
    if (!v || v->type != MSGPACK_OBJECT_BOOLEAN)
        return op_err_set(err, OP_EPROTO, "client: result '%s' is not a bool", key);
    *out = v->via.boolean;
    return OP_OK;
}
