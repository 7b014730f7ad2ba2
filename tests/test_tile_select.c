/*
 * Tile grid, triangle selection and tile heightfields (build3d-spans.md §1): tile
 * range, selection against an independent box-overlap oracle, the skip rule, y0 and
 * rows, heightfield and voxel-chunk input, neighbouring-tile equality, and the
 * hash-matrix scenarios build3d/spans-raster-*.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/build.h"
#include "onepath/hash.h"
#include "onepath/limits.h"
#include "onepath/spans.h"
#include "op_test.h"

static op_arena *out, *scratch;

static void setup(void)
{
    out = op_arena_create(0);
    scratch = op_arena_create(0);
}
static void teardown(void)
{
    op_arena_destroy(out);
    op_arena_destroy(scratch);
}

TestSuite(tiles, .init = setup, .fini = teardown);

/* ---- soups built in the tests ---- */

typedef struct soup_buf {
    float *v;
    int *t;
    uint8_t *a;
    int nv, nt, capv, capt;
} soup_buf;

static void sb_init(soup_buf *s)
{
    memset(s, 0, sizeof *s);
    s->capv = 1 << 16;
    s->capt = 1 << 17;
    s->v = calloc((size_t)s->capv * 3, sizeof(float));
    s->t = calloc((size_t)s->capt * 3, sizeof(int));
    s->a = calloc((size_t)s->capt, 1);
}
static void sb_free(soup_buf *s)
{
    free(s->v);
    free(s->t);
    free(s->a);
}
static int sb_vert(soup_buf *s, double x, double y, double z)
{
    cr_assert_lt(s->nv, s->capv);
    s->v[3 * s->nv] = (float)x;
    s->v[3 * s->nv + 1] = (float)y;
    s->v[3 * s->nv + 2] = (float)z;
    return s->nv++;
}
static void sb_tri(soup_buf *s, int a, int b, int c, int area)
{
    cr_assert_lt(s->nt, s->capt);
    s->t[3 * s->nt] = a;
    s->t[3 * s->nt + 1] = b;
    s->t[3 * s->nt + 2] = c;
    s->a[s->nt++] = (uint8_t)area;
}
/* A quad a b c d (counter-clockwise seen from below, i.e. walkable winding a c b). */
static void sb_quad(soup_buf *s, int a, int b, int c, int d, int area)
{
    sb_tri(s, a, c, b, area);
    sb_tri(s, a, d, c, area);
}
static op_soup sb_soup(const soup_buf *s)
{
    op_soup so = {s->v, (size_t)s->nv * 3, s->t, (size_t)s->nt * 3, s->a};
    return so;
}

/* Jittered height grid over [x0, x0 + n*step]^2 (z likewise) with random heights in
 * [0, amp), then walls and boxes; flat_floor adds one big floor quad under it all
 * at y = -1 (so every tile has the same y0). */
static void terrain(soup_buf *s, op_test_rng *r, double x0, int n, double step, double amp,
                    int nwalls, int flat_floor)
{
    int base = s->nv;
    for (int j = 0; j <= n; j++)
        for (int i = 0; i <= n; i++) {
            double jx = (i > 0 && i < n) ? (op_test_rand01(r) - 0.5) * step * 0.6 : 0;
            double jz = (j > 0 && j < n) ? (op_test_rand01(r) - 0.5) * step * 0.6 : 0;
            sb_vert(s, x0 + i * step + jx, op_test_rand01(r) * amp, x0 + j * step + jz);
        }
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            int a = base + j * (n + 1) + i;
            sb_quad(s, a, a + 1, a + n + 2, a + n + 1, op_test_rand_int(r, 1, 63));
        }
    for (int w = 0; w < nwalls; w++) {
        double x = x0 + op_test_rand01(r) * n * step, z = x0 + op_test_rand01(r) * n * step;
        double dx = (op_test_rand01(r) - 0.5) * 6, dz = (op_test_rand01(r) - 0.5) * 6;
        double y = op_test_rand01(r) * amp, h = 0.5 + op_test_rand01(r) * 3;
        int a = sb_vert(s, x, y, z), b = sb_vert(s, x + dx, y, z + dz);
        int c = sb_vert(s, x + dx, y + h, z + dz), d = sb_vert(s, x, y + h, z);
        sb_tri(s, a, b, c, 63);
        sb_tri(s, a, c, d, 63);
        if (w % 3 == 0) { /* a table: a walkable slab above the ground */
            int e = sb_vert(s, x, y + 2.5, z), f = sb_vert(s, x + 2, y + 2.5, z);
            int g = sb_vert(s, x + 2, y + 2.5, z + 2), k = sb_vert(s, x, y + 2.5, z + 2);
            sb_quad(s, e, f, g, k, 63);
        }
    }
    if (flat_floor) {
        double e = x0 + n * step;
        int a = sb_vert(s, x0, -1, x0), b = sb_vert(s, e, -1, x0);
        int c = sb_vert(s, e, -1, e), d = sb_vert(s, x0, -1, e);
        sb_quad(s, a, b, c, d, 63);
    }
}

/* ---- tile range and selection ---- */

