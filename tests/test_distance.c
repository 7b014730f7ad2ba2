/*
 * Distance field (build3d-spans.md §8): equals the brute-force Dijkstra of
 * tests/support/op_fields.c on many seeded random fields, and hand-computed values on
 * hand-made ones (rings of a block, a diagonal-only step, area-0 spans).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/spans.h"
#include "op_fields.h"
#include "op_test.h"

static void build_dist(op_chf *chf, op_arena *a)
{
    op_err e;
    cr_assert_eq(op_distance_build(chf, a, a, &e), OP_OK, "%s", e.msg);
    cr_assert_not_null(chf->dist);
}

static const op_distance_method methods[3] = {OP_DISTANCE_SWEEPS, OP_DISTANCE_DIJKSTRA,
                                              OP_DISTANCE_BACKWARD_ONLY};

/* Every method against want (the default one already checked in chf->dist). */
static void assert_methods_equal(const op_chf *chf, const uint32_t *want, op_arena *a,
                                 const char *what)
{
    uint32_t *got = malloc((chf->span_count + 1) * sizeof *got);
    for (int m = 0; m < 3; m++) {
        op_err e;
        cr_assert_eq(op_distance_compute_method(chf, got, methods[m], a, &e), OP_OK, "%s", e.msg);
        for (uint32_t s = 0; s < chf->span_count; s++)
            cr_assert_eq(got[s], want[s], "%s: method %d span %u: %u != %u", what, m, s, got[s],
                         want[s]);
    }
    free(got);
}

static void assert_equals_brute(const op_chf *chf, const char *what)
{
    uint32_t *want = malloc((chf->span_count + 1) * sizeof *want);
    op_test_brute_distance(chf, want);
    for (uint32_t s = 0; s < chf->span_count; s++)
        cr_assert_eq(chf->dist[s], want[s], "%s: span %u: %u != brute %u", what, s, chf->dist[s],
                     want[s]);
    op_arena *a = op_arena_create(0);
    assert_methods_equal(chf, want, a, what);
    op_arena_destroy(a);
    free(want);
}

Test(distance, equals_brute_force_on_random_fields)
{
    int nonzero = 0;
    for (uint64_t seed = 1; seed <= 600; seed++) {
        op_test_rng rng = {seed * 1000003};
        int w = op_test_rand_int(&rng, 1, 22), d = op_test_rand_int(&rng, 1, 22);
        int floors = op_test_rand_int(&rng, 1, 4), nareas = op_test_rand_int(&rng, 1, 3);
        op_arena *a = op_arena_create(0);
        op_chf *chf = op_test_field_random(a, &rng, w, d, floors, nareas);
        build_dist(chf, a);
        char what[64];
        snprintf(what, sizeof what, "seed %llu", (unsigned long long)seed);
        assert_equals_brute(chf, what);
        for (uint32_t s = 0; s < chf->span_count; s++)
            nonzero += chf->dist[s] > 2;
        op_arena_destroy(a);
    }
    cr_assert_gt(nonzero, 1000, "random fields have deep interiors (%d spans beyond 2)", nonzero);
}

Test(distance, equals_brute_force_on_open_random_fields)
{
    /* Few holes and one area: large interiors and long diagonal paths. */
    for (uint64_t seed = 1; seed <= 40; seed++) {
        op_test_rng rng = {seed * 31337};
        int w = op_test_rand_int(&rng, 10, 40), d = op_test_rand_int(&rng, 10, 40);
        op_arena *a = op_arena_create(0);
        op_chf *chf = op_test_field_random(a, &rng, w, d, 1, 1);
        build_dist(chf, a);
        assert_equals_brute(chf, "open");
        op_arena_destroy(a);
    }
}

/* Bounded distance (erosion's): below the limit exactly the brute-force value, from the
 * limit on some value >= limit, for every limit from 0 to past the deepest span. */
