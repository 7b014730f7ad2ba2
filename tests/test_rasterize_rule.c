/*
 * Rasterization against the cell rule written out literally (build3d-spans.md §3.2-§3.4,
 * the wall rule §3.2a included):
 * for every cell of every row, the row polygon R and the cell's point set P are built
 * exactly as the spec words them (no range skipping, no sharing of crossings between
 * rows or cells), and op_triangle_fragments must give the same cells in the same order
 * with the same ymin / ymax (compared with ==). Triangles are random, off the dyadic
 * grid, near lines and corners, degenerate; grids are plain or on world lines, some
 * wider than a row chunk of the implementation.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../core/src/predicates.h"
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

TestSuite(rasterize_rule, .init = setup, .fini = teardown);

typedef struct pt {
    double p[3];
} pt;

typedef struct frag {
    int x, z;
    double ymin, ymax;
} frag;

#define MAXF 20000

typedef struct frags {
    frag v[MAXF];
    int n;
} frags;

static void collect(void *ctx, int x, int z, double ymin, double ymax)
{
    frags *f = ctx;
    cr_assert_lt(f->n, MAXF);
    f->v[f->n++] = (frag){x, z, ymin, ymax};
}

/* §3.2: the crossing of edge (a, b) with p[ax] = L, spelled as the spec spells it. */
static pt cross(const pt *a, const pt *b, int ax, double L)
{
    pt q;
    for (int c = 0; c < 3; c++) {
        if (c == ax) {
            q.p[c] = L;
            continue;
        }
        double v = (a->p[c] * (b->p[ax] - L) + b->p[c] * (L - a->p[ax])) / (b->p[ax] - a->p[ax]);
        double lo = fmin(a->p[c], b->p[c]), hi = fmax(a->p[c], b->p[c]);
        q.p[c] = v < lo ? lo : (v > hi ? hi : v);
    }
    return q;
}

static int strictly_between(double L, double u, double v)
{
    return (u < L && L < v) || (v < L && L < u);
}

/* The row polygon of lines zb < zt. */
static int row_poly(const pt *t, double zb, double zt, pt *r)
{
    int n = 0;
    for (int i = 0; i < 3; i++) {
        const pt *a = &t[i], *b = &t[(i + 1) % 3];
        if (zb <= a->p[2] && a->p[2] <= zt)
            r[n++] = *a;
        double first = a->p[2] < b->p[2] ? zb : zt, second = first == zb ? zt : zb;
        if (strictly_between(first, a->p[2], b->p[2]))
            r[n++] = cross(a, b, 2, first);
        if (strictly_between(second, a->p[2], b->p[2]))
            r[n++] = cross(a, b, 2, second);
    }
    return n;
}

/* §3.2a: a wall on a cell line. Returns the axis (0, 2) and the grid-local column / row
 * behind it, or -1. The line test is the spec's: L is the line of CellOf(L), CellOf
 * spelled as the largest k with line k <= L. */
static int wall_of(const op_heightfield *hf, const pt *t, int *cell)
{
    for (int ax = 0; ax <= 2; ax += 2) {
        double L = t[0].p[ax];
        if (t[1].p[ax] != L || t[2].p[ax] != L)
            continue;
        int i = ax == 0 ? 0 : 1;
        double o = hf->line_origin[i];
        long k = (long)floor((L - o) / hf->cs);
        while (o + (double)(k + 1) * hf->cs <= L)
            k++;
        while (o + (double)k * hf->cs > L)
            k--;
        if (o + (double)k * hf->cs != L)
            return -1;
        int u = ax == 0 ? 1 : 0, w = ax == 0 ? 2 : 1;
        int n = op__orient2d(t[0].p[u], t[0].p[w], t[1].p[u], t[1].p[w], t[2].p[u], t[2].p[w]);
        if (n == 0)
            return -1;
        *cell = (int)((n > 0 ? k - 1 : k) - hf->cell0[i]);
        return ax;
    }
    return -1;
}

