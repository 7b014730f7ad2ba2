/*
 * Compaction (build3d-spans.md §5): compact spans, clearance, links, the canonical dump,
 * and the hash-matrix scenarios build3d/spans-compact-* (compaction, erosion, volumes,
 * distance on seeded random heightfields).
 *
 * Heightfields are built by hand here (columns of solid spans chained with .next, in
 * shuffled slots so that only the chain order matters); the link rule is checked
 * against tests/support/op_fields.c, which implements it independently.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/limits.h"
#include "onepath/spans.h"
#include "op_fields.h"
#include "op_test.h"

/* ---- hand-built heightfields ---- */

typedef struct test_hf {
    op_heightfield hf;
    uint32_t heads[64 * 64];
    op_hf_span spans[64 * 64 * 8];
} test_hf;

typedef struct col_span {
    int smin, smax, area;
} col_span;

static void hf_begin(test_hf *t, int width, int depth)
{
    memset(&t->hf, 0, sizeof t->hf);
    t->hf.width = width;
    t->hf.depth = depth;
    t->hf.rows = OP_MAX_ROWS;
    t->hf.cs = 0.5;
    t->hf.ch = 0.25;
    t->hf.heads = t->heads;
    t->hf.spans = t->spans;
    t->hf.free_list = OP_NO_SPAN;
    for (int c = 0; c < width * depth; c++)
        t->heads[c] = OP_NO_SPAN;
}

/* Sets column (x, z) to n spans (bottom up), stored at slots from slot onwards. */
static void hf_column_at(test_hf *t, int x, int z, const col_span *s, int n, const uint32_t *slots)
{
    uint32_t prev = OP_NO_SPAN;
    for (int i = n - 1; i >= 0; i--) {
        uint32_t k = slots[i];
        t->spans[k] =
            (op_hf_span){(uint16_t)s[i].smin, (uint16_t)s[i].smax, (uint8_t)s[i].area, prev};
        prev = k;
        if (k + 1 > t->hf.span_count)
            t->hf.span_count = k + 1;
    }
    t->heads[x + z * t->hf.width] = prev;
}

static void hf_column(test_hf *t, int x, int z, const col_span *s, int n)
{
    uint32_t slots[16];
    for (int i = 0; i < n; i++)
        slots[i] = t->hf.span_count + (uint32_t)i;
    hf_column_at(t, x, z, s, n, slots);
}

/* Random heightfield: 0..max_floors solid spans a column at small random heights (so
 * that links, one-way links and refusals all occur), some area 0, some reaching the sky
 * row; spans stored in a random permutation of slots. */
static void hf_random(test_hf *t, op_test_rng *rng, int width, int depth, int max_floors)
{
    hf_begin(t, width, depth);
    int ncells = width * depth;
    static col_span cols[64 * 64][8];
    static int counts[64 * 64];
    uint32_t total = 0;
    for (int c = 0; c < ncells; c++) {
        int n = op_test_rand_int(rng, 0, max_floors);
        int cur = op_test_rand_int(rng, 0, 4);
        for (int i = 0; i < n; i++) {
            int smax = cur + op_test_rand_int(rng, 1, 6);
            int area = op_test_rand_int(rng, 0, 4) == 0 ? 0 : op_test_rand_int(rng, 1, 3);
            cols[c][i] = (col_span){cur, smax, area};
            cur = smax + op_test_rand_int(rng, 1, 8);
        }
        if (n < 8 && op_test_rand_int(rng, 0, 15) == 0) /* a roof touching the sky */
            cols[c][n++] = (col_span){65530, 65535 - op_test_rand_int(rng, 0, 2), 1};
        counts[c] = n;
        total += (uint32_t)n;
    }
    uint32_t *perm = malloc((total + 1) * sizeof *perm);
    for (uint32_t i = 0; i < total; i++)
        perm[i] = i;
    for (uint32_t i = total; i > 1; i--) {
        uint32_t j = (uint32_t)(op_test_rand(rng) % i), tmp = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = tmp;
    }
    uint32_t k = 0;
    for (int c = 0; c < ncells; c++) {
        hf_column_at(t, c % width, c / width, cols[c], counts[c], perm + k);
        k += (uint32_t)counts[c];
    }
    t->hf.span_count = total;
    free(perm);
}

/* The fixture's field for the same heightfield: spans from the §5 rules written out
 * directly (floor = smax, top = next smin or 65535, area != 0 only). */
