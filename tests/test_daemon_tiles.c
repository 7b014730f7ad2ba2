/*
 * onepathd tiles equal the offline bake byte for byte: every tile layer of the shared
 * dungeon level and of a generated level, fetched with tile.range and tile.get, equals
 * op_level + op_tile_encode run in-process on the same soup and settings; so do a level
 * cut into many meshes (a tile's soup gathered from several, some with areas) and levels
 * at the coordinate limit (where a tile is built from the whole soup). Concurrent
 * requests for one unbuilt tile all get the same bytes (single flight).
 */
#include <pthread.h>

#include "op_daemon_test.h"
#include "op_test.h"
#include "onepath/levelgen.h"
#include "onepath/obj.h"
#include "onepath/spans.h"

static void put_soup(op_client *c, const char *level, const char *mesh, const op_soup *soup,
                     const op_client_setting *sets, int nsets)
{
    op_client_mesh m = {mesh,
                        soup->verts,
                        soup->verts_len / 3,
                        (const int32_t *)soup->tris,
                        soup->tris_len / 3,
                        soup->areas};
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(
        op_client_level_put(c, level, sets, nsets, &m, 1, OPT_TIMEOUT_MS, &v, &changed, &e), OP_OK,
        "%s", e.msg);
    cr_assert_eq(v, 1);
    cr_assert(changed);
}

/* tile.get of every tile equals the reference too (the per-tile path). */
static void check_tile_gets(op_client *c, const char *level, const opt_ref *ref)
{
    op_err e;
    for (int i = 0; i < ref->n; i++) {
        const opt_ref_tile *r = &ref->t[i];
        op_client_tile t;
        cr_assert_eq(op_client_tile_get(c, level, r->tx, r->tz, OPT_TIMEOUT_MS, &t, &e), OP_OK,
                     "%s", e.msg);
        cr_assert_eq(t.nlayers, r->nl);
        for (int k = 0; k < r->nl; k++)
            cr_assert(t.layers[k].len == r->blob[k].len &&
                          !memcmp(t.layers[k].blob, r->blob[k].data, r->blob[k].len),
                      "tile (%d, %d) layer %d differs", r->tx, r->tz, k);
        op_client_tile_free(&t);
    }
}

/* Pages of one tile (max_bytes 1) over a sub-rectangle reaching past the level's range:
 * row-major, clipped, each tile once, equal to the reference. */
static void check_small_pages(op_client *c, const char *level, const opt_ref *ref)
{
    int rect[4] = {ref->rect.tx0 + 1, ref->rect.tz0 + 1, ref->rect.tx1 + 5, ref->rect.tz1 - 1};
    int after[2], *ap = NULL, more = 1, tx = rect[0], tz = rect[1], pages = 0, seen = 0;
    op_err e;
    while (more) {
        op_client_tile_range rg;
        cr_assert_eq(op_client_tile_range_get(c, level, rect, ap, 1, OPT_TIMEOUT_MS, &rg, &e),
                     OP_OK, "%s", e.msg);
        cr_assert_geq(rg.ntiles, 1, "a page holds at least one tile");
        size_t bytes = 0;
        for (int i = 0; i < rg.ntiles; i++) {
            const op_client_tile *t = &rg.tiles[i];
            cr_assert(t->tx == tx && t->tz == tz, "page %d: (%d, %d), expected (%d, %d)", pages,
                      t->tx, t->tz, tx, tz);
            const opt_ref_tile *r = opt_ref_find(ref, tx, tz);
            cr_assert_eq(t->nlayers, r->nl);
            for (int k = 0; k < r->nl; k++) {
                cr_assert(!memcmp(t->layers[k].blob, r->blob[k].data, r->blob[k].len));
                if (i > 0)
                    bytes += t->layers[k].len;
            }
            if (++tx > ref->rect.tx1) {
                tx = rect[0];
                tz++;
            }
            seen++;
        }
        cr_assert_eq(bytes, 0, "a page went past max_bytes after its first tile");
        pages++;
        more = rg.has_next;
        after[0] = rg.next[0];
        after[1] = rg.next[1];
        ap = after;
        op_client_tile_range_free(&rg);
    }
    cr_assert_eq(seen, (ref->rect.tx1 - rect[0] + 1) * (rect[3] - rect[1] + 1));
    cr_assert_gt(pages, 1);
}