Test(distance, bounded_distance_is_exact_below_its_limit)
{
    int exact_checked = 0, beyond_checked = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        op_test_rng rng = {seed * 7919};
        int w = op_test_rand_int(&rng, 1, 30), d = op_test_rand_int(&rng, 1, 30);
        int floors = op_test_rand_int(&rng, 1, 3), nareas = op_test_rand_int(&rng, 1, 2);
        op_arena *a = op_arena_create(0);
        op_chf *chf = op_test_field_random(a, &rng, w, d, floors, nareas);
        uint32_t *want = malloc((chf->span_count + 1) * sizeof *want);
        uint32_t *got = malloc((chf->span_count + 1) * sizeof *got);
        op_test_brute_distance(chf, want);
        uint32_t deepest = 0;
        for (uint32_t s = 0; s < chf->span_count; s++)
            deepest = want[s] > deepest ? want[s] : deepest;
        for (uint32_t limit = 0; limit <= deepest + 2; limit++) {
            op_err e;
            size_t used = op_arena_used(a);
            cr_assert_eq(op_distance_compute_below(chf, got, limit, a, &e), OP_OK, "%s", e.msg);
            cr_assert_eq(op_arena_used(a), used, "scratch is released");
            for (uint32_t s = 0; s < chf->span_count; s++) {
                if (want[s] < limit) {
                    cr_assert_eq(got[s], want[s], "seed %llu limit %u span %u: %u != brute %u",
                                 (unsigned long long)seed, limit, s, got[s], want[s]);
                    exact_checked++;
                } else {
                    cr_assert_geq(got[s], limit, "seed %llu limit %u span %u: %u < limit",
                                  (unsigned long long)seed, limit, s, got[s]);
                    beyond_checked++;
                }
            }
        }
        free(want);
        free(got);
        op_arena_destroy(a);
    }
    cr_assert_gt(exact_checked, 10000);
    cr_assert_gt(beyond_checked, 10000);
}

static op_chf *block(op_arena *a, int w, int d, const char *holes)
{
    char **lines = calloc((size_t)d, sizeof *lines);
    for (int z = 0; z < d; z++) {
        lines[z] = malloc((size_t)w + 1);
        memset(lines[z], '#', (size_t)w);
        lines[z][w] = 0;
    }
    /* holes: "x,z x,z ..." cells without a span */
    for (const char *p = holes; p && *p;) {
        int x, z, n;
        if (sscanf(p, "%d,%d%n", &x, &z, &n) != 2)
            break;
        lines[z][x] = '.';
        p += n;
        while (*p == ' ')
            p++;
    }
    op_chf *chf = op_test_field_from_text(a, (const char *const *)lines, d);
    for (int z = 0; z < d; z++)
        free(lines[z]);
    free(lines);
    return chf;
}

/* Span of cell (x, z) in a single-floor field. */
static uint32_t span_at(const op_chf *chf, int x, int z)
{
    int c = x + z * chf->width;
    cr_assert_eq(chf->cells[c + 1] - chf->cells[c], 1, "cell (%d, %d) has one span", x, z);
    return chf->cells[c];
}

static int imin(int a, int b)
{
    return a < b ? a : b;
}

Test(distance, methods_agree_on_large_random_fields)
{
    /* Too large for the brute force: the three methods check each other, and the plain
     * Dijkstra has been checked against the brute force above. */
    for (uint64_t seed = 1; seed <= 6; seed++) {
        op_test_rng rng = {seed * 7777};
        op_arena *a = op_arena_create(0);
        op_chf *chf = op_test_field_random(a, &rng, 150, 120, (int)(seed % 4) + 1, 2);
        uint32_t *want = malloc((chf->span_count + 1) * sizeof *want);
        op_err e;
        cr_assert_eq(op_distance_compute_method(chf, want, OP_DISTANCE_DIJKSTRA, a, &e), OP_OK);
        assert_methods_equal(chf, want, a, "large");
        free(want);
        op_arena_destroy(a);
    }
}