static op_chf *fixture_of(op_arena *a, const op_heightfield *hf, int wh, int wc)
{
    int ncells = hf->width * hf->depth;
    int *counts = calloc((size_t)ncells, sizeof *counts);
    op_test_span *sp = calloc(hf->span_count + 1, sizeof *sp);
    int k = 0;
    for (int c = 0; c < ncells; c++)
        for (uint32_t s = hf->heads[c]; s != OP_NO_SPAN; s = hf->spans[s].next) {
            if (hf->spans[s].area == 0)
                continue;
            uint32_t n = hf->spans[s].next;
            int top = n == OP_NO_SPAN ? 65535 : hf->spans[n].smin;
            int h = top - hf->spans[s].smax;
            sp[k++] = (op_test_span){hf->spans[s].smax, h < 0 ? 0 : h, hf->spans[s].area};
            counts[c]++;
        }
    op_chf *f = op_test_field(a, hf->width, hf->depth, counts, sp, wh, wc);
    free(counts);
    free(sp);
    return f;
}

static void assert_same_field(const op_chf *got, const op_chf *want)
{
    cr_assert_eq(got->span_count, want->span_count);
    for (int c = 0; c <= got->width * got->depth; c++)
        cr_assert_eq(got->cells[c], want->cells[c], "cells[%d]", c);
    for (uint32_t s = 0; s < got->span_count; s++) {
        cr_assert_eq(got->y[s], want->y[s], "y of span %u", s);
        cr_assert_eq(got->h[s], want->h[s], "h of span %u", s);
        cr_assert_eq(got->areas[s], want->areas[s], "area of span %u", s);
        for (int d = 0; d < 4; d++)
            cr_assert_eq(got->links[s][d], want->links[s][d], "link %d of span %u: %u != %u", d, s,
                         got->links[s][d], want->links[s][d]);
    }
}

static void assert_links_mutual_and_adjacent(const op_chf *chf)
{
    for (int z = 0; z < chf->depth; z++)
        for (int x = 0; x < chf->width; x++) {
            int c = x + z * chf->width;
            for (uint32_t a = chf->cells[c]; a < chf->cells[c + 1]; a++)
                for (int d = 0; d < 4; d++) {
                    uint32_t b = chf->links[a][d];
                    if (b == OP_NO_LINK)
                        continue;
                    int nc = (x + op_dir_dx(d)) + (z + op_dir_dz(d)) * chf->width;
                    cr_assert(b >= chf->cells[nc] && b < chf->cells[nc + 1],
                              "span %u dir %d links outside the neighbour cell", a, d);
                    cr_assert_eq(chf->links[b][(d + 2) & 3], a, "span %u dir %d not mutual", a, d);
                }
        }
}

static op_chf build(test_hf *t, op_arena *a, int wh, int wc)
{
    op_chf chf;
    op_err e;
    op_status st = op_chf_build(&t->hf, wh, wc, a, &chf, &e);
    cr_assert_eq(st, OP_OK, "%s", e.msg);
    return chf;
}

/* ---- random heightfields against the fixture ---- */

Test(compact, links_equal_the_fixture_on_random_heightfields)
{
    static test_hf t;
    int one_way_seen = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        op_test_rng rng = {seed * 7919};
        int w = op_test_rand_int(&rng, 1, 14), d = op_test_rand_int(&rng, 1, 14);
        int wh = op_test_rand_int(&rng, 1, 6), wc = op_test_rand_int(&rng, 0, 6);
        hf_random(&t, &rng, w, d, op_test_rand_int(&rng, 1, 4));
        op_arena *a = op_arena_create(0);
        op_chf chf = build(&t, a, wh, wc);
        op_chf *want = fixture_of(a, &t.hf, wh, wc);
        assert_same_field(&chf, want);
        assert_links_mutual_and_adjacent(&chf);
        cr_assert_null(chf.dist);
        cr_assert_eq(chf.width, w);
        cr_assert_eq(chf.walkable_height, wh);
        cr_assert_eq(chf.walkable_climb, wc);
        /* Count one-way links the rule dropped, so the test is known to exercise them. */
        for (uint32_t s = 0; s < chf.span_count; s++)
            for (int dd = 0; dd < 4; dd++) {
                int x = 0, z = 0, c = 0;
                while (!(s >= chf.cells[c] && s < chf.cells[c + 1]))
                    c++;
                x = c % w, z = c / w;
                int nx = x + op_dir_dx(dd), nz = z + op_dir_dz(dd);
                if (nx < 0 || nz < 0 || nx >= w || nz >= d || chf.links[s][dd] != OP_NO_LINK)
                    continue;
                int nc = nx + nz * w;
                for (uint32_t b = chf.cells[nc]; b < chf.cells[nc + 1]; b++) {
                    int top = chf.y[s] + chf.h[s] < chf.y[b] + chf.h[b] ? chf.y[s] + chf.h[s]
                                                                        : chf.y[b] + chf.h[b];
                    int bot = chf.y[s] > chf.y[b] ? chf.y[s] : chf.y[b];
                    if (top - bot >= wh && abs(chf.y[s] - chf.y[b]) <= wc)
                        one_way_seen++;
                }
            }
        op_arena_destroy(a);
    }
    cr_assert_gt(one_way_seen, 50, "random fields exercise dropped one-way links (%d)",
                 one_way_seen);
}

