/*
 * The full tile build (build3d-polys.md §1–§5): every tile validates, a tile built
 * alone equals the same tile of a full build, and a full build gives the same bytes
 * at 1, 2 and 8 threads. Levels: generated kinds, the shared levels, random soups.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "onepath/build.h"
#include "onepath/mesh.h"
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

static const char *const kinds[] = {"flat",       "terrain", "stairs",  "rooms",
                                    "multifloor", "ramp",    "pillars", "furniture"};

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

/* The layer-by-layer build applies up to a detail sample distance of exactly 0.9 cells
 * (build3d-regions.md §4: "at most 0.9 cells"): 0.225 m over 0.25 m cells is 0.9 exactly in
 * double, and the next double above it is not. */
/* A 7 m square floor at the origin rising to `rise` at z = 7, one tile of 16 m at 0.5 m cells,
 * no agent radius: the tile stages of tile (0, 0) up to `last`, or the build's status (arrays
 * in the caller's arenas; err filled). */
static op_status floor_tile_status(op_settings *s, float rise, op_stage last, op_arena *a,
                                   op_arena *out, op_tile_stages *st, op_err *e)
{
    const float v[] = {0, 0, 0, 0, rise, 7, 7, rise, 7, 7, 0, 0};
    static const int t[] = {0, 1, 2, 0, 2, 3};
    float *verts = op_arena_alloc(a, sizeof v);
    int *tris = op_arena_alloc(a, sizeof t);
    memcpy(verts, v, sizeof v);
    memcpy(tris, t, sizeof t);
    op_soup soup = {verts, 12, tris, 6, NULL};
    s->cell_size = 0.5;
    s->tile_size = 16.0;
    s->agent_radius = 0.0;
    op_level *lvl;
    cr_assert_eq(op_level_create(&soup, s, NULL, 0, &lvl, e), OP_OK, "%s", e->msg);
    op_arena *scratch = op_arena_create(0);
    op_status rc = op_level_build_stages(lvl, 0, 0, last, 0, out, scratch, st, e);
    op_arena_destroy(scratch);
    op_level_destroy(lvl);
    return rc;
}

static void floor_tile(op_settings *s, float rise, op_stage last, op_arena *a, op_arena *out,
                       op_tile_stages *st)
{
    op_err e;
    cr_assert_eq(floor_tile_status(s, rise, last, a, out, st, &e), OP_OK, "%s", e.msg);
    cr_assert(!st->skipped);
}

/* MaxEdgeLength in cells is (int)(MaxEdgeLength / CellSize + 0.5) (build3d-polys.md §1):
 * 1.35 m at 0.5 m cells is 2.7, so 3 cells, not 2. The floor's 12-cell walls are split at
 * their middles down to 3-cell edges. */
Test(build, max_edge_length_rounds_to_the_nearest_cell)
{
    op_settings s;
    op_settings_default(&s);
    s.max_edge_length = 1.35;
    op_arena *a = op_arena_create(0), *out = op_arena_create(0);
    op_tile_stages st;
    floor_tile(&s, 0.0f, OP_STAGE_CONTOURS, a, out, &st);
    int64_t longest = 0;
    for (int i = 0; i < st.contours.count; i++) {
        const op_contour *c = &st.contours.contours[i];
        for (int k = 0; k < c->nverts; k++) {
            const op_contour_vert *p = &c->verts[k], *q = &c->verts[(k + 1) % c->nverts];
            int64_t dx = q->x - p->x, dz = q->z - p->z;
            if (p->neighbour == 0 && dx * dx + dz * dz > longest)
                longest = dx * dx + dz * dz;
        }
    }
    int cells = (int)(1.35 / 0.5 + 0.5);
    cr_assert_eq(cells, 3);
    cr_assert_eq(longest, (int64_t)cells * cells, "longest wall edge %g cells",
                 sqrt((double)longest));
    op_arena_destroy(a);
    op_arena_destroy(out);
}

/* A tile's vertical reach (maxRow - minRow + 2 (WalkableClimb + 1)) CellHeight may equal
 * MaxLocalExtent but not exceed it (build3d-polys.md §2.5): the floor rising 0.7 m spans
 * several rows, and the limit is set to the reach itself, then one double below it. */