Test(tiles, tile_range_uses_floor_for_negative_coordinates)
{
    op_settings st;
    op_settings_default(&st); /* 9.6 wu tiles of 32 cells */
    soup_buf s;
    sb_init(&s);
    int a = sb_vert(&s, -0.1, 0, -19.3), b = sb_vert(&s, 9.7, 0, -19.3),
        c = sb_vert(&s, 9.7, 0, 0.2);
    sb_tri(&s, a, c, b, 63);
    op_soup so = sb_soup(&s);
    op_tile_range r;
    op_err e;
    cr_assert_eq(op_soup_tile_range(&so, &st, &r, &e), OP_OK, "%s", e.msg);
    /* -0.1 / 9.6 -> -1 (not 0); 9.7 -> 1; -19.3 -> -3 (-2.01); 0.2 -> 0. */
    cr_assert_eq(r.tx0, -1);
    cr_assert_eq(r.tx1, 1);
    cr_assert_eq(r.tz0, -3);
    cr_assert_eq(r.tz1, 0);
    sb_free(&s);
}

Test(tiles, too_many_tiles_is_out_of_range)
{
    op_settings st;
    op_settings_default(&st);
    st.tile_size = 1.0;
    st.cell_size = 0.5;
    soup_buf s;
    sb_init(&s);
    /* 1024 x 1024 tiles = 2^20: allowed; 1025 x 1024: refused naming the count. */
    int a = sb_vert(&s, 0, 0, 0), b = sb_vert(&s, 1023.5, 0, 0), c = sb_vert(&s, 0, 0, 1023.5);
    sb_tri(&s, a, c, b, 63);
    op_soup so = sb_soup(&s);
    op_tile_range r;
    op_err e;
    cr_assert_eq(op_soup_tile_range(&so, &st, &r, &e), OP_OK, "%s", e.msg);
    cr_assert_eq((r.tx1 - r.tx0 + 1) * (r.tz1 - r.tz0 + 1), OP_MAX_TILES);
    s.v[3 * b] = 1024.5f;
    cr_assert_eq(op_soup_tile_range(&so, &st, &r, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "1049600 tiles"), "%s", e.msg);
    /* A tile smaller than the smallest cell size. */
    st.tile_size = 0.0005;
    cr_assert_eq(op_soup_tile_range(&so, &st, &r, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "cell size"), "%s", e.msg);
    sb_free(&s);
}

Test(tiles, selection_matches_grid_box_overlap)
{
    /* Oracle: triangle t is in tile (tx, tz) iff its XZ box overlaps the tile's grid
     * box [tx*TS - B*cs, (tx+1)*TS + B*cs] (z likewise); boxes within 1e-4 of a grid
     * box edge are not drawn, so the oracle's exact-real reading is unambiguous. */
    op_settings st;
    op_settings_default(&st);
    op_tile_grid g;
    op_tile_grid_derive(&st, &g);
    double bcs = g.border * g.cs, ts = st.tile_size;
    op_test_rng rng = {11};
    soup_buf s;
    sb_init(&s);
    for (int i = 0; i < 300; i++) {
        double x = op_test_rand01(&rng) * 40 - 20, z = op_test_rand01(&rng) * 40 - 20;
        int a = sb_vert(&s, x, 0, z);
        int b = sb_vert(&s, x + op_test_rand01(&rng) * 3, 0, z);
        int c = sb_vert(&s, x, 0, z + op_test_rand01(&rng) * 3);
        sb_tri(&s, a, c, b, 63);
    }
    op_soup so = sb_soup(&s);
    op_tile_range r;
    op_err e;
    cr_assert_eq(op_soup_tile_range(&so, &st, &r, &e), OP_OK);
    int checked = 0;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            uint32_t *ids;
            size_t n;
            cr_assert_eq(op_tile_select(&so, &st, &r, tx, tz, scratch, &ids, &n, &e), OP_OK);
            size_t k = 0;
            for (int t = 0; t < s.nt; t++) {
                double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
                for (int v = 0; v < 3; v++)
                    for (int ax = 0; ax < 2; ax++) {
                        double p = s.v[3 * s.t[3 * t + v] + 2 * ax];
                        lo[ax] = fmin(lo[ax], p);
                        hi[ax] = fmax(hi[ax], p);
                    }
                double g0[2] = {tx * ts - bcs, tz * ts - bcs},
                       g1[2] = {(tx + 1) * ts + bcs, (tz + 1) * ts + bcs};
                int near = 0, in = 1;
                for (int ax = 0; ax < 2; ax++) {
                    near |= fabs(hi[ax] - g0[ax]) < 1e-4 || fabs(lo[ax] - g1[ax]) < 1e-4;
                    in &= hi[ax] > g0[ax] && lo[ax] < g1[ax];
                }
                int got = k < n && ids[k] == (uint32_t)t;
                if (got)
                    k++;
                if (near)
                    continue;
                checked++;
                cr_assert_eq(got, in, "tile (%d, %d) triangle %d", tx, tz, t);
            }
            cr_assert_eq(k, n, "ids are in input order");
        }
    cr_assert_gt(checked, 3000);
    uint32_t *ids;
    size_t n;
    cr_assert_eq(op_tile_select(&so, &st, &r, r.tx1 + 1, r.tz0, scratch, &ids, &n, &e), OP_ERANGE);
    sb_free(&s);
}

