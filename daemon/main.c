/*
 * onepathd: keeps levels resident and serves navmesh tiles over nng (docs/spec/protocol.md).
 * This file: flags and environment, start-up (pools, cache, registry, level files, socket)
 * and the libuv loop, which owns the signals (SIGTERM/SIGINT drain and exit 0, SIGHUP
 * reopens the log) and the long-poll deadline timer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "level.h"
#include "store.h"
#include "onepath/cpus.h"

typedef struct opt {
    const char *flag;
    const char *env;
    const char *arg; /* NULL: a switch */
    const char *help;
} opt;

static const opt opts[] = {
    {"--listen", "ONEPATHD_LISTEN", "URL",
     "listen on URL (tcp://HOST:PORT or ipc:///PATH); repeatable; the env var takes a "
     "space-separated list; default tcp://127.0.0.1:7411"},
    {"--socket-mode", "ONEPATHD_SOCKET_MODE", "OCTAL",
     "permission bits of ipc:// sockets, whatever the umask; default 0660 (owner and group)"},
    {"--token-file", "ONEPATHD_TOKEN_FILE", "FILE",
     "every request must carry the token in FILE (mode 0600 or stricter, 16..256 printable "
     "bytes; docs/security.md); a missing or wrong one is OP_EPERM; default: no token"},
    {"--data-dir", "ONEPATHD_DATA_DIR", "DIR",
     "level files live here (created if missing); without it nothing is persisted"},
    {"--log", "ONEPATHD_LOG", "FILE",
     "request log (one line per request); default stderr; "
     "SIGHUP reopens it"},
    {"--contexts", "ONEPATHD_CONTEXTS", "N", "requests in flight (nng contexts); default 64"},
    {"--threads", "ONEPATHD_THREADS", "N",
     "tile build threads (plus one on-demand build at a time on the thread that received "
     "its tile.get); default: the CPUs the process may use (affinity mask, cgroup CPU quota)"},
    {"--request-threads", "ONEPATHD_REQUEST_THREADS", "N",
     "threads for edits (decode, prepare, persist) and requests over 64 KiB; reads are "
     "answered where they are received; default 4"},
    {"--max-message", "ONEPATHD_MAX_MESSAGE", "BYTES",
     "largest request; a larger one drops its connection; default 64M (K, M, G suffixes)"},
    {"--max-unpacked", "ONEPATHD_MAX_UNPACKED", "BYTES",
     "memory one request may unpack to (24 bytes a msgpack value; bulk data is bin and "
     "costs nothing); a request over it is OP_ELIMIT before it is unpacked; default 128M"},
    {"--max-memory", "ONEPATHD_MAX_MEMORY", "BYTES",
     "memory the levels (geometry, snapshot, an entry for each tile their triangles reach), the "
     "caches and the path meshes may hold together: an edit whose levels and path meshes would "
     "pass it is OP_ELIMIT naming it, and nothing changes; the caches shrink to what is left; "
     "default: the machine's physical memory"},
    {"--max-levels", "ONEPATHD_MAX_LEVELS", "N", "levels held at once; default 256"},
    {"--max-level-verts", "ONEPATHD_MAX_LEVEL_VERTS", "N", "vertices per level; default 16M"},
    {"--max-level-tris", "ONEPATHD_MAX_LEVEL_TRIS", "N", "triangles per level; default 16M"},
    {"--cache-bytes", "ONEPATHD_CACHE_BYTES", "BYTES",
     "tile blobs kept in memory across levels (LRU); default 1G"},
    {"--rebuild-cache-bytes", "ONEPATHD_REBUILD_CACHE_BYTES", "BYTES",
     "tiles' rebuild bases kept in memory across levels (LRU), so that a volume edit "
     "rebuilds its tiles without rasterizing; 0 turns them off; default 256M"},
    {"--compact-bytes", "ONEPATHD_COMPACT_BYTES", "BYTES",
     "a level's journal is compacted into a new snapshot, in the background, once it holds "
     "more than this and more than the snapshot; default 64M"},
    {"--listen-check-ms", "ONEPATHD_LISTEN_CHECK_MS", "MS",
     "every MS, check that each ipc:// and tcp:// listener still takes new connections (a "
     "test connection), and restart one that stopped (nng 1.5.2 defect, protocol §1.7); 0 "
     "turns it off; default 1000"},
    {"--drain-ms", "ONEPATHD_DRAIN_MS", "MS",
     "on SIGTERM, longest wait for requests in flight; default 30000"},
    {"--http", "ONEPATHD_HTTP", "HOST:PORT",
     "serve the viewer (a 3D page of the levels) and POST /rpc over HTTP on HOST:PORT, e.g. "
     "127.0.0.1:7412 (docs/spec/http.md); off by default; a loopback address unless "
     "--http-remote"},
    {"--http-remote", "ONEPATHD_HTTP_REMOTE", NULL,
     "let --http and --metrics listen on a non-loopback address (they have no "
     "authentication)"},
    {"--http-edit", "ONEPATHD_HTTP_EDIT", NULL,
     "let the page put and drop volumes (volume.put, volume.drop); without it HTTP is "
     "read-only"},
    {"--http-root", "ONEPATHD_HTTP_ROOT", "DIR",
     "the viewer's files; default share/onepath/www beside the binary's directory"},
    {"--http-three", "ONEPATHD_HTTP_THREE", "DIR",
     "three.js, served as /three/ (Debian's libjs-three); default /usr/share/javascript/three"},
    {"--metrics", "ONEPATHD_METRICS", "HOST:PORT",
     "serve Prometheus metrics at http://HOST:PORT/metrics; off by default; a loopback "
     "address unless --http-remote"},
    {"--log-format", "ONEPATHD_LOG_FORMAT", "text|json",
     "log lines as text (default) or one JSON object per line"},
    {"--no-fsync", "ONEPATHD_NO_FSYNC", NULL,
     "skip fsync (tests on tmpfs only: an acknowledged edit may be lost on power loss)"},
    {"--help", NULL, NULL, "print this help"},
    {"--version", NULL, NULL, "print the version"},
};

