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
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

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
    c->parked = 0;
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

static int listen_one(opd_daemon *d, int i, op_err *err)
{
    const char *url = d->cfg.listen[i];
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
    if (rv == 0) {
        /* Known before it starts: the pipe-event callback counts from its first pipe. */
        atomic_store(&d->listener_id[i], (unsigned)nng_listener_id(l));
        rv = nng_listener_start(l, 0);
    }
    if (rv != 0) {
        atomic_store(&d->listener_id[i], 0u);
        return op_err_set(err, OP_EIO, "listen %s: %s", url, nng_strerror(rv));
    }
    return 0;
}

/* A pipe a listener negotiated was handed to the socket (nng's thread). */
static void pipe_added(nng_pipe p, nng_pipe_ev ev, void *arg)
{
    opd_daemon *d = arg;
    (void)ev;
    unsigned id = (unsigned)nng_listener_id(nng_pipe_listener(p));
    for (int i = 0; i < d->cfg.nlisten; i++)
        if (id && atomic_load(&d->listener_id[i]) == id)
            atomic_fetch_add(&d->pipes_added[i], 1);
}

/* ---- the listener watchdog (protocol §1.7) ----
 *
 * nng 1.5.2 ends a listener's accept loop for good when a peer closes its connection in
 * the middle of the SP handshake (the failure reaches the listener as NNG_ECLOSED, which
 * it takes for its own close; nng #1518, fixed in 1.6): later connections are still
 * accepted and negotiated by the transport, but never handed to the socket, so nothing
 * they send is read. Nothing outside nng sees that happen, so a thread tries each
 * listener every --listen-check-ms with a connection of its own: it completes the
 * handshake and waits for the pipe-event callback to count a new pipe of that listener.
 * A pipe is handed on without waiting for a context, so a busy daemon passes too. A
 * listener that fails is closed and listened again on the same URL (clients reconnect and
 * resend, §1.2). */

#define OPD_PROBE_MS 2000 /* a healthy listener hands a pipe on in milliseconds */

typedef struct opd_watchdog {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
} opd_watchdog;

static int64_t ms_left(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)(deadline->tv_sec - now.tv_sec) * 1000 +
           (deadline->tv_nsec - now.tv_nsec) / 1000000;
}