/* t's columns laid out as a tile's first commit leaves them (heightfield.c): slots in
 * column order, each column's spans bottom up, col_start recording where each starts, so
 * that op_chf_build takes its flat path (op__hf_flat). */
static void hf_flatten(const test_hf *t, test_hf *f, uint32_t *col_start)
{
    int ncells = t->hf.width * t->hf.depth;
    hf_begin(f, t->hf.width, t->hf.depth);
    uint32_t k = 0;
    for (int c = 0; c < ncells; c++) {
        col_start[c] = k;
        for (uint32_t s = t->heads[c]; s != OP_NO_SPAN; s = t->spans[s].next, k++) {
            f->spans[k] = t->spans[s];
            f->spans[k].next = t->spans[s].next == OP_NO_SPAN ? OP_NO_SPAN : k + 1;
        }
        f->heads[c] = col_start[c] < k ? col_start[c] : OP_NO_SPAN;
    }
    col_start[ncells] = k;
    f->hf.span_count = k;
    f->hf.col_start = col_start;
}

/* The flat path (spans read by index, links made in the same pass) against the fixture
 * and the linked path, on random fields and on fields of one column template copied with
 * changes (same floors next door: link_pair's mutual shortcut, rising columns). */
Test(compact, flat_heightfields_equal_the_fixture_and_the_linked_path)
{
    static test_hf t, f;
    static uint32_t col_start[64 * 64 + 1];
    long multi = 0, ones_x = 0, ones_z = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        op_test_rng rng = {seed * 15485863};
        int w = op_test_rand_int(&rng, 1, 14), d = op_test_rand_int(&rng, 1, 14);
        int wh = op_test_rand_int(&rng, 1, 6), wc = op_test_rand_int(&rng, 0, 6);
        hf_random(&t, &rng, w, d, op_test_rand_int(&rng, 1, 4));
        if (seed % 2 == 0) { /* every column column 0's spans, some tops moved by a row */
            col_span tmpl[8];
            int n = 0;
            for (uint32_t s = t.heads[0]; s != OP_NO_SPAN; s = t.spans[s].next, n++)
                tmpl[n] = (col_span){t.spans[s].smin, t.spans[s].smax, t.spans[s].area};
            hf_begin(&t, w, d);
            for (int c = 0; c < w * d; c++) {
                col_span cs[8];
                uint32_t slots[8];
                for (int i = 0; i < n; i++) {
                    cs[i] = tmpl[i];
                    if (op_test_rand_int(&rng, 0, 5) == 0 && cs[i].smax < 65535 &&
                        (i + 1 == n || cs[i].smax + 1 < tmpl[i + 1].smin))
                        cs[i].smax++;
                    slots[i] = (uint32_t)(8 * c + i);
                }
                hf_column_at(&t, c % w, c / w, cs, n, slots);
            }
        }
        hf_flatten(&t, &f, col_start);
        op_arena *a = op_arena_create(0);
        op_chf chf = build(&f, a, wh, wc);
        assert_same_field(&chf, fixture_of(a, &t.hf, wh, wc));
        assert_links_mutual_and_adjacent(&chf);
        f.hf.col_start = NULL; /* the linked path on the same spans */
        op_chf linked = build(&f, a, wh, wc);
        assert_same_field(&chf, &linked);
        for (int c = 0; c < w * d; c++) {
            int one = chf.cells[c + 1] - chf.cells[c] == 1;
            multi += chf.cells[c + 1] - chf.cells[c] > 1;
            /* one-span cells beside one-span cells: the flat path's values in locals */
            if (one && c % w > 0 && chf.cells[c] - chf.cells[c - 1] == 1)
                ones_x++;
            if (one && c >= w && chf.cells[c - w + 1] - chf.cells[c - w] == 1)
                ones_z++;
        }
        op_arena_destroy(a);
    }
    cr_assert_gt(multi, 1000, "only %ld cells of several spans", multi);
    cr_assert_gt(ones_x, 500, "only %ld pairs of one-span cells along x", ones_x);
    cr_assert_gt(ones_z, 500, "only %ld pairs of one-span cells along z", ones_z);
}

