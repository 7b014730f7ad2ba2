/*
 * The HTTP front (docs/spec/http.md §1.4): the listener people connect to. nng 1.5's HTTP
 * server reads a request head line by line into a fixed 8 KiB buffer and, when a line does not
 * fit, closes the connection without a status line, so a client cannot tell a huge header from
 * a crash. The front reads each connection's request head itself, with its own bound, and
 * answers 431 (head too large) or 408 (head too slow) without nng's server seeing it. A head
 * that fits is handed on, with `Connection: close`, to nng's HTTP server listening on an
 * ephemeral loopback port, and the bytes are pumped both ways until that server closes.
 *
 * One request a connection: the `Connection: close` makes nng's server close after its
 * response, so every head a client sends passes through the check (a keep-alive connection
 * would let the second head through unchecked).
 *
 * Lifetime: each connection has four aios, one per direction and side, plus the dial. A
 * callback that does not re-arm its aio lowers the count of armed operations; the last one
 * hands the connection to the reaper thread, which stops the aios and frees everything (an
 * aio or a stream cannot be freed from its own callback).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_front.h"

#include <nng/supplemental/util/platform.h>

#define FRONT_BUF       16384 /* one pump's buffer */
#define FRONT_MAX_CONNS 512

typedef struct front_conn front_conn;

struct opd_front {
    nng_stream_listener *listener;
    nng_stream_dialer *dialer;
    nng_aio *accept;
    size_t head_max;
    nng_duration head_ms;
    nng_mtx *mu;
    nng_cv *cv;
    int conns;        /* alive, reaper queue included */
    int stopping;     /* no new connections; the reaper ends when conns is 0 */
    front_conn *live; /* every connection not yet queued for the reaper */
    front_conn *reap; /* queued for the reaper */
    nng_thread *reaper;
    int port;
};

enum { PH_HEAD, PH_DIAL, PH_PUMP, PH_REPLY, PH_DRAIN };

/* After its own reply the front reads and drops what the client still sends, for a while,
 * before it closes: closing with unread bytes makes the kernel send a reset, and a reset can
 * destroy the reply before the client has read it. */
#define FRONT_DRAIN_MS    2000
#define FRONT_DRAIN_BYTES ((size_t)4 << 20)

struct front_conn {
    opd_front *f;
    front_conn *next, *prev;
    nng_stream *client, *server;
    nng_aio *crd, *cwr, *srd, *swr, *dial;
    int armed;  /* operations in flight */
    int closed; /* streams closed: nothing re-arms */
    int phase;
    nng_time deadline;         /* of the head */
    size_t len;                /* bytes of head[] read */
    size_t out_len, out_off;   /* pending send to the server: out[] */
    size_t down_len, down_off; /* pending send to the client: down[] */
    size_t up_len, up_off;
    size_t drained; /* bytes dropped in PH_DRAIN */
    char head[OPD_FRONT_HEAD_MAX];
    char out[OPD_FRONT_HEAD_MAX + 64];
    char up[FRONT_BUF];
    char down[FRONT_BUF];
};

/* ===== lifetime ===== */

static void conn_close_locked(front_conn *c)
{
    if (c->closed)
        return;
    c->closed = 1;
    if (c->client)
        nng_stream_close(c->client);
    if (c->server)
        nng_stream_close(c->server);
    nng_aio_cancel(c->dial);
}