#define NOPTS (sizeof opts / sizeof opts[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: onepathd [OPTIONS]\n\nServes navmesh tiles of resident levels over nng "
               "request/reply (docs/spec/protocol.md).\n\noptions (each also read from its "
               "environment variable; a flag wins):\n");
    for (size_t i = 0; i < NOPTS; i++) {
        char left[64];
        snprintf(left, sizeof left, "%s%s%s", opts[i].flag, opts[i].arg ? " " : "",
                 opts[i].arg ? opts[i].arg : "");
        fprintf(f, "  %-24s %s\n", left, opts[i].help);
        if (opts[i].env)
            fprintf(f, "  %-24s   env %s\n", "", opts[i].env);
    }
    fprintf(f, "\nsignals: SIGTERM/SIGINT stop accepting, finish requests in flight, exit 0;"
               "\n         SIGHUP reopens the --log file.\n");
}

static int parse_size(const char *flag, const char *text, size_t lo, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    unsigned long long mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm')
        mul = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g')
        mul = 1ull << 30, end++;
    if (end == text || *end || errno || text[0] == '-' || v > (~0ull) / mul || v * mul < lo) {
        fprintf(stderr, "onepathd: %s wants a number >= %zu (K, M, G suffixes), got '%s'\n", flag,
                lo, text);
        return -1;
    }
    *out = (size_t)(v * mul);
    return 0;
}