Test(tiles, buckets_equal_per_tile_selection_and_builds)
{
    op_settings st;
    op_settings_default(&st);
    st.tile_size = 4.5;
    op_test_rng rng = {77};
    soup_buf s;
    sb_init(&s);
    terrain(&s, &rng, -7.7, 12, 1.3, 2.0, 10, 0);
    op_soup so = sb_soup(&s);
    op_tile_range r;
    op_err e;
    cr_assert_eq(op_soup_tile_range(&so, &st, &r, &e), OP_OK);
    uint32_t *off, *ids;
    cr_assert_eq(op_tile_buckets(&so, &st, &r, out, scratch, &off, &ids, &e), OP_OK, "%s", e.msg);
    int ntx = r.tx1 - r.tx0 + 1, tiles = 0;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            size_t i = (size_t)(tz - r.tz0) * (size_t)ntx + (size_t)(tx - r.tx0);
            uint32_t *sel;
            size_t n;
            cr_assert_eq(op_tile_select(&so, &st, &r, tx, tz, scratch, &sel, &n, &e), OP_OK);
            cr_assert_eq(off[i + 1] - off[i], n, "tile (%d, %d)", tx, tz);
            cr_assert_arr_eq(ids + off[i], sel, n * sizeof *sel);
            /* The _ids entry gives the same heightfield as the full one. */
            op_heightfield a, b;
            int ska, skb;
            cr_assert_eq(
                op_tile_heightfield_build(&so, &st, tx, tz, scratch, scratch, &a, &ska, &e), OP_OK);
            cr_assert_eq(op_tile_heightfield_build_ids(&so, &st, tx, tz, ids + off[i], n, scratch,
                                                       scratch, &b, &skb, &e),
                         OP_OK);
            cr_assert_eq(ska, skb);
            cr_assert_eq(a.span_count, b.span_count);
            cr_assert_eq(a.origin[1], b.origin[1]);
            tiles += !ska;
            op_arena_reset(scratch);
        }
    cr_assert_gt(tiles, 10);
    sb_free(&s);
}

/* A level's tile reads its triangles' classes and copy marks from the level (level.c);
 * the same tile built alone classifies and drops copies itself. Copies of every kind:
 * the same indices again, the same vertex bits under other indices, interleaved with
 * the originals; and near-copies that are not copies (another area, other vertex
 * order), which must stay. */
Test(tiles, level_tiles_equal_tiles_built_alone_with_copies)
{
    op_settings st;
    op_settings_default(&st);
    st.tile_size = 4.5;
    op_test_rng rng = {31};
    soup_buf s;
    sb_init(&s);
    terrain(&s, &rng, -3.1, 10, 1.1, 1.5, 6, 0);
    int nt = s.nt;
    for (int t = 0; t < nt; t++) /* areas below the near-copies' 9, so that theirs win */
        s.a[t] = (uint8_t)(s.a[t] ? 7 : 0);
    for (int t = 0; t < nt; t += 3) {
        int a = s.t[3 * t], b = s.t[3 * t + 1], c = s.t[3 * t + 2], area = s.a[t];
        switch (t / 3 % 4) {
        case 0: /* the same indices */
            sb_tri(&s, a, b, c, area);
            break;
        case 1: { /* the same bits, fresh vertices */
            int va = sb_vert(&s, s.v[3 * a], s.v[3 * a + 1], s.v[3 * a + 2]);
            int vb = sb_vert(&s, s.v[3 * b], s.v[3 * b + 1], s.v[3 * b + 2]);
            int vc = sb_vert(&s, s.v[3 * c], s.v[3 * c + 1], s.v[3 * c + 2]);
            sb_tri(&s, va, vb, vc, area);
            break;
        }
        case 2: /* another area: not a copy */
            sb_tri(&s, a, b, c, 9);
            break;
        default: /* rotated vertex order: not a copy (a key is the vertices in order) */
            sb_tri(&s, b, c, a, area);
        }
    }
    for (int t = 0; t < nt; t += 7) /* copies of copies, and of the first triangles */
        sb_tri(&s, s.t[3 * t], s.t[3 * t + 1], s.t[3 * t + 2], s.a[t]);
    op_soup so = sb_soup(&s);
    op_level *l;
    op_err e;
    cr_assert_eq(op_level_create(&so, &st, NULL, 0, &l, &e), OP_OK, "%s", e.msg);
    op_tile_rect r = op_level_tiles(l);
    int built = 0;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            op_tile_stages ts;
            cr_assert_eq(op_level_build_stages(l, tx, tz, OP_STAGE_SPANS, 0, out, scratch, &ts, &e),
                         OP_OK, "%s", e.msg);
            op_chf c;
            cr_assert_eq(op_tile_spans_build(&so, &st, tx, tz, NULL, 0, out, scratch, &c, &e),
                         OP_OK, "%s", e.msg);
            if (ts.skipped) {
                cr_assert_eq(c.span_count, 0, "tile (%d, %d)", tx, tz);
                continue;
            }
            const op_chf *a = &ts.chf;
            size_t n = c.span_count, cells = (size_t)c.width * (size_t)c.depth + 1;
            cr_assert_eq(a->span_count, c.span_count, "tile (%d, %d)", tx, tz);
            cr_assert_arr_eq(a->cells, c.cells, cells * sizeof *c.cells);
            cr_assert_arr_eq(a->y, c.y, n * sizeof *c.y);
            cr_assert_arr_eq(a->h, c.h, n * sizeof *c.h);
            cr_assert_arr_eq(a->areas, c.areas, n);
            cr_assert_arr_eq(a->dist, c.dist, n * sizeof *c.dist);
            built += n > 0;
            op_arena_reset(out);
            op_arena_reset(scratch);
        }
    cr_assert_gt(built, 4);
    op_level_destroy(l);
    sb_free(&s);
}

