/*
 * onepathd HTTP (docs/spec/http.md): nng's own HTTP server, for the viewer (--http) and
 * for the metrics (--metrics). One handler takes every path and method and decides:
 *
 *   GET/HEAD /, /FILE, /three/PATH   the viewer's files and three.js (http_files.c)
 *   GET/HEAD /viewer.json            what the page may do (edit or not)
 *   POST /rpc                        one request of protocol.md, msgpack in and out,
 *                                    handed to route.c as a call like the REP socket's:
 *                                    the same parse, methods, log line and counters
 *   GET/HEAD /metrics                (--metrics only) Prometheus text, metrics.c
 *
 * A call over HTTP holds the handler's aio until its reply: a long poll parks like any
 * other call (route.c), and its reply finishes the aio. Should the connection close
 * first, nng cancels the aio; the call stays parked and its reply, when it comes, is
 * dropped and the call freed (every call gets exactly one reply, so it is freed once).
 * On a loopback address the Host header must name a loopback host and the port, so a
 * page of another site cannot reach the daemon through a rebound DNS name.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "http_front.h"

#include <nng/supplemental/http/http.h> /* after nng.h (daemon.h) */

/* Largest file of the viewer or three.js served (three.module.js is 1.1 MiB). */
#define OPD_HTTP_MAX_FILE ((size_t)8 << 20)
/* HTTP calls in flight at once (long polls included); more get 503. */
#define OPD_HTTP_MAX_CALLS 256

typedef struct opd_http {
    opd_daemon *d;
    int metrics;             /* the --metrics server: /metrics only */
    nng_http_server *server; /* on an ephemeral loopback port, behind the front */
    opd_front *front;        /* what clients connect to (http_front.c) */
    char url[300];
    int port; /* bound */
    int loopback;
    uint32_t allow; /* methods POST /rpc may call */
    char root[4096];
    const char *three;
    atomic_int calls;  /* HTTP calls between their request and their reply */
    atomic_int active; /* threads inside the handler */
} opd_http;

typedef struct http_call {
    opd_call c; /* first: route.c and call.c see this */
    opd_http *s;
    pthread_mutex_t mu;
    nng_aio *aio; /* the handler's, until answered or cancelled */
} http_call;

/* ===== addresses ===== */

int opd_http_addr(const char *hostport, char *url, size_t n, int *loopback)
{
    const char *colon = strrchr(hostport, ':');
    if (!colon || colon == hostport)
        return -1;
    char host[256];
    size_t hl = (size_t)(colon - hostport);
    if (hl >= sizeof host)
        return -1;
    memcpy(host, hostport, hl);
    host[hl] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || port < 0 || port > 65535)
        return -1;
    int v6 = host[0] == '[';
    if (v6) {
        if (hl < 3 || host[hl - 1] != ']')
            return -1;
        host[hl - 1] = '\0';
        memmove(host, host + 1, hl - 1);
    }
    unsigned char a[16];
    if (v6 && inet_pton(AF_INET6, host, a) != 1)
        return -1;
    *loopback = !strcmp(host, "localhost") || (v6 && !strcmp(host, "::1")) ||
                (!v6 && inet_pton(AF_INET, host, a) == 1 && a[0] == 127);
    int w = snprintf(url, n, "http://%s%s%s:%ld", v6 ? "[" : "", host, v6 ? "]" : "", port);
    return w > 0 && (size_t)w < n ? 0 : -1;
}

/* The Host header of a request to a loopback listener: a loopback name and our port. */
static int host_ok(const opd_http *s, const char *h)
{
    if (!s->loopback)
        return 1;
    if (!h)
        return 0;
    char host[256];
    const char *colon = strrchr(h, ':');
    int port = 80;
    if (colon && (h[0] != '[' || colon > strchr(h, ']'))) {
        char *end;
        long p = strtol(colon + 1, &end, 10);
        if (*end || p < 0 || p > 65535)
            return 0;
        port = (int)p;
    } else {
        colon = h + strlen(h);
    }
    size_t hl = (size_t)(colon - h);
    if (hl >= sizeof host)
        return 0;
    memcpy(host, h, hl);
    host[hl] = '\0';
    unsigned char a[16];
    int lb = !strcmp(host, "localhost") || !strcmp(host, "[::1]") ||
             (inet_pton(AF_INET, host, a) == 1 && a[0] == 127);
    return lb && port == s->port;
}