/* Stacked floors: every column a copy of one template of solid spans, some exact (the
 * same floors next door, linked floor to floor), some with a slab top or bottom moved,
 * an area-0 slab between, a slab missing, or one more on top; against the fixture. */
Test(compact, links_equal_the_fixture_on_stacked_floors)
{
    static test_hf t;
    int same = 0; /* pairs of neighbour columns with the same floors, 2 or more */
    for (uint64_t seed = 1; seed <= 200; seed++) {
        op_test_rng rng = {seed * 104729};
        int w = op_test_rand_int(&rng, 2, 9), d = op_test_rand_int(&rng, 2, 9);
        int wh = op_test_rand_int(&rng, 1, 6), wc = op_test_rand_int(&rng, 0, 6);
        int n = op_test_rand_int(&rng, 2, 6), cur = op_test_rand_int(&rng, 0, 3);
        col_span tpl[7];
        for (int i = 0; i < n; i++) {
            int smax = cur + op_test_rand_int(&rng, 1, 4);
            tpl[i] = (col_span){cur, smax, op_test_rand_int(&rng, 1, 3)};
            cur = smax + op_test_rand_int(&rng, 1, wh + 3);
        }
        hf_begin(&t, w, d);
        for (int c = 0; c < w * d; c++) {
            col_span col[8];
            int m = n;
            memcpy(col, tpl, sizeof tpl);
            int r = op_test_rand_int(&rng, 0, 9), k = op_test_rand_int(&rng, 0, n - 1);
            if (r == 6 && col[k].smax - col[k].smin > 1) /* a slab top moved down */
                col[k].smax--;
            else if (r == 7 && k > 0 && col[k].smin - 1 > col[k - 1].smax) /* bottom moved */
                col[k].smin--;
            else if (r == 8) /* an area-0 slab: no span, but it still caps the one below */
                col[k].area = 0;
            else if (r == 9 && k + 1 < n) /* one slab missing */
                memmove(&col[k], &col[k + 1], (size_t)(--m - k) * sizeof *col);
            if (op_test_rand_int(&rng, 0, 9) == 0) /* one more slab on top */
                col[m++] = (col_span){cur, cur + 1, 1};
            hf_column(&t, c % w, c / w, col, m);
        }
        op_arena *a = op_arena_create(0);
        op_chf chf = build(&t, a, wh, wc);
        assert_same_field(&chf, fixture_of(a, &t.hf, wh, wc));
        assert_links_mutual_and_adjacent(&chf);
        for (int c = 0; c + 1 < w * d; c++) {
            uint32_t a0 = chf.cells[c], a1 = chf.cells[c + 1], b1 = chf.cells[c + 2];
            int eq = a1 - a0 >= 2 && b1 - a1 == a1 - a0;
            for (uint32_t i = 0; eq && i < a1 - a0; i++)
                eq = chf.y[a0 + i] == chf.y[a1 + i];
            same += eq && (c + 1) % w != 0;
        }
        op_arena_destroy(a);
    }
    cr_assert_gt(same, 500, "only %d neighbour columns with the same floors", same);
    /* Hand-made columns (solids out of order, an area-0 slab between), the same floors
     * next door: floors 6, 5, 14 with openings [6, 8), [5, 12), [14, sky). The span at 5
     * reaches the other column's span at 6 first, so floor-to-floor is not the rule. */
    const col_span odd[4] = {{0, 6, 1}, {8, 10, 0}, {1, 5, 1}, {12, 14, 1}};
    hf_begin(&t, 2, 1);
    hf_column(&t, 0, 0, odd, 4);
    hf_column(&t, 1, 0, odd, 4);
    op_arena *a = op_arena_create(0);
    op_chf chf = build(&t, a, 2, 1);
    assert_same_field(&chf, fixture_of(a, &t.hf, 2, 1));
    /* Rising floors 6, 10, but the opening over 6 reaches 20 (an area-0 solid listed
     * before the one at 10): the span at 10 reaches the other column's span at 6 first. */
    const col_span late[3] = {{0, 6, 1}, {20, 22, 0}, {8, 10, 1}};
    hf_begin(&t, 2, 1);
    hf_column(&t, 0, 0, late, 3);
    hf_column(&t, 1, 0, late, 3);
    chf = build(&t, a, 2, 4);
    assert_same_field(&chf, fixture_of(a, &t.hf, 2, 4));
    op_arena_destroy(a);
}

