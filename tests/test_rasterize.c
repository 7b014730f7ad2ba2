/*
 * Rasterization and the span merge (build3d-spans.md §2, §3): the conservative
 * cell rule against an independent separating-axis oracle, vertical extents,
 * grid clipping, the area-merge rule, order independence, validation.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/hash.h"
#include "onepath/limits.h"
#include "onepath/spans.h"
#include "op_test.h"

static op_arena *arena;

static void setup(void)
{
    arena = op_arena_create(0);
}
static void teardown(void)
{
    op_arena_destroy(arena);
}

TestSuite(rasterize, .init = setup, .fini = teardown);

static op_heightfield plain(int w, int d, int rows, double ox, double oy, double oz, double cs,
                            double ch)
{
    op_heightfield hf;
    op_err e;
    double o[3] = {ox, oy, oz};
    cr_assert_eq(op_heightfield_init(&hf, arena, w, d, rows, o, cs, ch, &e), OP_OK, "%s", e.msg);
    return hf;
}

/* ---- collecting fragments ---- */

typedef struct frag {
    int x, z;
    double ymin, ymax;
} frag;

typedef struct frags {
    frag v[4096];
    int n;
} frags;

static void collect(void *ctx, int x, int z, double ymin, double ymax)
{
    frags *f = ctx;
    cr_assert_lt(f->n, 4096);
    f->v[f->n++] = (frag){x, z, ymin, ymax};
}

static int has_cell(const frags *f, int x, int z)
{
    for (int i = 0; i < f->n; i++)
        if (f->v[i].x == x && f->v[i].z == z)
            return 1;
    return 0;
}

/* ---- the oracle: does the closed triangle's XZ projection meet the open square?
 * Separating axes (the square's two, the triangle's edge normals), exact for the
 * quarter-integer coordinates used here. ---- */

static int separated(const double (*t)[2], const double sq[4][2], double nx, double nz)
{
    double tmin = INFINITY, tmax = -INFINITY, smin = INFINITY, smax = -INFINITY;
    for (int i = 0; i < 3; i++) {
        double p = t[i][0] * nx + t[i][1] * nz;
        tmin = fmin(tmin, p);
        tmax = fmax(tmax, p);
    }
    for (int i = 0; i < 4; i++) {
        double p = sq[i][0] * nx + sq[i][1] * nz;
        smin = fmin(smin, p);
        smax = fmax(smax, p);
    }
    return tmax <= smin || tmin >= smax;
}

static int oracle_meets(const float *v0, const float *v1, const float *v2, double x0, double z0,
                        double cs)
{
    double t[3][2] = {{v0[0], v0[2]}, {v1[0], v1[2]}, {v2[0], v2[2]}};
    double sq[4][2] = {{x0, z0}, {x0 + cs, z0}, {x0 + cs, z0 + cs}, {x0, z0 + cs}};
    if (separated(t, sq, 1, 0) || separated(t, sq, 0, 1))
        return 0;
    for (int i = 0; i < 3; i++) {
        double ex = t[(i + 1) % 3][0] - t[i][0], ez = t[(i + 1) % 3][1] - t[i][1];
        if ((ex != 0 || ez != 0) && separated(t, sq, -ez, ex))
            return 0;
    }
    return 1;
}

/* The wall rule's oracle: for a triangle whose three x (axis 0) or z (axis 2) values
 * are one value L on a line of the grid (origin o, size cs), the cell behind it: the
 * one whose far side from the outward normal n = e0 x e1 is L, when the wall's extent
 * along the line meets the open side of that cell. 1 / 0 for a wall on a line, -1 for
 * any other triangle (then oracle_meets decides). Quarter-integers: all exact. */
static int oracle_wall(const float *v0, const float *v1, const float *v2, double o, double cs,
                       double x0, double z0)
{
    const float *v[3] = {v0, v1, v2};
    for (int ax = 0; ax <= 2; ax += 2) {
        double L = v0[ax];
        if (v1[ax] != L || v2[ax] != L || fmod(L - o, cs) != 0.0)
            continue;
        double e0[3], e1[3];
        for (int k = 0; k < 3; k++) {
            e0[k] = (double)v1[k] - v0[k];
            e1[k] = (double)v2[k] - v0[k];
        }
        double n = ax == 0 ? e0[1] * e1[2] - e0[2] * e1[1] : e0[0] * e1[1] - e0[1] * e1[0];
        if (n == 0.0)
            return -1;                      /* a segment: the plain rule (nothing on a line) */
        double lo = ax == 0 ? x0 : z0;      /* the cell's extent across the line */
        double behind = n > 0 ? L - cs : L; /* the low side of the cell behind */
        if (lo != behind)
            return 0;
        int along = ax == 0 ? 2 : 0;
        double a = ax == 0 ? z0 : x0, amin = INFINITY, amax = -INFINITY;
        for (int k = 0; k < 3; k++) {
            amin = fmin(amin, v[k][along]);
            amax = fmax(amax, v[k][along]);
        }
        return amin < a + cs && amax > a;
    }
    return -1;
}

static float qrand(op_test_rng *r, int lo4, int hi4)
{
    return (float)op_test_rand_int(r, lo4, hi4) / 4.0f;
}

