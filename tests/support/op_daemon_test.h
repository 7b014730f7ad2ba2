/*
 * Helpers of the daemon integration tests (tests/test_daemon_*.c, test_client_*.c),
 * header-only so that only those tests carry them: start onepathd as a child process on
 * an ipc:// path under a fresh temporary directory, stop or kill it, and bake a soup
 * in-process (op_level + op_tile_encode, as `onepath bake`) as the reference.
 */
#ifndef OP_DAEMON_TEST_H
#define OP_DAEMON_TEST_H

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "onepath/build.h"
#include "onepath/client.h"
#include "onepath/tile_codec.h"

#define OPT_TIMEOUT_MS 30000
/* How long a stopped daemon may take to exit: its 30 s drain, then teardown. */
#define OPT_STOP_MS 60000

/* In the ThreadSanitizer pass (OP_TSAN, tests/tsan) the onepathd these tests start keeps
 * TSan's shadow, about twice the memory it touches: memory bounds are widened by this. */
#ifdef OP_TSAN_PROGRAMS
#define OPT_MEM_FACTOR 4
#else
#define OPT_MEM_FACTOR 1
#endif
/* The same for hang bounds on work the instrumented programs do themselves (the CLI
 * generating a level): 5-15x slower under TSan. A hang bound, never a speed one. */
#ifdef OP_TSAN_PROGRAMS
#define OPT_TIME_FACTOR 4
#else
#define OPT_TIME_FACTOR 1
#endif
/* A CLI fetch's per-request timeout (a hang bound): a tile.range of a level's on-demand
 * builds takes 10x longer under TSan, more on a loaded machine. */
#define OPT_CLI_TIMEOUT " --timeout 600000"

typedef struct opt_daemon {
    pid_t pid;
    char dir[256];
    char url[320];
    char data[320];
    char log[320];
} opt_daemon;

static inline void opt_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline double opt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Temporary directories of this test process, removed at exit even when a failed
 * assertion ends the test before its cleanup (test processes only). */
#define OPT_MAX_DIRS 8
static char opt_dirs[OPT_MAX_DIRS][256];

static inline void opt_remove_dirs(void)
{
    for (int i = 0; i < OPT_MAX_DIRS; i++)
        if (opt_dirs[i][0]) {
            char cmd[2200];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", opt_dirs[i]);
            if (system(cmd) != 0)
                fprintf(stderr, "cannot remove %s\n", opt_dirs[i]);
            opt_dirs[i][0] = '\0';
        }
}

/* A fresh temporary directory for one daemon (its socket, data and log). */
static inline void opt_daemon_init(opt_daemon *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "/tmp/opd-test-XXXXXX");
    cr_assert_not_null(mkdtemp(d->dir));
    int registered = 0;
    for (int i = 0; i < OPT_MAX_DIRS; i++)
        registered |= opt_dirs[i][0] != '\0';
    if (!registered)
        atexit(opt_remove_dirs);
    for (int i = 0; i < OPT_MAX_DIRS; i++)
        if (!opt_dirs[i][0]) {
            snprintf(opt_dirs[i], sizeof opt_dirs[i], "%s", d->dir);
            break;
        }
    snprintf(d->url, sizeof d->url, "ipc://%s/s.ipc", d->dir);
    snprintf(d->data, sizeof d->data, "%s/data", d->dir);
    snprintf(d->log, sizeof d->log, "%s/log", d->dir);
}

/* Waits until the daemon answers ping (or fails the test after 10 s); OP_EPERM (a daemon
 * with --token-file refusing the token-less ping) is an answer too. */
static inline void opt_daemon_wait_ready(opt_daemon *d)
{
    op_client *c;
    op_err e;
    cr_assert_eq(op_client_open(d->url, &c, &e), OP_OK, "%s", e.msg);
    op_client_ping_result p;
    op_status st = OP_ETIMEDOUT;
    for (int i = 0; i < 100 && st != OP_OK && st != OP_EPERM; i++) {
        st = op_client_ping(c, 100, &p, &e);
        int status;
        if (st != OP_OK && waitpid(d->pid, &status, WNOHANG) == d->pid)
            cr_assert_fail("onepathd exited during start-up (see %s)", d->log);
    }
    op_client_close(c);
    cr_assert(st == OP_OK || st == OP_EPERM, "onepathd did not answer ping: %s", e.msg);
}