Test(tiles, tile_spans_are_stored_column_by_column)
{
    op_settings st;
    op_settings_default(&st);
    op_test_rng rng = {8};
    soup_buf s;
    sb_init(&s);
    terrain(&s, &rng, 0.0, 10, 0.9, 2.0, 8, 0);
    op_soup so = sb_soup(&s);
    op_heightfield hf;
    int skipped;
    op_err e;
    cr_assert_eq(op_tile_heightfield_build(&so, &st, 0, 0, out, scratch, &hf, &skipped, &e), OP_OK);
    cr_assert_gt(hf.span_count, 100);
    uint32_t next = 0;
    for (int c = 0; c < hf.width * hf.depth; c++)
        for (uint32_t i = hf.heads[c]; i != OP_NO_SPAN; i = hf.spans[i].next)
            cr_assert_eq(i, next++);
    cr_assert_eq(next, hf.span_count);
    sb_free(&s);
}

/* ---- skip rule, y0 and rows ---- */

Test(tiles, tile_without_walkable_triangles_is_skipped)
{
    op_settings st;
    op_settings_default(&st);
    soup_buf s;
    sb_init(&s);
    /* A wall only: no triangle may be walkable. */
    int a = sb_vert(&s, 1, 0, 1), b = sb_vert(&s, 4, 0, 1), c = sb_vert(&s, 4, 3, 1);
    sb_tri(&s, a, b, c, 63);
    op_soup so = sb_soup(&s);
    op_heightfield hf;
    int skipped = 0;
    op_err e;
    cr_assert_eq(op_tile_heightfield_build(&so, &st, 0, 0, out, scratch, &hf, &skipped, &e), OP_OK,
                 "%s", e.msg);
    cr_assert_eq(skipped, 1);
    cr_assert_eq(hf.span_count, 0);
    op_tile_grid g;
    op_tile_grid_derive(&st, &g);
    cr_assert_eq(hf.width, g.grid_cells);
    /* A floor next to it: built, with spans of the wall too. Its area 0 does not
     * matter to the skip rule (geometry only). */
    int d = sb_vert(&s, 1, 0, 2), f = sb_vert(&s, 3, 0, 2), h = sb_vert(&s, 1, 0, 4);
    sb_tri(&s, d, h, f, 0);
    so = sb_soup(&s);
    cr_assert_eq(op_tile_heightfield_build(&so, &st, 0, 0, out, scratch, &hf, &skipped, &e), OP_OK);
    cr_assert_eq(skipped, 0);
    cr_assert_gt(hf.span_count, 0);
    sb_free(&s);
}

/* MayBeWalkable's margin (build3d-polys.md §1: ny >= (cosine - 1e-3) len): a tile whose only
 * triangle is 0.0005 steeper in cosine than the 45 degree limit is still rasterized (its
 * spans unwalkable); 0.0015 steeper, it is skipped. */
static int skipped_for_slope(double cos_drop, double *cos_out)
{
    op_settings st;
    op_settings_default(&st);
    float limit = op_cos_degrees(st.agent_max_slope);
    double k = sqrt(1.0 / (((double)limit - cos_drop) * ((double)limit - cos_drop)) - 1.0);
    soup_buf s;
    sb_init(&s);
    /* The plane y = k (z - 1): normal (0, 6, -6k) for these three corners, in that order. */
    int a = sb_vert(&s, 1, 0, 1), b = sb_vert(&s, 1, (float)(2 * k), 3), c = sb_vert(&s, 4, 0, 1);
    sb_tri(&s, a, b, c, 63);
    const float *v1 = &s.v[3 * (size_t)b];
    *cos_out = 2.0 / sqrt(4.0 + (double)v1[1] * v1[1]); /* ny / len of e0 x e1 */
    op_soup so = sb_soup(&s);
    op_heightfield hf;
    int skipped = -1;
    op_err e;
    cr_assert_eq(op_tile_heightfield_build(&so, &st, 0, 0, out, scratch, &hf, &skipped, &e), OP_OK,
                 "%s", e.msg);
    for (uint32_t i = 0; !skipped && i < hf.span_count; i++)
        cr_assert_eq(hf.spans[i].area, 0, "a too steep triangle gave a walkable span");
    cr_assert(skipped || hf.span_count > 0);
    sb_free(&s);
    return skipped;
}

Test(tiles, slightly_too_steep_tiles_are_kept_by_the_may_be_walkable_margin)
{
    float limit = op_cos_degrees(45.0);
    double c;
    cr_assert_eq(skipped_for_slope(5e-4, &c), 0);
    cr_assert(c < limit && c > limit - 1e-3, "cosine %.9g is not within the margin", c);
    cr_assert_eq(skipped_for_slope(1.5e-3, &c), 1);
    cr_assert(c < limit - 1e-3);
}