/* ===== replies ===== */

static void respond(nng_aio *aio, int status, const char *ctype, const void *body, size_t len,
                    const char *allow)
{
    nng_http_res *res;
    if (nng_http_res_alloc(&res) != 0) {
        nng_aio_finish(aio, NNG_ENOMEM);
        return;
    }
    int rv = nng_http_res_set_status(res, (uint16_t)status);
    rv |= nng_http_res_set_header(res, "Content-Type", ctype);
    rv |= nng_http_res_set_header(res, "Cache-Control", "no-store");
    rv |= nng_http_res_set_header(res, "X-Content-Type-Options", "nosniff");
    /* The page loads nothing but its own files and talks only to its own origin. */
    rv |= nng_http_res_set_header(res, "Content-Security-Policy",
                                  "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                                  "img-src 'self' data:; frame-ancestors 'none'");
    if (allow)
        rv |= nng_http_res_set_header(res, "Allow", allow);
    if (len)
        rv |= nng_http_res_copy_data(res, body, len);
    if (rv != 0) {
        nng_http_res_free(res);
        nng_aio_finish(aio, NNG_ENOMEM);
        return;
    }
    nng_aio_set_output(aio, 0, res);
    nng_aio_finish(aio, 0);
}

static void respond_text(nng_aio *aio, int status, const char *what, const char *allow)
{
    char body[512];
    int n = snprintf(body, sizeof body, "%d %s\n", status, what);
    respond(aio, status, "text/plain; charset=utf-8", body, n > 0 ? (size_t)n : 0, allow);
}

static const char *status_text(int st)
{
    switch (st) {
    case 400:
        return "bad request: a path is segments of [A-Za-z0-9._-], none starting with '.'";
    case 403:
        return "forbidden";
    case 404:
        return "not found";
    case 414:
        return "path too long";
    default:
        return "internal error";
    }
}

/* HTTP status of an error reply (§3.2). */
static int rpc_status(const opd_call *c, const char *err_name)
{
    if (c->allow && c->method != OPD_M_UNKNOWN && !(c->allow & (1u << c->method)))
        return 403;
    static const struct {
        const char *name;
        int status;
    } map[] = {{"OP_EINVAL", 400},      {"OP_ERANGE", 400},    {"OP_EPROTO", 400},
               {"OP_EINCOMPLETE", 400}, {"OP_ELIMIT", 400},    {"OP_ENOTFOUND", 404},
               {"OP_EBUSY", 503},       {"OP_ETIMEDOUT", 504}, {"OP_EPERM", 403}};
    for (size_t i = 0; err_name && i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(err_name, map[i].name))
            return map[i].status;
    return 500;
}

/* ===== POST /rpc ===== */

static void call_reply(opd_call *c, nng_msg *msg, int ok, const char *err_name)
{
    http_call *hc = (http_call *)c;
    pthread_mutex_lock(&hc->mu);
    nng_aio *aio = hc->aio;
    hc->aio = NULL;
    pthread_mutex_unlock(&hc->mu);
    if (aio && !msg)
        respond_text(aio, 500, "out of memory for the reply", NULL);
    else if (aio)
        respond(aio, ok ? 200 : rpc_status(c, err_name), "application/msgpack", nng_msg_body(msg),
                nng_msg_len(msg), NULL);
    if (msg)
        nng_msg_free(msg);
    atomic_fetch_sub(&hc->s->calls, 1);
    pthread_mutex_destroy(&hc->mu);
    free(hc);
}

static const opd_call_ops http_ops = {call_reply};

/* The connection closed before the reply: the aio is nng's again at once. */
static void call_cancel(nng_aio *aio, void *arg, int rv)
{
    http_call *hc = arg;
    pthread_mutex_lock(&hc->mu);
    if (hc->aio == aio) {
        hc->aio = NULL;
        nng_aio_finish(aio, rv);
    }
    pthread_mutex_unlock(&hc->mu);
}

static int is_msgpack(const char *ct)
{
    if (!ct)
        return 0;
    size_t n = strcspn(ct, "; ");
    return (n == 19 && !strncmp(ct, "application/msgpack", 19)) ||
           (n == 21 && !strncmp(ct, "application/x-msgpack", 21));
}

static void rpc(opd_http *s, nng_aio *aio, nng_http_req *req)
{
    opd_daemon *d = s->d;
    void *body;
    size_t len;
    nng_http_req_get_data(req, &body, &len);
    if (!is_msgpack(nng_http_req_get_header(req, "Content-Type"))) {
        respond_text(aio, 415, "POST /rpc takes Content-Type: application/msgpack", NULL);
        return;
    }
    if (len == 0) {
        respond_text(aio, 400, "POST /rpc wants one msgpack request as its body", NULL);
        return;
    }
    if (atomic_fetch_add(&s->calls, 1) >= OPD_HTTP_MAX_CALLS) {
        atomic_fetch_sub(&s->calls, 1);
        respond_text(aio, 503, "too many HTTP requests in flight", NULL);
        return;
    }
    http_call *hc = calloc(1, sizeof *hc);
    nng_msg *in = NULL;
    if (!hc || nng_msg_alloc(&in, 0) != 0 || nng_msg_append(in, body, len) != 0) {
        if (in)
            nng_msg_free(in);
        free(hc);
        atomic_fetch_sub(&s->calls, 1);
        respond_text(aio, 500, "out of memory for the request", NULL);
        return;
    }
    hc->s = s;
    hc->aio = aio;
    pthread_mutex_init(&hc->mu, NULL);
    opd_call *c = &hc->c;
    c->d = d;
    c->in = in;
    c->state = OPD_CALL_WORK;
    c->method = OPD_M_UNKNOWN;
    c->t0_ns = opd_now_ns();
    c->ops = &http_ops;
    c->allow = s->allow;
    atomic_fetch_add(&d->inflight, 1); /* released by call.c once the reply is logged */
    nng_aio_defer(aio, call_cancel, hc);
    opd_route_received(c);
}

/* ===== GET ===== */

static void viewer_json(opd_http *s, nng_aio *aio)
{
    char body[256];
    int n = snprintf(body, sizeof body,
                     "{\"edit\": %s, \"version\": \"%s\", \"protocol\": %d, \"three\": "
                     "\"three/build/three.module.js\"}\n",
                     s->d->cfg.http_edit ? "true" : "false", OPD_VERSION, OP_PROTOCOL_VERSION);
    respond(aio, 200, "application/json", body, (size_t)n, NULL);
}

static void file(opd_http *s, nng_aio *aio, const char *path)
{
    char real[4096];
    int st = opd_http_file_path(s->root, s->three, path, real, sizeof real);
    void *data = NULL;
    size_t len = 0;
    if (st == 0)
        st = opd_http_file_read(real, OPD_HTTP_MAX_FILE, &data, &len);
    if (st != 0) {
        respond_text(aio, st, status_text(st), NULL);
        return;
    }
    respond(aio, 200, opd_http_mime(real), data, len, NULL);
    free(data);
}

static void metrics(opd_http *s, nng_aio *aio)
{
    size_t len;
    char *text = opd_metrics_text(s->d, &len);
    if (!text) {
        respond_text(aio, 500, "out of memory", NULL);
        return;
    }
    respond(aio, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL);
    free(text);
}

static void on_request(nng_aio *aio)
{
    nng_http_req *req = nng_aio_get_input(aio, 0);
    nng_http_handler *h = nng_aio_get_input(aio, 1);
    opd_http *s = nng_http_handler_get_data(h);
    atomic_fetch_add(&s->active, 1);
    const char *method = nng_http_req_get_method(req);
    const char *uri = nng_http_req_get_uri(req);
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    char path[1024];
    size_t pl = strcspn(uri, "?#");
    if (!host_ok(s, nng_http_req_get_header(req, "Host"))) {
        respond_text(aio, 403, "Host must name this loopback address and port", NULL);
    } else if (pl >= sizeof path) {
        respond_text(aio, 414, "path too long", NULL);
    } else {
        memcpy(path, uri, pl);
        path[pl] = '\0';
        if (s->metrics) {
            if (strcmp(path, "/metrics") != 0)
                respond_text(aio, 404, "not found: the metrics are at /metrics", NULL);
            else if (!get)
                respond_text(aio, 405, "method not allowed", "GET, HEAD");
            else
                metrics(s, aio);
        } else if (!strcmp(path, "/rpc")) {
            if (strcmp(method, "POST") != 0)
                respond_text(aio, 405, "method not allowed: POST /rpc", "POST");
            else
                rpc(s, aio, req);
        } else if (!get) {
            respond_text(aio, 405, "method not allowed", "GET, HEAD");
        } else if (!strcmp(path, "/viewer.json")) {
            viewer_json(s, aio);
        } else {
            file(s, aio, path);
        }
    }
    atomic_fetch_sub(&s->active, 1);
}

/* ===== servers ===== */

/* Methods POST /rpc may call: the reads; volume edits with --http-edit (§3.1). */
static uint32_t allowed_methods(const opd_config *cfg)
{
    static const char *const reads[] = {"ping",       "level.list",    "level.info", "tile.get",
                                        "tile.range", "changes.since", "stats",      "path"};
    static const char *const edits[] = {"volume.put", "volume.drop"};
    uint32_t mask = 0;
    for (int m = 0; m < OPD_M_UNKNOWN; m++) {
        for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
            if (!strcmp(opd_method_names[m], reads[i]))
                mask |= 1u << m;
        for (size_t i = 0; cfg->http_edit && i < sizeof edits / sizeof edits[0]; i++)
            if (!strcmp(opd_method_names[m], edits[i]))
                mask |= 1u << m;
    }
    return mask;
}

static void server_free(opd_http *s)
{
    if (!s)
        return;
    opd_front_close(s->front); /* no new requests reach the server */
    if (s->server) {
        nng_http_server_stop(s->server);
        /* Handlers that were running finish (they never wait); calls in flight were
         * drained before the stop. */
        for (int i = 0; i < 5000 && (atomic_load(&s->active) || atomic_load(&s->calls)); i++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        nng_http_server_release(s->server);
    }
    free(s);
}

static int server_open(opd_daemon *d, const char *flag, const char *hostport, int metrics_only,
                       opd_http **out, op_err *err)
{
    *out = NULL;
    opd_http *s = calloc(1, sizeof *s);
    if (!s)
        return op_err_set(err, OP_ENOMEM, "%s: out of memory", flag);
    s->d = d;
    s->metrics = metrics_only;
    if (opd_http_addr(hostport, s->url, sizeof s->url, &s->loopback) != 0) {
        free(s);
        return op_err_set(err, OP_EINVAL, "%s wants HOST:PORT (e.g. 127.0.0.1:7412), got '%s'",
                          flag, hostport);
    }
    if (!s->loopback && !d->cfg.http_remote) {
        free(s);
        return op_err_set(err, OP_EINVAL,
                          "%s %s is not a loopback address: the page and the metrics have no "
                          "authentication; add --http-remote to serve it anyway",
                          flag, hostport);
    }
    nng_url *url = NULL;
    nng_http_handler *h = NULL;
    int rv = nng_url_parse(&url, "http://127.0.0.1:0");
    if (rv == 0)
        rv = nng_http_server_hold(&s->server, url);
    if (rv == 0)
        rv = nng_http_handler_alloc(&h, "/", on_request);
    if (rv == 0)
        rv = nng_http_handler_set_method(h, NULL); /* every method: 405 is ours to answer */
    if (rv == 0)
        rv = nng_http_handler_set_tree(h);
    if (rv == 0)
        rv = nng_http_handler_collect_body(h, true, d->cfg.max_message);
    if (rv == 0)
        rv = nng_http_handler_set_data(h, s, NULL);
    if (rv == 0 && (rv = nng_http_server_add_handler(s->server, h)) == 0)
        h = NULL; /* the server's now */
    if (rv == 0)
        rv = nng_http_server_start(s->server);
    nng_sockaddr sa;
    int backend = 0;
    if (rv == 0 && (rv = nng_http_server_get_addr(s->server, &sa)) == 0)
        backend = ntohs(sa.s_in.sa_port);
    char listen[310];
    snprintf(listen, sizeof listen, "tcp://%s", s->url + strlen("http://"));
    if (rv == 0)
        rv = opd_front_open(listen, backend, &s->front);
    if (rv == 0)
        s->port = opd_front_port(s->front);
    if (h)
        nng_http_handler_free(h);
    if (url)
        nng_url_free(url);
    if (rv != 0) {
        if (s->server) {
            nng_http_server_stop(s->server);
            nng_http_server_release(s->server);
        }
        free(s);
        return op_err_set(err, OP_EIO, "%s %s: %s", flag, hostport, nng_strerror(rv));
    }
    *out = s;
    return 0;
}

/* The viewer's folder: --http-root, else share/onepath/www beside the binary's bin/. */
static int find_root(const opd_config *cfg, char *out, size_t n, op_err *err)
{
    int w;
    if (cfg->http_root) {
        w = snprintf(out, n, "%s", cfg->http_root);
    } else {
        char exe[4096];
        ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (k <= 0)
            return op_err_set(err, OP_EIO, "--http: cannot find the binary (give --http-root)");
        exe[k] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        w = snprintf(out, n, "%.3900s/../share/onepath/www", exe);
    }
    if (w < 0 || (size_t)w >= n)
        return op_err_set(err, OP_EINVAL, "--http-root: path too long");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/index.html", out);
    if (access(probe, R_OK) != 0)
        return op_err_set(err, OP_EIO, "--http: no viewer in %s (--http-root DIR)", out);
    return 0;
}

int opd_http_start(opd_daemon *d, op_err *err)
{
    if (!d->cfg.http)
        return 0;
    char root[4096];
    if (find_root(&d->cfg, root, sizeof root, err) != 0)
        return err->status;
    opd_http *s;
    if (server_open(d, "--http", d->cfg.http, 0, &s, err) != 0)
        return err->status;
    snprintf(s->root, sizeof s->root, "%s", root);
    s->three = d->cfg.http_three;
    s->allow = allowed_methods(&d->cfg);
    d->http = s;
    const char *colon = strrchr(s->url, ':');
    opd_log(d, "OP-HTTP %.*s:%d/ viewer %s, three.js %s, %s", (int)(colon - s->url), s->url,
            s->port, s->root, s->three, d->cfg.http_edit ? "volume edits allowed" : "read-only");
    return 0;
}

void opd_http_stop(opd_daemon *d)
{
    server_free(d->http);
    d->http = NULL;
}

int opd_metrics_start(opd_daemon *d, op_err *err)
{
    if (!d->cfg.metrics)
        return 0;
    opd_http *s;
    if (server_open(d, "--metrics", d->cfg.metrics, 1, &s, err) != 0)
        return err->status;
    d->metrics = s;
    const char *colon = strrchr(s->url, ':');
    opd_log(d, "OP-METRICS %.*s:%d/metrics", (int)(colon - s->url), s->url, s->port);
    return 0;
}

void opd_metrics_stop(opd_daemon *d)
{
    server_free(d->metrics);
    d->metrics = NULL;
}