/* Starts onepathd with --listen, --data-dir, --log, --threads 2 and extra (NULL-ended). */
static inline void opt_daemon_start(opt_daemon *d, const char *const *extra)
{
    const char *argv[40];
    char bin[512];
    int n = 0;
    snprintf(bin, sizeof bin, "%s/onepathd", OP_BIN_DIR);
    argv[n++] = bin;
    argv[n++] = "--listen";
    argv[n++] = d->url;
    argv[n++] = "--data-dir";
    argv[n++] = d->data;
    argv[n++] = "--log";
    argv[n++] = d->log;
    argv[n++] = "--threads";
    argv[n++] = "2";
    for (int i = 0; extra && extra[i] && n < 38; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    d->pid = fork();
    cr_assert_geq(d->pid, 0);
    if (d->pid == 0) {
        /* Dies with the test (even a failed one), and holds none of its pipes. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (!getenv("OPT_DAEMON_STDERR")) { /* set it to see sanitizer reports here */
            /* Kept beside the log (a crash's report): opt_daemon_log_on_failure shows it. */
            char err[400];
            snprintf(err, sizeof err, "%s/stderr", d->dir);
            int out = open(err, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            if (out < 0)
                out = open("/dev/null", O_RDWR | O_CLOEXEC);
            dup2(out, 1);
            dup2(out, 2);
        }
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    opt_daemon_wait_ready(d);
}

/* Prints the last `lines` lines of the daemon's log to stderr. */
static inline void opt_daemon_log_tail(const opt_daemon *d, int lines)
{
    FILE *f = fopen(d->log, "rb");
    if (!f) {
        fprintf(stderr, "  (no log at %s)\n", d->log);
        return;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f), from = size > 16384 ? size - 16384 : 0;
    char buf[16385];
    fseek(f, from, SEEK_SET);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    size_t at = n;
    for (int seen = 0; at > 0; at--)
        if (buf[at - 1] == '\n' && at < n && ++seen > lines)
            break;
    fprintf(stderr, "  last lines of %s:\n%s", d->log, buf + at);
}

/* The daemon whose log a failed test shows (opt_daemon_log_on_failure: a copy, the test's
 * own is gone with its stack by then), whether one is set and whether the test got to its
 * end. */
static opt_daemon opt_logged;
static int opt_logged_set, opt_logged_done;

static inline void opt_show_log_at_exit(void)
{
    if (!opt_logged_set || opt_logged_done)
        return;
    fprintf(stderr, "the test ended before its end (a failed assertion): onepathd's files\n");
    opt_daemon_log_tail(&opt_logged, 1000);
    char err[400];
    snprintf(err, sizeof err, "%s/stderr", opt_logged.dir);
    FILE *f = fopen(err, "rb");
    char buf[4096];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    fprintf(stderr, "  its stderr (first %zu bytes):\n%s\n", n, buf);
    if (f)
        fclose(f);
}

/* A failed assertion ends a test's process (exit: atexit handlers run) before its cleanup.
 * From this call on, such an end shows the end of d's log and its stderr in the test's
 * output, before the temporary directories go (opt_daemon_init registered their removal
 * earlier, so it runs after); opt_daemon_log_done says the test got to its end. */
static inline void opt_daemon_log_on_failure(const opt_daemon *d)
{
    if (!opt_logged_set)
        atexit(opt_show_log_at_exit);
    opt_logged = *d;
    opt_logged_set = 1;
    opt_logged_done = 0;
}

static inline void opt_daemon_log_done(void)
{
    opt_logged_done = 1;
}

/* SIGTERM and wait at most OPT_STOP_MS: returns the exit status (-1: killed by a signal,
 * or still running after OPT_STOP_MS, then killed with SIGKILL). A stop that is not
 * a clean exit 0 says how the daemon ended and shows the end of its log. */
static inline int opt_daemon_stop(opt_daemon *d)
{
    int status = 0;
    if (d->pid <= 0)
        return 0;
    pid_t pid = d->pid;
    kill(pid, SIGTERM);
    /* Bounded: a daemon that does not exit (a wedged nng_close, a drain that never ends)
     * is killed and the stop fails, rather than the test waiting for ctest's timeout. */
    double t0 = opt_now_ms();
    pid_t got = 0;
    while (((got = waitpid(pid, &status, WNOHANG)) == 0 || (got < 0 && errno == EINTR)) &&
           opt_now_ms() - t0 < OPT_STOP_MS)
        opt_sleep_ms(10);
    d->pid = 0;
    if (got != pid) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fprintf(stderr, "onepathd (pid %d) did not exit within %d ms of SIGTERM: killed\n",
                (int)pid, OPT_STOP_MS);
        opt_daemon_log_tail(d, 20);
        return -1;
    }
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (rc != 0) {
        if (WIFSIGNALED(status))
            fprintf(stderr, "onepathd (pid %d) was killed by signal %d (%s)\n", (int)pid,
                    WTERMSIG(status), strsignal(WTERMSIG(status)));
        else
            fprintf(stderr, "onepathd (pid %d) exited with status %d\n", (int)pid, rc);
        opt_daemon_log_tail(d, 20);
    }
    return rc;
}

static inline void opt_daemon_kill9(opt_daemon *d)
{
    if (d->pid <= 0)
        return;
    kill(d->pid, SIGKILL);
    waitpid(d->pid, NULL, 0);
    d->pid = 0;
}

static inline void opt_daemon_cleanup(opt_daemon *d)
{
    opt_daemon_kill9(d);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", d->dir);
}

static inline op_client *opt_connect(const opt_daemon *d)
{
    op_client *c;
    op_err e;
    cr_assert_eq(op_client_open(d->url, &c, &e), OP_OK, "%s", e.msg);
    return c;
}

/* ---- the reference: an in-process bake ---- */

#define OPT_MAX_LAYERS 16

typedef struct opt_ref_tile {
    int tx, tz, nl;
    int layer[OPT_MAX_LAYERS];
    uint64_t hash[OPT_MAX_LAYERS];
    op_bytes blob[OPT_MAX_LAYERS];
} opt_ref_tile;

typedef struct opt_ref {
    int has_tiles;
    op_tile_rect rect;
    int n;
    opt_ref_tile *t; /* row-major */
} opt_ref;

/* Bakes every tile of soup with s and the volume set vols (in name order), serially,
 * exactly as `onepath bake --volumes` does per tile. */
static inline void opt_ref_bake_volumes(const op_soup *soup, const op_settings *s,
                                        const op_volume *vols, int nvols, opt_ref *r)
{
    memset(r, 0, sizeof *r);
    if (soup->tris_len == 0)
        return;
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create(soup, s, vols, nvols, &lvl, &e), OP_OK, "%s", e.msg);
    r->has_tiles = 1;
    r->rect = op_level_tiles(lvl);
    r->n = op_level_tile_count(lvl);
    r->t = calloc((size_t)r->n, sizeof *r->t);
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    int w = r->rect.tx1 - r->rect.tx0 + 1;
    for (int i = 0; i < r->n; i++) {
        opt_ref_tile *t = &r->t[i];
        t->tx = r->rect.tx0 + i % w;
        t->tz = r->rect.tz0 + i / w;
        op_tile_stages st;
        cr_assert_eq(
            op_level_build_stages(lvl, t->tx, t->tz, OP_STAGE_TILE, 0, out, scratch, &st, &e),
            OP_OK, "%s", e.msg);
        cr_assert_leq(st.ntiles, OPT_MAX_LAYERS);
        for (int k = 0; k < st.ntiles; k++) {
            cr_assert_eq(op_tile_encode(&st.tiles[k], &t->blob[k], &t->hash[k], &e), OP_OK);
            t->layer[k] = st.tiles[k].layer;
        }
        t->nl = st.ntiles;
        op_arena_reset(out);
        op_arena_reset(scratch);
    }
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    op_level_destroy(lvl);
}