Test(daemon_tiles, dungeon_equals_offline_bake, .timeout = 120)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_obj_read_file(op_test_level("dungeon.obj"), a, &soup, &e), OP_OK, "%s", e.msg);
    op_settings s;
    op_settings_default(&s);
    opt_ref ref;
    opt_ref_bake(&soup, &s, &ref);
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    put_soup(c, "dungeon", "dungeon.obj", &soup, NULL, 0);
    int layers = opt_check_level(c, "dungeon", &ref);
    cr_assert_gt(layers, 20, "only %d layers: the dungeon should have many", layers);
    check_tile_gets(c, "dungeon", &ref);
    check_small_pages(c, "dungeon", &ref);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    opt_ref_free(&ref);
    op_arena_destroy(a);
}

Test(daemon_tiles, generated_level_with_settings_equals_offline_bake, .timeout = 120)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("rooms", 48, 7, a, &soup, &e), OP_OK, "%s", e.msg);
    /* Settings travel as the map of protocol §3.3 and must reach the build unchanged. */
    op_client_setting sets[] = {{"cell_size", "0.25"},
                                {"tile_size", "8"},
                                {"partition", "monotone"},
                                {"agent_radius", "0.5"},
                                {"detail_sample_distance", "1.5"}};
    op_settings s;
    op_settings_default(&s);
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        cr_assert_eq(op_settings_set(&s, sets[i].key, sets[i].value, &e), OP_OK);
    opt_ref ref;
    opt_ref_bake(&soup, &s, &ref);
    opt_daemon d;
    opt_daemon_init(&d);
    static const char *const extra[] = {"--cache-bytes", "200K", NULL};
    opt_daemon_start(&d, extra);
    op_client *c = opt_connect(&d);
    put_soup(c, "rooms", "generated", &soup, sets, (int)(sizeof sets / sizeof sets[0]));
    cr_assert_gt(opt_check_level(c, "rooms", &ref), 0);
    /* A second pass reads through a cache smaller than the level: rebuilt tiles are the
     * same bytes. */
    opt_check_level(c, "rooms", &ref);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    opt_ref_free(&ref);
    op_arena_destroy(a);
}

Test(daemon_tiles, concurrent_gets_of_one_tile_agree, .timeout = 120)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_obj_read_file(op_test_level("dungeon.obj"), a, &soup, &e), OP_OK);
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    put_soup(c, "dungeon", "dungeon.obj", &soup, NULL, 0);
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, "dungeon", OPT_TIMEOUT_MS, &li, &e), OP_OK);
    /* The last tile of the range: the background bake reaches it last. */
    opt_getter g[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        g[i] = (opt_getter){d.url, "dungeon", NULL, li.tiles[2], li.tiles[3], {0}, OP_OK, "", 0};
        pthread_create(&th[i], NULL, opt_get_one, &g[i]);
    }
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(g[i].st, OP_OK, "%s", g[i].msg);
        cr_assert_eq(g[i].t.nlayers, g[0].t.nlayers);
        for (int k = 0; k < g[0].t.nlayers; k++)
            cr_assert(g[i].t.layers[k].len == g[0].t.layers[k].len &&
                      !memcmp(g[i].t.layers[k].blob, g[0].t.layers[k].blob, g[0].t.layers[k].len));
    }
    for (int i = 0; i < 8; i++)
        op_client_tile_free(&g[i].t);
    /* Single flight: after everything is read, every tile was built at most once (the
     * background rebuild of the put and the 8 concurrent gets shared one build). Only
     * tiles that select a triangle can need a build (a tile no triangle reaches has no
     * layers without one, level.h), and every tile with layers needed one. */
    opt_ref ref;
    op_settings s;
    op_settings_default(&s);
    opt_ref_bake(&soup, &s, &ref);
    opt_check_level(c, "dungeon", &ref);
    op_client_stats ss;
    cr_assert_eq(op_client_stats_get(c, OPT_TIMEOUT_MS, &ss, &e), OP_OK);
    cr_assert_eq(ss.cache_evictions, 0);
    op_tile_range all = {ref.rect.tx0, ref.rect.tz0, ref.rect.tx1, ref.rect.tz1};
    uint64_t selecting = 0, with_layers = 0;
    for (int i = 0; i < ref.n; i++) {
        uint32_t *ids;
        size_t n;
        cr_assert_eq(op_tile_select(&soup, &s, &all, ref.t[i].tx, ref.t[i].tz, a, &ids, &n, &e),
                     OP_OK, "%s", e.msg);
        selecting += n > 0;
        with_layers += ref.t[i].nl > 0;
    }
    cr_assert(ss.builds <= selecting && ss.builds >= with_layers,
              "%llu builds for %lld tiles (%llu select triangles, %llu have layers)",
              (unsigned long long)ss.builds, (long long)li.tiles_total,
              (unsigned long long)selecting, (unsigned long long)with_layers);
    /* Read again: nothing is rebuilt. */
    uint64_t builds = ss.builds;
    opt_check_level(c, "dungeon", &ref);
    opt_ref_free(&ref);
    cr_assert_eq(op_client_stats_get(c, OPT_TIMEOUT_MS, &ss, &e), OP_OK);
    cr_assert_eq(ss.builds, builds);
    op_client_tile t;
    cr_assert_eq(
        op_client_tile_get(c, "dungeon", li.tiles[2] + 1, li.tiles[3], OPT_TIMEOUT_MS, &t, &e),
        OP_ERANGE);
    cr_assert(strstr(e.msg, "outside"), "%s", e.msg);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    op_arena_destroy(a);
}