static void oracle(const op_heightfield *hf, const float *v0, const float *v1, const float *v2,
                   frags *out)
{
    pt t[3] = {{{v0[0], v0[1], v0[2]}}, {{v1[0], v1[1], v1[2]}}, {{v2[0], v2[1], v2[2]}}};
    int wcell = 0, wall = wall_of(hf, t, &wcell);
    for (int z = 0; z < hf->depth; z++) {
        if (wall == 2 && z != wcell)
            continue;
        double zb = hf->line_origin[1] + (double)(hf->cell0[1] + z) * hf->cs;
        double zt = hf->line_origin[1] + (double)(hf->cell0[1] + z + 1) * hf->cs;
        pt r[16];
        int n = row_poly(t, zb, zt, r);
        if (n == 0)
            continue;
        for (int x = 0; x < hf->width; x++) {
            if (wall == 0 && x != wcell)
                continue;
            double xl = hf->line_origin[0] + (double)(hf->cell0[0] + x) * hf->cs;
            double xr = hf->line_origin[0] + (double)(hf->cell0[0] + x + 1) * hf->cs;
            pt p[64];
            int np = 0;
            for (int i = 0; i < n; i++)
                if (xl <= r[i].p[0] && r[i].p[0] <= xr)
                    p[np++] = r[i];
            for (int i = 0; i < n; i++) {
                const pt *a = &r[i], *b = &r[(i + 1) % n];
                if (strictly_between(xl, a->p[0], b->p[0]))
                    p[np++] = cross(a, b, 0, xl);
                if (strictly_between(xr, a->p[0], b->p[0]))
                    p[np++] = cross(a, b, 0, xr);
            }
            if (np == 0)
                continue;
            int all_l = 1, all_r = 1, all_b = 1, all_t = 1;
            double ymin = p[0].p[1], ymax = p[0].p[1];
            for (int i = 0; i < np; i++) {
                all_l &= p[i].p[0] == xl;
                all_r &= p[i].p[0] == xr;
                all_b &= p[i].p[2] == zb;
                all_t &= p[i].p[2] == zt;
                ymin = fmin(ymin, p[i].p[1]);
                ymax = fmax(ymax, p[i].p[1]);
            }
            if (wall == 0) /* the part of the test across the wall's line is left out */
                all_l = all_r = 0;
            if (wall == 2)
                all_b = all_t = 0;
            if (!all_l && !all_r && !all_b && !all_t)
                collect(out, x, z, ymin, ymax);
        }
    }
}

/* A coordinate near the grid's lines: on a line, a hair off it, or anywhere. */
static float coord(op_test_rng *r, double line0, double cs, int cells)
{
    double v = line0 + op_test_rand01(r) * cells * cs;
    int kind = op_test_rand_int(r, 0, 5);
    if (kind == 0)
        v = line0 + (double)op_test_rand_int(r, -2, cells + 2) * cs;
    float f = (float)v;
    if (kind == 1)
        f = nextafterf(f, op_test_rand_int(r, 0, 1) ? INFINITY : -INFINITY);
    return f;
}

static frags want, got;

/* One random triangle on a random grid (wide 1: sides beyond the implementation's line
 * tables, which are then computed line by line; wide 2: a triangle many cells across),
 * against the oracle; returns the number of fragments compared. */
