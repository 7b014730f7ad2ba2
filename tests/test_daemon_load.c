/*
 * onepathd under load: 16 concurrent clients x 200 mixed requests (reads of a shared
 * level, tile gets and ranges, long polls, edits of each client's own level) with no
 * error, then the stats count them. A slow build never blocks a cached read: cached
 * tile.gets keep answering while a fresh level builds.
 */
#include <pthread.h>

#include "op_daemon_test.h"
#include "op_test.h"
#include "onepath/levelgen.h"

#define NCLIENTS  16
#define NREQUESTS 200

typedef struct worker {
    const char *url;
    op_client *shared;
    int index;
    int errors;
    char first_error[300];
    int rect[4];
} worker;

static void fail(worker *w, const char *what, const op_err *e)
{
    if (!w->errors++)
        snprintf(w->first_error, sizeof w->first_error, "%s: %s", what, e->msg);
}

static void *run(void *arg)
{
    worker *w = arg;
    op_client *own;
    op_err e;
    if (op_client_open(w->url, &own, &e) != OP_OK) {
        fail(w, "open", &e);
        return NULL;
    }
    char level[32];
    snprintf(level, sizeof level, "own-%d", w->index);
    opt_soup s = {0};
    opt_soup_quad(&s, 0, 0, 12, 12, 0);
    op_test_rng rng = {(uint64_t)w->index * 7919 + 1};
    for (int i = 0; i < NREQUESTS; i++) {
        op_client *c = (i & 1) ? own : w->shared; /* both a shared and an own client */
        int kind = op_test_rand_int(&rng, 0, 9);
        op_status st = OP_OK;
        if (kind == 0) {
            op_client_ping_result p;
            st = op_client_ping(c, OPT_TIMEOUT_MS, &p, &e);
        } else if (kind <= 3) {
            op_client_tile t;
            int tx = op_test_rand_int(&rng, w->rect[0], w->rect[2]);
            int tz = op_test_rand_int(&rng, w->rect[1], w->rect[3]);
            if ((st = op_client_tile_get(c, "shared", tx, tz, OPT_TIMEOUT_MS, &t, &e)) == OP_OK)
                op_client_tile_free(&t);
        } else if (kind == 4) {
            op_client_level_info li;
            st = op_client_level_info_get(c, "shared", OPT_TIMEOUT_MS, &li, &e);
        } else if (kind == 5) {
            op_client_changes ch;
            if ((st = op_client_changes_since(c, "shared", 0, 0, OPT_TIMEOUT_MS, &ch, &e)) == OP_OK)
                op_client_changes_free(&ch);
        } else if (kind == 6) {
            /* Each client moves its own level's floor: an edit, persisted. */
            opt_soup_free(&s);
            float x = (float)op_test_rand_int(&rng, 0, 20);
            opt_soup_quad(&s, x, 0, x + 12, 12, 0);
            op_client_mesh m = opt_mesh("floor", &s);
            uint64_t v;
            int changed;
            st = op_client_level_put(c, level, NULL, 0, &m, 1, OPT_TIMEOUT_MS, &v, &changed, &e);
        } else if (kind == 7) {
            op_client_tile_range rg;
            int rc[4] = {w->rect[0], w->rect[1], w->rect[0] + 1, w->rect[1] + 1};
            if ((st = op_client_tile_range_get(c, "shared", rc, NULL, 0, OPT_TIMEOUT_MS, &rg,
                                               &e)) == OP_OK)
                op_client_tile_range_free(&rg);
        } else if (kind == 8) {
            op_client_level_list l;
            if ((st = op_client_level_list_get(c, OPT_TIMEOUT_MS, &l, &e)) == OP_OK)
                op_client_level_list_free(&l);
        } else {
            op_client_stats ss;
            st = op_client_stats_get(c, OPT_TIMEOUT_MS, &ss, &e);
        }
        if (st != OP_OK)
            fail(w, "request", &e);
    }
    opt_soup_free(&s);
    op_client_close(own);
    return NULL;
}