/* The soup's triangles [t0, t1) as a mesh of their own (vertices renumbered). */
static opt_soup cut(const op_soup *soup, size_t t0, size_t t1)
{
    opt_soup o = {0};
    for (size_t t = t0; t < t1; t++) {
        for (int k = 0; k < 3; k++) {
            const float *v = &soup->verts[3 * (size_t)soup->tris[3 * t + (size_t)k]];
            opt_soup_vert(&o, v[0], v[1], v[2]);
        }
        int b = (int)(3 * (t - t0));
        opt_soup_tri(&o, b, b + 1, b + 2);
    }
    return o;
}

Test(daemon_tiles, a_level_of_many_meshes_equals_offline_bake, .timeout = 120)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_obj_read_file(op_test_level("dungeon.obj"), a, &soup, &e), OP_OK, "%s", e.msg);
    enum { NP = 7 };
    size_t nt = soup.tris_len / 3;
    opt_soup parts[NP];
    uint8_t *areas[NP];
    op_client_mesh m[NP];
    char names[NP][8];
    /* The reference soup: the parts in name order, areas where a part has them, 63 in the
     * others (protocol §3.2). */
    opt_soup all = {0};
    uint8_t *all_areas = malloc(nt);
    size_t at = 0;
    for (int p = 0; p < NP; p++) {
        size_t t0 = nt * (size_t)p / NP, t1 = nt * (size_t)(p + 1) / NP;
        parts[p] = cut(&soup, t0, t1);
        areas[p] = NULL;
        if (p % 3 == 1) {
            areas[p] = malloc(t1 - t0);
            for (size_t t = 0; t < t1 - t0; t++)
                areas[p][t] = (uint8_t)(1 + (t * 7 + (size_t)p) % 60);
        }
        for (size_t t = 0; t < t1 - t0; t++) {
            int b = (int)all.nv;
            for (int k = 0; k < 3; k++)
                opt_soup_vert(&all, parts[p].v[9 * t + 3 * (size_t)k],
                              parts[p].v[9 * t + 3 * (size_t)k + 1],
                              parts[p].v[9 * t + 3 * (size_t)k + 2]);
            opt_soup_tri(&all, b, b + 1, b + 2);
            all_areas[at++] = areas[p] ? areas[p][t] : 63;
        }
        snprintf(names[p], sizeof names[p], "p%d", p);
        m[p] = opt_mesh(names[p], &parts[p]);
        m[p].areas = areas[p];
    }
    op_soup ref_soup = {all.v, 3 * all.nv, all.t, 3 * all.nt, all_areas};
    op_settings s;
    op_settings_default(&s);
    opt_ref ref;
    opt_ref_bake(&ref_soup, &s, &ref);
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    uint64_t v;
    int changed;
    /* Put in reverse order: the level orders meshes by name. */
    op_client_mesh rev[NP];
    for (int p = 0; p < NP; p++)
        rev[p] = m[NP - 1 - p];
    cr_assert_eq(op_client_level_put(c, "many", NULL, 0, rev, NP, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK, "%s", e.msg);
    cr_assert_gt(opt_check_level(c, "many", &ref), 20);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    opt_ref_free(&ref);
    for (int p = 0; p < NP; p++) {
        opt_soup_free(&parts[p]);
        free(areas[p]);
    }
    opt_soup_free(&all);
    free(all_areas);
    op_arena_destroy(a);
}