/* Called with f->mu held, when an operation of c ends without re-arming. */
static void conn_done_locked(front_conn *c)
{
    opd_front *f = c->f;
    if (--c->armed > 0)
        return;
    conn_close_locked(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        f->live = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->next = f->reap;
    c->prev = NULL;
    f->reap = c;
    nng_cv_wake(f->cv);
}

static void conn_free(front_conn *c)
{
    nng_aio *aios[] = {c->crd, c->cwr, c->srd, c->swr, c->dial};
    for (size_t i = 0; i < sizeof aios / sizeof aios[0]; i++)
        if (aios[i])
            nng_aio_stop(aios[i]);
    if (c->client)
        nng_stream_free(c->client);
    if (c->server)
        nng_stream_free(c->server);
    for (size_t i = 0; i < sizeof aios / sizeof aios[0]; i++)
        if (aios[i])
            nng_aio_free(aios[i]);
    free(c);
}

static void reaper(void *arg)
{
    opd_front *f = arg;
    nng_mtx_lock(f->mu);
    for (;;) {
        while (!f->reap && !(f->stopping && f->conns == 0))
            nng_cv_wait(f->cv);
        if (!f->reap)
            break;
        front_conn *c = f->reap;
        f->reap = c->next;
        nng_mtx_unlock(f->mu);
        conn_free(c);
        nng_mtx_lock(f->mu);
        f->conns--;
    }
    nng_mtx_unlock(f->mu);
}

/* ===== sends and receives (f->mu held; each arms one operation) ===== */

static void arm_recv(front_conn *c, nng_stream *s, nng_aio *aio, void *buf, size_t n,
                     nng_duration ms)
{
    nng_iov iov = {buf, n};
    nng_aio_set_iov(aio, 1, &iov);
    nng_aio_set_timeout(aio, ms);
    c->armed++;
    nng_stream_recv(s, aio);
}

static void arm_send(front_conn *c, nng_stream *s, nng_aio *aio, void *buf, size_t n)
{
    nng_iov iov = {buf, n};
    nng_aio_set_iov(aio, 1, &iov);
    nng_aio_set_timeout(aio, 30000);
    c->armed++;
    nng_stream_send(s, aio);
}

/* A short answer of the front's own, then close (status 408, 431, 502, 503). */
static void reply_locked(front_conn *c, int status, const char *reason, const char *why)
{
    int n = snprintf(c->down, sizeof c->down,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%d %s: %s\n",
                     status, reason, strlen(why) + strlen(reason) + 7, status, reason, why);
    c->phase = PH_REPLY;
    c->down_len = n > 0 ? (size_t)n : 0;
    c->down_off = 0;
    arm_send(c, c->client, c->cwr, c->down, c->down_len);
}

/* ===== the head ===== */

/* The end of the head (index after "\r\n\r\n"), or 0. */
static size_t head_end(const char *p, size_t n)
{
    for (size_t i = 3; i < n; i++)
        if (p[i] == '\n' && p[i - 1] == '\r' && p[i - 2] == '\n' && p[i - 3] == '\r')
            return i + 1;
    return 0;
}

/* out = the head without its Connection headers, with "Connection: close", then the bytes
 * read past the head (the start of a body). */
static void rewrite_head(front_conn *c, size_t end)
{
    size_t o = 0, i = 0;
    while (i < end - 2) { /* each line, the final empty one excepted */
        size_t j = i;
        while (j + 1 < end && !(c->head[j] == '\r' && c->head[j + 1] == '\n'))
            j++;
        int drop = i > 0 && j - i >= 11 && !strncasecmp(c->head + i, "connection:", 11);
        if (!drop) {
            memcpy(c->out + o, c->head + i, j + 2 - i);
            o += j + 2 - i;
        }
        i = j + 2;
    }
    static const char close_hdr[] = "Connection: close\r\n\r\n";
    memcpy(c->out + o, close_hdr, sizeof close_hdr - 1);
    o += sizeof close_hdr - 1;
    memcpy(c->out + o, c->head + end, c->len - end); /* fits: out has 64 spare bytes */
    c->out_len = o + c->len - end;
    c->out_off = 0;
}

/* ===== callbacks ===== */

static void on_client_recv(void *arg)
{
    front_conn *c = arg;
    opd_front *f = c->f;
    int rv = nng_aio_result(c->crd);
    size_t n = nng_aio_count(c->crd);
    nng_mtx_lock(f->mu);
    if (!c->closed && c->phase == PH_HEAD) {
        if (rv == NNG_ETIMEDOUT) {
            reply_locked(c, 408, "Request Timeout", "the request head did not arrive in time");
        } else if (rv == 0) {
            c->len += n;
            size_t end = head_end(c->head, c->len);
            nng_time now = nng_clock();
            if (end) {
                rewrite_head(c, end);
                c->phase = PH_DIAL;
                c->armed++;
                nng_stream_dialer_dial(f->dialer, c->dial);
            } else if (c->len >= f->head_max) {
                reply_locked(c, 431, "Request Header Fields Too Large",
                             "the request line and headers exceed " OPD_FRONT_HEAD_MAX_TEXT
                             " bytes");
            } else if (now >= c->deadline) {
                reply_locked(c, 408, "Request Timeout", "the request head did not arrive in time");
            } else {
                arm_recv(c, c->client, c->crd, c->head + c->len, f->head_max - c->len,
                         (nng_duration)(c->deadline - now));
            }
        } else {
            conn_close_locked(c);
        }
    } else if (!c->closed && c->phase == PH_DRAIN && rv == 0 && n > 0 &&
               (c->drained += n) < FRONT_DRAIN_BYTES && nng_clock() < c->deadline) {
        arm_recv(c, c->client, c->crd, c->up, sizeof c->up,
                 (nng_duration)(c->deadline - nng_clock()));
    } else if (!c->closed && c->phase == PH_PUMP && rv == 0 && n > 0) {
        c->up_len = n;
        c->up_off = 0;
        arm_send(c, c->server, c->swr, c->up, n);
    } else {
        conn_close_locked(c);
    }
    conn_done_locked(c);
    nng_mtx_unlock(f->mu);
}

static void on_dial(void *arg)
{
    front_conn *c = arg;
    opd_front *f = c->f;
    int rv = nng_aio_result(c->dial);
    nng_mtx_lock(f->mu);
    if (rv == 0)
        c->server = nng_aio_get_output(c->dial, 0);
    if (!c->closed && rv == 0) {
        arm_send(c, c->server, c->swr, c->out, c->out_len);
    } else if (!c->closed) {
        reply_locked(c, 502, "Bad Gateway", "the daemon's HTTP server did not answer");
    }
    conn_done_locked(c);
    nng_mtx_unlock(f->mu);
}

/* A send to the server ended: the head (PH_DIAL) or a piece of body (PH_PUMP). */
static void on_server_send(void *arg)
{
    front_conn *c = arg;
    opd_front *f = c->f;
    int rv = nng_aio_result(c->swr);
    size_t n = nng_aio_count(c->swr);
    nng_mtx_lock(f->mu);
    if (c->closed || rv != 0) {
        conn_close_locked(c);
    } else if (c->phase == PH_DIAL) {
        c->out_off += n;
        if (c->out_off < c->out_len) {
            arm_send(c, c->server, c->swr, c->out + c->out_off, c->out_len - c->out_off);
        } else {
            c->phase = PH_PUMP;
            arm_recv(c, c->client, c->crd, c->up, sizeof c->up, NNG_DURATION_INFINITE);
            arm_recv(c, c->server, c->srd, c->down, sizeof c->down, NNG_DURATION_INFINITE);
        }
    } else {
        c->up_off += n;
        if (c->up_off < c->up_len)
            arm_send(c, c->server, c->swr, c->up + c->up_off, c->up_len - c->up_off);
        else
            arm_recv(c, c->client, c->crd, c->up, sizeof c->up, NNG_DURATION_INFINITE);
    }
    conn_done_locked(c);
    nng_mtx_unlock(f->mu);
}

static void on_server_recv(void *arg)
{
    front_conn *c = arg;
    opd_front *f = c->f;
    int rv = nng_aio_result(c->srd);
    size_t n = nng_aio_count(c->srd);
    nng_mtx_lock(f->mu);
    if (!c->closed && rv == 0 && n > 0) {
        c->down_len = n;
        c->down_off = 0;
        arm_send(c, c->client, c->cwr, c->down, n);
    } else {
        conn_close_locked(c); /* the server closed: the response is complete */
    }
    conn_done_locked(c);
    nng_mtx_unlock(f->mu);
}

static void on_client_send(void *arg)
{
    front_conn *c = arg;
    opd_front *f = c->f;
    int rv = nng_aio_result(c->cwr);
    size_t n = nng_aio_count(c->cwr);
    nng_mtx_lock(f->mu);
    if (!c->closed && rv == 0) {
        c->down_off += n;
        if (c->down_off < c->down_len)
            arm_send(c, c->client, c->cwr, c->down + c->down_off, c->down_len - c->down_off);
        else if (c->phase == PH_PUMP)
            arm_recv(c, c->server, c->srd, c->down, sizeof c->down, NNG_DURATION_INFINITE);
        else {
            c->phase = PH_DRAIN; /* our own reply is out */
            c->deadline = nng_clock() + FRONT_DRAIN_MS;
            arm_recv(c, c->client, c->crd, c->up, sizeof c->up, FRONT_DRAIN_MS);
        }
    } else {
        conn_close_locked(c);
    }
    conn_done_locked(c);
    nng_mtx_unlock(f->mu);
}

static void on_accept(void *arg);

static int conn_new(opd_front *f, nng_stream *s, front_conn **out)
{
    front_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NNG_ENOMEM;
    c->f = f;
    c->client = s;
    int rv = nng_aio_alloc(&c->crd, on_client_recv, c);
    if (rv == 0)
        rv = nng_aio_alloc(&c->cwr, on_client_send, c);
    if (rv == 0)
        rv = nng_aio_alloc(&c->srd, on_server_recv, c);
    if (rv == 0)
        rv = nng_aio_alloc(&c->swr, on_server_send, c);
    if (rv == 0)
        rv = nng_aio_alloc(&c->dial, on_dial, c);
    if (rv != 0) {
        conn_free(c);
        return rv;
    }
    *out = c;
    return 0;
}

static void on_accept(void *arg)
{
    opd_front *f = arg;
    int rv = nng_aio_result(f->accept);
    nng_mtx_lock(f->mu);
    if (rv == 0) {
        nng_stream *s = nng_aio_get_output(f->accept, 0);
        front_conn *c = NULL;
        if (f->stopping || conn_new(f, s, &c) != 0) {
            nng_stream_free(s);
        } else {
            c->next = f->live;
            if (f->live)
                f->live->prev = c;
            f->live = c;
            f->conns++;
            c->deadline = nng_clock() + (nng_time)f->head_ms;
            if (f->conns > FRONT_MAX_CONNS)
                reply_locked(c, 503, "Service Unavailable", "too many connections");
            else
                arm_recv(c, s, c->crd, c->head, f->head_max, f->head_ms);
        }
    }
    if (!f->stopping && rv != NNG_ECLOSED && rv != NNG_ECANCELED)
        nng_stream_listener_accept(f->listener, f->accept);
    nng_mtx_unlock(f->mu);
}

/* ===== open and close ===== */

void opd_front_close(opd_front *f)
{
    if (!f)
        return;
    if (!f->mu || !f->cv) {
        if (f->mu)
            nng_mtx_free(f->mu);
        free(f);
        return;
    }
    nng_mtx_lock(f->mu);
    f->stopping = 1;
    for (front_conn *c = f->live; c; c = c->next)
        conn_close_locked(c);
    nng_mtx_unlock(f->mu);
    if (f->listener)
        nng_stream_listener_close(f->listener);
    if (f->accept)
        nng_aio_stop(f->accept);
    nng_mtx_lock(f->mu);
    nng_cv_wake(f->cv);
    nng_mtx_unlock(f->mu);
    if (f->reaper)
        nng_thread_destroy(f->reaper); /* joins: every connection is freed */
    if (f->accept)
        nng_aio_free(f->accept);
    if (f->listener)
        nng_stream_listener_free(f->listener);
    if (f->dialer)
        nng_stream_dialer_free(f->dialer);
    nng_cv_free(f->cv);
    nng_mtx_free(f->mu);
    free(f);
}

int opd_front_open(const char *listen_url, int backend_port, opd_front **out)
{
    *out = NULL;
    opd_front *f = calloc(1, sizeof *f);
    if (!f)
        return NNG_ENOMEM;
    f->head_max = OPD_FRONT_HEAD_MAX;
    f->head_ms = OPD_FRONT_HEAD_MS;
    char backend[64];
    snprintf(backend, sizeof backend, "tcp://127.0.0.1:%d", backend_port);
    int rv = nng_mtx_alloc(&f->mu);
    if (rv == 0)
        rv = nng_cv_alloc(&f->cv, f->mu);
    if (rv == 0)
        rv = nng_stream_dialer_alloc(&f->dialer, backend);
    if (rv == 0)
        rv = nng_stream_listener_alloc(&f->listener, listen_url);
    if (rv == 0)
        rv = nng_stream_listener_listen(f->listener);
    if (rv == 0)
        rv = nng_stream_listener_get_int(f->listener, NNG_OPT_TCP_BOUND_PORT, &f->port);
    if (rv == 0)
        rv = nng_aio_alloc(&f->accept, on_accept, f);
    if (rv == 0)
        rv = nng_thread_create(&f->reaper, reaper, f);
    if (rv != 0) {
        opd_front_close(f);
        return rv;
    }
    nng_stream_listener_accept(f->listener, f->accept);
    *out = f;
    return 0;
}

int opd_front_port(const opd_front *f)
{
    return f->port;
}