Test(tiles, y0_rows_and_frame)
{
    op_settings st;
    op_settings_default(&st);
    op_tile_grid g;
    op_span_settings ss;
    op_tile_grid_derive(&st, &g);
    op_span_settings_derive(&st, &ss);
    soup_buf s;
    sb_init(&s);
    int a = sb_vert(&s, 10, 1, 10), b = sb_vert(&s, 12, 1, 10), c = sb_vert(&s, 10, 3, 12);
    sb_tri(&s, a, c, b, 63);
    /* A triangle far away, in another tile, does not count. */
    int d = sb_vert(&s, 40, -7, 40), f = sb_vert(&s, 42, -7, 40), h = sb_vert(&s, 40, 9, 42);
    sb_tri(&s, d, h, f, 63);
    op_soup so = sb_soup(&s);
    op_heightfield hf;
    int skipped;
    op_err e;
    cr_assert_eq(op_tile_heightfield_build(&so, &st, 1, 1, out, scratch, &hf, &skipped, &e), OP_OK,
                 "%s", e.msg);
    double y0 = 1.0 - 0.2;
    cr_assert_eq(hf.origin[1], y0);
    cr_assert_eq(hf.rows, (int)ceil((3.0 - y0) / 0.2) + ss.walkable_height + 2);
    cr_assert_eq(hf.origin[0], 1 * 9.6 - g.border * g.cs);
    cr_assert_eq(hf.cell0[0], 32 - g.border);
    cr_assert_eq(hf.cs, 9.6 / 32);
    cr_assert_eq(hf.ch, 0.2);
    sb_free(&s);
}

Test(tiles, rows_beyond_65535_name_the_tile)
{
    op_settings st;
    op_settings_default(&st);
    st.cell_height = 0.001;
    st.agent_height = 0.01;
    st.agent_max_climb = 0.001;
    soup_buf s;
    sb_init(&s);
    /* y range 66: ceil(66.001 / 0.001) + 10 + 2 = 66013 rows. */
    int a = sb_vert(&s, 1, 0, 1), b = sb_vert(&s, 4, 0, 1), c = sb_vert(&s, 1, 66, 4);
    sb_tri(&s, a, c, b, 63);
    int d = sb_vert(&s, 1, 0, 1), f = sb_vert(&s, 2, 0, 1), h = sb_vert(&s, 1, 0, 2);
    sb_tri(&s, d, h, f, 63);
    op_soup so = sb_soup(&s);
    op_heightfield hf;
    int skipped;
    op_err e;
    cr_assert_eq(op_tile_heightfield_build(&so, &st, 0, 0, out, scratch, &hf, &skipped, &e),
                 OP_ERANGE);
    cr_assert(strstr(e.msg, "tile (0, 0)") && strstr(e.msg, "rows > 65535"), "%s", e.msg);
    /* y range 65.4: about 65413 rows fit. */
    s.v[3 * c + 1] = 65.4f;
    cr_assert_eq(op_tile_heightfield_build(&so, &st, 0, 0, out, scratch, &hf, &skipped, &e), OP_OK,
                 "%s", e.msg);
    sb_free(&s);
}

Test(tiles, invalid_soups_are_refused)
{
    op_settings st;
    op_settings_default(&st);
    soup_buf s;
    sb_init(&s);
    int a = sb_vert(&s, 1, 0, 1), b = sb_vert(&s, 4, 0, 1), c = sb_vert(&s, 1, 0, 4);
    sb_tri(&s, a, c, b, 63);
    s.v[4] = NAN;
    op_soup so = sb_soup(&s);
    op_heightfield hf;
    int skipped;
    op_err e;
    cr_assert_eq(op_tile_heightfield_build(&so, &st, 0, 0, out, scratch, &hf, &skipped, &e),
                 OP_EINVAL);
    cr_assert(strstr(e.msg, "vertex 1 y"), "%s", e.msg);
    s.v[4] = 3e6f;
    cr_assert_eq(op_tile_heightfield_build(&so, &st, 0, 0, out, scratch, &hf, &skipped, &e),
                 OP_ERANGE);
    cr_assert(strstr(e.msg, "vertex 1 y = 3000000"), "%s", e.msg);
    s.v[4] = 0;
    cr_assert_eq(op_tile_heightfield_build(&so, &st, 5, 0, out, scratch, &hf, &skipped, &e),
                 OP_ERANGE);
    cr_assert(strstr(e.msg, "tile (5, 0)"), "%s", e.msg);
    sb_free(&s);
}

/* ---- neighbouring-tile equality (§1.8) ---- */

typedef struct gfrag {
    int64_t gx, gz;
    uint32_t tri;
    double ymin, ymax;
} gfrag;

typedef struct gfrags {
    gfrag *v;
    size_t n, cap;
    const op_heightfield *hf;
    uint32_t tri;
    int64_t lo[2], hi[2]; /* shared global cells, inclusive */
} gfrags;

static void collect(void *ctx, int x, int z, double ymin, double ymax)
{
    gfrags *f = ctx;
    int64_t gx = f->hf->cell0[0] + x, gz = f->hf->cell0[1] + z;
    if (gx < f->lo[0] || gx > f->hi[0] || gz < f->lo[1] || gz > f->hi[1])
        return;
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 1024;
        f->v = realloc(f->v, f->cap * sizeof *f->v);
    }
    f->v[f->n++] = (gfrag){gx, gz, f->tri, ymin, ymax};
}

static int cmp_gfrag(const void *pa, const void *pb)
{
    const gfrag *a = pa, *b = pb;
    if (a->gz != b->gz)
        return a->gz < b->gz ? -1 : 1;
    if (a->gx != b->gx)
        return a->gx < b->gx ? -1 : 1;
    if (a->tri != b->tri)
        return a->tri < b->tri ? -1 : 1;
    return 0;
}