Test(rasterize, cells_match_the_open_square_oracle)
{
    /* Quarter-integer vertices, cs = 1: each crossing has one final rounding, so a
     * crossing at a cell corner is exact and the rule must equal the geometric "meets
     * the open square" everywhere, corners and edges included (slanted edges through
     * corners too). Some triangles are vertical walls (XZ projection a segment),
     * collinear, snapped to integers, or single points. */
    op_test_rng rng = {42};
    for (int iter = 0; iter < 20000; iter++) {
        /* Half the time half-unit cells from -1.5 (lines still on the dyadic grid). */
        double cs = (iter / 6) % 2 ? 0.5 : 1.0, o = cs == 1.0 ? -2.0 : -1.5;
        int side = cs == 1.0 ? 8 : 14;
        op_heightfield hf = plain(side, side, 64, o, 0.0, o, cs, 1.0);
        float v[3][3];
        for (int k = 0; k < 3; k++) {
            v[k][0] = qrand(&rng, -12, 28);
            v[k][1] = qrand(&rng, 0, 40);
            v[k][2] = qrand(&rng, -12, 28);
        }
        int kind = iter % 6;
        if (kind == 1) { /* wall: third vertex above the second */
            v[2][0] = v[1][0];
            v[2][2] = v[1][2];
        } else if (kind == 2) { /* collinear in XZ through grid lines */
            v[2][0] = 2 * v[1][0] - v[0][0];
            v[2][2] = 2 * v[1][2] - v[0][2];
        } else if (kind == 5) { /* an axis-aligned wall, on a line or not (wall rule) */
            int ax = (iter / 6) % 4 < 2 ? 0 : 2;
            float L = (iter / 12) % 2 ? roundf(v[0][ax]) : v[0][ax];
            v[0][ax] = v[1][ax] = v[2][ax] = L;
        } else if (kind == 4) { /* a point */
            memcpy(v[1], v[0], sizeof v[0]);
            memcpy(v[2], v[0], sizeof v[0]);
        } else if (kind == 3) { /* snapped to integers: corners and edges */
            for (int k = 0; k < 3; k++) {
                v[k][0] = roundf(v[k][0]);
                v[k][2] = roundf(v[k][2]);
            }
        }
        frags f = {.n = 0};
        op_triangle_fragments(&hf, v[0], v[1], v[2], collect, &f);
        for (int z = 0; z < side; z++)
            for (int x = 0; x < side; x++) {
                int want = oracle_wall(v[0], v[1], v[2], o, cs, o + x * cs, o + z * cs);
                if (want < 0)
                    want = oracle_meets(v[0], v[1], v[2], o + x * cs, o + z * cs, cs);
                cr_assert_eq(has_cell(&f, x, z), want,
                             "iter %d cell (%d,%d): tri (%g,%g) (%g,%g) (%g,%g) rule %d oracle %d",
                             iter, x, z, v[0][0], v[0][2], v[1][0], v[1][2], v[2][0], v[2][2],
                             has_cell(&f, x, z), want);
            }
        /* Row-major order, each cell once. */
        for (int i = 1; i < f.n; i++)
            cr_assert(f.v[i].z > f.v[i - 1].z ||
                      (f.v[i].z == f.v[i - 1].z && f.v[i].x > f.v[i - 1].x));
    }
}

Test(rasterize, corner_and_edge_touches_add_no_span)
{
    op_heightfield hf = plain(4, 4, 16, 0, 0, 0, 1, 1);
    /* Lower-right half of cell (0,0): touches (1,0) along x = 1, (0,1) and (1,1) at the corner. */
    float a[3] = {0, 0.5f, 0}, b[3] = {1, 0.5f, 0}, c[3] = {1, 0.5f, 1};
    frags f = {.n = 0};
    op_triangle_fragments(&hf, a, b, c, collect, &f);
    cr_assert_eq(f.n, 1);
    cr_assert(has_cell(&f, 0, 0));
    /* A triangle whose only point in cell (2,2) is its corner (2,2). */
    float d[3] = {2, 1, 2}, e[3] = {1, 1, 2}, g[3] = {2, 1, 1};
    f.n = 0;
    op_triangle_fragments(&hf, d, e, g, collect, &f);
    cr_assert_eq(f.n, 1);
    cr_assert(has_cell(&f, 1, 1));
}

Test(rasterize, vertical_wall_adds_spans_on_a_grid_line_behind_it)
{
    op_heightfield hf = plain(4, 4, 16, 0, 0, 0, 1, 1);
    /* Wall along z = 1.5 from x = 0.5 to 2.5, y 1..3: crosses the interiors of
     * cells (0,1), (1,1), (2,1). */
    float a[3] = {0.5f, 1, 1.5f}, b[3] = {2.5f, 1, 1.5f}, c[3] = {2.5f, 3, 1.5f};
    frags f = {.n = 0};
    op_triangle_fragments(&hf, a, b, c, collect, &f);
    cr_assert_eq(f.n, 3);
    for (int x = 0; x < 3; x++) {
        cr_assert(has_cell(&f, x, 1));
    }
    /* y ranges: the wall rises along x from (0.5, y 1) to (2.5, y 3) on its top edge. */
    cr_assert_eq(f.v[0].ymin, 1.0);
    cr_assert_eq(f.v[0].ymax, 1.5);
    cr_assert_eq(f.v[2].ymax, 3.0);
    /* The same wall exactly on the line z = 2 goes to the one cell row behind it. Its
     * outward normal (b - a) x (c - a) = (2,0,0) x (2,2,0) points +z, so the solid is on
     * the -z side: row 1. Reversed winding faces -z: row 2. */
    a[2] = b[2] = c[2] = 2.0f;
    f.n = 0;
    op_triangle_fragments(&hf, a, b, c, collect, &f);
    cr_assert_eq(f.n, 3);
    for (int x = 0; x < 3; x++)
        cr_assert(has_cell(&f, x, 1));
    f.n = 0;
    op_triangle_fragments(&hf, a, c, b, collect, &f);
    cr_assert_eq(f.n, 3);
    for (int x = 0; x < 3; x++)
        cr_assert(has_cell(&f, x, 2));
    /* A wall on the line x = 1 (z 0.5..2.5): one column, the side away from its normal. */
    float p[3] = {1, 1, 0.5f}, q[3] = {1, 1, 2.5f}, r[3] = {1, 3, 2.5f};
    f.n = 0;
    op_triangle_fragments(&hf, p, q, r, collect, &f); /* normal (-4,0,0): solid at x > 1 */
    cr_assert_eq(f.n, 3);
    for (int z = 0; z < 3; z++)
        cr_assert(has_cell(&f, 1, z));
    /* On the grid's outer line x = 0 facing -x: the cell behind is column 0; facing +x
     * it would be column -1, outside the grid: nothing. */
    p[0] = q[0] = r[0] = 0.0f;
    f.n = 0;
    op_triangle_fragments(&hf, p, q, r, collect, &f);
    cr_assert_eq(f.n, 3);
    for (int z = 0; z < 3; z++)
        cr_assert(has_cell(&f, 0, z));
    f.n = 0;
    op_triangle_fragments(&hf, p, r, q, collect, &f);
    cr_assert_eq(f.n, 0);
}