static int parse_int(const char *flag, const char *text, int lo, int hi, int *out)
{
    size_t v;
    if (parse_size(flag, text, (size_t)lo, &v) || v > (size_t)hi) {
        fprintf(stderr, "onepathd: %s wants %d..%d\n", flag, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int apply(opd_config *c, int *drain_ms, const char *flag, const char *v)
{
    if (!strcmp(flag, "--listen")) {
        if (c->nlisten >= OPD_MAX_LISTEN) {
            fprintf(stderr, "onepathd: at most %d --listen URLs\n", OPD_MAX_LISTEN);
            return -1;
        }
        c->listen[c->nlisten++] = v;
        return 0;
    }
    if (!strcmp(flag, "--socket-mode")) {
        char *end;
        errno = 0;
        long m = strtol(v, &end, 8);
        if (end == v || *end || errno || m < 0 || m > 0777) {
            fprintf(stderr, "onepathd: --socket-mode wants octal 0..0777, got '%s'\n", v);
            return -1;
        }
        return c->socket_mode = (int)m, 0;
    }
    if (!strcmp(flag, "--token-file"))
        return c->token_file = v, 0;
    if (!strcmp(flag, "--data-dir"))
        return c->data_dir = v, 0;
    if (!strcmp(flag, "--log"))
        return c->log_path = v, 0;
    if (!strcmp(flag, "--contexts"))
        return parse_int(flag, v, 1, 4096, &c->contexts);
    if (!strcmp(flag, "--threads"))
        return parse_int(flag, v, 1, 256, &c->threads);
    if (!strcmp(flag, "--request-threads"))
        return parse_int(flag, v, 1, 256, &c->request_threads);
    if (!strcmp(flag, "--max-message"))
        return parse_size(flag, v, 1024, &c->max_message);
    if (!strcmp(flag, "--max-memory"))
        return parse_size(flag, v, 1 << 20, &c->max_memory);
    if (!strcmp(flag, "--max-unpacked"))
        return parse_size(flag, v, 1024, &c->max_unpacked);
    if (!strcmp(flag, "--max-levels"))
        return parse_int(flag, v, 1, 1 << 20, &c->max_levels);
    if (!strcmp(flag, "--max-level-verts"))
        return parse_size(flag, v, 0, &c->max_level_verts);
    if (!strcmp(flag, "--max-level-tris"))
        return parse_size(flag, v, 0, &c->max_level_tris);
    if (!strcmp(flag, "--cache-bytes"))
        return parse_size(flag, v, 0, &c->cache_bytes);
    if (!strcmp(flag, "--rebuild-cache-bytes"))
        return parse_size(flag, v, 0, &c->rebuild_cache_bytes);
    if (!strcmp(flag, "--compact-bytes"))
        return parse_size(flag, v, 0, &c->compact_bytes);
    if (!strcmp(flag, "--listen-check-ms"))
        return parse_int(flag, v, 0, 3600000, &c->listen_check_ms);
    if (!strcmp(flag, "--drain-ms"))
        return parse_int(flag, v, 0, 3600000, drain_ms);
    if (!strcmp(flag, "--no-fsync"))
        return c->no_fsync = 1, 0;
    if (!strcmp(flag, "--http"))
        return c->http = v, 0;
    if (!strcmp(flag, "--http-remote"))
        return c->http_remote = 1, 0;
    if (!strcmp(flag, "--http-edit"))
        return c->http_edit = 1, 0;
    if (!strcmp(flag, "--http-root"))
        return c->http_root = v, 0;
    if (!strcmp(flag, "--http-three"))
        return c->http_three = v, 0;
    if (!strcmp(flag, "--metrics"))
        return c->metrics = v, 0;
    if (!strcmp(flag, "--log-format")) {
        if (strcmp(v, "text") && strcmp(v, "json")) {
            fprintf(stderr, "onepathd: --log-format wants text or json, got '%s'\n", v);
            return -1;
        }
        return c->log_json = !strcmp(v, "json"), 0;
    }
    return -1;
}

/* --http and --metrics: HOST:PORT, loopback unless --http-remote (refused before
 * anything starts). */
static int check_http(const opd_config *c)
{
    const char *flag[2] = {"--http", "--metrics"}, *v[2] = {c->http, c->metrics};
    for (int i = 0; i < 2; i++) {
        char url[300];
        int loopback;
        if (!v[i])
            continue;
        if (opd_http_addr(v[i], url, sizeof url, &loopback) != 0) {
            fprintf(stderr, "onepathd: %s wants HOST:PORT (e.g. 127.0.0.1:7412), got '%s'\n",
                    flag[i], v[i]);
            return 2;
        }
        if (!loopback && !c->http_remote) {
            fprintf(stderr,
                    "onepathd: %s %s is not a loopback address; it has no authentication: "
                    "add --http-remote to serve it anyway\n",
                    flag[i], v[i]);
            return 2;
        }
    }
    return 0;
}

/* Environment first (ONEPATHD_LISTEN may hold several URLs), flags after: a flag wins
 * because it is applied last (--listen flags replace the env's URLs). */
static int configure(opd_config *c, int *drain_ms, int argc, char **argv, char *env_listen)
{
    int ncpu = op_cpu_count(); /* affinity and cgroup quota (a pod's CPU limit) */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    *c = (opd_config){.socket_mode = 0660,
                      .listen_check_ms = 1000,
                      .contexts = 64,
                      .threads = ncpu > 256 ? 256 : ncpu,
                      .request_threads = 4,
                      .max_message = (size_t)64 << 20,
                      .max_unpacked = (size_t)128 << 20,
                      .max_memory =
                          pages > 0 && page > 0 ? (size_t)pages * (size_t)page : (size_t)1 << 32,
                      .max_levels = 256,
                      .max_level_verts = (size_t)16 << 20,
                      .max_level_tris = (size_t)16 << 20,
                      .cache_bytes = (size_t)1 << 30,
                      .rebuild_cache_bytes = (size_t)256 << 20,
                      .compact_bytes = (size_t)64 << 20,
                      .http_three = "/usr/share/javascript/three"};
    *drain_ms = 30000;
    for (size_t i = 0; i < NOPTS; i++) {
        const char *v = opts[i].env ? getenv(opts[i].env) : NULL;
        if (!v || !*v || !strcmp(opts[i].flag, "--listen"))
            continue;
        if (!opts[i].arg && strcmp(v, "1"))
            continue;
        if (apply(c, drain_ms, opts[i].flag, v)) {
            fprintf(stderr, "onepathd: bad %s\n", opts[i].env);
            return 2;
        }
    }
    for (char *tok = env_listen ? strtok(env_listen, " ,") : NULL; tok; tok = strtok(NULL, " ,"))
        if (apply(c, drain_ms, "--listen", tok))
            return 2;
    int flag_listen = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--version")) {
            printf("onepathd %s (protocol %d)\n", OPD_VERSION, OP_PROTOCOL_VERSION);
            return 1;
        }
        const opt *o = NULL;
        for (size_t k = 0; k < NOPTS && !o; k++)
            if (!strcmp(a, opts[k].flag))
                o = &opts[k];
        if (!o || (o->arg && i + 1 >= argc)) {
            fprintf(stderr, "onepathd: unknown or incomplete option '%s' (see --help)\n", a);
            return 2;
        }
        if (!strcmp(a, "--listen") && !flag_listen++)
            c->nlisten = 0;
        if (apply(c, drain_ms, a, o->arg ? argv[++i] : NULL))
            return 2;
    }
    if (c->nlisten == 0)
        c->listen[c->nlisten++] = "tcp://127.0.0.1:7411";
    if (c->token_file) {
        /* Read once, before anything listens: a token file others may read is refused, so
         * a mistake in its mode stops the daemon instead of leaking the token. */
        op_err e;
        op_err_clear(&e);
        if (op_token_read_file(c->token_file, c->token, &c->token_len, &e) != OP_OK) {
            fprintf(stderr, "onepathd: --token-file: %s (%s)\n", e.msg, op_status_name(e.status));
            return 2;
        }
    }
    return check_http(c);
}

/* ===== the loop ===== */

typedef struct loop_state {
    opd_daemon *d;
    uv_loop_t loop;
    uv_signal_t sigterm, sigint, sighup;
    uv_async_t wake;
    uv_timer_t deadline, drain;
    uint64_t drain_start_ms;
    int drain_ms;
    int drained;
    int lock_fd; /* the data directory's lock, held for the process's life */
} loop_state;

static void on_deadline(uv_timer_t *t);

static void arm_deadline(loop_state *ls)
{
    int64_t now = (int64_t)opd_now_ns();
    int64_t next = opd_changes_expire(ls->d, now);
    if (next > 0) {
        uint64_t ms = (uint64_t)((next - now + 999999) / 1000000);
        uv_timer_start(&ls->deadline, on_deadline, ms ? ms : 1, 0);
    }
}

static void on_deadline(uv_timer_t *t)
{
    arm_deadline(t->data);
}

static void close_all(loop_state *ls)
{
    uv_close((uv_handle_t *)&ls->sigterm, NULL);
    uv_close((uv_handle_t *)&ls->sigint, NULL);
    uv_close((uv_handle_t *)&ls->sighup, NULL);
    uv_close((uv_handle_t *)&ls->wake, NULL);
    uv_close((uv_handle_t *)&ls->deadline, NULL);
    uv_close((uv_handle_t *)&ls->drain, NULL);
}

static void on_drain(uv_timer_t *t)
{
    loop_state *ls = t->data;
    opd_changes_expire(ls->d, (int64_t)opd_now_ns()); /* answers every long poll */
    int left = atomic_load(&ls->d->inflight);
    if (left == 0 || uv_now(&ls->loop) - ls->drain_start_ms >= (uint64_t)ls->drain_ms) {
        ls->drained = left == 0;
        if (left)
            opd_log(ls->d, "OP-DRAIN-TIMEOUT %d requests still in flight", left);
        uv_timer_stop(t);
        close_all(ls);
    }
}

static void on_wake(uv_async_t *a)
{
    loop_state *ls = a->data;
    if (atomic_load(&ls->d->stopping))
        on_drain(&ls->drain);
    else
        arm_deadline(ls);
}

static void on_stop_signal(uv_signal_t *s, int signum)
{
    loop_state *ls = s->data;
    if (atomic_exchange(&ls->d->stopping, 1))
        return;
    opd_log(ls->d, "OP-STOP signal %d: draining %d requests", signum,
            atomic_load(&ls->d->inflight));
    ls->drain_start_ms = uv_now(&ls->loop);
    uv_timer_start(&ls->drain, on_drain, 0, 10);
}

/* The log is the operator's file: created 0600 whatever the umask (an existing one keeps
 * its mode), and only ever a regular file. */
static FILE *open_log_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0600);
    struct stat sb;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        errno = EINVAL;
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "a");
    if (!f)
        close(fd);
    return f;
}