/* The unfiltered heightfield of a tile with the frame op_tile_heightfield_build chose. */
static void unfiltered(const op_soup *so, const op_settings *st, const op_tile_range *r,
                       const op_heightfield *frame, int tx, int tz, op_heightfield *hf)
{
    op_err e;
    uint32_t *ids;
    size_t n;
    cr_assert_eq(op_tile_select(so, st, r, tx, tz, scratch, &ids, &n, &e), OP_OK);
    cr_assert_eq(op_heightfield_init(hf, out, frame->width, frame->depth, frame->rows,
                                     frame->origin, frame->cs, frame->ch, &e),
                 OP_OK);
    op_heightfield_use_global_lines(hf, frame->cell0[0], frame->cell0[1]);
    op_span_settings ss;
    op_span_settings_derive(st, &ss);
    uint8_t *areas = op_arena_alloc(scratch, n + 1);
    for (size_t i = 0; i < n; i++) {
        const int *ix = &so->tris[3 * ids[i]];
        areas[i] = op_triangle_walkable(&so->verts[3 * ix[0]], &so->verts[3 * ix[1]],
                                        &so->verts[3 * ix[2]], ss.slope_cos)
                       ? so->areas[ids[i]]
                       : 0;
    }
    cr_assert_eq(op_rasterize_ids(hf, so, ids, n, areas, ss.merge_threshold, &e), OP_OK, "%s",
                 e.msg);
}

static void tile_fragments(const op_soup *so, const op_settings *st, const op_tile_range *r,
                           const op_heightfield *hf, int tx, int tz, gfrags *f)
{
    op_err e;
    uint32_t *ids;
    size_t n;
    cr_assert_eq(op_tile_select(so, st, r, tx, tz, scratch, &ids, &n, &e), OP_OK);
    f->hf = hf;
    for (size_t i = 0; i < n; i++) {
        const int *ix = &so->tris[3 * ids[i]];
        f->tri = ids[i];
        op_triangle_fragments(hf, &so->verts[3 * ix[0]], &so->verts[3 * ix[1]],
                              &so->verts[3 * ix[2]], collect, f);
    }
    qsort(f->v, f->n, sizeof *f->v, cmp_gfrag);
}

/* Checks one pair of neighbouring tiles; returns 1 when their y0 are equal. */
static int check_pair(const op_soup *so, const op_settings *st, const op_tile_range *r, int ax,
                      int az, int bx, int bz, size_t *nfrags)
{
    op_heightfield fa, fb, ha, hb;
    int ska, skb;
    op_err e;
    cr_assert_eq(op_tile_heightfield_build(so, st, ax, az, out, scratch, &fa, &ska, &e), OP_OK);
    cr_assert_eq(op_tile_heightfield_build(so, st, bx, bz, out, scratch, &fb, &skb, &e), OP_OK);
    if (ska || skb)
        return 0;
    gfrags A = {0}, B = {0};
    for (int k = 0; k < 2; k++) {
        A.lo[k] = B.lo[k] = fa.cell0[k] > fb.cell0[k] ? fa.cell0[k] : fb.cell0[k];
        int64_t ea = fa.cell0[k] + fa.width - 1, eb = fb.cell0[k] + fb.width - 1;
        A.hi[k] = B.hi[k] = ea < eb ? ea : eb;
    }
    tile_fragments(so, st, r, &fa, ax, az, &A);
    tile_fragments(so, st, r, &fb, bx, bz, &B);
    /* 1. Same cells, same triangles, bitwise equal double y ranges. */
    cr_assert_eq(A.n, B.n, "tiles (%d,%d)/(%d,%d): %zu vs %zu fragments", ax, az, bx, bz, A.n, B.n);
    for (size_t i = 0; i < A.n; i++) {
        cr_assert(A.v[i].gx == B.v[i].gx && A.v[i].gz == B.v[i].gz && A.v[i].tri == B.v[i].tri);
        cr_assert(memcmp(&A.v[i].ymin, &B.v[i].ymin, sizeof(double)) == 0 &&
                  memcmp(&A.v[i].ymax, &B.v[i].ymax, sizeof(double)) == 0);
    }
    /* 2. Rows differ only through y0: a fragment's world bottom/top agree within ch. */
    double ch = fa.ch, ya = fa.origin[1], yb = fb.origin[1];
    for (size_t i = 0; i < A.n; i++) {
        double ba = ya + floor((A.v[i].ymin - ya) / ch) * ch;
        double bb = yb + floor((A.v[i].ymin - yb) / ch) * ch;
        double ta = ya + ceil((A.v[i].ymax - ya) / ch) * ch;
        double tb = yb + ceil((A.v[i].ymax - yb) / ch) * ch;
        cr_assert_leq(fabs(ba - bb), ch * (1 + 1e-9));
        cr_assert_leq(fabs(ta - tb), ch * (1 + 1e-9));
    }
    /* 3. Equal y0: the unfiltered spans of every shared cell are identical. */
    int same = ya == yb;
    if (same) {
        unfiltered(so, st, r, &fa, ax, az, &ha);
        unfiltered(so, st, r, &fb, bx, bz, &hb);
        for (int64_t gz = A.lo[1]; gz <= A.hi[1]; gz++)
            for (int64_t gx = A.lo[0]; gx <= A.hi[0]; gx++) {
                uint32_t sa = ha.heads[(gx - ha.cell0[0]) + (gz - ha.cell0[1]) * ha.width];
                uint32_t sb = hb.heads[(gx - hb.cell0[0]) + (gz - hb.cell0[1]) * hb.width];
                while (sa != OP_NO_SPAN && sb != OP_NO_SPAN) {
                    cr_assert(ha.spans[sa].smin == hb.spans[sb].smin &&
                              ha.spans[sa].smax == hb.spans[sb].smax &&
                              ha.spans[sa].area == hb.spans[sb].area);
                    sa = ha.spans[sa].next;
                    sb = hb.spans[sb].next;
                }
                cr_assert(sa == OP_NO_SPAN && sb == OP_NO_SPAN);
            }
    }
    *nfrags += A.n;
    free(A.v);
    free(B.v);
    return same;
}