Test(compact, overlapping_hand_made_columns_follow_the_rule)
{
    /* Columns whose spans overlap or go down (not made by §3): clearance clamps to 0 and the
     * link is the first qualifying span in column order, as the fixture does. */
    static test_hf t;
    for (uint64_t seed = 1; seed <= 100; seed++) {
        op_test_rng rng = {seed * 104729};
        hf_random(&t, &rng, 8, 8, 4);
        for (uint32_t s = 0; s < t.hf.span_count; s++) {
            op_hf_span *sp = &t.spans[s];
            if (sp->smin >= 20 && sp->smin < 65000 && op_test_rand_int(&rng, 0, 2) == 0) {
                sp->smin = (uint16_t)(sp->smin - 20);
                sp->smax = (uint16_t)(sp->smin + op_test_rand_int(&rng, 1, 4));
            }
        }
        op_arena *a = op_arena_create(0);
        op_chf chf = build(&t, a, 2, 6);
        assert_same_field(&chf, fixture_of(a, &t.hf, 2, 6));
        op_arena_destroy(a);
    }
}

/* ---- hand-made cases from the rules ---- */

Test(compact, one_way_link_is_dropped)
{
    /* Cell A (0,0): floor 8, open to the sky. Cell B (1,0): floors 6 (up to 10) and 11.
     * A's lowest qualifying span in B is 6 (overlap min(inf, 10) - 8 = 2 >= 2, |6-8| <= 4);
     * B's floor 11 also qualifies for A, but A links to 6: 11 -> A is one-way, dropped. */
    static test_hf t;
    hf_begin(&t, 2, 1);
    hf_column(&t, 0, 0, (col_span[]){{0, 8, 63}}, 1);
    hf_column(&t, 1, 0, (col_span[]){{0, 6, 63}, {10, 11, 63}}, 2);
    op_arena *a = op_arena_create(0);
    op_chf chf = build(&t, a, 2, 4);
    cr_assert_eq(chf.span_count, 3);
    cr_assert_eq(chf.links[0][2], 1); /* A -> B's floor 6 */
    cr_assert_eq(chf.links[1][0], 0); /* and back */
    cr_assert_eq(chf.links[2][0], OP_NO_LINK);
    cr_assert_eq(chf.h[1], 4);
    cr_assert_eq(chf.h[2], 65535 - 11);
    op_arena_destroy(a);
}

Test(compact, area_zero_solid_span_makes_no_span_but_caps_clearance)
{
    static test_hf t;
    hf_begin(&t, 1, 1);
    hf_column(&t, 0, 0, (col_span[]){{0, 5, 7}, {12, 14, 0}, {20, 22, 9}}, 3);
    op_arena *a = op_arena_create(0);
    op_chf chf = build(&t, a, 1, 1);
    cr_assert_eq(chf.span_count, 2);
    cr_assert_eq(chf.y[0], 5);
    cr_assert_eq(chf.h[0], 7); /* up to the area-0 span's smin */
    cr_assert_eq(chf.areas[0], 7);
    cr_assert_eq(chf.y[1], 22);
    cr_assert_eq(chf.h[1], 65535 - 22);
    cr_assert_eq(chf.areas[1], 9);
    op_arena_destroy(a);
}

Test(compact, sky_row_and_overlapping_spans_clamp)
{
    static test_hf t;
    hf_begin(&t, 3, 1);
    hf_column(&t, 0, 0, (col_span[]){{65000, 65535, 1}}, 1); /* floor at the sky: h = 0 */
    /* Malformed column (next smin below smax): clearance clamps to 0. */
    hf_column(&t, 1, 0, (col_span[]){{0, 10, 1}, {5, 12, 1}}, 2);
    op_arena *a = op_arena_create(0);
    op_chf chf = build(&t, a, 1, 0);
    cr_assert_eq(chf.span_count, 3);
    cr_assert_eq(chf.h[0], 0);
    cr_assert_eq(chf.h[1], 0);
    cr_assert_eq(chf.h[2], 65535 - 12);
    for (int d = 0; d < 4; d++)
        cr_assert_eq(chf.links[0][d], OP_NO_LINK);
    op_arena_destroy(a);
}