static void on_hup(uv_signal_t *s, int signum)
{
    (void)signum;
    loop_state *ls = s->data;
    opd_daemon *d = ls->d;
    if (!d->cfg.log_path)
        return;
    FILE *f = open_log_file(d->cfg.log_path);
    pthread_mutex_lock(&d->log_mu);
    if (f) {
        if (d->log)
            fclose(d->log);
        d->log = f;
    }
    pthread_mutex_unlock(&d->log_mu);
    opd_log(d, f ? "OP-LOG-REOPEN %s" : "OP-LOG-REOPEN-FAILED %s", d->cfg.log_path);
}

static int loop_init(loop_state *ls, opd_daemon *d)
{
    memset(ls, 0, sizeof *ls);
    ls->d = d;
    if (uv_loop_init(&ls->loop))
        return -1;
    uv_signal_init(&ls->loop, &ls->sigterm);
    uv_signal_init(&ls->loop, &ls->sigint);
    uv_signal_init(&ls->loop, &ls->sighup);
    uv_async_init(&ls->loop, &ls->wake, on_wake);
    uv_timer_init(&ls->loop, &ls->deadline);
    uv_timer_init(&ls->loop, &ls->drain);
    ls->sigterm.data = ls->sigint.data = ls->sighup.data = ls;
    ls->wake.data = ls->deadline.data = ls->drain.data = ls;
    uv_signal_start(&ls->sigterm, on_stop_signal, SIGTERM);
    uv_signal_start(&ls->sigint, on_stop_signal, SIGINT);
    uv_signal_start(&ls->sighup, on_hup, SIGHUP);
    d->loop = &ls->loop;
    d->wake = &ls->wake;
    return 0;
}

