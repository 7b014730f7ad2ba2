/*
 * The full tile build (build3d-polys.md §1–§5): every tile validates, a tile built
 * alone equals the same tile of a full build, and a full build gives the same bytes
 * at 1, 2 and 8 threads. Levels: generated kinds, the shared levels, random soups.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/build.h"
#include "onepath/hash.h"
#include "onepath/levelgen.h"
#include "onepath/obj.h"
#include "onepath/parallel.h"
#include "onepath/tile_codec.h"
#include "op_test.h"

typedef struct tile_hashes {
    int nlayers;
    uint64_t hash[8];
    int layer[8];
} tile_hashes;

typedef struct full_build {
    const op_level *lvl;
    op_stage last;
    tile_hashes *res;
} full_build;

/* Hash of one tile's result at the given stage: blobs for OP_STAGE_TILE, the canonical
 * dump of the span stage for OP_STAGE_SPANS. */
static op_status tile_job(void *user, int i, op_arena *out, op_arena *scratch, op_err *err)
{
    full_build *fb = user;
    op_tile_rect r = op_level_tiles(fb->lvl);
    int w = r.tx1 - r.tx0 + 1;
    int tx = r.tx0 + i % w, tz = r.tz0 + i / w;
    op_tile_stages st;
    op_status s = op_level_build_stages(fb->lvl, tx, tz, fb->last, 0, out, scratch, &st, err);
    if (s != OP_OK)
        return s;
    tile_hashes *h = &fb->res[i];
    if (fb->last == OP_STAGE_SPANS) {
        uint64_t x = OP_HASH_INIT;
        if (!st.skipped)
            op_chf_dump(&st.chf, op_hash_sink_write, &x);
        h->nlayers = 1;
        h->hash[0] = x;
        return OP_OK;
    }
    if (st.ntiles > 8)
        return op_err_set(err, OP_ELIMIT, "test: more than 8 layers");
    for (int k = 0; k < st.ntiles; k++) {
        op_bytes b;
        if ((s = op_tile_encode(&st.tiles[k], &b, &h->hash[k], err)) != OP_OK)
            return s;
        /* Round trip: the strict decoder accepts what the encoder wrote. */
        op_tile back;
        uint64_t hb;
        s = op_tile_decode(b.data, b.len, out, &back, &hb, err);
        op_bytes_free(&b);
        if (s != OP_OK)
            return s;
        if (hb != h->hash[k])
            return op_err_set(err, OP_EINTERNAL, "test: decoded hash differs");
        h->layer[k] = st.tiles[k].layer;
    }
    h->nlayers = st.ntiles;
    return OP_OK;
}

static uint64_t build_all(const op_level *lvl, op_stage last, int threads, tile_hashes **out)
{
    int n = op_level_tile_count(lvl);
    full_build fb = {lvl, last, calloc((size_t)n + 1, sizeof(tile_hashes))};
    op_parallel_opts o = {threads, NULL, NULL, NULL};
    op_err e;
    op_status s = op_parallel_for(n, &o, tile_job, &fb, &e);
    cr_assert_eq(s, OP_OK, "full build at %d threads: %s", threads, e.msg);
    uint64_t h = OP_HASH_INIT;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < fb.res[i].nlayers; k++)
            h = op_hash_update(h, &fb.res[i].hash[k], 8);
    if (out)
        *out = fb.res;
    else
        free(fb.res);
    return h;
}