static long one_case(op_test_rng *r, int iter, int wide)
{
    op_test_rng rng = *r;
    long total = 0;
    {
        op_arena_reset(arena);
        int kind = iter % 4;
        double cs = kind == 0 ? 0.3 : (kind == 1 ? 0.25 : 0.05 + op_test_rand01(&rng) * 2.0);
        int w = op_test_rand_int(&rng, 1, 24), d = op_test_rand_int(&rng, 1, 24);
        if (iter % 10 == 0)
            w = op_test_rand_int(&rng, 60, 150); /* wider than a row chunk */
        if (wide == 2) { /* rows of many cells over many rows (see spanning_rows_...) */
            w = op_test_rand_int(&rng, 8, 40);
            d = op_test_rand_int(&rng, 8, 40);
        } else if (wide) { /* one side beyond 1024 cells (rasterize.c's LINES_MAX), the other short
                            */
            if (iter % 2)
                w = op_test_rand_int(&rng, 1025, 1100), d = op_test_rand_int(&rng, 1, 3);
            else
                d = op_test_rand_int(&rng, 1025, 1100), w = op_test_rand_int(&rng, 1, 3);
        }
        double o[3] = {(op_test_rand01(&rng) - 0.5) * 40, -3.0, (op_test_rand01(&rng) - 0.5) * 40};
        op_heightfield hf;
        op_err e;
        cr_assert_eq(op_heightfield_init(&hf, arena, w, d, 200, o, cs, 0.1, &e), OP_OK, "%s",
                     e.msg);
        if (kind == 0)
            op_heightfield_use_global_lines(&hf, op_test_rand_int(&rng, -60, 60),
                                            op_test_rand_int(&rng, -60, 60));
        double lx = hf.line_origin[0] + (double)hf.cell0[0] * cs;
        double lz = hf.line_origin[1] + (double)hf.cell0[1] * cs;
        /* A box of a few cells somewhere over (or partly beyond) the grid. */
        int span = op_test_rand_int(&rng, 1, iter % 10 == 0 ? w + 4 : 6);
        if (wide == 2)
            span = op_test_rand_int(&rng, 4, 16);
        double bx = lx + (double)op_test_rand_int(&rng, -span, w) * cs;
        double bz = lz + (double)op_test_rand_int(&rng, -span, d) * cs;
        float v[3][3];
        for (int k = 0; k < 3; k++) {
            v[k][0] = coord(&rng, bx, cs, span);
            v[k][1] = (float)(op_test_rand01(&rng) * 10.0);
            v[k][2] = coord(&rng, bz, cs, span);
        }
        int deg = op_test_rand_int(&rng, 0, 11);
        if (deg == 0) { /* wall */
            v[2][0] = v[1][0];
            v[2][2] = v[1][2];
        } else if (deg == 1) { /* a horizontal edge on a line */
            v[1][2] = v[0][2];
        } else if (deg == 2) { /* a vertical edge */
            v[1][0] = v[0][0];
        } else if (deg == 4 || deg == 5) { /* an axis wall, often on a line (§3.2a) */
            int ax = deg == 4 ? 0 : 2;
            v[1][ax] = v[2][ax] = v[0][ax];
        } else if (deg == 3) { /* a point */
            memcpy(v[1], v[0], sizeof v[0]);
            memcpy(v[2], v[0], sizeof v[0]);
        }
        want.n = got.n = 0;
        oracle(&hf, v[0], v[1], v[2], &want);
        op_triangle_fragments(&hf, v[0], v[1], v[2], collect, &got);
        cr_assert_eq(got.n, want.n, "iter %d: %d fragments, the rule gives %d", iter, got.n,
                     want.n);
        for (int i = 0; i < want.n; i++) {
            cr_assert(got.v[i].x == want.v[i].x && got.v[i].z == want.v[i].z &&
                          got.v[i].ymin == want.v[i].ymin && got.v[i].ymax == want.v[i].ymax,
                      "iter %d fragment %d: (%d, %d) [%.17g, %.17g], the rule (%d, %d) "
                      "[%.17g, %.17g]",
                      iter, i, got.v[i].x, got.v[i].z, got.v[i].ymin, got.v[i].ymax, want.v[i].x,
                      want.v[i].z, want.v[i].ymin, want.v[i].ymax);
        }
        total += want.n;
    }
    *r = rng;
    return total;
}

Test(rasterize_rule, fragments_match_the_literal_rule)
{
    op_test_rng rng = {7340033};
    long total = 0;
    for (int iter = 0; iter < 40000; iter++)
        total += one_case(&rng, iter, 0);
    cr_assert_gt(total, 100000, "only %ld fragments compared", total);
}

Test(rasterize_rule, wide_grids_match_the_literal_rule)
{
    op_test_rng rng = {1000003};
    long total = 0;
    for (int iter = 0; iter < 4000; iter++)
        total += one_case(&rng, iter, 1);
    cr_assert_gt(total, 4000, "only %ld fragments compared", total);
}

/* Triangles 4-16 cells across, so that most rows have four or more cells and most
 * lines have such rows on both sides: raster_rows then reads a line's cap crossings
 * from the row below instead of computing them again (a stale or misplaced crossing
 * shows here). */
Test(rasterize_rule, spanning_rows_match_the_literal_rule)
{
    op_test_rng rng = {2097169};
    long total = 0;
    for (int iter = 0; iter < 40000; iter++)
        total += one_case(&rng, iter, 2);
    cr_assert_gt(total, 200000, "only %ld fragments compared", total);
}

/* Triangles in one column whose points on a row's two lines all lie on the column's
 * left line while a vertex inside the row does not (the row then has a fragment, which
 * a test of the lines' points alone would drop). Only a crossing that rounds onto the
 * line gets there: the edge's end a hair (1e-30) beyond line z = 0 puts its crossing
 * there at the other end's x exactly. Random triangles do not meet this. */