/* ===== start-up ===== */

static int open_log(opd_daemon *d)
{
    if (!d->cfg.log_path)
        return 0;
    d->log = open_log_file(d->cfg.log_path);
    if (!d->log) {
        fprintf(stderr, "onepathd: cannot open log %s: %s\n", d->cfg.log_path, strerror(errno));
        return -1;
    }
    return 0;
}

/* One daemon a data directory: two would each replay, append and compact the same files
 * and lose each other's acknowledged edits. The lock is an flock on DIR/.onepathd.lock
 * (a dot name: never a level), held until the process ends; the file holds the holder's
 * pid so that the second daemon can name it. */
static int lock_data_dir(const char *dir, int *lock_fd)
{
    char path[OPD_PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/.onepathd.lock", dir);
    if (n < 0 || (size_t)n >= sizeof path) {
        fprintf(stderr, "onepathd: data dir path %s is too long\n", dir);
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "onepathd: cannot open lock file %s: %s\n", path,
                fd < 0 || errno ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char pid[32] = "";
        ssize_t r = pread(fd, pid, sizeof pid - 1, 0);
        pid[r > 0 ? r : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        if (e == EWOULDBLOCK)
            fprintf(stderr,
                    "onepathd: data dir %s is in use by another onepathd (pid %s, lock %s)\n", dir,
                    pid[0] ? pid : "unknown", path);
        else
            fprintf(stderr, "onepathd: cannot lock %s: %s\n", path, strerror(e));
        close(fd);
        return -1;
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
        fprintf(stderr, "onepathd: cannot write lock file %s: %s\n", path, strerror(errno));
        close(fd);
        return -1;
    }
    *lock_fd = fd;
    return 0;
}

static int make_data_dir(const char *dir, int *lock_fd)
{
    if (!dir)
        return 0;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "onepathd: cannot create %s: %s\n", dir, strerror(errno));
        return -1;
    }
    if (access(dir, W_OK) != 0) {
        fprintf(stderr, "onepathd: %s is not writable: %s\n", dir, strerror(errno));
        return -1;
    }
    return lock_data_dir(dir, lock_fd);
}