/* The same without volumes. */
static inline void opt_ref_bake(const op_soup *soup, const op_settings *s, opt_ref *r)
{
    opt_ref_bake_volumes(soup, s, NULL, 0, r);
}

static inline void opt_ref_free(opt_ref *r)
{
    for (int i = 0; i < r->n; i++)
        for (int k = 0; k < r->t[i].nl; k++)
            op_bytes_free(&r->t[i].blob[k]);
    free(r->t);
    memset(r, 0, sizeof *r);
}

/* The reference tile (tx, tz), or NULL outside the range. */
static inline const opt_ref_tile *opt_ref_find(const opt_ref *r, int tx, int tz)
{
    if (!r->has_tiles || tx < r->rect.tx0 || tx > r->rect.tx1 || tz < r->rect.tz0 ||
        tz > r->rect.tz1)
        return NULL;
    int w = r->rect.tx1 - r->rect.tx0 + 1;
    return &r->t[(tz - r->rect.tz0) * w + (tx - r->rect.tx0)];
}

/* Whether two bakes differ at (tx, tz) (a missing tile has no layers). */
static inline int opt_ref_differs(const opt_ref *a, const opt_ref *b, int tx, int tz)
{
    const opt_ref_tile *x = opt_ref_find(a, tx, tz), *y = opt_ref_find(b, tx, tz);
    int nx = x ? x->nl : 0, ny = y ? y->nl : 0;
    if (nx != ny)
        return 1;
    for (int k = 0; k < nx; k++)
        if (x->layer[k] != y->layer[k] || x->blob[k].len != y->blob[k].len ||
            memcmp(x->blob[k].data, y->blob[k].data, x->blob[k].len) != 0)
            return 1;
    return 0;
}