Test(rasterize_rule, column_rows_with_line_points_match_the_literal_rule)
{
    const double o[3] = {0.0, -3.0, -2.0}; /* lines at integers, z from -2 */
    op_heightfield hf;
    op_err e;
    cr_assert_eq(op_heightfield_init(&hf, arena, 4, 5, 200, o, 1.0, 0.1, &e), OP_OK, "%s", e.msg);
    static const int order[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                    {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    const float bxs[3] = {1.25f, 1.5f, 1.75f};
    int cases = 0;
    for (int mirror = 0; mirror < 2; mirror++)
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 6; k++) {
                /* A and C on x = 1 (a cell's left line), B inside the cell; the row
                 * holding B has line z = 0 as its bottom (mirror 0) or top (mirror 1). */
                float t[3][3] = {{1.0f, 1.0f, -1e-30f}, {bxs[i], 2.0f, 0.5f}, {1.0f, 3.0f, 0.75f}};
                if (mirror) {
                    t[0][2] = -0.75f;
                    t[1][2] = -0.5f;
                    t[2][2] = 1e-30f;
                }
                const float *v0 = t[order[k][0]], *v1 = t[order[k][1]], *v2 = t[order[k][2]];
                want.n = got.n = 0;
                oracle(&hf, v0, v1, v2, &want);
                op_triangle_fragments(&hf, v0, v1, v2, collect, &got);
                cr_assert_gt(want.n, 0, "case %d: the rule gives no fragment", cases);
                cr_assert_eq(got.n, want.n, "case %d: %d fragments, the rule gives %d", cases,
                             got.n, want.n);
                for (int f = 0; f < want.n; f++)
                    cr_assert(got.v[f].x == want.v[f].x && got.v[f].z == want.v[f].z &&
                                  got.v[f].ymin == want.v[f].ymin &&
                                  got.v[f].ymax == want.v[f].ymax,
                              "case %d fragment %d: (%d, %d) [%.17g, %.17g], the rule (%d, %d) "
                              "[%.17g, %.17g]",
                              cases, f, got.v[f].x, got.v[f].z, got.v[f].ymin, got.v[f].ymax,
                              want.v[f].x, want.v[f].z, want.v[f].ymin, want.v[f].ymax);
                cases++;
            }
}

/* Vertices on a dyadic grid of quarter cells (cs = 0.25 or 1, origins on it), so that many
 * z crossings fall exactly on an x line: the crossing's cell is then its line's cell and it
 * also belongs to the cell before, which decides the ymin / ymax of both. Triangles up to five
 * cells across put such crossings on edges whose ends are two to four cells apart, where
 * rasterize.c's z_point counts lines rather than comparing with one. Counts the crossings
 * that land on a line strictly inside their edge's x range and asserts there are many. */
Test(rasterize_rule, dyadic_crossings_on_lines_match_the_literal_rule)
{
    op_test_rng rng = {524309};
    long total = 0, on_line = 0;
    for (int iter = 0; iter < 40000; iter++) {
        op_arena_reset(arena);
        double cs = iter % 2 ? 0.25 : 1.0;
        int w = op_test_rand_int(&rng, 6, 14), d = op_test_rand_int(&rng, 6, 14);
        double o[3] = {op_test_rand_int(&rng, -40, 40) * cs, -3.0,
                       op_test_rand_int(&rng, -40, 40) * cs};
        op_heightfield hf;
        op_err e;
        cr_assert_eq(op_heightfield_init(&hf, arena, w, d, 200, o, cs, 0.1, &e), OP_OK, "%s",
                     e.msg);
        int span = op_test_rand_int(&rng, 2, 5);
        int bx = op_test_rand_int(&rng, -1, w - span + 1),
            bz = op_test_rand_int(&rng, -1, d - span + 1);
        float v[3][3];
        for (int k = 0; k < 3; k++) {
            v[k][0] = (float)(o[0] + (bx * 4 + op_test_rand_int(&rng, 0, 4 * span)) * (cs / 4));
            v[k][1] = (float)(op_test_rand01(&rng) * 10.0);
            v[k][2] = (float)(o[2] + (bz * 4 + op_test_rand_int(&rng, 0, 4 * span)) * (cs / 4));
        }
        for (int k = 0; k < 3; k++) { /* crossings of edge k with the z lines, on an x line */
            const float *a = v[k], *b = v[(k + 1) % 3];
            for (int j = -span - 2; j <= d + span + 2; j++) {
                double L = o[2] + j * cs;
                if (!strictly_between(L, a[2], b[2]))
                    continue;
                pt pa = {{a[0], a[1], a[2]}}, pb = {{b[0], b[1], b[2]}};
                double x = cross(&pa, &pb, 2, L).p[0], t = (x - o[0]) / cs;
                on_line += t == floor(t) && fmin(a[0], b[0]) < x && x < fmax(a[0], b[0]);
            }
        }
        want.n = got.n = 0;
        oracle(&hf, v[0], v[1], v[2], &want);
        op_triangle_fragments(&hf, v[0], v[1], v[2], collect, &got);
        cr_assert_eq(got.n, want.n, "iter %d: %d fragments, the rule gives %d", iter, got.n,
                     want.n);
        for (int i = 0; i < want.n; i++)
            cr_assert(got.v[i].x == want.v[i].x && got.v[i].z == want.v[i].z &&
                          got.v[i].ymin == want.v[i].ymin && got.v[i].ymax == want.v[i].ymax,
                      "iter %d fragment %d: (%d, %d) [%.17g, %.17g], the rule (%d, %d) "
                      "[%.17g, %.17g]",
                      iter, i, got.v[i].x, got.v[i].z, got.v[i].ymin, got.v[i].ymax, want.v[i].x,
                      want.v[i].z, want.v[i].ymin, want.v[i].ymax);
        total += want.n;
    }
    cr_assert_gt(total, 150000, "only %ld fragments compared", total);
    cr_assert_gt(on_line, 3000, "only %ld crossings on an x line", on_line);
}

/* ---- the fragment's rows (§3.4) and the heightfield path ---- */

/* §3.4 written out with libm's floor and ceil. */
static int rows_of(const op_heightfield *hf, double ymin, double ymax, int *smin, int *smax)
{
    double fmin = floor((ymin - hf->origin[1]) / hf->ch);
    double fmax = ceil((ymax - hf->origin[1]) / hf->ch);
    if (fmax < fmin + 1)
        fmax = fmin + 1;
    if (fmax <= 0 || fmin >= hf->rows)
        return 0;
    *smin = fmin < 0 ? 0 : (int)fmin;
    *smax = fmax > hf->rows ? hf->rows : (int)fmax;
    return 1;
}

static frags one_tri;

/* a's spans are b's, column by column. */
static void same_spans(const op_heightfield *a, const op_heightfield *b, int iter)
{
    cr_assert_eq(a->span_count, b->span_count, "iter %d: %u spans, the fragments give %u", iter,
                 a->span_count, b->span_count);
    for (int c = 0; c < a->width * a->depth; c++) {
        uint32_t sa = a->heads[c], sb = b->heads[c];
        while (sa != OP_NO_SPAN && sb != OP_NO_SPAN) {
            const op_hf_span *p = &a->spans[sa], *q = &b->spans[sb];
            cr_assert(p->smin == q->smin && p->smax == q->smax && p->area == q->area,
                      "iter %d column %d: [%d, %d) area %d, the fragments give [%d, %d) area %d",
                      iter, c, p->smin, p->smax, p->area, q->smin, q->smax, q->area);
            sa = p->next;
            sb = q->next;
        }
        cr_assert(sa == OP_NO_SPAN && sb == OP_NO_SPAN, "iter %d column %d: span counts differ",
                  iter, c);
    }
}

/* Adds tri's fragments (op_triangle_fragments, rows by rows_of) to b; returns how many. */
static long add_fragments(op_heightfield *b, const float *v0, const float *v1, const float *v2,
                          int area);

/* op_rasterize (fragments pushed straight into the columns, rows from the cell sums)
 * against op_triangle_fragments' fragments turned into rows by rows_of and added one
 * by one: random triangles on random grids whose few rows put many fragments
 * partly or wholly below row 0 and above the last row, some tops and bottoms on
 * row lines, with a few areas so that fragments fold. */
Test(rasterize_rule, heightfield_rows_follow_the_fragments)
{
    op_test_rng rng = {4099};
    long kept = 0, dropped = 0;
    for (int iter = 0; iter < 3000; iter++) {
        op_arena_reset(arena);
        double cs = iter % 3 ? 0.25 : 0.05 + op_test_rand01(&rng);
        double ch = iter % 2 ? 0.125 : 0.02 + op_test_rand01(&rng) * 0.5;
        int w = op_test_rand_int(&rng, 1, iter % 7 ? 20 : 90), d = op_test_rand_int(&rng, 1, 20);
        int rows = op_test_rand_int(&rng, 1, 12);
        double o[3] = {(op_test_rand01(&rng) - 0.5) * 20, (op_test_rand01(&rng) - 0.5) * 4,
                       (op_test_rand01(&rng) - 0.5) * 20};
        op_heightfield a, b;
        op_err e;
        cr_assert_eq(op_heightfield_init(&a, arena, w, d, rows, o, cs, ch, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(op_heightfield_init(&b, arena, w, d, rows, o, cs, ch, &e), OP_OK, "%s", e.msg);
        int nt = op_test_rand_int(&rng, 1, 24);
        float v[3 * 3 * 24];
        int tris[3 * 24];
        uint8_t areas[24];
        for (int t = 0; t < nt; t++) {
            int span = op_test_rand_int(&rng, 1, iter % 7 ? 6 : w + 4);
            double bx = o[0] + (double)op_test_rand_int(&rng, -span, w) * cs;
            double bz = o[2] + (double)op_test_rand_int(&rng, -span, d) * cs;
            for (int k = 0; k < 3; k++) {
                float *p = &v[9 * t + 3 * k];
                p[0] = coord(&rng, bx, cs, span);
                p[2] = coord(&rng, bz, cs, span);
                /* From a little below row 0 to a little above the last row; a quarter
                 * of the heights on a row line. */
                double y = o[1] + (op_test_rand01(&rng) * (rows + 4) - 2) * ch;
                if (op_test_rand_int(&rng, 0, 3) == 0)
                    y = o[1] + (double)op_test_rand_int(&rng, -2, rows + 2) * ch;
                p[1] = (float)y;
            }
            if (op_test_rand_int(&rng, 0, 7) == 0) { /* flat */
                v[9 * t + 4] = v[9 * t + 1];
                v[9 * t + 7] = v[9 * t + 1];
            }
            float *p0 = &v[9 * t], *p1 = p0 + 3, *p2 = p0 + 6;
            int deg = op_test_rand_int(&rng, 0, 9);
            if (deg == 0) { /* a wall, on a line or not */
                p2[0] = p1[0];
                p2[2] = p1[2];
            } else if (deg == 1 || deg == 2) { /* an edge along z = const, often a line */
                p1[2] = p0[2];
                if (deg == 2) /* and the third vertex in the cells beside it */
                    p2[2] = (float)((double)p0[2] + (op_test_rand01(&rng) - 0.5) * cs);
            } else if (deg == 3) { /* a point */
                memcpy(p1, p0, sizeof(float) * 3);
                memcpy(p2, p0, sizeof(float) * 3);
            }
            for (int k = 0; k < 3; k++)
                tris[3 * t + k] = 3 * t + k;
            areas[t] = (uint8_t)(op_test_rand_int(&rng, 0, 2) ? 63 : op_test_rand_int(&rng, 1, 3));
        }
        cr_assert_eq(op_rasterize(&a, v, (size_t)(3 * nt), tris, areas, (size_t)nt, 0, &e), OP_OK,
                     "%s", e.msg);
        for (int t = 0; t < nt; t++) {
            one_tri.n = 0;
            op_triangle_fragments(&b, &v[9 * t], &v[9 * t + 3], &v[9 * t + 6], collect, &one_tri);
            for (int i = 0; i < one_tri.n; i++) {
                int smin, smax;
                const frag *f = &one_tri.v[i];
                if (!rows_of(&b, f->ymin, f->ymax, &smin, &smax)) {
                    dropped++;
                    continue;
                }
                kept++;
                cr_assert_eq(op_heightfield_add_span(&b, f->x, f->z, smin, smax, areas[t], 0, &e),
                             OP_OK, "%s", e.msg);
            }
        }
        same_spans(&a, &b, iter);
    }
    cr_assert_gt(kept, 50000, "only %ld fragments kept", kept);
    cr_assert_gt(dropped, 20000, "only %ld fragments dropped", dropped);
}

static long add_fragments(op_heightfield *b, const float *v0, const float *v1, const float *v2,
                          int area)
{
    op_err e;
    long kept = 0;
    one_tri.n = 0;
    op_triangle_fragments(b, v0, v1, v2, collect, &one_tri);
    for (int i = 0; i < one_tri.n; i++) {
        int smin, smax;
        const frag *f = &one_tri.v[i];
        if (!rows_of(b, f->ymin, f->ymax, &smin, &smax))
            continue;
        kept++;
        cr_assert_eq(op_heightfield_add_span(b, f->x, f->z, smin, smax, area, 0, &e), OP_OK, "%s",
                     e.msg);
    }
    return kept;
}

/* An indexed soup whose triangles share vertices (rasterize.c keeps the cells of the
 * vertices met lately by index, direct mapped on the low bits of 1024 entries):
 * op_rasterize and op_rasterize_ids against op_triangle_fragments, which takes no index
 * and finds every vertex's cell itself. Triangles reuse the vertices of the triangles
 * just before (cache hits), take indices 256, 1024 and 2048 apart (the last two: the
 * same cache entry, another vertex), and the same soup is rasterized on two grids in
 * turn (a cell kept from the other grid would be wrong). */
Test(rasterize_rule, shared_vertices_match_the_fragments)
{
    enum { NV = 2200, NT = 300 };
    static float v[3 * NV];
    static int tris[3 * NT];
    static uint8_t areas[NT];
    static uint32_t ids[NT];
    static const int apart[3] = {256, 1024, 2048};
    op_test_rng rng = {8191};
    long kept = 0;
    for (int iter = 0; iter < 400; iter++) {
        op_arena_reset(arena);
        double cs = iter % 3 ? 0.25 : 0.05 + op_test_rand01(&rng);
        double ch = 0.02 + op_test_rand01(&rng) * 0.3;
        int w = op_test_rand_int(&rng, 1, iter % 5 ? 20 : 70), d = op_test_rand_int(&rng, 1, 20);
        int rows = op_test_rand_int(&rng, 4, 40);
        double o[3] = {(op_test_rand01(&rng) - 0.5) * 20, (op_test_rand01(&rng) - 0.5) * 4,
                       (op_test_rand01(&rng) - 0.5) * 20};
        /* The vertices a random walk over the grid and a few cells beyond it (nearby
         * indices are nearby points, so triangles of nearby indices are small), some
         * coordinates on the grid's lines. */
        double px = o[0] + op_test_rand01(&rng) * w * cs, pz = o[2] + op_test_rand01(&rng) * d * cs;
        for (int i = 0; i < NV; i++) {
            if (op_test_rand_int(&rng, 0, 40) == 0) { /* a jump */
                px = o[0] + (op_test_rand01(&rng) * (w + 6) - 3) * cs;
                pz = o[2] + (op_test_rand01(&rng) * (d + 6) - 3) * cs;
            }
            px += (op_test_rand01(&rng) - 0.5) * 3 * cs;
            pz += (op_test_rand01(&rng) - 0.5) * 3 * cs;
            px = fmax(o[0] - 3 * cs, fmin(o[0] + (w + 3) * cs, px));
            pz = fmax(o[2] - 3 * cs, fmin(o[2] + (d + 3) * cs, pz));
            float *p = &v[3 * i];
            p[0] = coord(&rng, px, cs, 1);
            p[1] = (float)(o[1] + op_test_rand01(&rng) * rows * ch);
            p[2] = coord(&rng, pz, cs, 1);
        }
        for (int t = 0; t < NT; t++) {
            int first = op_test_rand_int(&rng, 0, NV - 1);
            for (int k = 0; k < 3; k++) {
                int kind = op_test_rand_int(&rng, 0, 5), ix;
                if (t > 0 && kind <= 2) /* a vertex of the triangles just before */
                    ix = tris[3 * (t - 1 - op_test_rand_int(&rng, 0, t > 3 ? 3 : t - 1)) +
                              op_test_rand_int(&rng, 0, 2)];
                else if (t > 0 && kind == 3) /* a recent vertex's cache entry, another vertex */
                    ix = (tris[3 * (t - 1) + op_test_rand_int(&rng, 0, 2)] +
                          apart[op_test_rand_int(&rng, 0, 2)]) %
                         NV;
                else /* a point near the triangle's first */
                    ix = (first + op_test_rand_int(&rng, 0, 3)) % NV;
                tris[3 * t + k] = ix;
            }
            areas[t] = (uint8_t)(op_test_rand_int(&rng, 0, 2) ? 63 : op_test_rand_int(&rng, 1, 3));
            ids[t] = (uint32_t)t;
        }
        op_soup soup = {v, 3 * NV, tris, 3 * NT, NULL};
        for (int grid = 0; grid < 2; grid++) {
            double og[3] = {o[0] + grid * 0.37 * cs, o[1], o[2] - grid * 1.5 * cs};
            op_heightfield a, c, b;
            op_err e;
            cr_assert_eq(op_heightfield_init(&a, arena, w, d, rows, og, cs, ch, &e), OP_OK, "%s",
                         e.msg);
            cr_assert_eq(op_heightfield_init(&c, arena, w, d, rows, og, cs, ch, &e), OP_OK, "%s",
                         e.msg);
            cr_assert_eq(op_heightfield_init(&b, arena, w, d, rows, og, cs, ch, &e), OP_OK, "%s",
                         e.msg);
            cr_assert_eq(op_rasterize(&a, v, NV, tris, areas, NT, 0, &e), OP_OK, "%s", e.msg);
            cr_assert_eq(op_rasterize_ids(&c, &soup, ids, NT, areas, 0, &e), OP_OK, "%s", e.msg);
            for (int t = 0; t < NT; t++)
                kept += add_fragments(&b, &v[3 * tris[3 * t]], &v[3 * tris[3 * t + 1]],
                                      &v[3 * tris[3 * t + 2]], areas[t]);
            same_spans(&a, &b, iter);
            same_spans(&c, &b, iter);
        }
    }
    cr_assert_gt(kept, 100000, "only %ld fragments kept", kept);
}

/* A height for far_heights_follow_the_fragments: in the column, or far from it. */
static float far_height(op_test_rng *r, int regime, double oy, double ch, int rows)
{
    switch (regime) {
    case 0: /* about the column's top row, integers and fractions */
        return (float)(oy + (op_test_rand01(r) * (rows + 2000.0) - 1000.0) * ch);
    case 1: { /* about +-2^20 rows, where rasterize.c's SSE2 rows clamp */
        double t = 1048576.0 + (op_test_rand01(r) - 0.5) * 16.0;
        return (float)(oy + (op_test_rand_int(r, 0, 1) ? t : -t) * ch);
    }
    default: /* in the column, or at +-2.0e6 to +-2.09e6 with y0 = +-1e6 and ch = 0.001:
              * about +-10^9 and +-3 10^9 rows, inside and beyond int32 */
        if (op_test_rand_int(r, 0, 2) == 0)
            return (float)(oy + (op_test_rand01(r) * (rows + 4) - 2) * ch);
        double y = 2.0e6 + op_test_rand01(r) * 0.09e6;
        return (float)(op_test_rand_int(r, 0, 1) ? y : -y);
    }
}

/* op_rasterize against op_triangle_fragments' fragments turned into rows by rows_of (libm's
 * floor and ceil), with heights whose rows (y - y0) / ch lie far outside the column: up to
 * 65535 rows with the top row's line crossed, about +-2^20 rows, and about +-10^9 and
 * +-3 10^9 rows (ch = 0.001 with y0 = +-1e6), inside and beyond int32. rasterize.c's SSE2 rows
 * clamp the quotient to
 * +-2^20 before one packed conversion, which must leave every kept or dropped fragment and
 * every row as §3.4's exact floor and ceil give them; its portable twin (OP_RASTER_SCALAR)
 * clamps after an exact int64 floor. Triangles of one to many cells, so that every
 * emitting path (one cell, a column, rows of two, three and more cells) takes them. */
Test(rasterize_rule, far_heights_follow_the_fragments)
{
    op_test_rng rng = {65537};
    long kept = 0, dropped = 0, full = 0;
    for (int iter = 0; iter < 4000; iter++) {
        op_arena_reset(arena);
        int regime = iter % 3;
        double cs = 0.25, ch = regime == 2 ? 0.001 : 1.0;
        double oy = regime == 2 ? (iter % 2 ? 1e6 : -1e6) : 0.0;
        int rows = regime == 0 ? OP_MAX_ROWS : op_test_rand_int(&rng, 1, 12);
        int w = op_test_rand_int(&rng, 1, 16), d = op_test_rand_int(&rng, 1, 16);
        double o[3] = {(op_test_rand01(&rng) - 0.5) * 8, oy, (op_test_rand01(&rng) - 0.5) * 8};
        op_heightfield a, b;
        op_err e;
        cr_assert_eq(op_heightfield_init(&a, arena, w, d, rows, o, cs, ch, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(op_heightfield_init(&b, arena, w, d, rows, o, cs, ch, &e), OP_OK, "%s", e.msg);
        int nt = op_test_rand_int(&rng, 1, 12);
        float v[3 * 3 * 12];
        int tris[3 * 12];
        uint8_t areas[12];
        for (int t = 0; t < nt; t++) {
            int span = op_test_rand_int(&rng, 1, 7);
            double bx = o[0] + (double)op_test_rand_int(&rng, -span, w) * cs;
            double bz = o[2] + (double)op_test_rand_int(&rng, -span, d) * cs;
            for (int k = 0; k < 3; k++) {
                float *p = &v[9 * t + 3 * k];
                p[0] = coord(&rng, bx, cs, span);
                p[2] = coord(&rng, bz, cs, span);
                p[1] = far_height(&rng, regime, oy, ch, rows);
            }
            for (int k = 0; k < 3; k++)
                tris[3 * t + k] = 3 * t + k;
            areas[t] = (uint8_t)op_test_rand_int(&rng, 1, 2);
        }
        cr_assert_eq(op_rasterize(&a, v, (size_t)(3 * nt), tris, areas, (size_t)nt, 0, &e), OP_OK,
                     "%s", e.msg);
        for (int t = 0; t < nt; t++) {
            one_tri.n = 0;
            op_triangle_fragments(&b, &v[9 * t], &v[9 * t + 3], &v[9 * t + 6], collect, &one_tri);
            for (int i = 0; i < one_tri.n; i++) {
                int smin, smax;
                const frag *f = &one_tri.v[i];
                if (!rows_of(&b, f->ymin, f->ymax, &smin, &smax)) {
                    dropped++;
                    continue;
                }
                kept++;
                full += smin == 0 && smax == rows;
                cr_assert_eq(op_heightfield_add_span(&b, f->x, f->z, smin, smax, areas[t], 0, &e),
                             OP_OK, "%s", e.msg);
            }
        }
        same_spans(&a, &b, iter);
    }
    cr_assert_gt(kept, 20000, "only %ld fragments kept", kept);
    cr_assert_gt(full, 4000, "only %ld fragments fill their column", full);
    cr_assert_gt(dropped, 20000, "only %ld fragments dropped", dropped);
}