Test(build, vertical_reach_may_reach_max_local_extent_but_not_exceed_it)
{
    op_settings s;
    op_settings_default(&s);
    op_arena *a = op_arena_create(0), *out = op_arena_create(0);
    op_tile_stages st;
    floor_tile(&s, 0.7f, OP_STAGE_POLYS, a, out, &st);
    int lo = INT32_MAX, hi = INT32_MIN;
    for (size_t i = 0; i < (size_t)st.polys.npolys * (size_t)st.polys.nvp; i++)
        if (st.polys.polys[i] != OP_POLY_MESH_NULL) {
            int row = st.polys.verts[3 * st.polys.polys[i] + 1];
            lo = row < lo ? row : lo;
            hi = row > hi ? row : hi;
        }
    cr_assert_gt(hi - lo, 1, "the floor spans %d rows: the test shows nothing", hi - lo);
    cr_assert_eq(st.min_row, lo);
    op_span_settings ss;
    op_span_settings_derive(&s, &ss);
    double reach = (double)(hi - lo + 2 * (ss.walkable_climb + 1)) * s.cell_height;
    op_err e;
    s.max_local_extent = reach;
    cr_assert_eq(floor_tile_status(&s, 0.7f, OP_STAGE_TILE, a, out, &st, &e), OP_OK, "%s", e.msg);
    s.max_local_extent = nextafter(reach, 0.0);
    cr_assert_eq(floor_tile_status(&s, 0.7f, OP_STAGE_TILE, a, out, &st, &e), OP_ELIMIT);
    cr_assert(strstr(e.msg, "tile (0, 0)") && strstr(e.msg, "max_local_extent"), "%s", e.msg);
    op_arena_destroy(a);
    op_arena_destroy(out);
}

/* minRow is the lowest row of a vertex some polygon uses (build3d-polys.md §2.5, §4): a floor
 * 12 m wide dipping from 1 m and 1.5 m at its sides to a valley at x = 6 m, at 0.5 m cells.
 * MaxEdgeLength 6 m splits its two 24-cell walls at the valley; those vertices leave the straight
 * line by more than a row, so they stay, and merging then drops them as wall-collinear joints: the
 * mesh keeps two vertices below every polygon's. The tile's LocalY starts at the lowest used one.
 */
Test(build, min_row_is_the_lowest_vertex_a_polygon_uses)
{
    static const float v[] = {0, 1, 0, 0, 1, 4, 6, 0, 4, 6, 0, 0, 12, 1.5f, 4, 12, 1.5f, 0};
    static const int t[] = {0, 1, 2, 0, 2, 3, 3, 2, 4, 3, 4, 5};
    op_soup soup = {(float *)v, 18, (int *)t, 12, NULL};
    op_settings s;
    op_settings_default(&s);
    s.cell_size = 0.5;
    s.tile_size = 16.0;
    s.agent_radius = 0.0;
    s.max_edge_length = 6.0;
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_tile_stages st;
    cr_assert_eq(op_level_build_stages(lvl, 0, 0, OP_STAGE_TILE, 0, out, scratch, &st, &e), OP_OK,
                 "%s", e.msg);
    const op_poly_mesh *pm = &st.polys;
    int used = INT32_MAX, any = INT32_MAX;
    for (size_t i = 0; i < (size_t)pm->npolys * (size_t)pm->nvp; i++)
        if (pm->polys[i] != OP_POLY_MESH_NULL && pm->verts[3 * pm->polys[i] + 1] < used)
            used = pm->verts[3 * pm->polys[i] + 1];
    for (int i = 0; i < pm->nverts; i++)
        any = pm->verts[3 * i + 1] < any ? pm->verts[3 * i + 1] : any;
    cr_assert_lt(any, used, "no unused vertex below the polygons: the test shows nothing");
    int top = INT32_MIN;
    for (size_t i = 0; i < (size_t)pm->npolys * (size_t)pm->nvp; i++)
        if (pm->polys[i] != OP_POLY_MESH_NULL && pm->verts[3 * pm->polys[i] + 1] > top)
            top = pm->verts[3 * pm->polys[i] + 1];
    cr_assert_gt(top, used, "one height only: the test shows nothing");
    cr_assert_eq(st.min_row, used);
    cr_assert_eq(st.ntiles, 1);
    const op_tile *tile = &st.tiles[0];
    float low = INFINITY;
    for (int i = 0; i < tile->nverts; i++)
        low = fminf(low, tile->verts[3 * i + 1]);
    cr_assert_eq(low, 0.0f, "the lowest vertex is at LocalY %g", (double)low);
    cr_assert_eq(tile->origin[1], st.chf.origin[1] + (double)used * s.cell_height);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    op_level_destroy(lvl);
}