/* changes.since(prev) of level must list exactly the tiles where bakes a and b differ,
 * row-major, with b's hashes. */
static inline void opt_check_changes(op_client *c, const char *level, uint64_t prev,
                                     const opt_ref *a, const opt_ref *b)
{
    op_client_changes ch;
    op_err e;
    cr_assert_eq(op_client_changes_since(c, level, prev, 0, OPT_TIMEOUT_MS, &ch, &e), OP_OK, "%s",
                 e.msg);
    int x0 = 1 << 30, z0 = 1 << 30, x1 = -(1 << 30), z1 = -(1 << 30);
    const opt_ref *rs[2] = {a, b};
    for (int i = 0; i < 2; i++)
        if (rs[i]->has_tiles) {
            x0 = rs[i]->rect.tx0 < x0 ? rs[i]->rect.tx0 : x0;
            z0 = rs[i]->rect.tz0 < z0 ? rs[i]->rect.tz0 : z0;
            x1 = rs[i]->rect.tx1 > x1 ? rs[i]->rect.tx1 : x1;
            z1 = rs[i]->rect.tz1 > z1 ? rs[i]->rect.tz1 : z1;
        }
    int k = 0, want = 0;
    for (int tz = z0; tz <= z1; tz++)
        for (int tx = x0; tx <= x1; tx++) {
            if (!opt_ref_differs(a, b, tx, tz))
                continue;
            want++;
            cr_assert_lt(k, ch.ntiles, "changes.since(%llu) misses tile (%d, %d)",
                         (unsigned long long)prev, tx, tz);
            const op_client_change *t = &ch.tiles[k++];
            cr_assert(t->tx == tx && t->tz == tz, "changes.since lists (%d, %d), expected (%d, %d)",
                      t->tx, t->tz, tx, tz);
            const opt_ref_tile *r = opt_ref_find(b, tx, tz);
            cr_assert_eq(t->nhashes, r ? r->nl : 0);
            for (int l = 0; l < t->nhashes; l++)
                cr_assert_eq(t->hashes[l], r->hash[l]);
        }
    cr_assert_eq(ch.ntiles, want, "changes.since(%llu) lists %d tiles, %d differ",
                 (unsigned long long)prev, ch.ntiles, want);
    op_client_changes_free(&ch);
}

/* A core volume as the client sends it (an obstacle of area 0 sometimes without its
 * area: the default is 0). */
static inline op_client_volume opt_client_volume(const op_volume *v, int omit_area)
{
    op_client_volume c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%.64s", v->name);
    c.mode = v->mode == OP_VOLUME_OBSTACLE ? OP_CLIENT_VOLUME_OBSTACLE : OP_CLIENT_VOLUME_AREA;
    c.area = omit_area && v->mode == OP_VOLUME_OBSTACLE && v->area == 0 ? -1 : v->area;
    c.kind = (op_client_volume_kind)v->kind;
    memcpy(c.bmin, v->bmin, sizeof c.bmin);
    memcpy(c.bmax, v->bmax, sizeof c.bmax);
    c.center[0] = v->bmin[0];
    c.center[1] = v->bmin[2];
    c.radius = v->bmax[0];
    c.y[0] = v->bmin[1];
    c.y[1] = v->bmax[1];
    c.npoints = v->kind == OP_VOLUME_PRISM ? v->npts : 0;
    for (int i = 0; i < c.npoints; i++) {
        c.points[i][0] = v->pts[2 * i];
        c.points[i][1] = v->pts[2 * i + 1];
    }
    return c;
}

/* Whether a volume read back (level.info) is want: name, mode, kind, area and the fields
 * of its kind, bit for bit. */