Test(rasterize, clipping_at_grid_bounds_and_negative_coordinates)
{
    /* Grid x, z in [-3, 1) (4 cells, origin -3). A triangle covering [-10, 10]^2 fills
     * every cell once; floor, not truncation, decides the cell of -0.5. */
    op_heightfield hf = plain(4, 4, 16, -3, 0, -3, 1, 1);
    float a[3] = {-10, 1, -10}, b[3] = {-10, 1, 30}, c[3] = {30, 1, -10};
    frags f = {.n = 0};
    op_triangle_fragments(&hf, a, b, c, collect, &f);
    cr_assert_eq(f.n, 16);
    float d[3] = {-0.75f, 1, -0.75f}, e[3] = {-0.25f, 1, -0.75f}, g[3] = {-0.5f, 1, -0.25f};
    f.n = 0;
    op_triangle_fragments(&hf, d, e, g, collect, &f);
    cr_assert_eq(f.n, 1);
    cr_assert(has_cell(&f, 2, 2)); /* cell [-1, 0) */
    /* Entirely outside the grid. */
    float p[3] = {1, 1, 1}, q[3] = {2, 1, 1}, r[3] = {1, 1, 2};
    f.n = 0;
    op_triangle_fragments(&hf, p, q, r, collect, &f);
    cr_assert_eq(f.n, 0);
}

/* A closed box with outward faces, all on cell lines (x 1..3, z 1..2, y 0..3): the wall
 * rule makes each of its columns one solid span from the floor to its top, and leaves
 * the cells around it empty, whichever way its triangles are split. */
Test(rasterize, box_on_cell_lines_fills_its_own_columns)
{
    static const float v[8 * 3] = {1, 0, 1, 3, 0, 1, 3, 0, 2, 1, 0, 2,  /* bottom */
                                   1, 3, 1, 3, 3, 1, 3, 3, 2, 1, 3, 2}; /* top */
    /* Outward (e0 x e1 points out of the box): bottom -y, top +y, sides. */
    static const int t[12 * 3] = {0, 1, 2, 0, 2, 3, 4, 6, 5, 4, 7, 6, 0, 5, 1, 0, 4, 5,
                                  1, 6, 2, 1, 5, 6, 2, 7, 3, 2, 6, 7, 3, 4, 0, 3, 7, 4};
    uint8_t a[12];
    memset(a, 0, sizeof a);
    op_heightfield hf = plain(5, 4, 16, 0, 0, 0, 1, 1);
    op_err e;
    cr_assert_eq(op_rasterize(&hf, v, 8, t, a, 12, 0, &e), OP_OK, "%s", e.msg);
    for (int z = 0; z < 4; z++)
        for (int x = 0; x < 5; x++) {
            uint32_t h = hf.heads[x + z * 5];
            int inside = x >= 1 && x < 3 && z == 1;
            if (!inside) {
                cr_assert_eq(h, OP_NO_SPAN, "cell (%d,%d) outside the box has a span", x, z);
                continue;
            }
            cr_assert_neq(h, OP_NO_SPAN, "cell (%d,%d)", x, z);
            cr_assert_eq(hf.spans[h].smin, 0, "cell (%d,%d) smin %d", x, z, hf.spans[h].smin);
            /* the top face at y = 3 is row [3, 4) (§3.4: at least one row) */
            cr_assert_eq(hf.spans[h].smax, 4, "cell (%d,%d) smax %d", x, z, hf.spans[h].smax);
            cr_assert_eq(hf.spans[h].next, OP_NO_SPAN);
        }
}