static int start(opd_daemon *d, loop_state *ls)
{
    op_err err;
    op_err_clear(&err);
    op_mp_limits_default(&d->limits);
    d->limits.max_bytes = d->cfg.max_message;
    d->limits.max_unpacked = d->cfg.max_unpacked;
    d->limits.unpacked_name = "--max-unpacked";
    d->start_ns = opd_now_ns();
    if (make_data_dir(d->cfg.data_dir, &ls->lock_fd) || open_log(d) || loop_init(ls, d))
        return -1;
    d->requests = opd_pool_create(d->cfg.request_threads);
    d->background = opd_pool_create(1);
    d->builder = opd_builder_create(d->cfg.threads);
    d->cache =
        opd_cache_create(d->cfg.cache_bytes, opd_blobs_free_data, &d->stats, OPD_CACHE_BLOBS);
    d->rebuild = opd_cache_create(d->cfg.rebuild_cache_bytes, opd_tile_base_free_data, &d->stats,
                                  OPD_CACHE_BASES);
    d->reg = opd_registry_create(d);
    d->navmeshes = opd_navmeshes_create();
    if (!d->requests || !d->background || !d->builder || !d->cache || !d->rebuild || !d->reg ||
        !d->navmeshes) {
        fprintf(stderr, "onepathd: out of memory starting\n");
        return -1;
    }
    opd_edit_load_all(d);
    if (opd_transport_start(d, &err) != 0) {
        opd_log(d, "OP-START-FAILED %s", err.msg);
        return -1;
    }
    for (int i = 0; i < d->cfg.nlisten; i++)
        opd_log(d, "OP-LISTEN %s", d->cfg.listen[i]);
    if (opd_http_start(d, &err) != 0 || opd_metrics_start(d, &err) != 0) {
        opd_log(d, "OP-START-FAILED %s", err.msg);
        return -1;
    }
    opd_log(d, "OP-READY onepathd %s: %d contexts, %d build threads, data %s, token %s",
            OPD_VERSION, d->cfg.contexts, d->cfg.threads,
            d->cfg.data_dir ? d->cfg.data_dir : "(none)",
            d->cfg.token_len ? "required" : "not required");
    return 0;
}

int main(int argc, char **argv)
{
    opd_daemon *d = calloc(1, sizeof *d);
    loop_state *ls = calloc(1, sizeof *ls);
    char *env_listen = getenv("ONEPATHD_LISTEN") ? strdup(getenv("ONEPATHD_LISTEN")) : NULL;
    int drain_ms;
    if (!d || !ls)
        return 1;
    ls->lock_fd = -1;
    int rc = configure(&d->cfg, &drain_ms, argc, argv, env_listen);
    if (rc) {
        free(env_listen);
        free(ls);
        free(d);
        return rc == 1 ? 0 : 2;
    }
    signal(SIGPIPE, SIG_IGN);
    /* Nothing onepathd creates is for other users: files are made with explicit modes
     * (data 0600, directories 0700) and sockets get --socket-mode by chmod. */
    umask(077);
    pthread_mutex_init(&d->log_mu, NULL);
    pthread_mutex_init(&d->calls_mu, NULL);
    atomic_init(&d->armed, 0);
    opd_stats_init(&d->stats);
    atomic_init(&d->stopping, 0);
    atomic_init(&d->inflight, 0);
    if (start(d, ls) != 0)
        return 1;
    ls->drain_ms = drain_ms;
    uv_run(&ls->loop, UV_RUN_DEFAULT);
    d->wake = NULL;
    if (!ls->drained) {
        /* Calls still in flight own memory the teardown would free: just leave. */
        opd_log(d, "OP-EXIT without teardown");
        return 0;
    }
    opd_http_stop(d);
    opd_metrics_stop(d);
    if (opd_transport_stop(d) != 0)
        return 0; /* logged; nng may still call into what the teardown would free */
    opd_builder_destroy(d->builder);
    opd_pool_destroy(d->requests);
    opd_pool_destroy(d->background);     /* a compaction under way ends (queued ones give up) */
    opd_navmeshes_destroy(d->navmeshes); /* before the levels it references */
    opd_registry_destroy(d->reg);
    opd_cache_destroy(d->cache);
    opd_cache_destroy(d->rebuild);
    uv_loop_close(&ls->loop);
    opd_log(d, "OP-EXIT clean");
    if (d->log)
        fclose(d->log);
    if (ls->lock_fd >= 0)
        close(ls->lock_fd);
    opd_stats_fini(&d->stats);
    pthread_mutex_destroy(&d->log_mu);
    free(env_listen);
    free(ls);
    free(d);
    return 0;
}