Test(daemon_tiles, levels_at_the_coordinate_limit_equal_offline_bake, .timeout = 120)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("rooms", 24, 3, a, &soup, &e), OP_OK, "%s", e.msg);
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    /* The rooms moved against +2^21 in x and -2^21 in z, then the other way. */
    static const float shift[2][2] = {{2097152.0f - 30.0f, -2097152.0f + 6.0f},
                                      {-2097152.0f + 5.0f, 2097152.0f - 28.0f}};
    for (int k = 0; k < 2; k++) {
        float *v = malloc(soup.verts_len * sizeof *v);
        for (size_t i = 0; i < soup.verts_len / 3; i++) {
            v[3 * i] = soup.verts[3 * i] + shift[k][0];
            v[3 * i + 1] = soup.verts[3 * i + 1];
            v[3 * i + 2] = soup.verts[3 * i + 2] + shift[k][1];
        }
        op_soup moved = {v, soup.verts_len, soup.tris, soup.tris_len, NULL};
        op_settings s;
        op_settings_default(&s);
        opt_ref ref;
        opt_ref_bake(&moved, &s, &ref);
        const char *level = k ? "edge-b" : "edge-a";
        put_soup(c, level, "rooms", &moved, NULL, 0);
        cr_assert_gt(opt_check_level(c, level, &ref), 0);
        opt_ref_free(&ref);
        free(v);
    }
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    op_arena_destroy(a);
}

/* A waiting page over a level just put (its tiles not built yet) waits for their builds
 * and carries the whole level in one reply; the bytes are the offline bake's. */
Test(daemon_tiles, waiting_pages_carry_unbuilt_tiles, .timeout = 180)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("terrain", 256, 1, a, &soup, &e), OP_OK, "%s", e.msg);
    op_settings s;
    op_settings_default(&s);
    opt_ref ref;
    opt_ref_bake(&soup, &s, &ref);
    cr_assert_gt(ref.n, 100);
    cr_assert_lt(ref.n, 1024, "one waiting page holds at most 1024 tiles");
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    put_soup(c, "terrain", "terrain", &soup, NULL, 0);
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, "terrain", OPT_TIMEOUT_MS, &li, &e), OP_OK);
    /* The put's background rebuild of several hundred tiles takes far longer than this
     * request: the page below covers tiles not built yet. */
    cr_assert_lt(li.tiles_built, li.tiles_total, "every tile was built before the fetch");
    int pages = 0;
    opt_check_level_paged(c, "terrain", &ref, 20000, &pages);
    cr_assert_eq(pages, 1, "%d tiles came in %d pages, not one", ref.n, pages);
    /* Built: plain and waiting pages give the same tiles. */
    cr_assert_gt(opt_check_level(c, "terrain", &ref), 0);
    /* A deadline that passes at once still gives every tile once, in order (more pages). */
    put_soup(c, "terrain2", "terrain", &soup, NULL, 0);
    pages = 0;
    opt_check_level_paged(c, "terrain2", &ref, 1, &pages);
    cr_assert_geq(pages, 1);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    opt_ref_free(&ref);
    op_arena_destroy(a);
}