/* Rasterize one triangle into a fresh heightfield and return its single span. */
static op_hf_span one_span(op_heightfield *hf, const float v[9], int area)
{
    op_err e;
    int tri[3] = {0, 1, 2};
    uint8_t a = (uint8_t)area;
    cr_assert_eq(op_rasterize(hf, v, 3, tri, &a, 1, 0, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(hf->span_count, 1);
    for (int c = 0; c < hf->width * hf->depth; c++)
        if (hf->heads[c] != OP_NO_SPAN)
            return hf->spans[hf->heads[c]];
    cr_assert_fail("no span");
    return hf->spans[0];
}

Test(rasterize, vertical_extent_rounds_outward)
{
    /* ch = 0.5, origin y = -1: row r covers [-1 + r/2, -1 + (r+1)/2). */
    float flat_mid[9] = {0.1f, 0.25f, 0.1f, 0.9f, 0.25f, 0.1f, 0.1f, 0.25f, 0.9f};
    op_heightfield hf = plain(1, 1, 20, 0, -1, 0, 1, 0.5);
    op_hf_span s = one_span(&hf, flat_mid, 63); /* (0.25 + 1) / 0.5 = 2.5 -> [2, 3) */
    cr_assert_eq(s.smin, 2);
    cr_assert_eq(s.smax, 3);
    float flat_on_line[9] = {0.1f, 0.5f, 0.1f, 0.9f, 0.5f, 0.1f, 0.1f, 0.5f, 0.9f};
    hf = plain(1, 1, 20, 0, -1, 0, 1, 0.5);
    s = one_span(&hf, flat_on_line, 63); /* exactly 3: floor 3, ceil 3 -> [3, 4) */
    cr_assert_eq(s.smin, 3);
    cr_assert_eq(s.smax, 4);
    float sloped[9] = {0.0f, 0.1f, 0.0f, 1.0f, 1.6f, 0.0f, 0.0f, 0.1f, 1.0f};
    hf = plain(1, 1, 20, 0, -1, 0, 1, 0.5);
    s = one_span(&hf, sloped, 7); /* y 0.1..1.6: floor(2.2) = 2, ceil(5.2) = 6 */
    cr_assert_eq(s.smin, 2);
    cr_assert_eq(s.smax, 6);
    cr_assert_eq(s.area, 7);
    /* Clamped at row 0 and at rows; dropped entirely below or above. */
    float low[9] = {0, -5, 0, 1, -5, 0, 0, 0.2f, 1};
    hf = plain(1, 1, 4, 0, -1, 0, 1, 0.5); /* rows 4: y in [-1, 1) */
    s = one_span(&hf, low, 1);
    cr_assert_eq(s.smin, 0);
    cr_assert_eq(s.smax, 3); /* ceil((0.2 + 1) / 0.5) = ceil(2.4) */
    float high[9] = {0, 0.5f, 0, 1, 0.5f, 0, 0, 9, 1};
    hf = plain(1, 1, 4, 0, -1, 0, 1, 0.5);
    s = one_span(&hf, high, 1);
    cr_assert_eq(s.smin, 3);
    cr_assert_eq(s.smax, 4);
    float below[9] = {0, -3, 0, 1, -3, 0, 0, -1, 1}; /* top exactly at row 0: [−4, 0) */
    op_err e;
    int tri[3] = {0, 1, 2};
    uint8_t a = 1;
    hf = plain(1, 1, 4, 0, -1, 0, 1, 0.5);
    cr_assert_eq(op_rasterize(&hf, below, 3, tri, &a, 1, 0, &e), OP_OK);
    cr_assert_eq(hf.span_count, 0);
    float above[9] = {0, 1, 0, 1, 1, 0, 0, 3, 1}; /* bottom at row 4 = rows */
    cr_assert_eq(op_rasterize(&hf, above, 3, tri, &a, 1, 0, &e), OP_OK);
    cr_assert_eq(hf.span_count, 0);
}

/* ---- the span merge (§3.5) ---- */

typedef struct span3 {
    int smin, smax, area;
} span3;

static int column(const op_heightfield *hf, int x, int z, span3 *out)
{
    int n = 0;
    for (uint32_t s = hf->heads[x + z * hf->width]; s != OP_NO_SPAN; s = hf->spans[s].next)
        out[n++] = (span3){hf->spans[s].smin, hf->spans[s].smax, hf->spans[s].area};
    return n;
}

static void add(op_heightfield *hf, int smin, int smax, int area, int thr)
{
    op_err e;
    cr_assert_eq(op_heightfield_add_span(hf, 0, 0, smin, smax, area, thr, &e), OP_OK, "%s", e.msg);
}

Test(rasterize, merge_touching_and_overlapping_spans)
{
    span3 c[8];
    op_heightfield hf = plain(1, 1, 100, 0, 0, 0, 1, 1);
    add(&hf, 10, 12, 5, 1);
    add(&hf, 20, 25, 6, 1);
    cr_assert_eq(column(&hf, 0, 0, c), 2);
    add(&hf, 12, 14, 7, 1); /* touches [10, 12): union [10, 14), top fragment area 7 */
    cr_assert_eq(column(&hf, 0, 0, c), 2);
    cr_assert_eq(c[0].smin, 10);
    cr_assert_eq(c[0].smax, 14);
    cr_assert_eq(c[0].area, 7);
    add(&hf, 15, 20, 0, 1); /* one empty row (14) stays; touches [20, 25) */
    cr_assert_eq(column(&hf, 0, 0, c), 2);
    cr_assert_eq(c[1].smin, 15);
    cr_assert_eq(c[1].smax, 25);
    cr_assert_eq(c[1].area, 6);
    add(&hf, 13, 16, 0, 1); /* bridges both: one span [10, 25) */
    cr_assert_eq(column(&hf, 0, 0, c), 1);
    cr_assert_eq(c[0].smin, 10);
    cr_assert_eq(c[0].smax, 25);
    cr_assert_eq(c[0].area, 6);
    cr_assert_eq(hf.span_count, 1);
}

Test(rasterize, area_rule_inside_and_outside_the_threshold)
{
    span3 c[4];
    /* Tops 10 (area 40) and 12 (area 3) merge into [0, 12). Threshold 2: 12 - 10 <= 2,
     * so the larger id 40 wins; threshold 1: only the top fragment counts: 3. */
    op_heightfield hf = plain(1, 1, 100, 0, 0, 0, 1, 1);
    add(&hf, 0, 10, 40, 2);
    add(&hf, 5, 12, 3, 2);
    column(&hf, 0, 0, c);
    cr_assert_eq(c[0].area, 40);
    hf = plain(1, 1, 100, 0, 0, 0, 1, 1);
    add(&hf, 0, 10, 40, 1);
    add(&hf, 5, 12, 3, 1);
    column(&hf, 0, 0, c);
    cr_assert_eq(c[0].area, 3);
    /* A fragment that qualified stops qualifying when a later one raises the top. */
    hf = plain(1, 1, 100, 0, 0, 0, 1, 1);
    add(&hf, 0, 10, 40, 2);
    add(&hf, 0, 11, 2, 2);
    column(&hf, 0, 0, c);
    cr_assert_eq(c[0].area, 40);
    add(&hf, 11, 13, 1, 2); /* top 13: 10 is out (3 > 2), 11 in (area 2), 13 (area 1) */
    column(&hf, 0, 0, c);
    cr_assert_eq(c[0].smax, 13);
    cr_assert_eq(c[0].area, 2);
    /* Threshold 0 (heightfield input): only fragments reaching the very top. */
    hf = plain(1, 1, 100, 0, 0, 0, 1, 1);
    add(&hf, 0, 10, 9, 0);
    add(&hf, 3, 10, 4, 0);
    add(&hf, 2, 9, 60, 0);
    column(&hf, 0, 0, c);
    cr_assert_eq(c[0].area, 9);
}

/* Oracle for a column: union of touching/overlapping fragments and the area rule,
 * computed on a plain row array. */
static int oracle_column(const span3 *frag, int n, int thr, span3 *out)
{
    int cover[130] = {0};
    for (int i = 0; i < n; i++)
        for (int r = frag[i].smin; r < frag[i].smax; r++)
            cover[r] = 1;
    /* touching fragments merge even without a shared row: mark joints */
    int m = 0;
    for (int r = 0; r < 128;) {
        if (!cover[r]) {
            r++;
            continue;
        }
        int a = r;
        while (r < 128 && cover[r])
            r++;
        out[m++] = (span3){a, r, 0};
    }
    for (int k = 0; k < m; k++) {
        int best = 0;
        for (int i = 0; i < n; i++)
            if (frag[i].smin >= out[k].smin && frag[i].smax <= out[k].smax &&
                out[k].smax - frag[i].smax <= thr && frag[i].area > best)
                best = frag[i].area;
        out[k].area = best;
    }
    return m;
}

Test(rasterize, merge_matches_oracle_in_any_order)
{
    op_test_rng rng = {7};
    for (int iter = 0; iter < 500; iter++) {
        int n = op_test_rand_int(&rng, 1, 12), thr = op_test_rand_int(&rng, 0, 4);
        span3 f[12], want[64], got[64];
        for (int i = 0; i < n; i++) {
            int a = op_test_rand_int(&rng, 0, 120), l = op_test_rand_int(&rng, 1, 6);
            f[i] = (span3){a, a + l, op_test_rand_int(&rng, 0, 63)};
        }
        int m = oracle_column(f, n, thr, want);
        for (int perm = 0; perm < 4; perm++) {
            for (int i = n - 1; i > 0; i--) { /* shuffle */
                int j = op_test_rand_int(&rng, 0, i);
                span3 t = f[i];
                f[i] = f[j];
                f[j] = t;
            }
            op_heightfield hf = plain(1, 1, 130, 0, 0, 0, 1, 1);
            for (int i = 0; i < n; i++)
                add(&hf, f[i].smin, f[i].smax, f[i].area, thr);
            int k = column(&hf, 0, 0, got);
            cr_assert_eq(k, m, "iter %d: %d spans, oracle %d", iter, k, m);
            for (int i = 0; i < m; i++)
                cr_assert(got[i].smin == want[i].smin && got[i].smax == want[i].smax &&
                              got[i].area == want[i].area,
                          "iter %d span %d: [%d,%d) a%d vs oracle [%d,%d) a%d", iter, i,
                          got[i].smin, got[i].smax, got[i].area, want[i].smin, want[i].smax,
                          want[i].area);
        }
    }
}

/* ---- order independence of whole rasterizations ---- */

static int hash_sink(void *ctx, const char *d, size_t n)
{
    return op_hash_sink_write(ctx, d, n);
}

static uint64_t hf_hash(const op_heightfield *hf)
{
    uint64_t h = OP_HASH_INIT;
    cr_assert_eq(op_heightfield_dump(hf, hash_sink, &h), 0);
    return h;
}

/* A random terrain-like soup: a jittered height grid, some walls and boxes. */
typedef struct soup_buf {
    float v[3 * 4096];
    int t[3 * 8192];
    uint8_t a[8192];
    int nv, nt;
} soup_buf;

static void make_soup(soup_buf *s, op_test_rng *r)
{
    s->nv = s->nt = 0;
    const int n = 12;
    for (int j = 0; j <= n; j++)
        for (int i = 0; i <= n; i++) {
            float *v = &s->v[3 * s->nv++];
            v[0] = (float)i * 0.7f + (float)(op_test_rand01(r) * 0.2);
            v[1] = (float)(op_test_rand01(r) * 1.5);
            v[2] = (float)j * 0.7f + (float)(op_test_rand01(r) * 0.2);
        }
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            int a = j * (n + 1) + i, b = a + 1, c = a + n + 1, d = c + 1;
            int q[6] = {a, c, b, b, c, d};
            for (int k = 0; k < 6; k++)
                s->t[3 * s->nt + k % 3 + (k / 3) * 3] = q[k];
            s->a[s->nt] = (uint8_t)op_test_rand_int(r, 1, 63);
            s->a[s->nt + 1] = (uint8_t)op_test_rand_int(r, 0, 63);
            s->nt += 2;
        }
    for (int w = 0; w < 20; w++) { /* walls and slabs overlapping the terrain */
        float x = (float)(op_test_rand01(r) * 8), z = (float)(op_test_rand01(r) * 8);
        float dx = (float)(op_test_rand01(r) * 2 - 1), dz = (float)(op_test_rand01(r) * 2 - 1);
        float y = (float)(op_test_rand01(r) * 2), h = (float)(op_test_rand01(r) * 2);
        int base = s->nv;
        float q[4][3] = {{x, y, z}, {x + dx, y, z + dz}, {x + dx, y + h, z + dz}, {x, y + h, z}};
        if (w % 2) { /* a slab instead of a wall */
            q[2][0] = x + dx - dz;
            q[2][1] = y;
            q[2][2] = z + dz + dx;
            q[3][0] = x - dz;
            q[3][1] = y + 0.1f;
            q[3][2] = z + dx;
        }
        memcpy(&s->v[3 * s->nv], q, sizeof q);
        s->nv += 4;
        int tt[6] = {base, base + 1, base + 2, base, base + 2, base + 3};
        memcpy(&s->t[3 * s->nt], tt, sizeof tt);
        s->a[s->nt] = (uint8_t)op_test_rand_int(r, 0, 63);
        s->a[s->nt + 1] = (uint8_t)op_test_rand_int(r, 0, 63);
        s->nt += 2;
    }
}

Test(rasterize, any_triangle_order_gives_identical_bytes)
{
    op_test_rng rng = {99};
    for (int iter = 0; iter < 10; iter++) {
        static soup_buf s;
        make_soup(&s, &rng);
        uint64_t ref = 0;
        for (int perm = 0; perm < 6; perm++) {
            if (perm) {
                for (int i = s.nt - 1; i > 0; i--) {
                    int j = op_test_rand_int(&rng, 0, i);
                    int tmp[3];
                    memcpy(tmp, &s.t[3 * i], sizeof tmp);
                    memcpy(&s.t[3 * i], &s.t[3 * j], sizeof tmp);
                    memcpy(&s.t[3 * j], tmp, sizeof tmp);
                    uint8_t ta = s.a[i];
                    s.a[i] = s.a[j];
                    s.a[j] = ta;
                }
            }
            op_heightfield hf = plain(40, 40, 200, -0.5, -0.5, -0.5, 0.25, 0.05);
            op_err e;
            if (perm % 2) { /* half the time in several calls */
                int half = s.nt / 3;
                cr_assert_eq(op_rasterize(&hf, s.v, (size_t)s.nv, s.t, s.a, (size_t)half, 3, &e),
                             OP_OK, "%s", e.msg);
                cr_assert_eq(op_rasterize(&hf, s.v, (size_t)s.nv, s.t + 3 * half, s.a + half,
                                          (size_t)(s.nt - half), 3, &e),
                             OP_OK, "%s", e.msg);
            } else {
                cr_assert_eq(op_rasterize(&hf, s.v, (size_t)s.nv, s.t, s.a, (size_t)s.nt, 3, &e),
                             OP_OK, "%s", e.msg);
            }
            cr_assert_gt(hf.span_count, 1000);
            op_filters_apply(&hf, 10, 3);
            uint64_t h = hf_hash(&hf);
            if (perm == 0)
                ref = h;
            cr_assert_eq(h, ref, "iter %d perm %d", iter, perm);
            op_arena_reset(arena);
        }
    }
}

/* ---- classification (§2) ---- */

Test(rasterize, classification_slope_and_areas)
{
    float cos45 = op_cos_degrees(45.0);
    float v[] = {
        0, 0, 0, 0, 0,    1, 1, 0, 0, /* flat, normal up: walkable */
        0, 0, 0, 1, 0,    0, 0, 0, 1, /* flat, normal down: not */
        0, 0, 0, 0, 0.5f, 1, 1, 0, 0, /* ~26.6 degrees: walkable */
        0, 0, 0, 0, 2,    1, 1, 0, 0, /* ~63.4 degrees: not */
        0, 0, 0, 0, 1,    0, 1, 0, 0, /* vertical: not */
        0, 0, 0, 1, 1,    1, 2, 2, 2, /* degenerate: not */
    };
    int t[18];
    for (int i = 0; i < 18; i++)
        t[i] = i;
    uint8_t areas_in[6] = {5, 5, 0, 9, 9, 9};
    uint8_t out[6];
    op_soup s = {v, 54, t, 18, NULL};
    op_classify_triangles(&s, cos45, out);
    uint8_t want_null[6] = {63, 0, 63, 0, 0, 0};
    cr_assert_arr_eq(out, want_null, 6);
    s.areas = areas_in;
    op_classify_triangles(&s, cos45, out);
    uint8_t want[6] = {5, 0, 0, 0, 0, 0};
    cr_assert_arr_eq(out, want, 6);
}

Test(rasterize, walkable_test_is_strict_float_normal)
{
    /* A 60 degree slope against cos(60) = 0.5: float normal y of the plane y = z*tan(60)
     * is computed in float32 exactly as the rule says; compare with the same expression. */
    float v0[3] = {0, 0, 0}, v1[3] = {0, 1.7320508f, 1}, v2[3] = {1, 0, 0};
    float e0x = v1[0] - v0[0], e0y = v1[1] - v0[1], e0z = v1[2] - v0[2];
    float e1x = v2[0] - v0[0], e1y = v2[1] - v0[1], e1z = v2[2] - v0[2];
    float nx = e0y * e1z - e0z * e1y, ny = e0z * e1x - e0x * e1z, nz = e0x * e1y - e0y * e1x;
    float y = ny * (1.0f / sqrtf(nx * nx + ny * ny + nz * nz));
    cr_assert_eq(op_triangle_walkable(v0, v1, v2, y), 0, "equal is not walkable (strict >)");
    cr_assert_eq(op_triangle_walkable(v0, v1, v2, nextafterf(y, 0)), 1);
    /* MayBeWalkable keeps a 1e-3 margin: just too steep is still "may be". */
    cr_assert_eq(op_triangle_may_be_walkable(v0, v1, v2, y + 5e-4f), 1);
    cr_assert_eq(op_triangle_may_be_walkable(v0, v1, v2, y + 2e-3f), 0);
    /* ... and the margin is 1e-3, to 1 %. */
    cr_assert_eq(op_triangle_may_be_walkable(v0, v1, v2, y + 0.99e-3f), 1);
    cr_assert_eq(op_triangle_may_be_walkable(v0, v1, v2, y + 1.01e-3f), 0);
    float d[3] = {1, 1, 1};
    cr_assert_eq(op_triangle_may_be_walkable(d, d, d, 0.0f), 0);
}

/* ---- validation ---- */

Test(rasterize, validation_names_the_value)
{
    op_heightfield hf = plain(4, 4, 16, 0, 0, 0, 1, 1);
    float v[9] = {0, 0, 0, 1, 0, 0, 0, 0, 1};
    int t[3] = {0, 1, 2};
    uint8_t a = 63;
    op_err e;
    v[4] = NAN;
    cr_assert_eq(op_rasterize(&hf, v, 3, t, &a, 1, 0, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "vertex 1 y = nan"), "%s", e.msg);
    v[4] = INFINITY;
    cr_assert_eq(op_rasterize(&hf, v, 3, t, &a, 1, 0, &e), OP_EINVAL);
    v[4] = 0;
    v[6] = 3e6f;
    cr_assert_eq(op_rasterize(&hf, v, 3, t, &a, 1, 0, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "vertex 2 x = 3000000"), "%s", e.msg);
    v[6] = (float)OP_MAX_COORD; /* exactly 2^21 is allowed */
    cr_assert_eq(op_rasterize(&hf, v, 3, t, &a, 1, 0, &e), OP_OK, "%s", e.msg);
    uint32_t nf = hf.frag_count;
    t[2] = 3;
    cr_assert_eq(op_rasterize(&hf, v, 3, t, &a, 1, 0, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "index 3"), "%s", e.msg);
    t[2] = 2;
    a = 64;
    cr_assert_eq(op_rasterize(&hf, v, 3, t, &a, 1, 0, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "area 64"), "%s", e.msg);
    a = 63;
    /* The threshold is fixed by the first fragment. */
    cr_assert_eq(op_rasterize(&hf, v, 3, t, &a, 1, 2, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "threshold 2"), "%s", e.msg);
    /* Nothing was added by the failed calls. */
    cr_assert_eq(hf.frag_count, nf);
}

Test(rasterize, heightfield_init_and_add_span_limits)
{
    op_heightfield hf;
    op_err e;
    double o[3] = {0, 0, 0};
    cr_assert_eq(op_heightfield_init(&hf, arena, 4, 4, OP_MAX_ROWS, o, 1, 1, &e), OP_OK);
    cr_assert_eq(op_heightfield_add_span(&hf, 0, 0, 65534, 65535, 1, 0, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_heightfield_init(&hf, arena, 4, 4, OP_MAX_ROWS + 1, o, 1, 1, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "65536"), "%s", e.msg);
    cr_assert_eq(op_heightfield_init(&hf, arena, OP_MAX_GRID_SIDE + 1, 1, 4, o, 1, 1, &e),
                 OP_ERANGE);
    cr_assert_eq(op_heightfield_init(&hf, arena, 0, 1, 4, o, 1, 1, &e), OP_ERANGE);
    cr_assert_eq(op_heightfield_init(&hf, arena, 1, 1, 4, o, 0, 1, &e), OP_EINVAL);
    cr_assert_eq(op_heightfield_init(&hf, arena, 1, 1, 4, o, OP_MIN_CELL_SIZE, 1, &e), OP_OK);
    cr_assert_eq(op_heightfield_init(&hf, arena, 1, 1, 4, o, 0.0009, 1, &e), OP_ERANGE);
    cr_assert_eq(op_heightfield_init(&hf, arena, 1, 1, 4, o, 1, 0.0009, &e), OP_ERANGE);
    double far[3] = {0, 0, OP_MAX_ORIGIN};
    cr_assert_eq(op_heightfield_init(&hf, arena, 1, 1, 4, far, 1, 1, &e), OP_OK);
    far[2] = 2 * OP_MAX_ORIGIN;
    cr_assert_eq(op_heightfield_init(&hf, arena, 1, 1, 4, far, 1, 1, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "origin z"), "%s", e.msg);
    cr_assert_eq(op_heightfield_init(&hf, arena, 4, 4, 10, o, 1, 1, &e), OP_OK);
    cr_assert_eq(op_heightfield_add_span(&hf, 4, 0, 0, 1, 1, 0, &e), OP_ERANGE);
    cr_assert_eq(op_heightfield_add_span(&hf, 0, 0, 3, 3, 1, 0, &e), OP_ERANGE);
    cr_assert_eq(op_heightfield_add_span(&hf, 0, 0, 3, 11, 1, 0, &e), OP_ERANGE);
    cr_assert_eq(op_heightfield_add_span(&hf, 0, 0, 3, 10, 64, 0, &e), OP_ERANGE);
    cr_assert_eq(op_heightfield_add_span(&hf, 0, 0, 3, 10, 1, -1, &e), OP_ERANGE);
    cr_assert_eq(hf.frag_count, 0);
}

Test(rasterize, out_of_memory_leaves_the_heightfield_unchanged)
{
    static soup_buf s;
    op_test_rng rng = {5};
    make_soup(&s, &rng);
    op_arena *small = op_arena_create(4096);
    for (long fail = 0; fail < 40; fail++) {
        op_arena_reset(small);
        op_heightfield hf;
        op_err e;
        double o[3] = {-0.5, -0.5, -0.5};
        op_arena_fail_after(small, -1);
        if (op_heightfield_init(&hf, small, 40, 40, 200, o, 0.25, 0.05, &e) != OP_OK)
            continue;
        cr_assert_eq(op_rasterize(&hf, s.v, (size_t)s.nv, s.t, s.a, 10, 3, &e), OP_OK);
        uint64_t before = hf_hash(&hf);
        uint32_t nf = hf.frag_count;
        op_arena_fail_after(small, fail);
        op_status st = op_rasterize(&hf, s.v, (size_t)s.nv, s.t, s.a, (size_t)s.nt, 3, &e);
        op_arena_fail_after(small, -1);
        if (st == OP_OK)
            break;
        cr_assert_eq(st, OP_ENOMEM);
        cr_assert(strstr(e.msg, "bytes"), "%s", e.msg);
        cr_assert_eq(hf.frag_count, nf);
        cr_assert_eq(hf_hash(&hf), before);
    }
    op_arena_destroy(small);
}

/* The first commit of a heightfield grows its span array column by column: a failure
 * there leaves no spans and no fragments, and the next rasterization gives the spans a
 * clean one does. */
Test(rasterize, out_of_memory_in_the_first_commit_leaves_it_empty)
{
    static soup_buf s;
    op_test_rng rng = {9};
    make_soup(&s, &rng);
    double o[3] = {-0.5, -0.5, -0.5};
    op_err e;
    op_arena *big = op_arena_create(0);
    op_heightfield ref;
    cr_assert_eq(op_heightfield_init(&ref, big, 40, 40, 200, o, 0.25, 0.05, &e), OP_OK);
    cr_assert_eq(op_rasterize(&ref, s.v, (size_t)s.nv, s.t, s.a, (size_t)s.nt, 3, &e), OP_OK);
    cr_assert_gt(ref.span_count, 0);
    uint64_t want = hf_hash(&ref);
    op_arena *small = op_arena_create(4096);
    int failed = 0;
    for (long fail = 0; fail < 200; fail++) {
        op_arena_reset(small);
        op_heightfield hf;
        op_arena_fail_after(small, -1);
        if (op_heightfield_init(&hf, small, 40, 40, 200, o, 0.25, 0.05, &e) != OP_OK)
            continue;
        op_arena_fail_after(small, fail);
        op_status st = op_rasterize(&hf, s.v, (size_t)s.nv, s.t, s.a, (size_t)s.nt, 3, &e);
        op_arena_fail_after(small, -1);
        if (st == OP_OK) {
            cr_assert_eq(hf_hash(&hf), want);
            break;
        }
        failed++;
        cr_assert_eq(st, OP_ENOMEM);
        cr_assert_eq(hf.frag_count, 0);
        cr_assert_eq(hf.span_count, 0);
        for (int c = 0; c < 40 * 40; c++)
            cr_assert_eq(hf.heads[c], OP_NO_SPAN);
        cr_assert_eq(op_rasterize(&hf, s.v, (size_t)s.nv, s.t, s.a, (size_t)s.nt, 3, &e), OP_OK);
        cr_assert_eq(hf_hash(&hf), want, "after a failure at allocation %ld", fail);
    }
    cr_assert_gt(failed, 3);
    op_arena_destroy(small);
    op_arena_destroy(big);
}

Test(rasterize, dump_format)
{
    op_heightfield hf = plain(2, 2, 10, 0, 0, 0, 1, 1);
    op_err e;
    cr_assert_eq(op_heightfield_add_span(&hf, 1, 0, 2, 4, 63, 1, &e), OP_OK);
    cr_assert_eq(op_heightfield_add_span(&hf, 0, 1, 0, 1, 0, 1, &e), OP_OK);
    cr_assert_eq(op_heightfield_add_span(&hf, 1, 0, 6, 7, 5, 1, &e), OP_OK);
    uint64_t h = OP_HASH_INIT;
    cr_assert_eq(op_heightfield_dump(&hf, hash_sink, &h), 0);
    const char *want = "1 0 2 4 63\n1 0 6 7 5\n0 1 0 1 0\n";
    cr_assert_eq(h, op_hash_bytes(want, strlen(want)));
}

/* ---- the fragment log op_rasterize leaves (heightfield_internal.h's pushes) ----
 *
 * The rasterizer's rows push through a cursor that holds the log's count and writes it
 * back at the end of the row: a count not written back lets the next row or the next
 * triangle overwrite fragments, and a fold into the wrong fragment changes the log. The
 * oracle: op_triangle_fragments' cells (the same rule, without the log) turned into rows
 * by §3.4 here and folded by the push rule written out here (into the column's latest
 * fragment of the call if it has the area and touches, else into the one below it if the
 * latest has another area and that one has the area and touches, else a new fragment).
 * The commit relinks each column's fragments, so columns are compared as sorted sets. */
#define LOG_W    24
#define LOG_MAXF 256

typedef struct log_frag {
    int smin, smax, area;
} log_frag;

typedef struct log_model {
    const op_heightfield *hf;
    int area;
    int n[LOG_W * LOG_W];
    log_frag f[LOG_W * LOG_W][LOG_MAXF]; /* each column's fragments in push order */
    long total, cells, below;            /* fragments, cells, folds below the latest */
} log_model;

static void log_push(void *ctx, int x, int z, double ymin, double ymax)
{
    log_model *m = ctx;
    const op_heightfield *hf = m->hf;
    m->cells++;
    int fmin = (int)floor((ymin - hf->origin[1]) / hf->ch);
    int fmax = (int)ceil((ymax - hf->origin[1]) / hf->ch);
    if (fmax < fmin + 1)
        fmax = fmin + 1;
    if (fmax <= 0 || fmin >= hf->rows)
        return;
    int smin = fmin < 0 ? 0 : fmin, smax = fmax > hf->rows ? hf->rows : fmax;
    int c = x + z * hf->width, n = m->n[c];
    log_frag *g = NULL;
    if (n > 0) {
        g = &m->f[c][n - 1];
        if (g->area != m->area && n > 1)
            g = &m->f[c][n - 2];
        if (!(g->area == m->area && smin <= g->smax && g->smin <= smax))
            g = NULL;
    }
    if (g) {
        m->below += g != &m->f[c][n - 1];
        g->smin = smin < g->smin ? smin : g->smin;
        g->smax = smax > g->smax ? smax : g->smax;
        return;
    }
    cr_assert_lt(n, LOG_MAXF);
    m->f[c][n] = (log_frag){smin, smax, m->area};
    m->n[c] = n + 1;
    m->total++;
}

static int log_cmp(const void *a, const void *b)
{
    const log_frag *x = a, *y = b;
    if (x->smin != y->smin)
        return x->smin < y->smin ? -1 : 1;
    if (x->smax != y->smax)
        return x->smax < y->smax ? -1 : 1;
    return (x->area > y->area) - (x->area < y->area);
}

Test(rasterize, fragment_log_matches_the_push_rule)
{
    static log_model m;
    op_test_rng rng = {20261207};
    long rows_wide = 0, folds = 0, below = 0;
    for (int scene = 0; scene < 60; scene++) {
        op_arena_reset(arena);
        /* Rows of 0.25 m in 0.5 m cells: floors and walls of a few cells overlap in rows */
        op_heightfield hf = plain(LOG_W, LOG_W, 64, -1.0, -2.0, -1.0, 0.5, 0.25);
        enum { NT = 240 };
        float v[NT * 9];
        int t[NT * 3];
        uint8_t a[NT];
        for (int i = 0; i < NT; i++) {
            /* big ones (rows of many cells), small ones (rows of two or three), walls
             * (vertical: the wall path), in areas that interleave */
            int kind = op_test_rand_int(&rng, 0, 3);
            double size = kind == 0 ? 6.0 : (kind == 1 ? 1.2 : 3.0);
            double cx = -2.0 + 9.0 * op_test_rand01(&rng), cz = -2.0 + 9.0 * op_test_rand01(&rng);
            double cy = -3.0 + 8.0 * op_test_rand01(&rng);
            for (int k = 0; k < 3; k++) {
                float *p = &v[9 * i + 3 * k];
                p[0] = (float)(cx + size * op_test_rand01(&rng));
                p[1] = (float)(cy + (kind == 3 ? 4.0 : 0.8) * op_test_rand01(&rng));
                p[2] = (float)(cz + size * op_test_rand01(&rng));
                if (kind == 3) /* a wall on x = cx */
                    p[0] = (float)cx;
                t[3 * i + k] = 3 * i + k;
            }
            static const uint8_t areas[4] = {0, 1, 63, 63};
            a[i] = areas[op_test_rand_int(&rng, 0, 3)];
        }
        memset(m.n, 0, sizeof m.n);
        m.hf = &hf;
        m.total = m.cells = m.below = 0;
        for (int i = 0; i < NT; i++) {
            m.area = a[i];
            long before = m.cells;
            op_triangle_fragments(&hf, &v[9 * i], &v[9 * i + 3], &v[9 * i + 6], log_push, &m);
            rows_wide += m.cells - before > 8;
        }
        folds += m.cells - m.total;
        below += m.below;
        op_err e;
        cr_assert_eq(op_rasterize(&hf, v, 3 * NT, t, a, NT, 2, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(hf.frag_count, (uint32_t)m.total, "scene %d: %u fragments, the rule %ld",
                     scene, hf.frag_count, m.total);
        for (int c = 0; c < LOG_W * LOG_W; c++) {
            log_frag got[LOG_MAXF];
            int n = 0;
            for (uint32_t i = hf.frag_heads[c]; i != OP_NO_SPAN; i = hf.frags[i].next, n++) {
                cr_assert_lt(n, m.n[c], "scene %d column %d: more fragments than %d", scene, c,
                             m.n[c]);
                got[n] = (log_frag){hf.frags[i].smin, hf.frags[i].smax, hf.frags[i].area};
            }
            cr_assert_eq(n, m.n[c], "scene %d column %d: %d fragments, the rule %d", scene, c, n,
                         m.n[c]);
            qsort(got, (size_t)n, sizeof *got, log_cmp);
            qsort(m.f[c], (size_t)n, sizeof *got, log_cmp);
            for (int k = 0; k < n; k++)
                cr_assert(got[k].smin == m.f[c][k].smin && got[k].smax == m.f[c][k].smax &&
                              got[k].area == m.f[c][k].area,
                          "scene %d column %d fragment %d: [%d, %d) area %d, the rule [%d, %d) "
                          "area %d",
                          scene, c, k, got[k].smin, got[k].smax, got[k].area, m.f[c][k].smin,
                          m.f[c][k].smax, m.f[c][k].area);
        }
    }
    /* the scenes reach the paths: many triangles of many cells, many folds */
    cr_assert_gt(rows_wide, 3000, "only %ld triangles of more than 8 cells", rows_wide);
    cr_assert_gt(folds, 10000, "only %ld folds", folds);
    cr_assert_gt(below, 500, "only %ld folds below the latest fragment", below);
}