Test(daemon_load, sixteen_clients_mixed_requests_no_errors, .timeout = 120)
{
    opt_daemon d;
    opt_daemon_init(&d);
    static const char *const extra[] = {"--contexts", "32", NULL};
    opt_daemon_start(&d, extra);
    op_client *c = opt_connect(&d);
    opt_soup floor = {0};
    opt_soup_quad(&floor, -15, -15, 25, 25, 0);
    opt_soup_box(&floor, 0, 0, 4, 4, 0, 1);
    op_client_mesh m = opt_mesh("floor", &floor);
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(op_client_level_put(c, "shared", NULL, 0, &m, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK, "%s", e.msg);
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, "shared", OPT_TIMEOUT_MS, &li, &e), OP_OK);
    worker w[NCLIENTS];
    pthread_t th[NCLIENTS];
    for (int i = 0; i < NCLIENTS; i++) {
        w[i] = (worker){.url = d.url, .shared = c, .index = i};
        memcpy(w[i].rect, li.tiles, sizeof w[i].rect);
        pthread_create(&th[i], NULL, run, &w[i]);
    }
    for (int i = 0; i < NCLIENTS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < NCLIENTS; i++)
        cr_expect_eq(w[i].errors, 0, "client %d: %d errors, first: %s", i, w[i].errors,
                     w[i].first_error);
    op_client_stats ss;
    cr_assert_eq(op_client_stats_get(c, OPT_TIMEOUT_MS, &ss, &e), OP_OK);
    cr_assert_geq(ss.requests, NCLIENTS * NREQUESTS);
    cr_assert_eq(ss.errors, 0);
    cr_assert_gt(ss.cache_hits, 0);
    cr_assert_leq(ss.p50_us, ss.p90_us);
    cr_assert_leq(ss.p90_us, ss.p99_us);
    cr_assert_leq(ss.p99_us, ss.max_us);
    cr_assert_eq(ss.levels, 1 + NCLIENTS);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    opt_soup_free(&floor);
}

Test(daemon_load, single_flight_and_tiny_cache, .timeout = 60)
{
    /* A cache smaller than one tile: every read still answers (the newest entry is never
     * evicted) and evictions are counted. */
    opt_daemon d;
    opt_daemon_init(&d);
    static const char *const extra[] = {"--cache-bytes", "0", NULL};
    opt_daemon_start(&d, extra);
    op_client *c = opt_connect(&d);
    opt_soup floor = {0};
    opt_soup_quad(&floor, 0, 0, 30, 30, 0);
    op_client_mesh m = opt_mesh("floor", &floor);
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(op_client_level_put(c, "tiny", NULL, 0, &m, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK);
    op_soup soup = {floor.v, 3 * floor.nv, floor.t, 3 * floor.nt, NULL};
    op_settings s;
    op_settings_default(&s);
    opt_ref ref;
    opt_ref_bake(&soup, &s, &ref);
    for (int round = 0; round < 2; round++)
        opt_check_level(c, "tiny", &ref);
    op_client_stats ss;
    cr_assert_eq(op_client_stats_get(c, OPT_TIMEOUT_MS, &ss, &e), OP_OK);
    cr_assert_gt(ss.cache_evictions, 0);
    opt_ref_free(&ref);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    opt_soup_free(&floor);
}

Test(daemon_load, cached_reads_answer_while_a_big_level_builds, .timeout = 120)
{
    opt_daemon d;
    opt_daemon_init(&d);
    static const char *const extra[] = {"--threads", "1", NULL};
    opt_daemon_start(&d, extra);
    op_client *c = opt_connect(&d);
    opt_soup small = {0};
    opt_soup_quad(&small, 0, 0, 9, 9, 0);
    op_client_mesh sm = opt_mesh("floor", &small);
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(op_client_level_put(c, "small", NULL, 0, &sm, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK);
    op_client_tile t;
    cr_assert_eq(op_client_tile_get(c, "small", 0, 0, OPT_TIMEOUT_MS, &t, &e), OP_OK, "%s", e.msg);
    op_client_tile_free(&t);
    /* A level whose background rebuild keeps the only build thread busy for a while. */
    op_arena *a = op_arena_create(0);
    op_soup big;
    cr_assert_eq(op_levelgen("rooms", 768, 5, a, &big, &e), OP_OK, "%s", e.msg);
    op_client_mesh bm = {
        "gen", big.verts, big.verts_len / 3, (const int32_t *)big.tris, big.tris_len / 3, NULL};
    cr_assert_eq(op_client_level_put(c, "big", NULL, 0, &bm, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK, "%s", e.msg);
    double worst = 0;
    for (int i = 0; i < 20; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        cr_assert_eq(op_client_tile_get(c, "small", 0, 0, OPT_TIMEOUT_MS, &t, &e), OP_OK);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        op_client_tile_free(&t);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        worst = ms > worst ? ms : worst;
    }
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, "big", OPT_TIMEOUT_MS, &li, &e), OP_OK);
    cr_assert(li.bake_running, "the big level finished too soon to show anything (%lld tiles)",
              (long long)li.bake_total);
    cr_assert_lt(worst, 250.0, "a cached read took %.1f ms while a level was building", worst);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    opt_soup_free(&small);
    op_arena_destroy(a);
}