Test(compact, climb_and_clearance_limits_are_inclusive)
{
    /* Row of cells: floor 10 (clearance 6: [10,16)), then neighbours that probe each limit. */
    static test_hf t;
    hf_begin(&t, 2, 5);
    const int wh = 4, wc = 2;
    /* z = 0: |dy| = climb links. z = 1: climb + 1 does not. */
    hf_column(&t, 0, 0, (col_span[]){{0, 10, 1}}, 1);
    hf_column(&t, 1, 0, (col_span[]){{0, 12, 1}}, 1);
    hf_column(&t, 0, 1, (col_span[]){{0, 20, 1}}, 1);
    hf_column(&t, 1, 1, (col_span[]){{0, 23, 1}}, 1);
    /* z = 2: overlap exactly wh links ([10,14) vs [10, inf)); z = 3: wh - 1 does not. */
    hf_column(&t, 0, 2, (col_span[]){{0, 30, 1}, {34, 40, 1}}, 2);
    hf_column(&t, 1, 2, (col_span[]){{0, 30, 1}}, 1);
    hf_column(&t, 0, 3, (col_span[]){{0, 50, 1}, {53, 60, 1}}, 2);
    hf_column(&t, 1, 3, (col_span[]){{0, 50, 1}}, 1);
    op_arena *a = op_arena_create(0);
    op_chf chf = build(&t, a, wh, wc);
    /* spans: z0: 0 (x0), 1 (x1); z1: 2, 3; z2: 4, 5 (x0), 6 (x1); z3: 7, 8 (x0), 9 (x1) */
    cr_assert_eq(chf.span_count, 10);
    cr_assert_eq(chf.links[0][2], 1);
    cr_assert_eq(chf.links[2][2], OP_NO_LINK);
    cr_assert_eq(chf.links[4][2], 6);
    cr_assert_eq(chf.links[7][2], OP_NO_LINK);
    cr_assert_eq(chf.links[5][2], OP_NO_LINK); /* floor 40 vs 30: climb */
    /* z links between rows: floors 10/20 and 12/23 differ by more than climb. */
    cr_assert_eq(chf.links[0][1], OP_NO_LINK);
    /* grid edges never link */
    cr_assert_eq(chf.links[0][0], OP_NO_LINK);
    cr_assert_eq(chf.links[0][3], OP_NO_LINK);
    cr_assert_eq(chf.links[1][2], OP_NO_LINK);
    op_arena_destroy(a);
}

Test(compact, lowest_qualifying_span_wins)
{
    /* A: floor 9. B: floors 8 (up to 10) and 11, both within climb 2 of 9 with room 1
     * above 9: A links to 8 and 8 links back; 11's link to A is one-way and dropped. */
    static test_hf t;
    hf_begin(&t, 2, 1);
    hf_column(&t, 0, 0, (col_span[]){{0, 9, 1}}, 1);
    hf_column(&t, 1, 0, (col_span[]){{0, 8, 1}, {10, 11, 1}}, 2);
    op_arena *a = op_arena_create(0);
    op_chf chf = build(&t, a, 1, 2);
    cr_assert_eq(chf.links[0][2], 1);
    cr_assert_eq(chf.links[1][0], 0);
    cr_assert_eq(chf.links[2][0], OP_NO_LINK);
    op_arena_destroy(a);
}