Test(distance, block_rings_cost_two_per_step)
{
    /* In a full w x d block only the outer ring is boundary, and the straight path to it
     * is shortest: distance = 2 * (ring index). */
    int sizes[][2] = {{1, 1}, {2, 7}, {5, 5}, {9, 9}, {12, 7}, {300, 300}};
    for (int i = 0; i < 6; i++) {
        int w = sizes[i][0], d = sizes[i][1];
        op_arena *a = op_arena_create(0);
        op_chf *chf = block(a, w, d, NULL);
        build_dist(chf, a);
        for (int z = 0; z < d; z++)
            for (int x = 0; x < w; x++) {
                uint32_t want = 2u * (uint32_t)imin(imin(x, z), imin(w - 1 - x, d - 1 - z));
                cr_assert_eq(chf->dist[span_at(chf, x, z)], want, "%dx%d (%d, %d)", w, d, x, z);
            }
        op_arena_destroy(a);
    }
}

Test(distance, a_diagonal_step_costs_three)
{
    /* 5x5 block without (1,0) and (0,1): (1,1) loses two links and is boundary. (2,2)'s
     * orthogonal neighbours are all interior at distance 2, so (2,2) = 0 + 3 by the
     * diagonal, less than 2 + 2. */
    op_arena *a = op_arena_create(0);
    op_chf *chf = block(a, 5, 5, "1,0 0,1");
    build_dist(chf, a);
    cr_assert_eq(chf->dist[span_at(chf, 1, 1)], 0);
    cr_assert_eq(chf->dist[span_at(chf, 1, 2)], 2);
    cr_assert_eq(chf->dist[span_at(chf, 2, 1)], 2);
    cr_assert_eq(chf->dist[span_at(chf, 2, 2)], 3);
    cr_assert_eq(chf->dist[span_at(chf, 3, 3)], 2);
    op_arena_destroy(a);
}

/* A 9 x 9 floor at row 10 where the diagonal from S = (4,4) to the cell (5,5) reaches a
 * different span each way round, as the cells between hold different floors:
 *   M  = (4,5): floor 11;      S -> M (+z) -> (5,5) (+x) reaches the floor 12 (interior)
 *   M' = (5,4): floors 9, 13;  S -> M' (+x) -> (5,5) (+z) reaches the floor 8 (boundary:
 *                                 its -x and +x neighbours are out of climb or room)
 * So S is 3 only through the second way round (its orthogonal neighbours are interior).
 * transpose swaps x and z, which swaps which way round is the critical one. */
static op_chf *two_ways_field(op_arena *a, int transpose, uint32_t *s_span)
{
    int counts[81];
    op_test_span sp[90];
    int k = 0;
    for (int z = 0; z < 9; z++)
        for (int x = 0; x < 9; x++) {
            int cx = transpose ? z : x, cz = transpose ? x : z;
            int c = x + z * 9;
            counts[c] = 1;
            if (cx == 4 && cz == 4)
                *s_span = (uint32_t)k;
            if (cx == 4 && cz == 5) {
                sp[k++] = (op_test_span){11, 1000, 63};
            } else if (cx == 5 && cz == 4) {
                sp[k++] = (op_test_span){9, 3, 63};
                sp[k++] = (op_test_span){13, 1000, 63};
                counts[c] = 2;
            } else if (cx == 5 && cz == 5) {
                sp[k++] = (op_test_span){8, 3, 63};
                sp[k++] = (op_test_span){12, 1000, 63};
                counts[c] = 2;
            } else {
                sp[k++] = (op_test_span){10, 1000, 63};
            }
        }
    return op_test_field(a, 9, 9, counts, sp, 2, 2);
}

Test(distance, a_diagonal_counts_either_way_round)
{
    for (int t = 0; t < 2; t++) {
        op_arena *a = op_arena_create(0);
        uint32_t s;
        op_chf *chf = two_ways_field(a, t, &s);
        build_dist(chf, a);
        uint32_t *want = malloc((chf->span_count + 1) * sizeof *want);
        op_test_brute_distance(chf, want);
        cr_assert_eq(want[s], 3, "the field is built as intended (brute %u)", want[s]);
        free(want);
        assert_equals_brute(chf, t ? "two ways, transposed" : "two ways");
        op_arena_destroy(a);
    }
}