/* Tile data (build3d-polys.md §5): area 63 becomes NavSettings.Area, other ids stay, every
 * polygon gets NavSettings.Flags; with the defaults (63, 1) both rules are invisible, so area 7
 * and flags 0x2a. A 20 m flat floor, a box volume of area 5 over x 8..12 m. */
Test(build, walkable_area_and_flags_come_from_the_settings)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    gen("flat", 20, a, &soup);
    op_settings s;
    op_settings_default(&s);
    s.area = 7;
    s.flags = 0x2a;
    op_volume v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "zone");
    v.kind = OP_VOLUME_BOX;
    v.mode = OP_VOLUME_AREA;
    v.area = 5;
    v.bmin[0] = 8, v.bmin[1] = -1, v.bmin[2] = -1;
    v.bmax[0] = 12, v.bmax[1] = 1, v.bmax[2] = 21;
    op_level *lvl;
    op_mesh *m;
    op_err e;
    cr_assert_eq(op_level_create(&soup, &s, &v, 1, &lvl, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_mesh_build_level(lvl, 1, &m, &e), OP_OK, "%s", e.msg);
    int seen[64] = {0};
    for (int i = 0; i < op_mesh_tile_count(m); i++) {
        const op_tile *t = op_mesh_tile(m, i);
        for (int p = 0; p < t->npolys; p++) {
            double c[3] = {0, 0, 0}, w[3];
            int n = op_tile_poly_nverts(t, p);
            for (int k = 0; k < n; k++) {
                op_tile_world_vert(t, t->polys[(size_t)p * t->nvp + k], w);
                c[0] += w[0] / n;
            }
            int want = c[0] > 8 && c[0] < 12 ? 5 : 7;
            cr_assert_eq(t->areas[p], want, "polygon at x %g: area %u, want %d", c[0], t->areas[p],
                         want);
            cr_assert_eq(t->flags[p], 0x2a);
            seen[t->areas[p]]++;
        }
    }
    cr_assert(seen[5] > 0 && seen[7] > 0 && seen[63] == 0);
    op_mesh_destroy(m);
    op_level_destroy(lvl);
    op_arena_destroy(a);
}

Test(build, layer_by_layer_up_to_exactly_0_9_cells)
{
    op_settings s;
    op_settings_default(&s);
    s.partition = OP_PARTITION_LAYERS;
    s.cell_size = 0.25;
    s.tile_size = 8.0; /* 32 cells of exactly 0.25 m */
    op_arena *a = op_arena_create(0);
    op_soup soup;
    gen("multifloor", 32, a, &soup);
    for (int above = 0; above < 2; above++) {
        s.detail_sample_distance = above ? nextafter(0.225, 1.0) : 0.225;
        cr_assert_eq(s.detail_sample_distance / (s.tile_size / 32) == 0.9, !above);
        op_level *lvl;
        op_err e;
        cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
        int built = 0;
        for (int tz = 0; tz < 4; tz++)
            for (int tx = 0; tx < 4; tx++) {
                op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
                op_tile_stages st;
                cr_assert_eq(
                    op_level_build_stages(lvl, tx, tz, OP_STAGE_TILE, 0, out, scratch, &st, &e),
                    OP_OK, "%s", e.msg);
                if (!st.skipped) {
                    cr_assert_eq(st.layer_by_layer, !above, "tile (%d, %d), sd %.17g", tx, tz,
                                 s.detail_sample_distance);
                    built++;
                }
                op_arena_destroy(out);
                op_arena_destroy(scratch);
            }
        cr_assert_gt(built, 0);
        op_level_destroy(lvl);
    }
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