/* Waits (poll) for ev on fd until the deadline: 0, or -1 on timeout or error. */
static int wait_fd(int fd, short ev, const struct timespec *deadline)
{
    for (;;) {
        int64_t left = ms_left(deadline);
        if (left <= 0)
            return -1;
        struct pollfd pfd = {.fd = fd, .events = ev};
        int n = poll(&pfd, 1, (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* Where a test connection to listener i goes: its bound address, with a wildcard
 * address replaced by loopback. 0 when it can be tried (ipc:// and tcp:// only: another
 * transport's handshake is not SP's). */
static int probe_addr(opd_daemon *d, int i, nng_listener l, struct sockaddr_storage *ss,
                      socklen_t *len)
{
    const char *url = d->cfg.listen[i];
    if (strncmp(url, "ipc://", 6) && strncmp(url, "tcp://", 6) && strncmp(url, "tcp4://", 7) &&
        strncmp(url, "tcp6://", 7))
        return -1;
    nng_sockaddr sa;
    if (nng_listener_get_addr(l, NNG_OPT_LOCADDR, &sa) != 0)
        return -1;
    memset(ss, 0, sizeof *ss);
    if (sa.s_family == NNG_AF_IPC) {
        struct sockaddr_un *un = (struct sockaddr_un *)ss;
        if (strlen(sa.s_ipc.sa_path) >= sizeof un->sun_path)
            return -1;
        un->sun_family = AF_UNIX;
        strcpy(un->sun_path, sa.s_ipc.sa_path);
        *len = sizeof *un;
        return 0;
    }
    if (sa.s_family == NNG_AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;
        in->sin_family = AF_INET;
        in->sin_port = sa.s_in.sa_port; /* both in network order */
        in->sin_addr.s_addr = sa.s_in.sa_addr ? sa.s_in.sa_addr : htonl(INADDR_LOOPBACK);
        *len = sizeof *in;
        return 0;
    }
    if (sa.s_family == NNG_AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
        static const uint8_t any[16];
        in6->sin6_family = AF_INET6;
        in6->sin6_port = sa.s_in6.sa_port;
        if (memcmp(sa.s_in6.sa_addr, any, 16))
            memcpy(&in6->sin6_addr, sa.s_in6.sa_addr, 16);
        else
            in6->sin6_addr = in6addr_loopback;
        *len = sizeof *in6;
        return 0;
    }
    return -1;
}

/* One test connection to listener i: NULL when the listener handed its pipe to the socket,
 * else what failed. The handshake is completed before the close, so the test never makes
 * the drop it looks for. */
static const char *probe(opd_daemon *d, int i, const struct sockaddr_storage *ss, socklen_t len)
{
    static const uint8_t req0[8] = {0, 'S', 'P', 0, 0x00, 0x30, 0, 0};
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += OPD_PROBE_MS / 1000;
    deadline.tv_nsec += (long)(OPD_PROBE_MS % 1000) * 1000000;
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }
    uint_fast64_t before = atomic_load(&d->pipes_added[i]);
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL; /* no descriptor to test with: not the listener's fault */
    const char *why = NULL;
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (connect(fd, (const struct sockaddr *)ss, len) != 0 &&
        (errno != EINPROGRESS || wait_fd(fd, POLLOUT, &deadline) != 0 ||
         getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0))
        why = "connect failed";
    if (!why && send(fd, req0, sizeof req0, MSG_NOSIGNAL) != (ssize_t)sizeof req0)
        why = "handshake not sent";
    uint8_t hdr[8];
    size_t got = 0;
    while (!why && got < sizeof hdr) {
        ssize_t n = recv(fd, hdr + got, sizeof hdr - got, 0);
        if (n > 0)
            got += (size_t)n;
        else if (n == 0 || (errno != EAGAIN && errno != EINTR))
            why = "connection closed in the handshake";
        else if (wait_fd(fd, POLLIN, &deadline) != 0)
            why = "no handshake";
    }
    while (!why && atomic_load(&d->pipes_added[i]) == before) {
        if (ms_left(&deadline) <= 0)
            why = "handshake done but the connection never reached the socket";
        else
            nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    close(fd);
    return why;
}

static void *watchdog_main(void *arg)
{
    opd_daemon *d = arg;
    opd_watchdog *w = d->watchdog;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_sec += d->cfg.listen_check_ms / 1000;
        t.tv_nsec += (long)(d->cfg.listen_check_ms % 1000) * 1000000;
        if (t.tv_nsec >= 1000000000) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000;
        }
        while (!w->stop && pthread_cond_timedwait(&w->cv, &w->mu, &t) != ETIMEDOUT) {
        }
        if (w->stop)
            break;
        pthread_mutex_unlock(&w->mu);
        for (int i = 0; i < d->cfg.nlisten && !atomic_load(&d->stopping); i++) {
            nng_listener l = {.id = atomic_load(&d->listener_id[i])};
            struct sockaddr_storage ss;
            socklen_t len = 0;
            if (l.id == 0) {
                op_err err;
                if (listen_one(d, i, &err) == 0)
                    opd_log(d, "OP-LISTEN-RESTARTED %s", d->cfg.listen[i]);
                continue; /* an earlier restart failed: tried again each period */
            }
            if (probe_addr(d, i, l, &ss, &len) != 0)
                continue;
            const char *why = probe(d, i, &ss, len);
            if (!why || atomic_load(&d->stopping))
                continue;
            opd_log(d, "OP-LISTEN-DEAF %s: %s (nng 1.5.2 defect, protocol §1.7); restarting it",
                    d->cfg.listen[i], why);
            atomic_store(&d->listener_id[i], 0u);
            nng_listener_close(l);
            op_err err;
            if (listen_one(d, i, &err) == 0)
                opd_log(d, "OP-LISTEN-RESTARTED %s", d->cfg.listen[i]);
            else
                opd_log(d, "OP-LISTEN-FAILED %s (tried again in %d ms)", err.msg,
                        d->cfg.listen_check_ms);
        }
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static int watchdog_start(opd_daemon *d)
{
    opd_watchdog *w = calloc(1, sizeof *w);
    if (!w)
        return -1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->mu, NULL);
    d->watchdog = w;
    if (pthread_create(&w->thread, NULL, watchdog_main, d) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        d->watchdog = NULL;
        return -1;
    }
    return 0;
}

static void watchdog_stop(opd_daemon *d)
{
    opd_watchdog *w = d->watchdog;
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    d->watchdog = NULL;
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
    rv = nng_pipe_notify(d->sock, NNG_PIPE_EV_ADD_PRE, pipe_added, d);
    if (rv != 0)
        return op_err_set(err, OP_EIO, "nng_pipe_notify: %s", nng_strerror(rv));
    for (int i = 0; i < d->cfg.nlisten; i++)
        if (listen_one(d, i, err))
            return err->status;
    for (int i = 0; i < d->cfg.contexts; i++) {
        rv = 0;
        if (arm_one(d, &rv) != 0)
            return rv ? op_err_set(err, OP_EIO, "nng context %d: %s", i, nng_strerror(rv))
                      : op_err_set(err, OP_ENOMEM, "out of memory for %d contexts",
                                   d->cfg.contexts);
    }
    if (d->cfg.listen_check_ms > 0 && watchdog_start(d) != 0)
        return op_err_set(err, OP_ENOMEM, "no thread for the listener watchdog");
    return 0;
}

int opd_transport_stop(opd_daemon *d)
{
    watchdog_stop(d); /* it may be closing and reopening a listener */
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
        if (c->held) /* a call parked until the end */
            nng_msg_free(c->held);
        free(c);
    }
    free(d->calls);
    d->calls = NULL;
    d->ncalls = d->calls_cap = 0;
    d->idle = NULL;
    return 0;
}