Test(distance, area_zero_spans_and_their_neighbours_are_boundary)
{
    const char *pic[] = {
        "#######", "#######", "#######", "###0###", "#######", "#######", "#######",
    };
    op_arena *a = op_arena_create(0);
    op_chf *chf = op_test_field_from_text(a, pic, 7);
    build_dist(chf, a);
    cr_assert_eq(chf->dist[span_at(chf, 3, 3)], 0);
    cr_assert_eq(chf->dist[span_at(chf, 2, 3)], 0); /* links to an area-0 span */
    cr_assert_eq(chf->dist[span_at(chf, 3, 4)], 0);
    cr_assert_eq(chf->dist[span_at(chf, 2, 2)], 2); /* next to (2,3) or (1,2) ... */
    cr_assert_eq(chf->dist[span_at(chf, 1, 1)], 2);
    /* Different walkable areas do not make a boundary. */
    const char *pic2[] = {"#####", "#1#2#", "#####", "#####", "#####"};
    op_chf *f2 = op_test_field_from_text(a, pic2, 5);
    build_dist(f2, a);
    cr_assert_eq(f2->dist[span_at(f2, 2, 2)], 4);
    op_arena_destroy(a);
}

Test(distance, allocation_failure_returns_enomem)
{
    op_test_rng rng = {3};
    op_arena *fa = op_arena_create(0);
    op_chf *chf = op_test_field_random(fa, &rng, 20, 20, 2, 2);
    for (int which = 0; which < 2; which++) {
        op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
        op_arena_fail_after(which ? scratch : out, 0);
        op_err e;
        cr_assert_eq(op_distance_build(chf, out, scratch, &e), OP_ENOMEM);
        cr_assert(strstr(e.msg, "distance") && strstr(e.msg, "bytes"), "%s", e.msg);
        cr_assert_null(chf->dist);
        cr_assert_eq(op_arena_used(out), 0, "a failed build releases what it took");
        op_arena_destroy(out);
        op_arena_destroy(scratch);
    }
    op_arena_destroy(fa);
}

Test(distance, allocation_failure_during_a_repair)
{
    /* Without the forward pass the repair runs (seeds, their sort keys, the bucket ring):
     * every allocation failure is reported and the eventual success is exact. */
    op_test_rng rng = {23};
    op_arena *fa = op_arena_create(0);
    op_chf *chf = op_test_field_random(fa, &rng, 30, 30, 2, 2);
    uint32_t *want = malloc((chf->span_count + 1) * sizeof *want);
    uint32_t *got = malloc((chf->span_count + 1) * sizeof *got);
    op_test_brute_distance(chf, want);
    int failures = 0;
    for (long k = 0;; k++) {
        op_arena *scratch = op_arena_create(0);
        op_arena_fail_after(scratch, k);
        op_err e;
        op_status st = op_distance_compute_method(chf, got, OP_DISTANCE_BACKWARD_ONLY, scratch, &e);
        cr_assert_eq(op_arena_used(scratch), 0, "scratch is released");
        op_arena_destroy(scratch);
        if (st == OP_OK)
            break;
        cr_assert_eq(st, OP_ENOMEM, "%s", e.msg);
        cr_assert(strstr(e.msg, "bytes"), "%s", e.msg);
        failures++;
    }
    cr_assert_geq(failures, 3, "seeds, keys and ring allocations all fail once (%d)", failures);
    for (uint32_t s = 0; s < chf->span_count; s++)
        cr_assert_eq(got[s], want[s], "span %u", s);
    free(want);
    free(got);
    op_arena_destroy(fa);
}

Test(distance, rebuild_is_identical_and_scratch_is_released)
{
    op_test_rng rng = {17};
    op_arena *a = op_arena_create(0), *scratch = op_arena_create(0);
    op_chf *chf = op_test_field_random(a, &rng, 30, 30, 3, 2);
    op_err e;
    cr_assert_eq(op_distance_build(chf, a, scratch, &e), OP_OK);
    uint32_t *first = chf->dist;
    cr_assert_eq(op_arena_used(scratch), 0);
    cr_assert_eq(op_distance_build(chf, a, scratch, &e), OP_OK);
    cr_assert_neq(first, chf->dist);
    cr_assert_eq(memcmp(first, chf->dist, chf->span_count * sizeof *first), 0);
    op_arena_destroy(a);
    op_arena_destroy(scratch);
}
