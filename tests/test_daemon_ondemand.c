/*
 * onepathd on-demand builds (a tile.get of a tile that is not cached builds it on the
 * thread that received the request, or on the build pool when another such build runs):
 *  - concurrent gets of one uncached tile build it once and all get the reference bytes;
 *  - slow on-demand builds, more of them at once than nng has callback threads, never
 *    delay a cached read.
 * The slow level: a flat 36 x 36 floor in 12 wu tiles of 0.03 wu cells, 9 tiles of the
 * same size that take about 80 ms each to build (a cached read takes well under a
 * millisecond).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "op_daemon_test.h"

#define NGETTERS 8

static const op_client_setting slow_set[] = {{"tile_size", "12"}, {"cell_size", "0.03"}};

typedef struct slow_level {
    opt_soup floor;
    opt_ref ref;
    int n, idx[64]; /* the tiles with layers (indices into ref.t) */
} slow_level;

static void slow_make(slow_level *sl)
{
    memset(sl, 0, sizeof *sl);
    opt_soup_quad(&sl->floor, 0, 0, 36, 36, 0);
    op_settings s;
    op_settings_default(&s);
    s.tile_size = 12;
    s.cell_size = 0.03;
    op_soup soup = {sl->floor.v, 3 * sl->floor.nv, sl->floor.t, 3 * sl->floor.nt, NULL};
    opt_ref_bake(&soup, &s, &sl->ref);
    for (int i = 0; i < sl->ref.n && sl->n < 64; i++)
        if (sl->ref.t[i].nl > 0)
            sl->idx[sl->n++] = i;
    cr_assert_geq(sl->n, 6, "the slow level has %d tiles with layers", sl->n);
}

static void slow_free(slow_level *sl)
{
    opt_ref_free(&sl->ref);
    opt_soup_free(&sl->floor);
}