Test(compact, cells_are_z_major_and_copy_the_frame)
{
    static test_hf t;
    hf_begin(&t, 3, 2);
    t.hf.origin[0] = -1.5;
    t.hf.origin[1] = 2.0;
    t.hf.origin[2] = 7.0;
    t.hf.rows = 300;
    hf_column(&t, 2, 0, (col_span[]){{0, 1, 1}, {5, 6, 2}}, 2);
    hf_column(&t, 0, 1, (col_span[]){{0, 3, 3}}, 1);
    hf_column(&t, 1, 1, (col_span[]){{0, 4, 4}}, 1);
    op_arena *a = op_arena_create(0);
    op_chf chf = build(&t, a, 1, 1);
    uint32_t want[7] = {0, 0, 0, 2, 3, 4, 4};
    for (int c = 0; c < 7; c++)
        cr_assert_eq(chf.cells[c], want[c], "cells[%d]", c);
    cr_assert_eq(chf.areas[0], 1);
    cr_assert_eq(chf.areas[1], 2);
    cr_assert_eq(chf.areas[2], 3);
    cr_assert_eq(chf.areas[3], 4);
    cr_assert_eq(chf.rows, 300);
    cr_assert_eq(chf.origin[0], -1.5);
    cr_assert_eq(chf.origin[1], 2.0);
    cr_assert_eq(chf.origin[2], 7.0);
    cr_assert_eq(chf.cs, 0.5);
    cr_assert_eq(chf.ch, 0.25);
    cr_assert_eq(chf.border, 0);
    op_arena_destroy(a);
}

Test(compact, empty_heightfield)
{
    static test_hf t;
    hf_begin(&t, 4, 4);
    op_arena *a = op_arena_create(0);
    op_chf chf = build(&t, a, 2, 1);
    cr_assert_eq(chf.span_count, 0);
    cr_assert_eq(chf.cells[16], 0);
    op_err e;
    cr_assert_eq(op_distance_build(&chf, a, a, &e), OP_OK);
    cr_assert_eq(op_erode(&chf, 3, a, &e), OP_OK);
    op_arena_destroy(a);
}

/* ---- refusals ---- */

Test(compact, bad_arguments_name_the_value)
{
    static test_hf t;
    hf_begin(&t, 2, 2);
    hf_column(&t, 0, 0, (col_span[]){{0, 1, 1}}, 1);
    op_arena *a = op_arena_create(0);
    op_chf chf;
    op_err e;
    cr_assert_eq(op_chf_build(&t.hf, 0, 1, a, &chf, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "walkable_height = 0"), "%s", e.msg);
    cr_assert_eq(op_chf_build(&t.hf, 1, -1, a, &chf, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "walkable_climb = -1"), "%s", e.msg);
    /* A chain that loops is refused, not followed forever. */
    t.spans[0].next = 0;
    cr_assert_eq(op_chf_build(&t.hf, 1, 1, a, &chf, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "column (0, 0)"), "%s", e.msg);
    t.spans[0].next = 77; /* out of range */
    cr_assert_eq(op_chf_build(&t.hf, 1, 1, a, &chf, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "span 77"), "%s", e.msg);
    cr_assert_eq(chf.span_count, 0, "a refused build leaves an empty result");
    op_arena_destroy(a);
}

Test(compact, allocation_failure_returns_enomem)
{
    static test_hf t;
    op_test_rng rng = {99};
    hf_random(&t, &rng, 12, 12, 3);
    int failures = 0;
    for (long k = 0;; k++) {
        op_arena *a = op_arena_create(4096);
        op_arena_fail_after(a, k);
        op_chf chf;
        op_err e;
        op_status st = op_chf_build(&t.hf, 2, 2, a, &chf, &e);
        op_arena_destroy(a);
        if (st == OP_OK)
            break;
        cr_assert_eq(st, OP_ENOMEM, "%s", e.msg);
        cr_assert(strstr(e.msg, "bytes"), "%s", e.msg);
        failures++;
    }
    cr_assert_gt(failures, 0);
}

/* ---- canonical dump ---- */

typedef struct text_sink {
    char buf[4096];
    size_t len;
} text_sink;

static int text_write(void *ctx, const char *data, size_t len)
{
    text_sink *t = ctx;
    cr_assert(t->len + len < sizeof t->buf);
    memcpy(t->buf + t->len, data, len);
    t->len += len;
    t->buf[t->len] = 0;
    return 0;
}