Test(tiles, neighbouring_tiles_agree_on_shared_cells, .timeout = 60)
{
    /* Three settings (one with cs = 10/34, not a round number) on soups around the
     * origin (negative tiles included); every horizontal and vertical pair. */
    static const double tile_sizes[3] = {9.6, 10.0, 4.5};
    static const double radii[3] = {0.6, 0.3, 1.0};
    op_test_rng rng = {2024};
    int pairs = 0, equal_y0 = 0;
    size_t nfrags = 0;
    for (int cfg = 0; cfg < 6; cfg++) {
        op_settings st;
        op_settings_default(&st);
        st.tile_size = tile_sizes[cfg % 3];
        st.agent_radius = radii[cfg % 3];
        soup_buf s;
        sb_init(&s);
        terrain(&s, &rng, -13.3, 24, 1.1, 2.0, 25, cfg >= 3);
        op_soup so = sb_soup(&s);
        op_tile_range r;
        op_err e;
        cr_assert_eq(op_soup_tile_range(&so, &st, &r, &e), OP_OK);
        for (int tz = r.tz0; tz <= r.tz1; tz++)
            for (int tx = r.tx0; tx <= r.tx1; tx++) {
                if (tx < r.tx1) {
                    equal_y0 += check_pair(&so, &st, &r, tx, tz, tx + 1, tz, &nfrags);
                    pairs++;
                }
                if (tz < r.tz1) {
                    equal_y0 += check_pair(&so, &st, &r, tx, tz, tx, tz + 1, &nfrags);
                    pairs++;
                }
                op_arena_reset(out);
                op_arena_reset(scratch);
            }
        sb_free(&s);
    }
    cr_assert_gt(pairs, 60);
    cr_assert_gt(equal_y0, 20);
    cr_assert_gt(nfrags, 20000);
}

/* ---- heightfield and voxel-chunk input ---- */