static inline int opt_client_volume_equal(const op_client_volume *g, const op_client_volume *w)
{
    if (strcmp(g->name, w->name) || g->mode != w->mode || g->kind != w->kind || g->area != w->area)
        return 0;
    if (w->kind == OP_CLIENT_VOLUME_BOX)
        return !memcmp(g->bmin, w->bmin, sizeof g->bmin) &&
               !memcmp(g->bmax, w->bmax, sizeof g->bmax);
    if (memcmp(g->y, w->y, sizeof g->y))
        return 0;
    if (w->kind == OP_CLIENT_VOLUME_CYLINDER)
        return !memcmp(g->center, w->center, sizeof g->center) &&
               !memcmp(&g->radius, &w->radius, sizeof g->radius);
    return g->npoints == w->npoints &&
           !memcmp(g->points, w->points, sizeof g->points[0] * (size_t)g->npoints);
}

/* Fetches every tile of the level (tile.range pages; waiting pages of wait_ms when it is
 * above 0, protocol §4 rule 2a, each then holding at least one tile) and checks it equals
 * ref byte for byte; returns the number of layers compared, and the pages in *pages. */
static inline int opt_check_level_paged(op_client *c, const char *level, const opt_ref *ref,
                                        int wait_ms, int *pages)
{
    op_err e;
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, level, OPT_TIMEOUT_MS, &li, &e), OP_OK, "%s", e.msg);
    if (!ref->has_tiles) {
        cr_assert_gt(li.tiles[0], li.tiles[2], "level %s has tiles, the reference none", level);
        return 0;
    }
    cr_assert_eq(li.tiles[0], ref->rect.tx0);
    cr_assert_eq(li.tiles[1], ref->rect.tz0);
    cr_assert_eq(li.tiles[2], ref->rect.tx1);
    cr_assert_eq(li.tiles[3], ref->rect.tz1);
    int after[2], *ap = NULL, more = 1, seen = 0, layers = 0;
    while (more) {
        op_client_tile_range rg;
        cr_assert_eq(
            op_client_tile_range_wait(c, level, li.tiles, ap, 0, wait_ms, OPT_TIMEOUT_MS, &rg, &e),
            OP_OK, "%s", e.msg);
        if (wait_ms > 0)
            cr_assert_geq(rg.ntiles, 1, "a waiting page holds at least one tile");
        for (int i = 0; i < rg.ntiles; i++) {
            const op_client_tile *t = &rg.tiles[i];
            cr_assert_lt(seen, ref->n, "more tiles than the range holds");
            const opt_ref_tile *r = &ref->t[seen++];
            cr_assert(t->tx == r->tx && t->tz == r->tz, "tile (%d, %d) where (%d, %d) was due",
                      t->tx, t->tz, r->tx, r->tz);
            cr_assert_eq(t->nlayers, r->nl, "tile (%d, %d): %d layers, reference %d", t->tx, t->tz,
                         t->nlayers, r->nl);
            for (int k = 0; k < r->nl; k++) {
                cr_assert_eq(t->layers[k].layer, r->layer[k]);
                cr_assert_eq(t->layers[k].hash, r->hash[k]);
                cr_assert_eq(t->layers[k].len, r->blob[k].len, "tile (%d, %d) layer %d size", t->tx,
                             t->tz, k);
                cr_assert(!memcmp(t->layers[k].blob, r->blob[k].data, r->blob[k].len),
                          "tile (%d, %d) layer %d bytes differ", t->tx, t->tz, k);
                layers++;
            }
        }
        more = rg.has_next;
        after[0] = rg.next[0];
        after[1] = rg.next[1];
        ap = after;
        op_client_tile_range_free(&rg);
        if (pages)
            ++*pages;
    }
    cr_assert_eq(seen, ref->n, "fetched %d tiles of %d", seen, ref->n);
    return layers;
}

/* opt_check_level_paged with plain pages. */
static inline int opt_check_level(op_client *c, const char *level, const opt_ref *ref)
{
    return opt_check_level_paged(c, level, ref, 0, NULL);
}

/* ---- soups made by the tests ---- */

/* A growing soup (arrays on the heap). */
typedef struct opt_soup {
    float *v;
    int *t;
    size_t nv, nt, capv, capt;
} opt_soup;