Test(compact, dump_is_one_line_per_span)
{
    static test_hf t;
    hf_begin(&t, 2, 1);
    hf_column(&t, 0, 0, (col_span[]){{0, 3, 63}}, 1);
    hf_column(&t, 1, 0, (col_span[]){{0, 4, 5}, {20, 21, 63}}, 2);
    op_arena *a = op_arena_create(0);
    op_chf chf = build(&t, a, 2, 1);
    text_sink s = {{0}, 0};
    cr_assert_eq(op_chf_dump(&chf, text_write, &s), 0);
    cr_assert_str_eq(s.buf, "0 0 3 65532 63 -1 -1 1 -1 -1\n"
                            "1 0 4 16 5 0 -1 -1 -1 -1\n"
                            "1 0 21 65514 63 -1 -1 -1 -1 -1\n");
    op_err e;
    cr_assert_eq(op_distance_build(&chf, a, a, &e), OP_OK, "%s", e.msg);
    s.len = 0;
    cr_assert_eq(op_chf_dump(&chf, text_write, &s), 0);
    cr_assert_str_eq(s.buf, "0 0 3 65532 63 -1 -1 1 -1 0\n"
                            "1 0 4 16 5 0 -1 -1 -1 0\n"
                            "1 0 21 65514 63 -1 -1 -1 -1 0\n");
    op_arena_destroy(a);
}

static int failing_write(void *ctx, const char *data, size_t len)
{
    (void)data;
    (void)len;
    int *calls = ctx;
    return ++*calls == 2 ? 7 : 0;
}

Test(compact, dump_stops_when_the_sink_fails)
{
    static test_hf t;
    op_test_rng rng = {5};
    hf_random(&t, &rng, 30, 30, 4);
    op_arena *a = op_arena_create(0);
    op_chf chf = build(&t, a, 1, 3);
    int calls = 0;
    cr_assert_eq(op_chf_dump(&chf, failing_write, &calls), 7);
    cr_assert_eq(calls, 2);
    op_arena_destroy(a);
}

/* ---- hash-matrix scenarios ---- */

static uint64_t scenario_hash(uint64_t seed, int size, int floors, int wh, int wc, int radius,
                              int with_volumes)
{
    static test_hf t;
    op_test_rng rng = {seed};
    hf_random(&t, &rng, size, size, floors);
    t.hf.origin[0] = -3.0;
    t.hf.origin[1] = 1.0;
    t.hf.origin[2] = 2.0;
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_chf chf;
    op_err e;
    cr_assert_eq(op_chf_build(&t.hf, wh, wc, out, &chf, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_erode(&chf, radius, scratch, &e), OP_OK, "%s", e.msg);
    if (with_volumes) {
        op_volume v[3];
        memset(v, 0, sizeof v);
        v[0].kind = OP_VOLUME_BOX, v[0].area = 5;
        v[0].bmin[0] = -1.0, v[0].bmin[1] = 0.0, v[0].bmin[2] = 3.0;
        v[0].bmax[0] = 6.0, v[0].bmax[1] = 4.0, v[0].bmax[2] = 9.0;
        v[1].kind = OP_VOLUME_CYLINDER, v[1].area = 9;
        v[1].bmin[0] = 4.0, v[1].bmin[1] = 1.0, v[1].bmin[2] = 8.0;
        v[1].bmax[0] = 3.0, v[1].bmax[1] = 10.0;
        v[2].kind = OP_VOLUME_PRISM, v[2].area = 0, v[2].npts = 3;
        v[2].bmin[1] = -100.0, v[2].bmax[1] = 100.0;
        double pts[6] = {0.0, 10.0, 8.0, 10.0, 4.0, 16.0};
        memcpy(v[2].pts, pts, sizeof pts);
        cr_assert_eq(op_volumes_apply(&chf, v, 3, OP_VOLUME_AREA, &e), OP_OK, "%s", e.msg);
    }
    cr_assert_eq(op_distance_build(&chf, out, scratch, &e), OP_OK, "%s", e.msg);
    uint64_t h = OP_HASH_INIT;
    cr_assert_eq(op_chf_dump(&chf, op_hash_sink_write, &h), 0);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    return h;
}

static void scenario(const char *name, uint64_t seed, int size, int floors, int wh, int wc,
                     int radius, int with_volumes)
{
    uint64_t h1 = scenario_hash(seed, size, floors, wh, wc, radius, with_volumes);
    uint64_t h2 = scenario_hash(seed, size, floors, wh, wc, radius, with_volumes);
    cr_assert_eq(h1, h2, "%s: same input, different dump", name);
    op_test_golden(name, h1);
}

Test(compact, hash_matrix)
{
    scenario("build3d/spans-compact-single", 11, 40, 1, 2, 2, 0, 0);
    scenario("build3d/spans-compact-floors", 12, 40, 4, 3, 4, 0, 0);
    scenario("build3d/spans-compact-eroded", 13, 48, 3, 2, 3, 2, 0);
    scenario("build3d/spans-compact-volumes", 14, 48, 3, 2, 3, 1, 1);
}
