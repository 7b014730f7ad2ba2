/*
 * Contours (build3d-regions.md §6, §7): settings, refusals, the invariants of tracing
 * and simplification on seeded random fields (several floors and areas), hand-made
 * cases with expected loops worked out from the rules, and the build3d/contours
 * hash-matrix scenario. Regions come from a test-only labeller or are given by hand.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/contours.h"
#include "onepath/limits.h"
#include "op_fields.h"
#include "op_test.h"
#include "test_contours_support.h"

static op_arena *A, *OUT, *SCR;

static void setup(void)
{
    A = op_arena_create(0);
    OUT = op_arena_create(0);
    SCR = op_arena_create(0);
}

static void teardown(void)
{
    op_arena_destroy(A);
    op_arena_destroy(OUT);
    op_arena_destroy(SCR);
}

TestSuite(contours, .init = setup, .fini = teardown, .timeout = 60);

static op_contour_set build(const op_chf *chf, const op_regions *r, const op_contour_settings *cs)
{
    op_contour_set set;
    op_err e;
    op_status st = op_contours_build(chf, r, cs, OUT, SCR, &set, &e);
    cr_assert_eq(st, OP_OK, "%s", e.msg);
    op_arena_reset(SCR);
    return set;
}

static op_contour_settings settings(double err, int edge, int straight, int keep_raw)
{
    op_contour_settings cs;
    op_contour_settings_default(&cs);
    cs.max_error = err;
    cs.max_edge_length = edge;
    cs.straight_region_borders = straight;
    cs.keep_raw = keep_raw;
    return cs;
}

/* Neighbour value per the rule, written out again for the test. */
static int edge_value(const op_chf *chf, const op_regions *r, uint32_t s, int x, int z, int d)
{
    if (chf->links[s][d] != OP_NO_LINK)
        return r->reg[chf->links[s][d]];
    int nx = x + (d == 0 ? -1 : d == 2 ? 1 : 0), nz = z + (d == 3 ? -1 : d == 1 ? 1 : 0);
    return (nx < 0 || nz < 0 || nx >= chf->width || nz >= chf->depth) ? -1 : 0;
}

/* ---------------------------------------------------------------- settings */

Test(contours, settings_defaults_are_section_7)
{
    op_contour_settings cs;
    op_err e;
    memset(&cs, 0x5a, sizeof cs);
    op_contour_settings_default(&cs);
    cr_assert_eq(cs.max_error, 1.3);
    cr_assert_eq(cs.max_edge_length, 12);
    cr_assert_eq(cs.straight_region_borders, 1);
    cr_assert_eq(cs.border_region, 0);
    cr_assert_eq(cs.keep_raw, 0);
    cr_assert_eq(op_contour_settings_validate(&cs, &e), OP_OK, "%s", e.msg);
}

Test(contours, settings_refusals_name_the_field)
{
    struct {
        const char *field;
        op_status st;
        void (*set)(op_contour_settings *);
    } cases[] = {
        {"max_error", OP_EINVAL, NULL},       {"max_error", OP_ERANGE, NULL},
        {"max_edge_length", OP_ERANGE, NULL}, {"straight_region_borders", OP_ERANGE, NULL},
        {"border_region", OP_ERANGE, NULL},   {"border_region", OP_ERANGE, NULL},
        {"keep_raw", OP_ERANGE, NULL},
    };
    for (int i = 0; i < 7; i++) {
        op_contour_settings cs;
        op_contour_settings_default(&cs);
        switch (i) {
        case 0:
            cs.max_error = NAN;
            break;
        case 1:
            cs.max_error = -0.5;
            break;
        case 2:
            cs.max_edge_length = -1;
            break;
        case 3:
            cs.straight_region_borders = 2;
            break;
        case 4:
            cs.border_region = -1;
            break;
        case 5:
            cs.border_region = OP_MAX_REGIONS + 1;
            break;
        default:
            cs.keep_raw = 7;
        }
        op_err e;
        cr_assert_eq(op_contour_settings_validate(&cs, &e), cases[i].st, "case %d", i);
        cr_assert(strstr(e.msg, cases[i].field), "case %d: '%s'", i, e.msg);
    }
    op_err e;
    cr_assert_eq(op_contour_settings_validate(NULL, &e), OP_EINVAL);
    op_contour_settings cs;
    op_contour_settings_default(&cs);
    cs.border_region = OP_MAX_REGIONS;
    cs.max_error = 0;
    cs.max_edge_length = 0;
    cr_assert_eq(op_contour_settings_validate(&cs, &e), OP_OK, "%s", e.msg);
}

static const char *const square_hole[] = {
    ".........", ".#######.", ".#######.", ".##...##.", ".##...##.",
    ".##...##.", ".#######.", ".#######.", ".........",
};

Test(contours, build_refuses_bad_input)
{
    op_chf *chf = op_test_field_from_text(A, square_hole, 9);
    op_regions *r = label_regions(A, chf, 0, 0);
    op_contour_settings cs;
    op_contour_settings_default(&cs);
    op_contour_set set;
    op_err e;
    cr_assert_eq(op_contours_build(NULL, r, &cs, OUT, SCR, &set, &e), OP_EINVAL);
    cr_assert_eq(op_contours_build(chf, NULL, &cs, OUT, SCR, &set, &e), OP_EINVAL);
    cr_assert_eq(op_contours_build(chf, r, NULL, OUT, SCR, &set, &e), OP_EINVAL);
    cr_assert_eq(op_contours_build(chf, r, &cs, NULL, SCR, &set, &e), OP_EINVAL);
    op_regions bad = *r;
    bad.span_count++;
    cr_assert_eq(op_contours_build(chf, &bad, &cs, OUT, SCR, &set, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "spans"), "%s", e.msg);
    bad = *r;
    bad.region_count = 0; /* span regions now exceed the count */
    cr_assert_eq(op_contours_build(chf, &bad, &cs, OUT, SCR, &set, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "region"), "%s", e.msg);
    cs.max_error = -1;
    cr_assert_eq(op_contours_build(chf, r, &cs, OUT, SCR, &set, &e), OP_ERANGE);
    cr_assert_eq(set.count, 0);
}

