/*
 * onepathd-bench: tile.get latency and throughput of onepathd, and the RPC overhead
 * against building the same tiles in-process. Starts its own onepathd (next to this
 * binary) on an ipc:// socket and a loopback tcp:// port, uploads one level, then:
 *   1. cached tile.get latency (p50, p99) over ipc and tcp;
 *   2. on-demand builds: a second daemon with --cache-bytes 0 builds every tile.get (a
 *      pass asks for each tile with layers once, in order, so each asked tile is not the
 *      newest cache entry, the only one kept: nothing but the build and the RPC is
 *      timed); its time against op_level_build_stages + op_tile_encode (with the hash)
 *      of the same tiles in this process, best of reps each (the ratio is the RPC
 *      overhead);
 *   3. throughput of cached tile.get with 1, 4 and 16 concurrent clients (ipc);
 *   4. a whole level over tile.range (ipc): level.drop + level.put of the level, then
 *      tile.range calls (after = the previous next) until every tile of the level's range
 *      has come back, against op_level_create + build + encode of every tile of the range
 *      in this process (one thread), alternating, best and median of reps each; with
 *      plain pages and with waiting pages (wait_ms, protocol §4 rule 2a).
 *   5. the floor under the on-demand overhead, in the same run: a bare nng REQ/REP exchange
 *      in this process (nng_rtt.c's: an echo thread, 16 bytes each way) whose echo first
 *      spins as long as the tile's in-process build took, one exchange per tile in every
 *      rep, and the same exchange without the spin.
 * Beside the wall times, the CPU time of each side (this process's, every thread, and the
 * daemon's, every thread, from /proc): on a shared machine far steadier than wall time.
 * Figures for docs/benchmarks.md. The machine is shared: run it on a quiet one.
 */
#include <dirent.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "onepath/build.h"
#include "onepath/client.h"
#include "onepath/levelgen.h"
#include "onepath/obj.h"
#include "onepath/tile_codec.h"