static size_t tile_bytes(const opt_ref_tile *t)
{
    size_t b = 0;
    for (int k = 0; k < t->nl; k++)
        b += t->blob[k].len;
    return b;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Puts the slow level and waits for its background bake to end. */
static void put_slow(op_client *c, const slow_level *sl)
{
    op_client_mesh m = opt_mesh("floor", &sl->floor);
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(
        op_client_level_put(c, "slow", slow_set, 2, &m, 1, OPT_TIMEOUT_MS, &v, &changed, &e), OP_OK,
        "%s", e.msg);
    double t0 = now_ms();
    for (;;) {
        op_client_level_info li;
        cr_assert_eq(op_client_level_info_get(c, "slow", OPT_TIMEOUT_MS, &li, &e), OP_OK);
        cr_assert_eq(li.tiles_total, sl->ref.n);
        if (!li.bake_running && li.tiles_built == li.tiles_total)
            break;
        cr_assert_lt(now_ms() - t0, 60000.0, "the slow level's bake did not end");
        opt_sleep_ms(20);
    }
}

typedef struct getter {
    const char *url;
    const char *level;
    pthread_barrier_t *go; /* NULL: no wait; else all getters connect, then ask together */
    int tx, tz;
    op_client_tile t;
    op_status st;
    char msg[OP_ERR_MSG_MAX];
    double ms;
} getter;

static void *get_one(void *arg)
{
    getter *g = arg;
    op_client *c;
    op_err e;
    g->st = op_client_open(g->url, &c, &e);
    if (g->go)
        pthread_barrier_wait(g->go);
    if (g->st == OP_OK) {
        double t0 = now_ms();
        g->st = op_client_tile_get(c, g->level, g->tx, g->tz, OPT_TIMEOUT_MS, &g->t, &e);
        g->ms = now_ms() - t0;
        op_client_close(c);
    }
    if (g->st != OP_OK)
        snprintf(g->msg, sizeof g->msg, "%s", e.msg);
    return NULL;
}

static void check_tile(const getter *g, const opt_ref *ref)
{
    cr_assert_eq(g->st, OP_OK, "tile (%d, %d): %s", g->tx, g->tz, g->msg);
    const opt_ref_tile *r = opt_ref_find(ref, g->tx, g->tz);
    cr_assert(r);
    cr_assert_eq(g->t.nlayers, r->nl);
    for (int k = 0; k < r->nl; k++)
        cr_assert(g->t.layers[k].len == r->blob[k].len &&
                      !memcmp(g->t.layers[k].blob, r->blob[k].data, r->blob[k].len),
                  "tile (%d, %d) layer %d differs from the offline bake", g->tx, g->tz, k);
}

Test(daemon_ondemand, concurrent_gets_of_one_uncached_tile_build_it_once, .timeout = 120)
{
    slow_level sl;
    slow_make(&sl);
    opt_daemon d;
    opt_daemon_init(&d);
    /* Only the newest tile stays cached: every other tile is built when it is asked for. */
    static const char *const extra[] = {"--cache-bytes", "1", NULL};
    opt_daemon_start(&d, extra);
    op_client *c = opt_connect(&d);
    put_slow(c, &sl);
    const opt_ref_tile *last = &sl.ref.t[sl.idx[sl.n - 1]];
    op_client_tile t;
    op_err e;
    /* Reads of the other tiles in turn until the cache holds one tile only, the one just
     * read (a read that builds evicts the rest once its reply is out; an eviction skips a
     * tile whose level lock is busy, hence the pause): then the last tile is not cached. */
    op_client_stats s0, s1;
    for (int i = 0;; i++) {
        const opt_ref_tile *u = &sl.ref.t[sl.idx[i % (sl.n - 1)]];
        cr_assert_eq(op_client_tile_get(c, "slow", u->tx, u->tz, OPT_TIMEOUT_MS, &t, &e), OP_OK,
                     "%s", e.msg);
        op_client_tile_free(&t);
        opt_sleep_ms(30);
        cr_assert_eq(op_client_stats_get(c, OPT_TIMEOUT_MS, &s0, &e), OP_OK);
        if (s0.cache_bytes <= tile_bytes(u))
            break;
        cr_assert_lt(i, 100, "the cache keeps %llu bytes", (unsigned long long)s0.cache_bytes);
    }
    getter g[NGETTERS];
    pthread_t th[NGETTERS];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, NGETTERS);
    for (int i = 0; i < NGETTERS; i++) {
        g[i] = (getter){d.url, "slow", &go, last->tx, last->tz, {0}, OP_OK, "", 0};
        pthread_create(&th[i], NULL, get_one, &g[i]);
    }
    for (int i = 0; i < NGETTERS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    for (int i = 0; i < NGETTERS; i++) {
        check_tile(&g[i], &sl.ref);
        op_client_tile_free(&g[i].t);
    }
    cr_assert_eq(op_client_stats_get(c, OPT_TIMEOUT_MS, &s1, &e), OP_OK);
    cr_assert_eq(s1.builds - s0.builds, 1, "%llu builds for %d concurrent gets of one tile",
                 (unsigned long long)(s1.builds - s0.builds), NGETTERS);
    /* The gets did overlap the build: at least two of them found the tile unbuilt. */
    cr_assert_geq(s1.cache_misses - s0.cache_misses, 2, "only %llu gets missed the cache",
                  (unsigned long long)(s1.cache_misses - s0.cache_misses));
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    slow_free(&sl);
}

typedef struct reader {
    const char *url;
    atomic_int stop, measure, n; /* measure: reads from here on count in worst_ms */
    double worst_ms;
    op_status st;
} reader;

static void *read_small(void *arg)
{
    reader *r = arg;
    op_client *c;
    op_err e;
    if ((r->st = op_client_open(r->url, &c, &e)) != OP_OK)
        return NULL;
    while (!atomic_load(&r->stop) && r->st == OP_OK) {
        op_client_tile t;
        double t0 = now_ms();
        r->st = op_client_tile_get(c, "small", 0, 0, OPT_TIMEOUT_MS, &t, &e);
        double ms = now_ms() - t0;
        if (r->st == OP_OK)
            op_client_tile_free(&t);
        if (atomic_load(&r->measure) && ms > r->worst_ms)
            r->worst_ms = ms;
        atomic_fetch_add(&r->n, 1);
    }
    op_client_close(c);
    return NULL;
}

Test(daemon_ondemand, slow_on_demand_builds_never_delay_a_cached_read, .timeout = 120)
{
    slow_level sl;
    slow_make(&sl);
    /* A cache that holds the small tile and two slow tiles, the newest entries when a
     * build lands: the small tile, read all the time, stays; every slow tile but two is
     * built on demand below. */
    opt_soup small = {0};
    opt_soup_quad(&small, 0, 0, 9, 9, 0);
    op_soup small_soup = {small.v, 3 * small.nv, small.t, 3 * small.nt, NULL};
    op_settings defaults;
    op_settings_default(&defaults);
    opt_ref small_ref;
    opt_ref_bake(&small_soup, &defaults, &small_ref);
    cr_assert_eq(small_ref.n, 1);
    size_t largest = 0;
    for (int i = 0; i < sl.ref.n; i++)
        largest = tile_bytes(&sl.ref.t[i]) > largest ? tile_bytes(&sl.ref.t[i]) : largest;
    size_t cache = tile_bytes(&small_ref.t[0]) + 2 * largest;
    opt_ref_free(&small_ref);
    char cache_arg[32];
    snprintf(cache_arg, sizeof cache_arg, "%zu", cache);
    opt_daemon d;
    opt_daemon_init(&d);
    const char *const extra[] = {"--threads", "1", "--cache-bytes", cache_arg, NULL};
    opt_daemon_start(&d, extra);
    op_client *c = opt_connect(&d);
    op_client_mesh sm = opt_mesh("floor", &small);
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(op_client_level_put(c, "small", NULL, 0, &sm, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK);
    put_slow(c, &sl);
    op_client_stats s0, s1;
    cr_assert_eq(op_client_stats_get(c, OPT_TIMEOUT_MS, &s0, &e), OP_OK);
    /* A reader of the small level's (cached) tile, then on-demand gets of every slow tile
     * at once: more slow builds than nng has callback threads. */
    reader rd = {.url = d.url, .st = OP_OK};
    atomic_init(&rd.stop, 0);
    atomic_init(&rd.measure, 0);
    atomic_init(&rd.n, 0);
    pthread_t rth, th[64];
    pthread_create(&rth, NULL, read_small, &rd);
    double t0 = now_ms();
    while (atomic_load(&rd.n) < 20 && now_ms() - t0 < 30000)
        opt_sleep_ms(1);
    atomic_store(&rd.measure, 1); /* from here on the reads are cached */
    int n0 = atomic_load(&rd.n);
    getter g[64];
    for (int i = 0; i < sl.n; i++) {
        const opt_ref_tile *t = &sl.ref.t[sl.idx[i]];
        g[i] = (getter){d.url, "slow", NULL, t->tx, t->tz, {0}, OP_OK, "", 0};
        pthread_create(&th[i], NULL, get_one, &g[i]);
    }
    double slowest = 0;
    for (int i = 0; i < sl.n; i++) {
        pthread_join(th[i], NULL);
        check_tile(&g[i], &sl.ref);
        op_client_tile_free(&g[i].t);
        slowest = g[i].ms > slowest ? g[i].ms : slowest;
    }
    atomic_store(&rd.stop, 1);
    pthread_join(rth, NULL);
    cr_assert_eq(rd.st, OP_OK);
    cr_assert_eq(op_client_stats_get(c, OPT_TIMEOUT_MS, &s1, &e), OP_OK);
    uint64_t built = s1.builds - s0.builds;
    cr_assert_geq(built, (uint64_t)sl.n - 2, "only %llu slow tiles were built on demand",
                  (unsigned long long)built);
    cr_assert_gt(atomic_load(&rd.n) - n0, 10, "%d cached reads while the slow tiles built",
                 atomic_load(&rd.n) - n0);
    /* The slow gets queue behind each other (one build outside the pool, one in it): a
     * cached read that waited for a build would take about as long as a build. */
    cr_assert_lt(rd.worst_ms, slowest / 4,
                 "a cached read took %.1f ms while slow tiles built "
                 "(slowest get %.1f ms)",
                 rd.worst_ms, slowest);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    opt_soup_free(&small);
    slow_free(&sl);
}