Test(contours, out_of_memory_is_reported_at_every_allocation)
{
    op_test_rng rng = {7};
    op_chf *chf = op_test_field_random(A, &rng, 24, 24, 2, 2);
    op_regions *r = label_regions(A, chf, 5, 4);
    op_contour_settings cs = settings(1.3, 12, 1, 1);
    for (int which = 0; which < 2; which++) {
        int ok = 0;
        for (long n = 0; n < 10000 && !ok; n++) {
            op_arena *out = op_arena_create(0), *scr = op_arena_create(0);
            op_arena_fail_after(which ? scr : out, n);
            op_contour_set set;
            op_err e;
            op_status st = op_contours_build(chf, r, &cs, out, scr, &set, &e);
            if (st == OP_OK) {
                ok = 1;
            } else {
                cr_assert_eq(st, OP_ENOMEM, "n %ld: %s", n, e.msg);
                cr_assert(strstr(e.msg, "contours:"), "%s", e.msg);
                cr_assert_eq(set.count, 0);
            }
            op_arena_destroy(out);
            op_arena_destroy(scr);
        }
        cr_assert(ok, "never succeeded");
    }
}

/* ------------------------------------------------------- random invariants */

typedef struct field_case {
    uint64_t seed;
    int w, d, floors, areas, bw, bd;
} field_case;

static const field_case random_cases[] = {
    {1, 32, 32, 1, 1, 0, 0},   {2, 40, 28, 1, 3, 0, 0},  {3, 36, 36, 1, 2, 6, 5},
    {4, 30, 40, 2, 1, 0, 0},   {5, 40, 40, 3, 3, 7, 6},  {6, 24, 24, 3, 2, 4, 4},
    {7, 48, 20, 2, 3, 9, 3},   {8, 33, 33, 3, 1, 5, 5},  {9, 20, 45, 1, 4, 3, 8},
    {10, 40, 40, 2, 2, 11, 9}, {11, 16, 16, 3, 3, 0, 0}, {12, 50, 50, 1, 1, 8, 8},
};
#define NCASES ((int)(sizeof random_cases / sizeof random_cases[0]))

static op_chf *case_field(const field_case *fc, op_regions **r)
{
    op_test_rng rng = {fc->seed};
    op_chf *chf = op_test_field_random(A, &rng, fc->w, fc->d, fc->floors, fc->areas);
    *r = label_regions(A, chf, fc->bw, fc->bd);
    return chf;
}

Test(contours, raw_loops_cover_each_region_exactly)
{
    for (int k = 0; k < NCASES; k++) {
        op_regions *r;
        op_chf *chf = case_field(&random_cases[k], &r);
        op_contour_trace tr;
        op_err e;
        cr_assert_eq(op_contours_trace(chf, r, OUT, SCR, &tr, &e), OP_OK, "%s", e.msg);
        int64_t *sum_area = calloc((size_t)r->region_count + 1, sizeof *sum_area);
        int64_t *sum_len = calloc((size_t)r->region_count + 1, sizeof *sum_len);
        int64_t *spans = calloc((size_t)r->region_count + 1, sizeof *spans);
        int64_t *edges = calloc((size_t)r->region_count + 1, sizeof *edges);
        for (int i = 0; i < tr.count; i++) {
            const op_raw_loop *l = &tr.loops[i];
            cr_assert(tr.region[i] >= 1 && tr.region[i] <= r->region_count);
            sum_area[tr.region[i]] += area2(l->verts, l->nverts);
            sum_len[tr.region[i]] += l->nverts;
            for (int j = 0; j < l->nverts; j++) {
                const op_contour_vert *p = &l->verts[j], *q = &l->verts[(j + 1) % l->nverts];
                cr_assert_eq(abs(p->x - q->x) + abs(p->z - q->z), 1, "case %d: not a unit edge", k);
                cr_assert(p->neighbour != tr.region[i]);
            }
        }
        /* Boundary edges counted from the spans. */
        for (int z = 0; z < chf->depth; z++)
            for (int x = 0; x < chf->width; x++) {
                int c = x + z * chf->width;
                for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
                    int reg = r->reg[s];
                    if (!reg)
                        continue;
                    spans[reg]++;
                    for (int d = 0; d < 4; d++)
                        edges[reg] += edge_value(chf, r, s, x, z, d) != reg;
                }
            }
        for (int g = 1; g <= r->region_count; g++) {
            cr_assert_eq(sum_area[g], 2 * spans[g], "case %d region %d", k, g);
            cr_assert_eq(sum_len[g], edges[g], "case %d region %d", k, g);
        }
        free(sum_area);
        free(sum_len);
        free(spans);
        free(edges);
        op_arena_reset(OUT);
        op_arena_reset(SCR);
    }
}

static int vert_cmp(const void *pa, const void *pb)
{
    const op_contour_vert *a = pa, *b = pb;
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    return (a->z > b->z) - (a->z < b->z);
}

/* Sorted copy of a contour's positions, for membership tests. */
static op_contour_vert *sorted_positions(const op_contour *c)
{
    op_contour_vert *v = malloc((size_t)c->nverts * sizeof *v);
    memcpy(v, c->verts, (size_t)c->nverts * sizeof *v);
    qsort(v, (size_t)c->nverts, sizeof *v, vert_cmp);
    return v;
}

static int has_position(const op_contour_vert *sorted, int n, const op_contour_vert *p)
{
    return bsearch(p, sorted, (size_t)n, sizeof *p, vert_cmp) != NULL;
}