#define TIMEOUT_MS 60000

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* CPU time of this process, every thread (the client's nng threads too), in us. */
static double self_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* CPU time of every thread of process pid so far, in us (the first field of each
 * /proc/PID/task/TID/schedstat: ns on a CPU; threads that ended are not counted). On a
 * loaded machine a wall time counts the waits for a CPU too; this does not. */
static double process_cpu_us(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    double us = 0;
    struct dirent *de;
    while (dir && (de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char f[600];
        snprintf(f, sizeof f, "%s/%s/schedstat", path, de->d_name);
        FILE *fp = fopen(f, "r");
        unsigned long long ns = 0;
        if (fp && fscanf(fp, "%llu", &ns) == 1)
            us += (double)ns / 1e3;
        if (fp)
            fclose(fp);
    }
    if (dir)
        closedir(dir);
    return us;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i];
}

static pid_t start_daemon(const char *self, const char *dir, const char *tag, const char *urls[2],
                          const char *cache)
{
    char bin[4096], data[4096], log[4096];
    snprintf(bin, sizeof bin, "%.*s/onepathd", (int)(strrchr(self, '/') - self), self);
    snprintf(data, sizeof data, "%s/data-%s", dir, tag);
    snprintf(log, sizeof log, "%s/%s.log", dir, tag);
    pid_t pid = fork();
    if (pid == 0) {
        execl(bin, bin, "--listen", urls[0], "--listen", urls[1], "--data-dir", data, "--log", log,
              "--no-fsync", "--cache-bytes", cache, (char *)NULL);
        perror(bin);
        _exit(127);
    }
    return pid;
}

static void stop_daemon(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

typedef struct level_in {
    op_soup soup;
    op_level *lvl;
    int ntiles, *tx, *tz; /* tiles with layers */
    size_t *bytes;        /* their blobs' size */
} level_in;

static int load(const char *spec, op_arena *a, level_in *li)
{
    op_err e;
    op_status st;
    if (!strncmp(spec, "gen:", 4)) {
        char kind[32];
        int size;
        if (sscanf(spec + 4, "%31[a-z]:%d", kind, &size) != 2)
            return fprintf(stderr, "bad level %s\n", spec), 1;
        st = op_levelgen(kind, size, 1, a, &li->soup, &e);
    } else {
        st = op_obj_read_file(spec, a, &li->soup, &e);
    }
    op_settings s;
    op_settings_default(&s);
    if (st != OP_OK || op_level_create(&li->soup, &s, NULL, 0, &li->lvl, &e) != OP_OK)
        return fprintf(stderr, "%s: %s\n", spec, e.msg), 1;
    return 0;
}

/* Builds and encodes tile (tx, tz) as the daemon does (hash included); its layer count. */
/* Builds and encodes one tile: its layer count; *bytes (when not NULL) its blobs' size. */
static int build_encode_n(op_level *lvl, int tx, int tz, op_arena *out, op_arena *scratch,
                          size_t *bytes)
{
    op_arena_reset(out);
    op_arena_reset(scratch);
    op_tile_stages st;
    op_err e;
    if (op_level_build_stages(lvl, tx, tz, OP_STAGE_TILE, 0, out, scratch, &st, &e) != OP_OK)
        exit((fprintf(stderr, "%s\n", e.msg), 1));
    for (int k = 0; k < st.ntiles; k++) {
        op_bytes b;
        uint64_t h;
        if (op_tile_encode(&st.tiles[k], &b, &h, &e) != OP_OK)
            exit((fprintf(stderr, "%s\n", e.msg), 1));
        if (bytes)
            *bytes += b.len;
        op_bytes_free(&b);
    }
    return st.ntiles;
}

static int build_encode(op_level *lvl, int tx, int tz, op_arena *out, op_arena *scratch)
{
    return build_encode_n(lvl, tx, tz, out, scratch, NULL);
}

/* Finds the tiles with layers (one pass over every tile, which also warms the level). */
static void find_tiles(level_in *li, op_arena *out, op_arena *scratch)
{
    op_tile_range r = op_level_tiles(li->lvl);
    int n = op_level_tile_count(li->lvl);
    li->tx = calloc((size_t)n, sizeof(int));
    li->tz = calloc((size_t)n, sizeof(int));
    li->bytes = calloc((size_t)n, sizeof(size_t));
    li->ntiles = 0;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++)
            if (build_encode_n(li->lvl, tx, tz, out, scratch, &li->bytes[li->ntiles]) > 0) {
                li->tx[li->ntiles] = tx;
                li->tz[li->ntiles++] = tz;
            }
}

/* In-process build + encode of the pass's tile i alone, in us. */
static double build_encode_us(const level_in *li, int i, op_arena *out, op_arena *scratch)
{
    double t0 = now_us();
    build_encode(li->lvl, li->tx[i], li->tz[i], out, scratch);
    return now_us() - t0;
}

/* In-process reference: build + encode of exactly the tiles an on-demand pass fetches. */
static double inprocess_pass(const level_in *li, op_arena *out, op_arena *scratch, double *best)
{
    double t0 = now_us();
    for (int i = 0; i < li->ntiles; i++) {
        double t1 = now_us();
        build_encode(li->lvl, li->tx[i], li->tz[i], out, scratch);
        double us = now_us() - t1;
        best[i] = us < best[i] ? us : best[i];
    }
    return now_us() - t0;
}

/* The bare exchange of nng_rtt.c in this process, the echo spinning spin_us before each
 * reply (a build's wait with no onepath code on either side) and replying reply_bytes
 * (a tile's blobs: the size of its tile.get reply, less about 100 bytes of msgpack). */
typedef struct bare {
    nng_socket rep, req;
    pthread_t th;
    _Atomic double spin_us;
    atomic_size_t reply_bytes;
} bare;

static void *bare_echo(void *arg)
{
    bare *b = arg;
    nng_msg *m;
    while (nng_recvmsg(b->rep, &m, 0) == 0) {
        double t0 = now_us(), spin = atomic_load(&b->spin_us);
        while (now_us() - t0 < spin) {
        }
        size_t n = atomic_load(&b->reply_bytes);
        if (n > nng_msg_len(m)) { /* a reply of the tile's size, written like a packed one */
            nng_msg *r;
            if (nng_msg_alloc(&r, n) == 0) {
                memset(nng_msg_body(r), 0x5a, n);
                nng_msg_header_append(r, nng_msg_header(m), nng_msg_header_len(m));
                nng_msg_free(m);
                m = r;
            }
        }
        if (nng_sendmsg(b->rep, m, 0) != 0)
            nng_msg_free(m);
    }
    return NULL;
}

static void bare_open(bare *b, const char *url)
{
    int rv;
    atomic_init(&b->spin_us, 0.0);
    atomic_init(&b->reply_bytes, 0);
    if ((rv = nng_rep0_open(&b->rep)) != 0 || (rv = nng_listen(b->rep, url, NULL, 0)) != 0 ||
        (rv = nng_req0_open(&b->req)) != 0 || (rv = nng_dial(b->req, url, NULL, 0)) != 0)
        exit((fprintf(stderr, "bare exchange %s: %s\n", url, nng_strerror(rv)), 1));
    pthread_create(&b->th, NULL, bare_echo, b);
}

/* One exchange: its time less the echo's spin, in us. */
static double bare_once(bare *b, double spin_us, size_t reply_bytes)
{
    char buf[16] = "ping", *r = NULL;
    size_t sz = 0;
    atomic_store(&b->spin_us, spin_us);
    atomic_store(&b->reply_bytes, reply_bytes);
    double t0 = now_us();
    int rv = nng_send(b->req, buf, sizeof buf, 0);
    if (rv == 0)
        rv = nng_recv(b->req, &r, &sz, NNG_FLAG_ALLOC);
    if (rv != 0)
        exit((fprintf(stderr, "bare exchange: %s\n", nng_strerror(rv)), 1));
    nng_free(r, sz);
    return now_us() - t0 - spin_us;
}

static void bare_close(bare *b)
{
    nng_close(b->req);
    nng_close(b->rep);
    pthread_join(b->th, NULL);
}

/* The on-demand daemon's own time of each tile.get (its request log: from the request's
 * receipt to its reply handed to nng, "tile.get level=bench ms=M ok"), best per tile over
 * the reps' ipc and tcp passes (the log holds them in order: a rep is an ipc pass, then a
 * tcp pass, of ntiles gets each). Sum of the bests, in us; 0 when the log cannot be read. */
static double daemon_side_us(const char *log, int ntiles, int reps, const double *ipc_each,
                             double *paired_median)
{
    double *diff = malloc((size_t)reps * ntiles * sizeof *diff);
    int nd = 0;
    *paired_median = 0;
    FILE *f = fopen(log, "r");
    double *best = malloc((size_t)ntiles * sizeof *best), sum = 0;
    if (!f || !best) {
        if (f)
            fclose(f);
        free(best);
        free(diff);
        return 0;
    }
    for (int i = 0; i < ntiles; i++)
        best[i] = 1e30;
    char line[512];
    long k = 0;
    while (fgets(line, sizeof line, f) && k < 2L * ntiles * reps) {
        const char *m = strstr(line, "tile.get level=bench ms=");
        if (!m)
            continue;
        double us = atof(m + strlen("tile.get level=bench ms=")) * 1e3;
        long r = k / (2L * ntiles), j = k % (2L * ntiles); /* rep r: ipc gets, then tcp */
        int i = (int)(k++ % ntiles);
        best[i] = us < best[i] ? us : best[i];
        if (diff && j < ntiles)
            diff[nd++] = ipc_each[r * ntiles + j] - us;
    }
    fclose(f);
    if (diff && nd == reps * ntiles)
        *paired_median = pct(diff, nd, 0.5);
    free(diff);
    for (int i = 0; i < ntiles; i++)
        sum += best[i] < 1e30 ? best[i] : 0;
    free(best);
    return k == 2L * ntiles * reps ? sum : 0;
}

static op_client *open_ready(const char *url)
{
    op_client *c;
    op_err e;
    if (op_client_open(url, &c, &e) != OP_OK)
        exit((fprintf(stderr, "%s\n", e.msg), 1));
    op_client_ping_result p;
    if (op_client_ping(c, 10000, &p, &e) != OP_OK)
        exit((fprintf(stderr, "ping %s: %s\n", url, e.msg), 1));
    return c;
}

static void put_level(op_client *c, const level_in *li)
{
    op_client_mesh m = {"level",       li->soup.verts,        li->soup.verts_len / 3,
                        li->soup.tris, li->soup.tris_len / 3, li->soup.areas};
    uint64_t v;
    int changed;
    op_err e;
    if (op_client_level_put(c, "bench", NULL, 0, &m, 1, TIMEOUT_MS, &v, &changed, &e) != OP_OK)
        exit((fprintf(stderr, "level.put: %s\n", e.msg), 1));
}

static double get_us(op_client *c, int tx, int tz)
{
    op_client_tile t;
    op_err e;
    double t0 = now_us();
    if (op_client_tile_get(c, "bench", tx, tz, TIMEOUT_MS, &t, &e) != OP_OK)
        exit((fprintf(stderr, "tile.get: %s\n", e.msg), 1));
    double us = now_us() - t0;
    op_client_tile_free(&t);
    return us;
}

static void latency(const char *what, op_client *c, const level_in *li, int n)
{
    double *v = malloc((size_t)n * sizeof *v);
    for (int i = 0; i < li->ntiles; i++) /* warm every tile once */
        get_us(c, li->tx[i], li->tz[i]);
    for (int i = 0; i < n; i++)
        v[i] = get_us(c, li->tx[i % li->ntiles], li->tz[i % li->ntiles]);
    printf("%-34s p50 %8.1f us   p99 %8.1f us   (%d gets)\n", what, pct(v, n, 0.5), pct(v, n, 0.99),
           n);
    free(v);
}

typedef struct tp_arg {
    const char *url;
    const level_in *li;
    int n, seed;
} tp_arg;

static void *tp_main(void *p)
{
    tp_arg *a = p;
    op_client *c = open_ready(a->url);
    for (int i = 0; i < a->n; i++) {
        int k = (i * 7 + a->seed) % a->li->ntiles;
        get_us(c, a->li->tx[k], a->li->tz[k]);
    }
    op_client_close(c);
    return NULL;
}

static void throughput(const char *url, const level_in *li, int clients, int per_client)
{
    pthread_t th[16];
    tp_arg args[16];
    double t0 = now_us();
    for (int i = 0; i < clients; i++) {
        args[i] = (tp_arg){url, li, per_client, i * 13};
        pthread_create(&th[i], NULL, tp_main, &args[i]);
    }
    for (int i = 0; i < clients; i++)
        pthread_join(th[i], NULL);
    double s = (now_us() - t0) / 1e6;
    printf("throughput, %2d clients (ipc)       %8.0f tile.get/s (%d gets)\n", clients,
           clients * per_client / s, clients * per_client);
}

/* Waits until the daemon's background bake of the bench level has ended. */
static void wait_baked(op_client *c)
{
    for (;;) {
        op_client_level_info li;
        op_err e;
        if (op_client_level_info_get(c, "bench", TIMEOUT_MS, &li, &e) != OP_OK)
            exit((fprintf(stderr, "level.info: %s\n", e.msg), 1));
        if (!li.bake_running && li.tiles_built == li.tiles_total)
            return;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
}

/* A pass of on-demand gets; each get's time also to each (when not NULL). */
static double ondemand_pass(op_client *c, const level_in *li, double *best, double *each)
{
    double t0 = now_us();
    for (int i = 0; i < li->ntiles; i++) {
        double us = get_us(c, li->tx[i], li->tz[i]);
        best[i] = us < best[i] ? us : best[i];
        if (each)
            each[i] = us;
    }
    return now_us() - t0;
}

/* In-process reference of a whole-level fetch: the level prepared, every tile of its range
 * built and encoded, one thread. */
static double inprocess_level(const level_in *li, op_arena *out, op_arena *scratch)
{
    double t0 = now_us();
    op_settings s;
    op_settings_default(&s);
    op_level *lvl;
    op_err e;
    if (op_level_create(&li->soup, &s, NULL, 0, &lvl, &e) != OP_OK)
        exit((fprintf(stderr, "%s\n", e.msg), 1));
    op_tile_range r = op_level_tiles(lvl);
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++)
            build_encode(lvl, tx, tz, out, scratch);
    double us = now_us() - t0;
    op_level_destroy(lvl);
    return us;
}

/* The daemon's side: the level dropped and put again (so nothing is cached), then every
 * tile fetched with tile.range (wait_ms > 0: waiting pages, protocol §4 rule 2a); returns
 * the time from the put to the last tile. */
static double range_level(op_client *c, const level_in *li, int wait_ms, int *ntiles, int *ncalls,
                          double *put_us)
{
    int dropped;
    op_err e;
    if (op_client_level_drop(c, "bench", TIMEOUT_MS, &dropped, &e) != OP_OK)
        exit((fprintf(stderr, "level.drop: %s\n", e.msg), 1));
    double t0 = now_us();
    put_level(c, li);
    *put_us = now_us() - t0;
    op_tile_range r = op_level_tiles(li->lvl);
    int rect[4] = {r.tx0, r.tz0, r.tx1, r.tz1}, after[2], has_after = 0;
    *ntiles = *ncalls = 0;
    for (;;) {
        op_client_tile_range tr;
        if (op_client_tile_range_wait(c, "bench", rect, has_after ? after : NULL, 0, wait_ms,
                                      TIMEOUT_MS, &tr, &e) != OP_OK)
            exit((fprintf(stderr, "tile.range: %s\n", e.msg), 1));
        *ntiles += tr.ntiles;
        (*ncalls)++;
        has_after = tr.has_next;
        after[0] = tr.next[0];
        after[1] = tr.next[1];
        op_client_tile_range_free(&tr);
        if (!has_after)
            break;
    }
    return now_us() - t0;
}

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1] : OP_BENCH_DEFAULT_LEVEL;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    op_arena *a = op_arena_create(0);
    level_in li = {0};
    if (load(spec, a, &li))
        return 1;
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    find_tiles(&li, out, scratch);
    char dir[] = "/tmp/onepathd-bench-XXXXXX";
    if (!mkdtemp(dir))
        return perror("mkdtemp"), 1;
    char ipc1[256], ipc2[256], tcp1[64], tcp2[64];
    snprintf(ipc1, sizeof ipc1, "ipc://%s/cached.sock", dir);
    snprintf(ipc2, sizeof ipc2, "ipc://%s/ondemand.sock", dir);
    int port = 20000 + (int)(getpid() % 20000);
    snprintf(tcp1, sizeof tcp1, "tcp://127.0.0.1:%d", port);
    snprintf(tcp2, sizeof tcp2, "tcp://127.0.0.1:%d", port + 1);
    const char *u1[2] = {ipc1, tcp1}, *u2[2] = {ipc2, tcp2};
    pid_t cached = start_daemon(argv[0], dir, "cached", u1, "1G");
    pid_t ondemand = start_daemon(argv[0], dir, "ondemand", u2, "0");
    op_client *ci = open_ready(ipc1), *ct = open_ready(tcp1);
    op_client *oi = open_ready(ipc2), *ot = open_ready(tcp2);
    put_level(ci, &li);
    put_level(oi, &li);
    printf("level %s: %d tiles with layers\n", spec, li.ntiles);
    latency("cached tile.get, ipc", ci, &li, 4000);
    latency("cached tile.get, tcp", ct, &li, 4000);
    wait_baked(oi); /* the uncached daemon's background builds of level.put are done */
    /* The three sides alternate in every rep, so a load change on a shared machine hits
     * them alike; best and median of the reps. */
    double *v = malloc(3 * (size_t)reps * sizeof *v);
    double *tile = malloc(3 * (size_t)li.ntiles * sizeof *tile); /* per-tile best, per side */
    for (int i = 0; i < 3 * li.ntiles; i++)
        tile[i] = 1e30;
    /* CPU per pass: in-process (this process), on-demand over ipc (the daemon's threads
     * and this process's, nng's included). */
    double *pc = malloc(2 * (size_t)reps * sizeof *pc);
    /* The floor: per tile, the bare exchange over its wait (each tile's in-process time of
     * this rep), best of the reps, and each rep's sum. */
    char ipc3[300];
    snprintf(ipc3, sizeof ipc3, "ipc://%s/bare.sock", dir);
    bare bx;
    bare_open(&bx, ipc3);
    double *bt = malloc(2 * (size_t)li.ntiles * sizeof *bt), *bt_in = bt + li.ntiles;
    double *bsum = malloc((size_t)reps * sizeof *bsum);
    double *ipc_each = malloc((size_t)reps * li.ntiles * sizeof *ipc_each);
    for (int i = 0; i < li.ntiles; i++)
        bt[i] = 1e30;
    for (int r = 0; r < reps; r++) {
        double c0 = self_cpu_us();
        v[r] = inprocess_pass(&li, out, scratch, tile);
        pc[r] = self_cpu_us() - c0;
        double d0 = process_cpu_us(ondemand);
        c0 = self_cpu_us();
        v[reps + r] = ondemand_pass(oi, &li, tile + li.ntiles, ipc_each + (size_t)r * li.ntiles);
        pc[reps + r] = self_cpu_us() - c0 + process_cpu_us(ondemand) - d0;
        v[2 * reps + r] = ondemand_pass(ot, &li, tile + 2 * li.ntiles, NULL);
        for (int i = 0; i < li.ntiles; i++) /* this rep's in-process time of tile i */
            bt_in[i] = build_encode_us(&li, i, out, scratch);
        bsum[r] = 0;
        for (int i = 0; i < li.ntiles; i++) {
            double us = bare_once(&bx, bt_in[i], li.bytes[i]);
            bsum[r] += us;
            bt[i] = us < bt[i] ? us : bt[i];
        }
    }
    double *plain = malloc(2000 * sizeof *plain);
    for (int i = 0; i < 2000; i++)
        plain[i] = bare_once(&bx, 0, 0);
    double plain_p50 = pct(plain, 2000, 0.5);
    free(plain);
    bare_close(&bx);
    /* Three estimates per side: the best pass, the median pass, and the sum over tiles of
     * each tile's best time (the steadiest under load: a preempted tile does not count). */
    double best[3], med[3], sum[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        med[k] = pct(v + k * reps, reps, 0.5);
        best[k] = v[k * reps];
        for (int i = 0; i < li.ntiles; i++)
            sum[k] += tile[k * li.ntiles + i];
    }
    printf("in-process build+encode, all tiles %8.2f ms  (median %.2f ms; per-tile bests %.2f ms; "
           "%d reps)\n",
           best[0] / 1e3, med[0] / 1e3, sum[0] / 1e3, reps);
    static const char *const via[2] = {"ipc", "tcp"};
    for (int k = 1; k < 3; k++)
        printf("on-demand, all tiles, %s          %8.2f ms  overhead %+.1f%% over in-process "
               "(median %+.1f%%; per-tile bests %.2f ms, %+.1f%%)\n",
               via[k - 1], best[k] / 1e3, 100.0 * (best[k] - best[0]) / best[0],
               100.0 * (med[k] - med[0]) / med[0], sum[k] / 1e3,
               100.0 * (sum[k] - sum[0]) / sum[0]);
    printf(
        "on-demand, per tile, ipc           %8.1f us  (in-process %.1f us; per-tile bests %.1f / "
        "%.1f us)\n",
        best[1] / li.ntiles, best[0] / li.ntiles, sum[1] / li.ntiles, sum[0] / li.ntiles);
    {
        double bsb = 0;
        for (int i = 0; i < li.ntiles; i++)
            bsb += bt[i];
        double od_best = (sum[1] - sum[0]) / li.ntiles, od_med = (med[1] - med[0]) / li.ntiles;
        double fl_best = bsb / li.ntiles, fl_med = pct(bsum, reps, 0.5) / li.ntiles;
        printf("on-demand over in-process, ipc     %+8.1f us a tile (per-tile bests), %+.1f us "
               "(median passes)\n",
               od_best, od_med);
        printf("bare nng exchange, the echo waiting each tile's in-process time and replying its "
               "blobs' size: %+.1f us a tile over the wait (per-tile bests), %+.1f us (median "
               "passes); 16 bytes, no wait: p50 %.1f us\n",
               fl_best, fl_med, plain_p50);
        printf("on-demand overhead / bare exchange with the same wait: %.2f (bests), %.2f "
               "(medians); / bare exchange without a wait: %.2f, %.2f\n",
               od_best / fl_best, od_med / fl_med, od_best / plain_p50, od_med / plain_p50);
        char log[300];
        snprintf(log, sizeof log, "%s/ondemand.log", dir);
        double paired;
        double ds = daemon_side_us(log, li.ntiles, reps, ipc_each, &paired) / li.ntiles;
        if (ds > 0)
            printf("on-demand, the daemon's own time (its log, per-tile bests) %.1f us a tile: "
                   "%+.1f us over in-process; the rest, transport and client, %+.1f us (median "
                   "of each ipc get's time less the daemon's: %.1f us)\n",
                   ds, ds - sum[0] / li.ntiles, sum[1] / li.ntiles - ds, paired);
    }
    free(bt);
    free(bsum);
    free(ipc_each);
    double pc0 = pct(pc, reps, 0.5) / li.ntiles, pc1 = pct(pc + reps, reps, 0.5) / li.ntiles;
    printf("on-demand, CPU per tile (medians)  in-process %.1f us; daemon + client, ipc %.1f us "
           "(%+.1f us)\n",
           pc0, pc1, pc1 - pc0);
    free(pc);
    free(tile);
    free(v);
    {
        /* In-process, plain pages and waiting pages (the wait op_client_range_wait_for
         * gives the bench's timeout) alternate in every rep. */
        double *w = malloc(8 * (size_t)reps * sizeof *w), *cpu = w + 3 * reps, *put = w + 6 * reps;
        int nt[2] = {0, 0}, nc[2] = {0, 0};
        for (int r = 0; r < reps; r++) {
            double c0 = self_cpu_us();
            w[r] = inprocess_level(&li, out, scratch);
            cpu[r] = self_cpu_us() - c0;
            for (int k = 0; k < 2; k++) {
                /* The daemon's CPU (every thread) plus this process's (the client thread
                 * and its nng threads): the work of the fetch, whatever the machine's load. The
                 * put's builds run after its reply and are all waited for by the last page. */
                double d0 = process_cpu_us(cached), t0 = self_cpu_us();
                w[(k + 1) * reps + r] =
                    range_level(ci, &li, k ? op_client_range_wait_for(TIMEOUT_MS) : 0, &nt[k],
                                &nc[k], &put[k * reps + r]);
                cpu[(k + 1) * reps + r] = process_cpu_us(cached) - d0 + self_cpu_us() - t0;
            }
        }
        double b[3], m[3], mc[3];
        for (int k = 0; k < 3; k++) {
            b[k] = w[k * reps];
            for (int r = 1; r < reps; r++)
                b[k] = w[k * reps + r] < b[k] ? w[k * reps + r] : b[k];
            m[k] = pct(w + k * reps, reps, 0.5);
            mc[k] = pct(cpu + k * reps, reps, 0.5);
        }
        printf("whole level, in-process (1 thread) %8.2f ms  (median %.2f ms; %d tiles)\n",
               b[0] / 1e3, m[0] / 1e3, op_level_tile_count(li.lvl));
        static const char *const how[2] = {"tile.range     ", "tile.range wait"};
        for (int k = 1; k < 3; k++)
            printf("whole level, put + %s, ipc %8.2f ms  ratio %.2f (median %.2f ms, ratio "
                   "%.2f; %d tiles in %d calls)\n",
                   how[k - 1], b[k] / 1e3, b[k] / b[0], m[k] / 1e3, m[k] / m[0], nt[k - 1],
                   nc[k - 1]);
        printf("whole level, the level.put's reply alone (medians)  %.2f ms, %.2f ms (the "
               "put's builds run after it)\n",
               pct(put, reps, 0.5) / 1e3, pct(put + reps, reps, 0.5) / 1e3);
        printf("whole level, CPU time (medians)    in-process %.2f ms; daemon + client: "
               "tile.range %.2f ms, ratio %.2f; tile.range wait %.2f ms, ratio %.2f\n",
               mc[0] / 1e3, mc[1] / 1e3, mc[1] / mc[0], mc[2] / 1e3, mc[2] / mc[0]);
        free(w);
    }
    int counts[3] = {1, 4, 16};
    for (int k = 0; k < 3; k++)
        throughput(ipc1, &li, counts[k], 3200 / counts[k]);
    op_client_close(ci);
    op_client_close(ct);
    op_client_close(oi);
    op_client_close(ot);
    stop_daemon(cached);
    stop_daemon(ondemand);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    op_level_destroy(li.lvl);
    free(li.tx);
    free(li.tz);
    op_arena_destroy(a);
    return 0;
}