Test(tiles, heightfield_input_maps_columns)
{
    op_settings st;
    op_settings_default(&st);
    st.tile_size = 3.0;
    st.cell_size = 0.3; /* 10 cells; B = 5 */
    op_tile_grid g;
    op_span_settings ss;
    op_tile_grid_derive(&st, &g);
    op_span_settings_derive(&st, &ss);
    /* 12 x 3 columns: column (i, k) holds [i, i + 2) area i + 1 and, for i = 11, a
     * second span [20, 30). */
    uint32_t col[37];
    op_span_in sp[40];
    int n = 0;
    for (int c = 0; c < 36; c++) {
        int i = c % 12;
        col[c] = (uint32_t)n;
        sp[n++] = (op_span_in){(uint16_t)i, (uint16_t)(i + 2), (uint8_t)(i + 1)};
        if (i == 11)
            sp[n++] = (op_span_in){20, 30, 5};
    }
    col[36] = (uint32_t)n;
    op_hf_input in = {12, 3, 40, 1.5, -2.0, 0.25, col, sp};
    op_heightfield hf;
    op_err e;
    cr_assert_eq(op_tile_heightfield_build_hf(&in, &st, 1, 0, out, &hf, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(hf.rows, 40 + ss.walkable_height + 2);
    cr_assert_eq(hf.origin[1], -2.0);
    cr_assert_eq(hf.origin[0], 1.5 + (1 * 3.0 - g.border * g.cs));
    /* Tile 1 shows columns 10 - 5 = 5 .. 24; grid cell x shows column x + 5. */
    for (int z = 0; z < g.grid_cells; z++)
        for (int x = 0; x < g.grid_cells; x++) {
            int i = x + 5, k = z - 5;
            uint32_t s = hf.heads[x + z * hf.width];
            if (i >= 12 || k < 0 || k >= 3) {
                cr_assert_eq(s, OP_NO_SPAN);
                continue;
            }
            cr_assert_neq(s, OP_NO_SPAN);
            cr_assert_eq(hf.spans[s].smin, i);
            cr_assert_eq(hf.spans[s].smax, i + 2);
            s = hf.spans[s].next;
            cr_assert_eq(s == OP_NO_SPAN, i != 11);
        }
    cr_assert_eq(op_tile_heightfield_build_hf(&in, &st, 2, 0, out, &hf, &e), OP_ERANGE);
    in.rows = OP_MAX_ROWS - 5;
    cr_assert_eq(op_tile_heightfield_build_hf(&in, &st, 0, 0, out, &hf, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "rows > 65535"), "%s", e.msg);
}

Test(tiles, voxel_chunk_runs_take_their_top_voxel_area)
{
    op_settings st;
    op_settings_default(&st);
    st.tile_size = 3.0;
    st.cell_size = 0.3;
    op_tile_grid g;
    op_tile_grid_derive(&st, &g);
    /* 2 x 8 x 1 voxels: column 0 rows 1..3 areas 4, 9, 2 then row 5 area 7;
     * column 1 empty. */
    uint8_t v[16] = {0, 4, 9, 2, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    op_voxel_chunk c = {2, 8, 1, 0.0, 0.0, v};
    op_heightfield hf;
    op_err e;
    cr_assert_eq(op_tile_heightfield_build_chunk(&c, &st, 0, 0, out, &hf, &e), OP_OK, "%s", e.msg);
    int cell = g.border + g.border * hf.width;
    uint32_t s = hf.heads[cell];
    cr_assert_eq(hf.spans[s].smin, 1);
    cr_assert_eq(hf.spans[s].smax, 4);
    s = hf.spans[s].next;
    cr_assert_eq(hf.spans[s].smin, 5);
    cr_assert_eq(hf.spans[s].smax, 6);
    cr_assert_eq(hf.spans[s].next, OP_NO_SPAN);
    cr_assert_eq(hf.heads[cell + 1], OP_NO_SPAN);
    cr_assert_eq(hf.span_count, 2);
    /* Unfiltered areas: the same fragments added by hand, threshold 0. */
    op_heightfield ref;
    double o[3] = {0, 0, 0};
    cr_assert_eq(op_heightfield_init(&ref, out, 1, 1, 20, o, 1, 1, &e), OP_OK);
    int rows[4] = {1, 2, 3, 5}, areas[4] = {4, 9, 2, 7};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(op_heightfield_add_span(&ref, 0, 0, rows[i], rows[i] + 1, areas[i], 0, &e),
                     OP_OK);
    cr_assert_eq(ref.spans[ref.heads[0]].area, 2);
    cr_assert_eq(op_tile_heightfield_build_chunk(&c, &st, 1, 0, out, &hf, &e), OP_ERANGE);
}

/* ---- hash-matrix scenarios ---- */

static int hash_sink(void *ctx, const char *d, size_t n)
{
    return op_hash_sink_write(ctx, d, n);
}

static uint64_t soup_tiles_hash(const op_soup *so, const op_settings *st)
{
    op_tile_range r;
    op_err e;
    cr_assert_eq(op_soup_tile_range(so, st, &r, &e), OP_OK);
    uint64_t h = OP_HASH_INIT;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            op_heightfield hf;
            int skipped;
            cr_assert_eq(op_tile_heightfield_build(so, st, tx, tz, out, scratch, &hf, &skipped, &e),
                         OP_OK, "%s", e.msg);
            char line[128];
            int n = snprintf(line, sizeof line, "tile %d %d skipped %d y0 %.17g rows %d\n", tx, tz,
                             skipped, hf.origin[1], hf.rows);
            op_hash_sink_write(&h, line, (size_t)n);
            cr_assert_eq(op_heightfield_dump(&hf, hash_sink, &h), 0);
            op_arena_reset(out);
            op_arena_reset(scratch);
        }
    return h;
}

static void scenario(const char *name, int seed, double tile_size, double x0, int flat)
{
    op_settings st;
    op_settings_default(&st);
    st.tile_size = tile_size;
    uint64_t hashes[2];
    for (int run = 0; run < 2; run++) {
        op_test_rng rng = {(uint64_t)seed};
        soup_buf s;
        sb_init(&s);
        terrain(&s, &rng, x0, 20, 1.3, 3.0, 30, flat);
        op_soup so = sb_soup(&s);
        hashes[run] = soup_tiles_hash(&so, &st);
        sb_free(&s);
    }
    cr_assert_eq(hashes[0], hashes[1]);
    op_test_golden(name, hashes[0]);
}

Test(tiles, golden_terrain)
{
    scenario("build3d/spans-raster-terrain", 1, 9.6, 0.0, 0);
}

Test(tiles, golden_negative_odd_cells)
{
    scenario("build3d/spans-raster-odd-cells", 2, 10.0, -14.1, 1);
}

Test(tiles, golden_chunk)
{
    op_settings st;
    op_settings_default(&st);
    st.tile_size = 3.0;
    uint64_t hashes[2];
    for (int run = 0; run < 2; run++) {
        op_test_rng rng = {3};
        enum { SX = 25, SY = 40, SZ = 17 };
        static uint8_t v[SX * SY * SZ];
        for (int k = 0; k < SZ; k++)
            for (int i = 0; i < SX; i++) {
                int ground = op_test_rand_int(&rng, 2, 8);
                for (int j = 0; j < SY; j++)
                    v[(k * SX + i) * SY + j] =
                        (uint8_t)((j < ground || (j > 20 && j < 22 + (i + k) % 3))
                                      ? op_test_rand_int(&rng, 1, 63)
                                      : 0);
            }
        op_voxel_chunk c = {SX, SY, SZ, -1.0, 2.0, v};
        uint64_t h = OP_HASH_INIT;
        for (int tz = 0; tz < 2; tz++)
            for (int tx = 0; tx < 3; tx++) {
                op_heightfield hf;
                op_err e;
                cr_assert_eq(op_tile_heightfield_build_chunk(&c, &st, tx, tz, out, &hf, &e), OP_OK,
                             "%s", e.msg);
                cr_assert_eq(op_heightfield_dump(&hf, hash_sink, &h), 0);
                op_arena_reset(out);
            }
        hashes[run] = h;
    }
    cr_assert_eq(hashes[0], hashes[1]);
    op_test_golden("build3d/spans-raster-chunk", hashes[0]);
}