static void check_level(const op_soup *soup, const op_settings *s, op_stage last,
                        const char *scenario)
{
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create(soup, s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    tile_hashes *ref;
    uint64_t h1 = build_all(lvl, last, 1, &ref);
    cr_assert_eq(build_all(lvl, last, 2, NULL), h1, "2 threads differ from 1");
    cr_assert_eq(build_all(lvl, last, 8, NULL), h1, "8 threads differ from 1");
    /* Every tile alone, in fresh arenas, in reverse order. */
    int n = op_level_tile_count(lvl);
    full_build one = {lvl, last, calloc((size_t)n + 1, sizeof(tile_hashes))};
    for (int i = n - 1; i >= 0; i--) {
        op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
        cr_assert_eq(tile_job(&one, i, out, scratch, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(one.res[i].nlayers, ref[i].nlayers, "tile %d layer count", i);
        for (int k = 0; k < ref[i].nlayers; k++)
            cr_assert_eq(one.res[i].hash[k], ref[i].hash[k], "tile %d layer %d alone differs", i,
                         k);
        op_arena_destroy(out);
        op_arena_destroy(scratch);
    }
    free(one.res);
    free(ref);
    if (scenario)
        op_test_golden(scenario, h1);
    op_level_destroy(lvl);
}

static void gen(const char *kind, int size, op_arena *a, op_soup *soup)
{
    op_err e;
    cr_assert_eq(op_levelgen(kind, size, 1, a, soup, &e), OP_OK, "%s", e.msg);
}

static const char *const kinds[] = {"flat",       "terrain", "stairs", "rooms",
                                    "multifloor", "ramp",    "pillars"};

Test(build, generated_levels_validate_and_are_thread_and_tile_independent, .timeout = 600)
{
    op_settings s;
    op_settings_default(&s);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        op_arena *a = op_arena_create(0);
        op_soup soup;
        gen(kinds[k], 64, a, &soup);
        check_level(&soup, &s, OP_STAGE_TILE, NULL);
        op_arena_destroy(a);
    }
}

Test(build, shared_levels_validate_and_are_thread_and_tile_independent, .timeout = 600)
{
    static const char *const levels[] = {"dungeon.obj", "undulating.obj"};
    op_settings s;
    op_settings_default(&s);
    for (int i = 0; i < 2; i++) {
        op_arena *a = op_arena_create(0);
        op_soup soup;
        op_err e;
        cr_assert_eq(op_obj_read_file(op_test_level(levels[i]), a, &soup, &e), OP_OK, "%s", e.msg);
        check_level(&soup, &s, OP_STAGE_TILE, NULL);
        op_arena_destroy(a);
    }
}

Test(build, span_stage_same_bytes_at_any_thread_count)
{
    op_settings s;
    op_settings_default(&s);
    op_arena *a = op_arena_create(0);
    op_soup soup;
    gen("multifloor", 64, a, &soup);
    check_level(&soup, &s, OP_STAGE_SPANS, "build3d/spans-multifloor-level");
    op_arena_destroy(a);
}

Test(build, layer_by_layer_tiles_validate_and_are_thread_and_tile_independent, .timeout = 600)
{
    /* Layers with a detail stage that does not sample (sd <= 0.9 cells): every layer of a
     * tile is built on its own (build3d-regions.md §4, build3d-runtime.md §2.3). */
    op_settings s;
    op_settings_default(&s);
    s.partition = OP_PARTITION_LAYERS;
    s.detail_sample_distance = 0.0;
    op_arena *a = op_arena_create(0);
    op_soup soup;
    gen("multifloor", 64, a, &soup);
    check_level(&soup, &s, OP_STAGE_TILE, "build3d/mesh-layers-apart");
    op_arena_destroy(a);
    a = op_arena_create(0);
    gen("ramp", 64, a, &soup);
    check_level(&soup, &s, OP_STAGE_TILE, NULL);
    op_arena_destroy(a);
}

Test(build, layer_by_layer_views_hold_only_their_layer)
{
    /* Every polygon of a layer-by-layer tile layer comes from a region of that layer, and
     * the tile's layers are distinct and ascending. */
    op_settings s;
    op_settings_default(&s);
    s.partition = OP_PARTITION_LAYERS;
    s.detail_sample_distance = 0.0;
    op_arena *a = op_arena_create(0);
    op_soup soup;
    gen("multifloor", 64, a, &soup);
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_tile_rect r = op_level_tiles(lvl);
    int stacked = 0;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
            op_tile_stages st;
            cr_assert_eq(
                op_level_build_stages(lvl, tx, tz, OP_STAGE_TILE, 0, out, scratch, &st, &e), OP_OK,
                "%s", e.msg);
            if (!st.skipped)
                cr_assert(st.layer_by_layer);
            for (int k = 0; k < st.ntiles; k++) {
                const op_tile *t = &st.tiles[k];
                if (k > 0)
                    cr_assert_gt(t->layer, st.tiles[k - 1].layer);
                for (int p = 0; p < t->npolys; p++)
                    cr_assert_eq(st.region_layer[t->regs[p]], t->layer, "tile (%d, %d)", tx, tz);
            }
            stacked += st.ntiles > 1;
            op_arena_destroy(out);
            op_arena_destroy(scratch);
        }
    cr_assert_gt(stacked, 0, "no tile with two layers: the test shows nothing");
    op_level_destroy(lvl);
    op_arena_destroy(a);
}

/* ---- the grid origin (build3d-spans.md §1.1) ---- */

static op_level *level_of(const op_soup *soup, const op_settings *s)
{
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create(soup, s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    return lvl;
}

Test(build, moved_grid_is_thread_and_tile_independent, .timeout = 600)
{
    /* Off the cell lines and off the world origin: every byte identity still holds. */
    op_settings s;
    op_settings_default(&s);
    s.grid_origin_x = 0.37;
    s.grid_origin_z = -4.11;
    static const char *const some[] = {"multifloor", "rooms"};
    for (int k = 0; k < 2; k++) {
        op_arena *a = op_arena_create(0);
        op_soup soup;
        gen(some[k], 64, a, &soup);
        check_level(&soup, &s, OP_STAGE_TILE, NULL);
        op_arena_destroy(a);
    }
    s.partition = OP_PARTITION_LAYERS;
    s.detail_sample_distance = 0.0;
    op_arena *a = op_arena_create(0);
    op_soup soup;
    gen("multifloor", 64, a, &soup);
    check_level(&soup, &s, OP_STAGE_TILE, NULL);
    op_arena_destroy(a);
}

Test(build, grid_moved_by_whole_tiles_shifts_the_keys_only, .timeout = 300)
{
    /* Cell 0.25 and tile 8 m are exact binary fractions, so with the grid origin at
     * (24, -16) = (3, -2) tiles every cell line grid_origin + k * cs is exactly a line of
     * the unmoved grid: the build must be the same tiles under keys shifted by (-3, 2),
     * with the same origins, vertices, polygons, neighbours and detail. */
    op_settings s0, s1;
    op_settings_default(&s0);
    s0.cell_size = 0.25;
    s0.tile_size = 8.0;
    s1 = s0;
    s1.grid_origin_x = 24.0;
    s1.grid_origin_z = -16.0;
    op_arena *a = op_arena_create(0);
    op_soup soup;
    gen("multifloor", 64, a, &soup);
    op_level *l0 = level_of(&soup, &s0), *l1 = level_of(&soup, &s1);
    op_tile_rect r0 = op_level_tiles(l0), r1 = op_level_tiles(l1);
    cr_assert(r1.tx0 == r0.tx0 - 3 && r1.tx1 == r0.tx1 - 3 && r1.tz0 == r0.tz0 + 2 &&
                  r1.tz1 == r0.tz1 + 2,
              "range %d..%d x %d..%d vs %d..%d x %d..%d", r1.tx0, r1.tx1, r1.tz0, r1.tz1, r0.tx0,
              r0.tx1, r0.tz0, r0.tz1);
    int polys = 0;
    for (int tz = r0.tz0; tz <= r0.tz1; tz++)
        for (int tx = r0.tx0; tx <= r0.tx1; tx++) {
            op_arena *o0 = op_arena_create(0), *o1 = op_arena_create(0), *sc = op_arena_create(0);
            op_tile_stages a0, a1;
            op_err e;
            cr_assert_eq(op_level_build_stages(l0, tx, tz, OP_STAGE_TILE, 0, o0, sc, &a0, &e),
                         OP_OK, "%s", e.msg);
            cr_assert_eq(
                op_level_build_stages(l1, tx - 3, tz + 2, OP_STAGE_TILE, 0, o1, sc, &a1, &e), OP_OK,
                "%s", e.msg);
            cr_assert_eq(a0.ntiles, a1.ntiles, "tile (%d, %d)", tx, tz);
            for (int k = 0; k < a0.ntiles; k++) {
                const op_tile *t0 = &a0.tiles[k], *t1 = &a1.tiles[k];
                cr_assert(t1->tx == tx - 3 && t1->tz == tz + 2 && t1->layer == t0->layer);
                cr_assert(memcmp(t0->origin, t1->origin, sizeof t0->origin) == 0,
                          "tile (%d, %d): origin (%.17g, %.17g) vs (%.17g, %.17g)", tx, tz,
                          t0->origin[0], t0->origin[2], t1->origin[0], t1->origin[2]);
                cr_assert(t0->nverts == t1->nverts && t0->npolys == t1->npolys &&
                          t0->ndverts == t1->ndverts && t0->ndtris == t1->ndtris);
                size_t np = (size_t)t0->npolys * (size_t)t0->nvp;
                cr_assert(!memcmp(t0->verts, t1->verts, (size_t)t0->nverts * 12) &&
                              !memcmp(t0->polys, t1->polys, np * 2) &&
                              !memcmp(t0->neis, t1->neis, np * 2) &&
                              !memcmp(t0->dverts, t1->dverts, (size_t)t0->ndverts * 12) &&
                              !memcmp(t0->dtris, t1->dtris, (size_t)t0->ndtris * 4),
                          "tile (%d, %d) layer %d differs", tx, tz, t0->layer);
                polys += t0->npolys;
            }
            op_arena_destroy(o0);
            op_arena_destroy(o1);
            op_arena_destroy(sc);
        }
    cr_assert_gt(polys, 100);
    op_level_destroy(l0);
    op_level_destroy(l1);
    op_arena_destroy(a);
}

Test(build, grid_origin_moves_the_cells_and_the_tile_range)
{
    /* A floor from x = z = 0.05 .. 9.5: on the default grid it lies in tile (0, 0); with the
     * grid origin at (0.1, 0.1) its first 5 cm fall into tile (-1, -1)'s column and row. The
     * cells move with the grid, so the polygons differ (the floor's edge is 5 cm from a
     * line instead of 5 cm past one). */
    static const float v[] = {0.05f, 0, 0.05f, 9.5f, 0, 0.05f, 9.5f, 0, 9.5f, 0.05f, 0, 9.5f};
    static const int t[] = {0, 2, 1, 0, 3, 2};
    op_soup soup = {v, 12, t, 6, NULL};
    op_settings s;
    op_settings_default(&s);
    op_level *l0 = level_of(&soup, &s);
    op_tile_rect r = op_level_tiles(l0);
    cr_assert(r.tx0 == 0 && r.tx1 == 0 && r.tz0 == 0 && r.tz1 == 0);
    s.grid_origin_x = s.grid_origin_z = 0.1;
    op_level *l1 = level_of(&soup, &s);
    r = op_level_tiles(l1);
    cr_assert(r.tx0 == -1 && r.tx1 == 0 && r.tz0 == -1 && r.tz1 == 0, "%d..%d x %d..%d", r.tx0,
              r.tx1, r.tz0, r.tz1);
    op_arena *o = op_arena_create(0), *sc = op_arena_create(0);
    op_tile_stages a0, a1;
    op_err e;
    cr_assert_eq(op_level_build_stages(l0, 0, 0, OP_STAGE_TILE, 0, o, sc, &a0, &e), OP_OK, "%s",
                 e.msg);
    cr_assert_eq(op_level_build_stages(l1, 0, 0, OP_STAGE_TILE, 0, o, sc, &a1, &e), OP_OK, "%s",
                 e.msg);
    cr_assert_eq(a1.tiles[0].origin[0], 0.1);
    cr_assert_eq(a1.tiles[0].origin[2], 0.1);
    cr_assert_eq(a0.tiles[0].origin[0], 0.0);
    /* The floor's edge x lies on a cell line of its grid: k * 0.3 by default, 0.1 + k * 0.3
     * on the moved grid (so the two builds' edges differ). */
    double w[2] = {1e9, 1e9};
    const op_tile *tt[2] = {&a0.tiles[0], &a1.tiles[0]};
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < tt[b]->nverts; i++)
            w[b] = fmin(w[b], tt[b]->origin[0] + (double)tt[b]->verts[3 * i]);
    for (int b = 0; b < 2; b++) {
        double k = (w[b] - (b ? 0.1 : 0.0)) / 0.3;
        cr_assert(fabs(k - round(k)) < 1e-4, "grid %d: edge x %.6f is off its cell lines", b, w[b]);
    }
    cr_assert(fabs(w[0] - w[1]) > 0.05, "the cells did not move (%.6f, %.6f)", w[0], w[1]);
    op_arena_destroy(o);
    op_arena_destroy(sc);
    op_level_destroy(l0);
    op_level_destroy(l1);
}