/* Portal survival and the error bound, for one raw loop of contour c. */
static void check_raw_loop(const op_contour *c, const op_contour_vert *sorted,
                           const op_raw_loop *raw, double max_error, int all_vertices)
{
    int n = raw->nverts;
    for (int i = 0; i < n; i++) {
        const op_contour_vert *v = &raw->verts[i], *prev = &raw->verts[(i + n - 1) % n];
        if (v->neighbour != prev->neighbour)
            cr_assert(has_position(sorted, c->nverts, v), "portal (%d, %d) of region %d lost", v->x,
                      v->z, c->region);
        if (!all_vertices && v->neighbour != 0 && prev->neighbour != 0)
            continue;
        double best = INFINITY;
        for (int j = 0; j < c->nverts; j++)
            best = fmin(best, dist2_seg(&c->verts[j], &c->verts[(j + 1) % c->nverts], v));
        cr_assert(best <= max_error * max_error + 1e-9,
                  "region %d: raw (%d, %d) is %g from the contour (max %g)", c->region, v->x, v->z,
                  sqrt(best), max_error);
    }
}

static void check_contour_set(const op_chf *chf, const op_regions *r, const op_contour_set *set,
                              const op_contour_settings *cs, int *holes_checked)
{
    int *count = calloc((size_t)r->region_count + 1, sizeof *count);
    int *has_spans = calloc((size_t)r->region_count + 1, sizeof *has_spans);
    for (uint32_t s = 0; s < chf->span_count; s++)
        has_spans[r->reg[s]] = 1;
    int all = !cs->straight_region_borders || cs->max_error == 0;
    for (int i = 0; i < set->count; i++) {
        const op_contour *c = &set->contours[i];
        cr_assert(i == 0 || set->contours[i - 1].region <= c->region, "not ordered by region");
        cr_assert(c->region >= 1 && c->region <= r->region_count);
        cr_assert_eq(c->area, r->region_area[c->region]);
        cr_assert_geq(c->nverts, 3);
        cr_assert_gt(area2(c->verts, c->nverts), 0, "contour %d of region %d not ccw", i,
                     c->region);
        count[c->region]++;
        if (!cs->keep_raw)
            continue;
        op_contour_vert *sorted = sorted_positions(c);
        check_raw_loop(c, sorted, &c->raw, cs->max_error, all);
        if (set->dropped_holes == 0)
            for (int h = 0; h < c->nraw_holes; h++, (*holes_checked)++)
                check_raw_loop(c, sorted, &c->raw_holes[h], cs->max_error, all);
        free(sorted);
    }
    for (int g = 1; g <= r->region_count; g++)
        if (has_spans[g])
            cr_assert_gt(count[g], 0, "region %d disappeared", g);
    free(count);
    free(has_spans);
}

Test(contours, contours_keep_portals_stay_ccw_and_within_error)
{
    const op_contour_settings variants[] = {
        settings(1.3, 12, 1, 1), settings(0.0, 12, 1, 1), settings(1.3, 12, 0, 1),
        settings(2.5, 0, 1, 1),  settings(0.9, 3, 0, 1),  settings(4.0, 6, 1, 1),
    };
    int holes_checked = 0;
    for (int k = 0; k < NCASES; k++) {
        op_regions *r;
        op_chf *chf = case_field(&random_cases[k], &r);
        for (int v = 0; v < 6; v++) {
            op_contour_set set = build(chf, r, &variants[v]);
            check_contour_set(chf, r, &set, &variants[v], &holes_checked);
            op_arena_reset(OUT);
        }
    }
    cr_assert_gt(holes_checked, 20, "the random fields have too few holes to check");
}

/* One directed simplified edge on a shared boundary, keyed from the lower region. */
typedef struct shared_edge {
    int lo, hi, x0, z0, x1, z1, side;
} shared_edge;