/* Waits (up to a minute) for the level's background bake to end; its info. */
static inline void opt_wait_baked(op_client *c, const char *level, op_client_level_info *li)
{
    op_err e;
    double t0 = opt_now_ms();
    for (;;) {
        cr_assert_eq(op_client_level_info_get(c, level, OPT_TIMEOUT_MS, li, &e), OP_OK, "%s",
                     e.msg);
        if (!li->bake_running && li->tiles_built == li->tiles_total)
            return;
        cr_assert_lt(opt_now_ms() - t0, 60000.0, "the bake of '%s' did not end", level);
        opt_sleep_ms(20);
    }
}

static inline void opt_soup_vert(opt_soup *s, float x, float y, float z)
{
    if (s->nv == s->capv) {
        s->capv = s->capv ? 2 * s->capv : 256;
        s->v = realloc(s->v, s->capv * 3 * sizeof *s->v);
    }
    s->v[3 * s->nv] = x;
    s->v[3 * s->nv + 1] = y;
    s->v[3 * s->nv + 2] = z;
    s->nv++;
}

static inline void opt_soup_tri(opt_soup *s, int a, int b, int c)
{
    if (s->nt == s->capt) {
        s->capt = s->capt ? 2 * s->capt : 256;
        s->t = realloc(s->t, s->capt * 3 * sizeof *s->t);
    }
    s->t[3 * s->nt] = a;
    s->t[3 * s->nt + 1] = b;
    s->t[3 * s->nt + 2] = c;
    s->nt++;
}

/* An axis-aligned quad at height y (two up-facing triangles). */
static inline void opt_soup_quad(opt_soup *s, float x0, float z0, float x1, float z1, float y)
{
    int b = (int)s->nv;
    opt_soup_vert(s, x0, y, z0);
    opt_soup_vert(s, x1, y, z0);
    opt_soup_vert(s, x1, y, z1);
    opt_soup_vert(s, x0, y, z1);
    opt_soup_tri(s, b, b + 2, b + 1);
    opt_soup_tri(s, b, b + 3, b + 2);
}

/* A closed box (its top is walkable, its sides block). */
static inline void opt_soup_box(opt_soup *s, float x0, float z0, float x1, float z1, float y0,
                                float y1)
{
    int b = (int)s->nv;
    float xs[2] = {x0, x1}, zs[2] = {z0, z1}, ys[2] = {y0, y1};
    for (int i = 0; i < 8; i++)
        opt_soup_vert(s, xs[i & 1], ys[(i >> 2) & 1], zs[(i >> 1) & 1]);
    static const int f[12][3] = {{4, 6, 7}, {4, 7, 5}, {0, 1, 3}, {0, 3, 2}, {0, 4, 5}, {0, 5, 1},
                                 {2, 3, 7}, {2, 7, 6}, {0, 2, 6}, {0, 6, 4}, {1, 5, 7}, {1, 7, 3}};
    for (int i = 0; i < 12; i++)
        opt_soup_tri(s, b + f[i][0], b + f[i][1], b + f[i][2]);
}

static inline void opt_soup_free(opt_soup *s)
{
    free(s->v);
    free(s->t);
    memset(s, 0, sizeof *s);
}

static inline op_client_mesh opt_mesh(const char *name, const opt_soup *s)
{
    return (op_client_mesh){name, s->v, s->nv, (const int32_t *)s->t, s->nt, NULL};
}

/* One client thread asking for one tile: connects, optionally waits at a barrier so
 * that all getters ask together, and keeps the reply, its status and its time. */
typedef struct opt_getter {
    const char *url;
    const char *level;
    pthread_barrier_t *go; /* NULL: no wait; else all getters connect, then ask together */
    int tx, tz;
    op_client_tile t;
    op_status st;
    char msg[OP_ERR_MSG_MAX];
    double ms;
} opt_getter;

static inline void *opt_get_one(void *arg)
{
    opt_getter *g = arg;
    op_client *c;
    op_err e;
    g->st = op_client_open(g->url, &c, &e);
    if (g->go)
        pthread_barrier_wait(g->go);
    if (g->st == OP_OK) {
        double t0 = opt_now_ms();
        g->st = op_client_tile_get(c, g->level, g->tx, g->tz, OPT_TIMEOUT_MS, &g->t, &e);
        g->ms = opt_now_ms() - t0;
        op_client_close(c);
    }
    if (g->st != OP_OK)
        snprintf(g->msg, sizeof g->msg, "%s", e.msg);
    return NULL;
}

#endif