static int shared_cmp(const void *pa, const void *pb)
{
    const shared_edge *a = pa, *b = pb;
    const int ka[] = {a->lo, a->hi, a->x0, a->z0, a->x1, a->z1, a->side};
    const int kb[] = {b->lo, b->hi, b->x0, b->z0, b->x1, b->z1, b->side};
    for (int i = 0; i < 7; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

/* With MaxError 0 the two sides of a shared boundary keep the same vertices: the
 * edges of A towards B, reversed, are exactly the edges of B towards A. */
static void check_shared_boundaries(const op_contour_set *set)
{
    size_t cap = 0, n = 0;
    for (int i = 0; i < set->count; i++)
        cap += (size_t)set->contours[i].nverts;
    shared_edge *e = malloc((cap + 1) * sizeof *e);
    for (int i = 0; i < set->count; i++) {
        const op_contour *c = &set->contours[i];
        for (int j = 0; j < c->nverts; j++) {
            const op_contour_vert *p = &c->verts[j], *q = &c->verts[(j + 1) % c->nverts];
            int b = p->neighbour;
            if (b <= 0 || b == c->region)
                continue;
            if (c->region < b)
                e[n++] = (shared_edge){c->region, b, p->x, p->z, q->x, q->z, 0};
            else
                e[n++] = (shared_edge){b, c->region, q->x, q->z, p->x, p->z, 1};
        }
    }
    qsort(e, n, sizeof *e, shared_cmp);
    size_t i = 0;
    while (i < n) {
        size_t j = i, s0 = 0, s1 = 0;
        while (j < n && shared_cmp(&(shared_edge){e[i].lo, e[i].hi, e[i].x0, e[i].z0, e[i].x1,
                                                  e[i].z1, e[j].side},
                                   &e[j]) == 0) {
            s0 += e[j].side == 0;
            s1 += e[j].side == 1;
            j++;
        }
        cr_assert_eq(s0, s1,
                     "regions %d/%d: edge (%d,%d)-(%d,%d) kept %zu times on one side, %zu "
                     "on the other",
                     e[i].lo, e[i].hi, e[i].x0, e[i].z0, e[i].x1, e[i].z1, s0, s1);
        i = j;
    }
    free(e);
}

Test(contours, max_error_zero_keeps_both_sides_of_shared_boundaries_alike)
{
    op_contour_settings cs = settings(0.0, 12, 1, 0);
    int checked = 0;
    for (int k = 0; k < NCASES; k++) {
        op_regions *r;
        op_chf *chf = case_field(&random_cases[k], &r);
        op_contour_set set = build(chf, r, &cs);
        cr_assert_eq(set.dropped_holes, 0);
        cr_assert_eq(set.raw_fallbacks, 0);
        check_shared_boundaries(&set);
        checked++;
        op_arena_reset(OUT);
    }
    cr_assert_eq(checked, NCASES);
}

/* ------------------------------------------------------------- hand-made */

static void expect_loop(const op_contour *c, const int (*want)[4], int n)
{
    cr_assert_eq(c->nverts, n, "region %d: %d vertices, want %d", c->region, c->nverts, n);
    for (int i = 0; i < n; i++)
        cr_assert(c->verts[i].x == want[i][0] && c->verts[i].y == want[i][1] &&
                      c->verts[i].z == want[i][2] && c->verts[i].neighbour == want[i][3],
                  "region %d vertex %d: (%d %d %d n%d), want (%d %d %d n%d)", c->region, i,
                  c->verts[i].x, c->verts[i].y, c->verts[i].z, c->verts[i].neighbour, want[i][0],
                  want[i][1], want[i][2], want[i][3]);
}

Test(contours, region_with_a_hole_is_bridged_from_the_leftmost_vertex)
{
    op_chf *chf = op_test_field_from_text(A, square_hole, 9);
    op_regions *r = label_regions(A, chf, 0, 0);
    cr_assert_eq(r->region_count, 1);
    op_contour_settings cs = settings(1.3, 12, 1, 1);
    op_contour_set set = build(chf, r, &cs);
    cr_assert_eq(set.count, 1);
    /* Outline (1,1) (8,1) (8,8) (1,8); hole (3,3) (3,6) (6,6) (6,3); p = (3,3), the
     * nearest outline vertex in both cones is q = (1,1); the bridge edges carry region 1. */
    static const int want[][4] = {{1, 0, 1, 1}, {3, 0, 3, 0}, {3, 0, 6, 0}, {6, 0, 6, 0},
                                  {6, 0, 3, 0}, {3, 0, 3, 1}, {1, 0, 1, 0}, {8, 0, 1, 0},
                                  {8, 0, 8, 0}, {1, 0, 8, 0}};
    expect_loop(&set.contours[0], want, 10);
    cr_assert_eq(set.contours[0].nholes, 1);
    cr_assert_eq(set.contours[0].nraw_holes, 1);
    cr_assert_eq(set.contours[0].raw.nverts, 28);
    cr_assert_eq(set.contours[0].raw_holes[0].nverts, 12);
    cr_assert_eq(area2(set.contours[0].verts, 10), 2 * 40);
    cr_assert_eq(set.raw_fallbacks, 0);
    cr_assert_eq(set.dropped_holes, 0);
}

Test(contours, region_with_two_holes_joins_them_left_to_right)
{
    static const char *const rows[] = {
        "............", ".##########.", ".#..####..#.",
        ".#..####..#.", ".##########.", "............",
    };
    op_chf *chf = op_test_field_from_text(A, rows, 6);
    op_regions *r = label_regions(A, chf, 0, 0);
    op_contour_settings cs = settings(1.3, 12, 1, 0);
    op_contour_set set = build(chf, r, &cs);
    cr_assert_eq(set.count, 1);
    /* Hole 1 (leftmost (2,2)) bridges to (1,1); hole 2 (leftmost (8,2)) to (11,1), the
     * nearest vertex of the merged loop inside both cones. */
    static const int want[][4] = {
        {1, 0, 1, 1}, {2, 0, 2, 0},  {2, 0, 4, 0},  {4, 0, 4, 0}, {4, 0, 2, 0},  {2, 0, 2, 1},
        {1, 0, 1, 0}, {11, 0, 1, 1}, {8, 0, 2, 0},  {8, 0, 4, 0}, {10, 0, 4, 0}, {10, 0, 2, 0},
        {8, 0, 2, 1}, {11, 0, 1, 0}, {11, 0, 5, 0}, {1, 0, 5, 0},
    };
    expect_loop(&set.contours[0], want, 16);
    cr_assert_eq(set.contours[0].nholes, 2);
    cr_assert_eq(area2(set.contours[0].verts, 16), 2 * 32);
}

Test(contours, four_regions_at_a_corner_and_tile_borders)
{
    static const char *const rows[] = {"1122", "1122", "3344", "3344"};
    op_chf *chf = op_test_field_from_text(A, rows, 4);
    op_regions *r = label_regions(A, chf, 0, 0);
    cr_assert_eq(r->region_count, 4);
    op_contour_settings cs = settings(1.3, 12, 1, 1);
    op_contour_set set = build(chf, r, &cs);
    cr_assert_eq(set.count, 4);
    /* Region 1: raw (0,1) (0,0) (1,0) (2,0) (2,1) (2,2) (1,2) (0,2); portals (2,0), (2,2),
     * (0,2); the grid-edge stretch keeps (0,0) (sqrt 2 > 1.3 from the chord). */
    static const int want1[][4] = {{0, 0, 0, -1}, {2, 0, 0, 2}, {2, 0, 2, 3}, {0, 0, 2, -1}};
    expect_loop(&set.contours[0], want1, 4);
    /* Region 4 touches region 1 only at (2,2). */
    static const int want4[][4] = {{2, 0, 2, 2}, {4, 0, 2, -1}, {4, 0, 4, -1}, {2, 0, 4, 3}};
    expect_loop(&set.contours[3], want4, 4);
    check_shared_boundaries(&set);
    int holes = 0;
    check_contour_set(chf, r, &set, &cs, &holes);
}

Test(contours, regions_touching_only_at_a_corner_stay_separate)
{
    static const char *const rows[] = {"......", ".##...", ".##...", "...##.", "...##.", "......"};
    op_chf *chf = op_test_field_from_text(A, rows, 6);
    op_regions *r = label_regions(A, chf, 0, 0);
    cr_assert_eq(r->region_count, 2);
    op_contour_settings cs = settings(1.3, 12, 1, 0);
    op_contour_set set = build(chf, r, &cs);
    cr_assert_eq(set.count, 2);
    static const int want1[][4] = {{1, 0, 1, 0}, {3, 0, 1, 0}, {3, 0, 3, 0}, {1, 0, 3, 0}};
    static const int want2[][4] = {{3, 0, 3, 0}, {5, 0, 3, 0}, {5, 0, 5, 0}, {3, 0, 5, 0}};
    expect_loop(&set.contours[0], want1, 4);
    expect_loop(&set.contours[1], want2, 4);
}

Test(contours, one_cell_corridor_falls_back_to_max_error_zero)
{
    static const char *const rows[] = {"..........", ".########.", ".........."};
    op_chf *chf = op_test_field_from_text(A, rows, 3);
    op_regions *r = label_regions(A, chf, 0, 0);
    op_contour_settings cs = settings(1.3, 12, 1, 0);
    op_contour_set set = build(chf, r, &cs);
    /* Kept (1,1) and (9,2); every other vertex is within 8 / sqrt 65 < 1.3 of the chord,
     * so two vertices remain: simplified again with MaxError 0 (not a raw fallback). */
    static const int want[][4] = {{1, 0, 2, 0}, {1, 0, 1, 0}, {9, 0, 1, 0}, {9, 0, 2, 0}};
    cr_assert_eq(set.count, 1);
    expect_loop(&set.contours[0], want, 4);
    cr_assert_eq(set.raw_fallbacks, 0);
}

Test(contours, long_walls_are_split_at_the_middle_raw_vertex)
{
    static const char *const rows[] = {
        "..............................",
        ".############################.",
        ".############################.",
        "..............................",
    };
    op_chf *chf = op_test_field_from_text(A, rows, 4);
    op_regions *r = label_regions(A, chf, 0, 0);
    op_contour_settings cs = settings(1.3, 12, 1, 0);
    op_contour_set set = build(chf, r, &cs);
    cr_assert_eq(set.count, 1);
    const op_contour *c = &set.contours[0];
    for (int i = 0; i < c->nverts; i++) {
        const op_contour_vert *p = &c->verts[i], *q = &c->verts[(i + 1) % c->nverts];
        int64_t dx = q->x - p->x, dz = q->z - p->z;
        cr_assert_leq(dx * dx + dz * dz, 144, "edge %d longer than 12", i);
    }
    /* Without the split the 28-cell walls stay single edges. */
    cs.max_edge_length = 0;
    set = build(chf, r, &cs);
    cr_assert_eq(set.contours[0].nverts, 4);
}

/* Region 1 = cells with x/2 + z/2 <= 2 (a staircase), region 2 the rest of an 8x8 grid. */
static op_regions *staircase(op_chf **chf_out, int area2_id)
{
    static const char *const all[] = {"########", "########", "########", "########",
                                      "########", "########", "########", "########"};
    op_chf *chf = op_test_field_from_text(A, all, 8);
    int *ids = malloc(chf->span_count * sizeof *ids);
    for (int z = 0; z < 8; z++)
        for (int x = 0; x < 8; x++) {
            uint32_t s = chf->cells[x + z * 8];
            ids[s] = (x / 2 + z / 2 <= 2) ? 1 : 2;
            if (ids[s] == 2)
                chf->areas[s] = (uint8_t)area2_id;
        }
    op_regions *r = regions_from_ids(A, chf, ids);
    free(ids);
    *chf_out = chf;
    return r;
}

static int edges_towards(const op_contour *c, int region)
{
    int n = 0;
    for (int i = 0; i < c->nverts; i++)
        n += c->verts[i].neighbour == region;
    return n;
}

Test(contours, straight_region_borders_on_and_off)
{
    op_chf *chf;
    op_regions *r = staircase(&chf, 63);
    op_contour_settings cs = settings(1.3, 12, 1, 0);
    op_contour_set set = build(chf, r, &cs);
    cr_assert_eq(set.count, 2);
    /* On: the staircase (6,0) .. (0,6) is one chord; (0,0) stays. */
    static const int want[][4] = {{0, 0, 0, -1}, {6, 0, 0, 2}, {0, 0, 6, -1}};
    expect_loop(&set.contours[0], want, 3);
    cr_assert_eq(edges_towards(&set.contours[1], 1), 1);
    check_shared_boundaries(&set);
    /* Off: the steps stray sqrt 2 > 1.3 from the chord, so vertices are kept. */
    cs.straight_region_borders = 0;
    set = build(chf, r, &cs);
    cr_assert_gt(edges_towards(&set.contours[0], 2), 1);
    cr_assert_eq(edges_towards(&set.contours[0], 2), edges_towards(&set.contours[1], 1));
    check_shared_boundaries(&set);
    int off = edges_towards(&set.contours[0], 2);
    /* The border band keeps every turn (clarifications.md, "Band corners": on a tile
     * those are the core's corners); here the band is a staircase of 3 steps. */
    cs.straight_region_borders = 1;
    cs.border_region = 2;
    set = build(chf, r, &cs);
    cr_assert_eq(edges_towards(&set.contours[0], 2), 6);
    /* Borders between different areas are always refined. */
    r = staircase(&chf, 5);
    cs.border_region = 0;
    set = build(chf, r, &cs);
    cr_assert_eq(edges_towards(&set.contours[0], 2), off);
    check_shared_boundaries(&set);
}

/* A tile-like field: an 8x8 grid whose outer two-cell ring is the border band (id 3)
 * around a 4x4 core (cells 2..5). Region 1 is an L in the core: the one-cell strip of
 * row z = 5 along the +z tile line plus column x = 2; region 2 the rest. */
static op_regions *strip_on_tile_line(op_chf **chf_out)
{
    static const char *const all[] = {"########", "########", "########", "########",
                                      "########", "########", "########", "########"};
    op_chf *chf = op_test_field_from_text(A, all, 8);
    int *ids = malloc(chf->span_count * sizeof *ids);
    for (int z = 0; z < 8; z++)
        for (int x = 0; x < 8; x++) {
            uint32_t s = chf->cells[x + z * 8];
            int core = x >= 2 && x <= 5 && z >= 2 && z <= 5;
            ids[s] = !core ? 3 : (z == 5 || x == 2) ? 1 : 2;
        }
    op_regions *r = regions_from_ids(A, chf, ids);
    free(ids);
    *chf_out = chf;
    return r;
}

static int on_tile_line(const op_contour_vert *v)
{
    return v->x == 2 || v->x == 6 || v->z == 2 || v->z == 6;
}

Test(contours, band_stretches_keep_the_core_corners)
{
    /* Without the band-corner rule the band stretch (6,5) .. (6,6) .. (2,6) .. (2,2) ..
     * (3,2) is refined to (6,5) -> (2,6) -> (2,2) -> (3,2): (6,6) lies 0.97 cells from
     * the first chord, so the strip's tile-line edge leaves the line (a wall where the
     * neighbour tile has a portal). */
    op_chf *chf;
    op_regions *r = strip_on_tile_line(&chf);
    op_contour_settings cs = settings(1.3, 12, 1, 0);
    cs.border_region = 3;
    op_contour_set set = build(chf, r, &cs);
    int seen = 0;
    for (int c = 0; c < set.count; c++) {
        const op_contour *ct = &set.contours[c];
        if (ct->region == 3)
            continue;
        for (int i = 0; i < ct->nverts; i++) {
            const op_contour_vert *a = &ct->verts[i], *b = &ct->verts[(i + 1) % ct->nverts];
            if (a->neighbour != 3)
                continue;
            /* every band edge lies on one tile line */
            cr_assert(on_tile_line(a) && on_tile_line(b));
            cr_assert(a->x == b->x || a->z == b->z, "band edge (%d,%d)->(%d,%d) is diagonal", a->x,
                      a->z, b->x, b->z);
        }
        if (ct->region == 1) {
            /* (3,5) goes: the border with region 2 is one straight chord. */
            static const int want[][4] = {
                {2, 0, 2, 3}, {3, 0, 2, 2}, {6, 0, 5, 3}, {6, 0, 6, 3}, {2, 0, 6, 3}};
            expect_loop(ct, want, 5);
            seen = 1;
        }
    }
    cr_assert(seen);
    check_shared_boundaries(&set);
}

/* Cells of a 5x5 ring in walking order (counter-clockwise from (0,0)). */
static void ring_cell(int k, int *x, int *z)
{
    k %= 16;
    if (k < 4) {
        *x = k, *z = 0;
    } else if (k < 8) {
        *x = 4, *z = k - 4;
    } else if (k < 12) {
        *x = 12 - k, *z = 4;
    } else {
        *x = 0, *z = 16 - k;
    }
}

Test(contours, spiral_ramp_overlapping_itself)
{
    /* 24 steps around a 5x5 ring, 2 rows up per step: steps 16..23 lie above steps 0..7. */
    int counts[25] = {0};
    op_test_span spans[32];
    int floors[25][2], nf[25] = {0};
    for (int k = 0; k < 24; k++) {
        int x, z;
        ring_cell(k, &x, &z);
        floors[x + z * 5][nf[x + z * 5]++] = 2 * k;
    }
    int n = 0;
    for (int c = 0; c < 25; c++) {
        counts[c] = nf[c];
        for (int f = 0; f < nf[c]; f++)
            spans[n++] = (op_test_span){floors[c][f], f + 1 < nf[c] ? 20 : 200, 63};
    }
    op_chf *chf = op_test_field(A, 5, 5, counts, spans, 10, 2);
    op_regions *r = label_regions(A, chf, 0, 0);
    cr_assert_eq(r->region_count, 1, "the ramp is one region");
    op_contour_settings cs = settings(1.3, 12, 1, 1);
    op_contour_set set = build(chf, r, &cs);
    cr_assert_geq(set.count, 1);
    int holes = 0;
    check_contour_set(chf, r, &set, &cs, &holes);
    /* One boundary loop (the ramp is a strip) whose area counts the overlap twice. */
    op_contour_trace tr;
    op_err e;
    cr_assert_eq(op_contours_trace(chf, r, OUT, SCR, &tr, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(tr.count, 1);
    cr_assert_eq(area2(tr.loops[0].verts, tr.loops[0].nverts), 2 * 24);
    int high = 0;
    for (int i = 0; i < tr.loops[0].nverts; i++)
        high = tr.loops[0].verts[i].y > high ? tr.loops[0].verts[i].y : high;
    cr_assert_eq(high, 46);
}

Test(contours, holes_that_cancel_their_outline_are_dropped)
{
    /* Region 1 is a ring at floor 0 (outer [0,10]^2, hole [3,7]^2) and, given the same id
     * by hand, a platform [2,5]^2 at floor 30 over the hole's corner. The hole's leftmost
     * vertex (3,3) is in the platform's outline (the smallest), the simplified join
     * crosses (raw fallback), and the joined area 18 - 32 is negative: hole dropped. */
    int counts[100];
    op_test_span spans[200];
    int n = 0;
    for (int z = 0; z < 10; z++)
        for (int x = 0; x < 10; x++) {
            int ring = !(x >= 3 && x < 7 && z >= 3 && z < 7);
            int plat = x >= 2 && x < 5 && z >= 2 && z < 5;
            counts[x + z * 10] = ring + plat;
            if (ring)
                spans[n++] = (op_test_span){0, plat ? 20 : 200, 63};
            if (plat)
                spans[n++] = (op_test_span){30, 200, 63};
        }
    op_chf *chf = op_test_field(A, 10, 10, counts, spans, 10, 2);
    int *ids = malloc(chf->span_count * sizeof *ids);
    for (uint32_t s = 0; s < chf->span_count; s++)
        ids[s] = 1;
    op_regions *r = regions_from_ids(A, chf, ids);
    free(ids);
    op_contour_settings cs = settings(1.3, 12, 1, 1);
    op_contour_set set = build(chf, r, &cs);
    cr_assert_eq(set.count, 2);
    static const int outer[][4] = {{0, 0, 0, -1}, {10, 0, 0, -1}, {10, 0, 10, -1}, {0, 0, 10, -1}};
    expect_loop(&set.contours[0], outer, 4);
    cr_assert_eq(set.contours[0].nraw_holes, 0);
    const op_contour *plat = &set.contours[1];
    cr_assert_eq(plat->nraw_holes, 1);
    cr_assert_eq(plat->nholes, 0);
    cr_assert_eq(plat->nverts, 12, "the platform stays as its raw loop");
    cr_assert_eq(memcmp(plat->verts, plat->raw.verts, 12 * sizeof *plat->verts), 0);
    for (int i = 0; i < 12; i++)
        cr_assert_eq(plat->verts[i].y, 30);
    cr_assert_eq(set.raw_fallbacks, 1);
    cr_assert_eq(set.dropped_holes, 1);
}

/* ------------------------------------------------------------ hash matrix */

static int buf_write(void *ctx, const char *data, size_t len)
{
    return op_hash_sink_write(ctx, data, len);
}

static uint64_t scenario_hash(void)
{
    const op_contour_settings variants[] = {
        settings(1.3, 12, 1, 0),
        settings(0.0, 12, 1, 1),
        settings(1.3, 4, 0, 0),
        settings(2.0, 0, 1, 0),
    };
    uint64_t h = OP_HASH_INIT;
    for (int k = 0; k < NCASES; k += 2) {
        op_regions *r;
        op_chf *chf = case_field(&random_cases[k], &r);
        for (int v = 0; v < 4; v++) {
            op_contour_settings cs = variants[v];
            if (v == 3)
                cs.border_region = r->region_count > 1 ? 2 : 0;
            op_contour_set set = build(chf, r, &cs);
            cr_assert_eq(op_contours_dump(&set, buf_write, &h), 0);
            op_arena_reset(OUT);
        }
    }
    return h;
}

Test(contours, hash_matrix_build3d_contours)
{
    uint64_t a = scenario_hash();
    op_arena_reset(A);
    uint64_t b = scenario_hash();
    cr_assert_eq(a, b, "two builds differ");
    op_test_golden("build3d/contours", a);
}

Test(contours, vertex_height_is_the_highest_floor_around_the_corner)
{
    /* Cell (0,0) y 0 is region 1; (1,0) y 10 is not linked to it (climb 4), (0,1) y 3
     * and (1,1) y 7 are. Corner (1,1) sees (1,1) only diagonally, through (0,1). */
    int counts[4] = {1, 1, 1, 1};
    op_test_span spans[4] = {{0, 100, 63}, {10, 100, 63}, {3, 100, 63}, {7, 100, 63}};
    op_chf *chf = op_test_field(A, 2, 2, counts, spans, 10, 4);
    cr_assert_eq(chf->links[0][2], OP_NO_LINK);
    int ids[4] = {1, 0, 0, 0};
    op_regions *r = regions_from_ids(A, chf, ids);
    op_contour_settings cs = settings(1.3, 12, 1, 1);
    op_contour_set set = build(chf, r, &cs);
    cr_assert_eq(set.count, 1);
    /* Raw (0,1) (0,0) (1,0) (1,1): every vertex is 0.7 from its chord, so the MaxError 0
     * pass keeps all four. */
    static const int want[][4] = {{0, 3, 1, -1}, {0, 0, 0, -1}, {1, 0, 0, 0}, {1, 7, 1, 0}};
    expect_loop(&set.contours[0], want, 4);
}

static int loop_crosses_itself(const op_contour_vert *v, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            const op_contour_vert *a = &v[i], *b = &v[(i + 1) % n];
            const op_contour_vert *c = &v[j], *d = &v[(j + 1) % n];
            int64_t o1 =
                (int64_t)(b->x - a->x) * (c->z - a->z) - (int64_t)(b->z - a->z) * (c->x - a->x);
            int64_t o2 =
                (int64_t)(b->x - a->x) * (d->z - a->z) - (int64_t)(b->z - a->z) * (d->x - a->x);
            int64_t o3 =
                (int64_t)(d->x - c->x) * (a->z - c->z) - (int64_t)(d->z - c->z) * (a->x - c->x);
            int64_t o4 =
                (int64_t)(d->x - c->x) * (b->z - c->z) - (int64_t)(d->z - c->z) * (b->x - c->x);
            if (((o1 > 0 && o2 < 0) || (o1 < 0 && o2 > 0)) &&
                ((o3 > 0 && o4 < 0) || (o3 < 0 && o4 > 0)))
                return 1;
        }
    return 0;
}

Test(contours, straight_borders_never_leave_crossing_contours_on_one_floor)
{
    /* On one floor the raw loops never cross, so with straight borders in effect (and
     * after any hole join) every contour is free of proper crossings. */
    int fallbacks = 0;
    const double errors[] = {1.3, 2.5, 6.0};
    for (int k = 0; k < NCASES; k++) {
        if (random_cases[k].floors != 1)
            continue;
        op_regions *r;
        op_chf *chf = case_field(&random_cases[k], &r);
        for (int e = 0; e < 3; e++) {
            op_contour_settings cs = settings(errors[e], 12, 1, 0);
            op_contour_set set = build(chf, r, &cs);
            fallbacks += set.raw_fallbacks;
            for (int i = 0; i < set.count; i++)
                cr_assert(!loop_crosses_itself(set.contours[i].verts, set.contours[i].nverts),
                          "case %d error %g: contour %d (region %d) crosses itself", k, errors[e],
                          i, set.contours[i].region);
            op_arena_reset(OUT);
        }
    }
    cr_log_info("raw fallbacks: %d", fallbacks);
}

Test(contours, one_way_links_are_refused_without_overrun)
{
    /* Links must be mutual; a broken field must not hang or write out of bounds. */
    for (int k = 0; k < 40; k++) {
        op_test_rng rng = {100 + (uint64_t)k};
        op_chf *chf = op_test_field_random(A, &rng, 12, 12, 2, 2);
        op_regions *r = label_regions(A, chf, 0, 0);
        for (int j = 0; j < 6; j++) {
            uint32_t s = (uint32_t)op_test_rand_int(&rng, 0, (int)chf->span_count - 1);
            chf->links[s][op_test_rand_int(&rng, 0, 3)] = OP_NO_LINK;
        }
        op_contour_settings cs;
        op_contour_settings_default(&cs);
        op_contour_set set;
        op_err e;
        op_status st = op_contours_build(chf, r, &cs, OUT, SCR, &set, &e);
        cr_assert(st == OP_OK || st == OP_EINVAL, "%s", e.msg);
        op_arena_reset(OUT);
        op_arena_reset(SCR);
    }
}

Test(contours, a_chord_that_crosses_a_wall_is_refined_again)
{
    /* Region 2 is the 3x3 block x, z >= 7 with a notch at (8,8), (8,9) open to the grid
     * edge; region 1 (same area) is the rest. Region 2's border with 1 is an L from
     * (7,10) to (10,7); its chord crosses the simplified notch wall (9,10) -> (8,8), so
     * the loop is simplified again with every stretch refined and keeps (7,7). */
    static const char *const rows[] = {
        "##########", "##########", "##########", "##########", "##########",
        "##########", "##########", "##########", "########.#", "########.#",
    };
    op_chf *chf = op_test_field_from_text(A, rows, 10);
    int *ids = malloc(chf->span_count * sizeof *ids);
    for (int z = 0; z < 10; z++)
        for (int x = 0; x < 10; x++) {
            int c = x + z * 10;
            if (chf->cells[c + 1] > chf->cells[c])
                ids[chf->cells[c]] = (x >= 7 && z >= 7) ? 2 : 1;
        }
    op_regions *r = regions_from_ids(A, chf, ids);
    free(ids);
    op_contour_settings cs = settings(1.3, 12, 1, 0);
    op_contour_set set = build(chf, r, &cs);
    cr_assert_eq(set.count, 2);
    static const int want[][4] = {{7, 0, 7, 1}, {10, 0, 7, -1}, {9, 0, 10, 0},
                                  {8, 0, 8, 0}, {8, 0, 10, -1}, {7, 0, 10, 1}};
    expect_loop(&set.contours[1], want, 6);
    cr_assert_eq(set.raw_fallbacks, 0);
    /* Region 1 keeps the chord (its own loop does not cross). */
    cr_assert_eq(edges_towards(&set.contours[0], 2), 1);
}

Test(contours, raw_fallbacks_leave_valid_contours)
{
    /* Seeds found to need fallbacks at large MaxError (the join or the refined pass
     * still crossing). The results must stay valid and free of crossings. */
    static const struct {
        uint64_t seed;
        double err;
    } cases[] = {{3, 3}, {3, 9}, {34, 2}, {251, 3}, {251, 9}};
    int fallbacks = 0;
    for (int k = 0; k < 5; k++) {
        uint64_t seed = cases[k].seed;
        op_test_rng rng = {seed};
        int w = 10 + (int)(seed % 7) * 3;
        op_chf *chf = op_test_field_random(A, &rng, w, w, 1, 1 + (int)(seed % 3));
        op_regions *r = label_regions(A, chf, (int)(seed % 5) + 2, (int)(seed % 4) + 2);
        op_contour_settings cs = settings(cases[k].err, 0, 1, 1);
        op_contour_set set = build(chf, r, &cs);
        fallbacks += set.raw_fallbacks;
        int holes = 0;
        check_contour_set(chf, r, &set, &cs, &holes);
        for (int i = 0; i < set.count; i++)
            cr_assert(!loop_crosses_itself(set.contours[i].verts, set.contours[i].nverts),
                      "seed %d: contour %d crosses itself", (int)seed, i);
        op_arena_reset(OUT);
    }
    cr_assert_geq(fallbacks, 5);
}

/* The crossing test's sweep (used from 12 edges up) against every pair. */
#include "../core/src/contours_internal.h"

Test(contours, crossing_sweep_agrees_with_all_pairs)
{
    op_test_rng rng = {99};
    int seen[2] = {0, 0};
    for (int k = 0; k < 3000; k++) {
        int n = op_test_rand_int(&rng, 3, 90);
        int span = op_test_rand_int(&rng, 2, 60);
        op_contour_vert v[90];
        for (int i = 0; i < n; i++)
            v[i] = (op_contour_vert){op_test_rand_int(&rng, 0, span), 0,
                                     op_test_rand_int(&rng, 0, span / 3 + 1), 0};
        if (k % 2 == 0) {
            /* An x-monotone polygon (simple), sometimes with two vertices swapped. */
            int half = n / 2;
            for (int i = 0; i < n; i++) {
                int lower = i < half;
                int x = lower ? 2 * i : 2 * (n - 1 - i) + 1;
                v[i] = (op_contour_vert){x, 0,
                                         lower ? op_test_rand_int(&rng, 0, span)
                                               : op_test_rand_int(&rng, span + 1, 2 * span + 1),
                                         0};
            }
            if (op_test_rand_int(&rng, 0, 1)) {
                int a = op_test_rand_int(&rng, 0, n - 1), b = op_test_rand_int(&rng, 0, n - 1);
                op_contour_vert t = v[a];
                v[a] = v[b];
                v[b] = t;
            }
        }
        int got = -1;
        op_err e;
        cr_assert_eq(op__loop_crosses(v, n, SCR, &got, &e), OP_OK);
        cr_assert_eq(got, loop_crosses_itself(v, n), "loop %d (n %d)", k, n);
        seen[got]++;
        op_arena_reset(SCR);
    }
    cr_assert(seen[0] > 100 && seen[1] > 100, "%d %d", seen[0], seen[1]);
}
