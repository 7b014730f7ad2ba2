/*
 * Layer regions (build3d-regions.md §4), layer assignment (build3d-polys.md §5) and the
 * layer-first partition: a hand-built spiral ramp, the shortcut against the general
 * merge loop, invariants and the naive implementation on random fields, the
 * hash-matrix scenario build3d/regions-layers, and layer seams (a ramp onto a deck over
 * the ground, by hand; generated multi-storey tiles against the naive reading).
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "onepath/build.h"
#include "onepath/levelgen.h"
#include "onepath/limits.h"
#include "../core/src/regions_internal.h"
#include "regions_oracle.h"

static op_arena *A;

static void setup(void)
{
    A = op_arena_create(0);
}

static void teardown(void)
{
    op_arena_destroy(A);
}

TestSuite(layers, .init = setup, .fini = teardown, .timeout = 60);

static void build_general(const op_chf *chf, int min_area, op_arena *out, op_regions *res)
{
    op_region_settings rs;
    op_region_settings_default(&rs);
    rs.partition = OP_PARTITION_LAYERS;
    rs.min_region_area = min_area;
    op_arena *scratch = op_arena_create(0);
    op_err e;
    cr_assert_eq(op__regions_build_layers_general(chf, &rs, out, scratch, res, &e), OP_OK, "%s",
                 e.msg);
    op_arena_destroy(scratch);
}

/*
 * A spiral ramp around a 4 x 4 square (the inner 2 x 2 cells are empty). The path
 * (0,0) (1,0) (2,0) (3,0) (3,1) (3,2) (3,3) (2,3) (1,3) (0,3) (0,2) (0,1) climbs one row
 * a cell (floor rows 0..11), then goes on over its own start: (0,0) at 12, (1,0) at 13,
 * (2,0) at 14. Columns (0,0), (1,0), (2,0) hold two floors. Walkable height 4, climb 2.
 *
 * Monotone (§3): row 0 has two sweeps, the lower (0..3,0) -> 1 and the upper
 * (0..2,0) -> 2; rows 1-2: (3,z) continues 1 and (0,z) continues 2 (each the only sweep
 * touching it); row 3 is one sweep touching 1 and 2 -> new region 3.
 * Layers (§4): 1 and 2 overlap; 1-3 are linked at (3,2)-(3,3), 2-3 at (0,2)-(0,3); 1
 * and 2 are not linked ((0,0) upper and lower are 12 rows apart). Pass 1: a = 1, b = 3
 * does not overlap 1 -> 3 merges into 1; a = 2: its neighbour is now 1, which overlaps
 * it. Pass 2 changes nothing. Numbering by first span: the lower start span (index 0) is
 * region 1 (10 spans), the upper start span (index 1) region 2 (5 spans).
 * Layer assignment: 1 -> layer 0; 2 shares columns with 1 (layer 0 taken), its only
 * neighbour is on layer 0 -> lowest free layer, 1.
 */
static op_chf *spiral(op_arena *a, int area_upper)
{
    enum { W = 4 };
    static const int path[][2] = {{0, 0}, {1, 0}, {2, 0}, {3, 0}, {3, 1}, {3, 2}, {3, 3}, {2, 3},
                                  {1, 3}, {0, 3}, {0, 2}, {0, 1}, {0, 0}, {1, 0}, {2, 0}};
    int counts[W * W] = {0};
    op_test_span spans[32];
    /* floors per cell in path order, then laid out cell by cell, bottom up */
    int floor_y[W * W][2], nfl[W * W] = {0};
    for (int i = 0; i < 15; i++) {
        int c = path[i][0] + path[i][1] * W;
        floor_y[c][nfl[c]++] = i;
    }
    int k = 0;
    for (int c = 0; c < W * W; c++) {
        counts[c] = nfl[c];
        for (int f = 0; f < nfl[c]; f++) {
            int top = f + 1 < nfl[c] ? floor_y[c][f + 1] - 2 : 200;
            spans[k++] =
                (op_test_span){floor_y[c][f], top - floor_y[c][f], f == 1 ? area_upper : 63};
        }
    }
    op_chf *chf = op_test_field(a, W, W, counts, spans, 4, 2);
    with_distance(a, chf);
    return chf;
}

Test(layers, spiral_ramp_by_hand)
{
    op_chf *chf = spiral(A, 63);
    cr_assert_eq(chf->span_count, 15);
    /* sanity of the hand-built field: the ramp is one linked chain */
    uint32_t ncomp;
    uint32_t *comp = walkable_components(chf, &ncomp);
    cr_assert_eq(ncomp, 1);
    free(comp);
    op_regions r;
    build_regions(chf, OP_PARTITION_LAYERS, 0, 0, A, &r);
    cr_assert_eq(r.region_count, 2);
    /* span order: cell (0,0) lower 0 upper 1, (1,0) 2 3, (2,0) 4 5, (3,0) 6, (0,1) 7,
     * (3,1) 8, (0,2) 9, (3,2) 10, (0,3) 11, (1,3) 12, (2,3) 13, (3,3) 14 */
    static const uint16_t want[] = {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1};
    for (uint32_t s = 0; s < 15; s++)
        cr_assert_eq(r.reg[s], want[s], "span %u: %u", s, r.reg[s]);
    check_partition(chf, &r, 0, 0, OP_PARTITION_LAYERS);
    check_layers(chf, &r);
    uint16_t layer[3];
    int nl;
    op_err e;
    cr_assert_eq(op_regions_assign_layers(chf, &r, A, layer, &nl, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(nl, 2);
    cr_assert_eq(layer[1], 0);
    cr_assert_eq(layer[2], 1);
    /* The watershed grows one region round the whole spiral (a region may cover a column
     * twice; §5.2 only merges). Monotone's three regions merge under amendment R2 only as
     * far as no merge joins two overlapping regions: 1 (lower start) merges into 3 (row
     * 3), which then overlaps 2, so the result is the layer partition's. The literal §5.2
     * merged all three into one region covering three columns twice. */
    build_regions(chf, OP_PARTITION_WATERSHED, 0, 400, A, &r);
    cr_assert_eq(r.region_count, 1);
    check_partition(chf, &r, 0, 400, OP_PARTITION_WATERSHED);
    build_regions(chf, OP_PARTITION_MONOTONE, 0, 400, A, &r);
    cr_assert_eq(r.region_count, 2);
    for (uint32_t s = 0; s < 15; s++)
        cr_assert_eq(r.reg[s], want[s], "monotone span %u: %u", s, r.reg[s]);
    check_partition(chf, &r, 0, 400, OP_PARTITION_MONOTONE);
    /* Islands (R1 of ../shared/spec/amendments.md): the ramp's two layers are each
     * other's only neighbour, one group of 15 spans; MinRegionArea 15 keeps both, 16
     * removes both (the literal §5.1 kept them at any MinRegionArea). */
    build_regions(chf, OP_PARTITION_LAYERS, 15, 0, A, &r);
    cr_assert_eq(r.region_count, 2);
    build_regions(chf, OP_PARTITION_LAYERS, 16, 0, A, &r);
    cr_assert_eq(r.region_count, 0);
}

/*
 * §4 "merge the larger id into the smaller one", on a 2 x 3 field (walkable height 4, climb 2):
 *   z = 2:  s5 (0,2) row 51   s6 (1,2) row 52
 *   z = 1:  s2 (0,1) row 49   s3 (1,1) row 46 (4 rows clear), s4 (1,1) row 54
 *   z = 0:  s0 (0,0) row 49   s1 (1,0) row 48
 * Links: s0-s1, s0-s2, s1-s3, s2-s5, s5-s6, s4-s6 (s2 is 3 rows from s3, 5 from s4).
 * Monotone: row 0 -> 1 {s0 s1}; row 1 has three sweeps, s2 and s3 both touching 1 -> 2 {s2},
 * 3 {s3}, s4 -> 4; row 2 is one sweep touching 2 and 4 -> 5 {s5 s6}. 3 and 4 overlap.
 * Pass 1: a = 1 takes 2, then (next a) 3 joins 1 (no overlap yet; 1 now overlaps 4), 4 takes 5.
 * Pass 2: 1 and 4 overlap: done. Layers {s0 s1 s2 s3}, {s4 s5 s6}. Merging the smaller id into
 * the larger keeps the union acting in the same pass under the larger id: it takes 3 and then
 * 5 before 4's turn, and s4 ends alone.
 */
Test(layers, merges_keep_the_smaller_id)
{
    int counts[6] = {1, 1, 1, 2, 1, 1};
    op_test_span spans[7] = {{49, 200, 63}, {48, 200, 63}, {49, 200, 63}, {46, 6, 63},
                             {54, 200, 63}, {51, 200, 63}, {52, 200, 63}};
    op_chf *chf = op_test_field(A, 2, 3, counts, spans, 4, 2);
    with_distance(A, chf);
    op_regions r, nv;
    build_regions(chf, OP_PARTITION_LAYERS, 0, 0, A, &r);
    static const uint16_t want[7] = {1, 1, 1, 1, 2, 2, 2};
    cr_assert_eq(r.region_count, 2);
    for (int s = 0; s < 7; s++)
        cr_assert_eq(r.reg[s], want[s], "span %d: region %u, want %u", s, r.reg[s], want[s]);
    naive_regions(chf, OP_PARTITION_LAYERS, 0, 0, &nv);
    assert_same_regions(&r, &nv, "naive");
    naive_free(&nv);
}

Test(layers, adjacent_same_area_regions_merge_on_one_floor)
{
    /* Square with a hole: four monotone regions, one layer region. */
    static const char *const pic[] = {"#######", "#######", "##...##", "##...##",
                                      "##...##", "#######", "#######"};
    op_chf *chf = text_field(A, pic, 7);
    op_regions r, g;
    build_regions(chf, OP_PARTITION_LAYERS, 0, 0, A, &r);
    build_general(chf, 0, A, &g);
    cr_assert_eq(r.region_count, 1);
    assert_same_regions(&r, &g, "shortcut vs general");
}

Test(layers, shortcut_equals_general_on_single_floor_fields, .timeout = 120)
{
    for (uint64_t seed = 1; seed <= 24; seed++) {
        op_arena *a = op_arena_create(0);
        op_test_rng rng = {seed * 7919};
        int w = 8 + (int)(seed * 5 % 57), d = 8 + (int)(seed * 11 % 57);
        op_chf *chf = op_test_field_random(a, &rng, w, d, 1, 1 + (int)(seed % 3));
        int min_area = (int)(seed % 4) * 3; /* 0, 3, 6, 9: both the shortcut and its fallback */
        op_regions r, g;
        build_regions(chf, OP_PARTITION_LAYERS, min_area, 0, a, &r);
        build_general(chf, min_area, a, &g);
        char what[64];
        snprintf(what, sizeof what, "seed %u", (unsigned)seed);
        assert_same_regions(&r, &g, what);
        check_partition(chf, &r, min_area, 0, OP_PARTITION_LAYERS);
        check_layers(chf, &r);
        /* On one floor the layer regions are the same-area components minus islands:
         * a walkable component (any areas, R1) below MinRegionArea is removed; every
         * other walkable span keeps a region. */
        uint32_t ncomp;
        uint32_t *comp = walkable_components(chf, &ncomp);
        uint32_t *csize = calloc(ncomp + 1, 4);
        for (uint32_t s = 0; s < chf->span_count; s++)
            csize[comp[s]] += comp[s] != 0;
        for (uint32_t s = 0; s < chf->span_count; s++)
            if (comp[s]) {
                int island = csize[comp[s]] < (uint32_t)min_area;
                cr_assert_eq(r.reg[s] == 0, island, "seed %u span %u", (unsigned)seed, s);
            }
        free(comp);
        free(csize);
        op_arena_destroy(a);
    }
}

typedef struct rcase {
    uint64_t seed;
    int w, d, floors, nareas, min_area;
} rcase;

static const rcase cases[] = {
    {41, 12, 12, 2, 1, 0},  {42, 20, 16, 3, 1, 4},  {43, 24, 24, 2, 2, 8},  {44, 30, 30, 3, 2, 0},
    {45, 36, 28, 2, 3, 12}, {46, 40, 40, 3, 1, 20}, {47, 48, 48, 2, 2, 64}, {48, 32, 32, 1, 2, 6},
};

Test(layers, random_fields_invariants_and_naive, .timeout = 120)
{
    for (size_t i = 0; i < 2 * sizeof cases / sizeof cases[0]; i++) {
        const rcase *c = &cases[i / 2];
        op_arena *a = op_arena_create(0);
        op_chf *chf = i % 2 ? storey_field(a, c->seed, c->w, c->d, c->floors, c->nareas)
                            : random_field(a, c->seed, c->w, c->d, c->floors, c->nareas);
        op_regions r, nv, g;
        build_regions(chf, OP_PARTITION_LAYERS, c->min_area, 0, a, &r);
        check_partition(chf, &r, c->min_area, 0, OP_PARTITION_LAYERS);
        check_layers(chf, &r);
        char what[64];
        snprintf(what, sizeof what, "case %zu", i);
        naive_regions(chf, OP_PARTITION_LAYERS, c->min_area, 0, &nv);
        assert_same_regions(&r, &nv, what);
        naive_free(&nv);
        build_general(chf, c->min_area, a, &g);
        assert_same_regions(&r, &g, what);
        op_arena_destroy(a);
    }
}

/* ---- column-sharing sets against every column's pairs ---- */

/* The reference: every pair of different labels (same area when same_area) of every
 * column, in a dense matrix, read row by row. The sets the layer partition, the layer
 * assignment and the §5.2 merge use must be exactly these rows. */
static void check_overlap_sets(const op_chf *chf, const uint32_t *reg, const uint8_t *area,
                               int same_area, uint32_t count, const char *what)
{
    size_t k1 = (size_t)count + 1;
    uint8_t *m = calloc(k1 * k1, 1);
    cr_assert(m);
    for (int c = 0; c < chf->width * chf->depth; c++)
        for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
            for (uint32_t t = chf->cells[c]; t < chf->cells[c + 1]; t++) {
                uint32_t x = reg[s], y = reg[t];
                if (x && y && x != y && (!same_area || area[x] == area[y]))
                    m[x * k1 + y] = 1;
            }
    op_arena *scratch = op_arena_create(0);
    op__idset *sets = op_arena_alloc(scratch, k1 * sizeof *sets);
    op_err e;
    cr_assert_eq(op__overlap_sets(chf, reg, area, same_area, count, scratch, sets, &e), OP_OK,
                 "%s: %s", what, e.msg);
    cr_assert_eq(sets[0].n, 0, "%s", what);
    for (uint32_t x = 1; x <= count; x++) {
        uint32_t n = 0;
        for (uint32_t y = 1; y <= count; y++)
            if (m[x * k1 + y]) {
                cr_assert_lt(n, sets[x].n, "%s: label %u lacks %u", what, (unsigned)x, (unsigned)y);
                cr_assert_eq(sets[x].v[n], y, "%s: label %u: %u where %u", what, (unsigned)x,
                             (unsigned)sets[x].v[n], (unsigned)y);
                n++;
            }
        cr_assert_eq(n, sets[x].n, "%s: label %u holds %u, expected %u", what, (unsigned)x,
                     (unsigned)sets[x].n, (unsigned)n);
        cr_assert_leq(sets[x].n, sets[x].cap, "%s", what);
    }
    op_arena_destroy(scratch);
    free(m);
}

Test(layers, overlap_sets_equal_every_column_pairs, .timeout = 120)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        op_arena *a = op_arena_create(0);
        op_test_rng rng = {seed * 104729};
        int w = 6 + (int)(seed * 7 % 31), d = 6 + (int)(seed * 13 % 29);
        int floors = 2 + (int)(seed % 5) * 6; /* up to 26 spans a column */
        op_chf *chf = op_test_field_random(a, &rng, w, d, floors, 1 + (int)(seed % 3));
        char what[96];
        /* The monotone labels the layer partition starts from (same area only). */
        op__labels lab;
        op_err e;
        cr_assert_eq(op__monotone(chf, a, &lab, &e), OP_OK, "%s", e.msg);
        snprintf(what, sizeof what, "seed %u monotone", (unsigned)seed);
        check_overlap_sets(chf, lab.reg, lab.area, 1, lab.count, what);
        /* The layer regions the assignment reads (any area). */
        op_regions r;
        build_regions(chf, OP_PARTITION_LAYERS, 0, 0, a, &r);
        uint32_t *rr = op_arena_alloc(a, ((size_t)chf->span_count + 1) * sizeof *rr);
        for (uint32_t s = 0; s < chf->span_count; s++)
            rr[s] = r.reg[s];
        snprintf(what, sizeof what, "seed %u layer regions", (unsigned)seed);
        check_overlap_sets(chf, rr, NULL, 0, (uint32_t)r.region_count, what);
        /* Staggered labels: span j of column (x, z) gets band (x + z + shift * j) / width,
         * so the set of a column changes a little from one column to the next, as floors
         * staggered around a ring; some unlabelled, some a column's label twice. */
        uint32_t count = 1 + (uint32_t)op_test_rand_int(&rng, 20, 400);
        int shift = op_test_rand_int(&rng, 1, 9), band = op_test_rand_int(&rng, 1, 6);
        uint8_t *area = op_arena_alloc(a, (size_t)count + 1);
        for (uint32_t x = 0; x <= count; x++)
            area[x] = (uint8_t)op_test_rand_int(&rng, 1, 2);
        for (int z = 0; z < d; z++)
            for (int x = 0; x < w; x++) {
                int c = x + z * w;
                for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
                    uint32_t j = s - chf->cells[c];
                    uint32_t l = 1 + (uint32_t)((x + z + shift * (int)j) / band) % count;
                    int roll = op_test_rand_int(&rng, 0, 19);
                    rr[s] = roll == 0 ? 0 : roll == 1 && s > chf->cells[c] ? rr[s - 1] : l;
                }
            }
        for (int sa = 0; sa < 2; sa++) {
            snprintf(what, sizeof what, "seed %u staggered same_area %d", (unsigned)seed, sa);
            check_overlap_sets(chf, rr, area, sa, count, what);
        }
        /* Labels at random (nothing repeats from column to column). */
        for (uint32_t s = 0; s < chf->span_count; s++)
            rr[s] = (uint32_t)op_test_rand_int(&rng, 0, (int)count);
        snprintf(what, sizeof what, "seed %u random labels", (unsigned)seed);
        check_overlap_sets(chf, rr, area, (int)(seed % 2), count, what);
        op_arena_destroy(a);
    }
}

Test(layers, general_merge_scratch_stays_linear)
{
    /* A ground floor shares columns with thousands of upper fragments; merging into it
     * must not copy its lists per merge (that took 447 MB here, and 7 GB at 512 x 512). */
    op_test_rng rng = {5};
    op_chf *chf = op_test_field_random(A, &rng, 256, 256, 3, 1);
    op_region_settings rs;
    op_region_settings_default(&rs);
    rs.partition = OP_PARTITION_LAYERS;
    op_arena *scratch = op_arena_create(0);
    op_arena_set_limit(scratch, (size_t)64 << 20);
    op_regions r;
    op_err e;
    cr_assert_eq(op__regions_build_layers_general(chf, &rs, A, scratch, &r, &e), OP_OK, "%s",
                 e.msg);
    check_layers(chf, &r);
    op_arena_destroy(scratch);
}

/* ---- layer assignment (build3d-polys.md §5) ---- */

/* The rule read literally with dense matrices. */
static void naive_assign(const op_chf *chf, const op_regions *r, uint16_t *layer, int *nlayers)
{
    uint32_t k = (uint32_t)r->region_count, k1 = k + 1;
    uint8_t *adj = calloc((size_t)k1 * k1, 1), *ovl = calloc((size_t)k1 * k1, 1);
    for (int c = 0; c < chf->width * chf->depth; c++)
        for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
            for (uint32_t t = chf->cells[c]; t < chf->cells[c + 1]; t++)
                ovl[r->reg[s] * k1 + r->reg[t]] = 1;
            for (int d = 0; d < 4; d++) {
                uint32_t m = chf->links[s][d];
                if (m != OP_NO_LINK)
                    adj[r->reg[s] * k1 + r->reg[m]] = 1;
            }
        }
    int nl = 0;
    for (uint32_t id = 1; id <= k; id++) {
        int best = -1;
        for (int l = 0; l <= nl && best < 0; l++) {
            /* candidates: layers of earlier adjacent regions first, lowest number */
            int free_l = 1, of_adj = 0;
            for (uint32_t o = 1; o < id; o++) {
                if (layer[o] != l)
                    continue;
                if (ovl[id * k1 + o])
                    free_l = 0;
                if (adj[id * k1 + o])
                    of_adj = 1;
            }
            if (free_l && of_adj)
                best = l;
        }
        for (int l = 0; l <= nl && best < 0; l++) {
            int free_l = 1;
            for (uint32_t o = 1; o < id; o++)
                if (layer[o] == l && ovl[id * k1 + o])
                    free_l = 0;
            if (free_l)
                best = l;
        }
        layer[id] = (uint16_t)best;
        if (best == nl)
            nl++;
    }
    *nlayers = nl;
    free(adj);
    free(ovl);
}

Test(layers, assignment_follows_the_rule, .timeout = 120)
{
    for (size_t i = 0; i < 2 * sizeof cases / sizeof cases[0]; i++) {
        const rcase *c = &cases[i / 2];
        op_arena *a = op_arena_create(0);
        op_chf *chf = i % 2 ? storey_field(a, c->seed + 100, c->w, c->d, c->floors, c->nareas)
                            : random_field(a, c->seed + 100, c->w, c->d, c->floors, c->nareas);
        op_regions r;
        build_regions(chf, OP_PARTITION_LAYERS, 0, 0, a, &r);
        uint16_t *l1 = malloc(((size_t)r.region_count + 1) * 2);
        uint16_t *l2 = malloc(((size_t)r.region_count + 1) * 2);
        int n1, n2;
        op_err e;
        cr_assert_eq(op_regions_assign_layers(chf, &r, a, l1, &n1, &e), OP_OK, "%s", e.msg);
        naive_assign(chf, &r, l2, &n2);
        cr_assert_eq(n1, n2, "case %zu", i);
        for (int id = 1; id <= r.region_count; id++)
            cr_assert_eq(l1[id], l2[id], "case %zu region %d", i, id);
        /* no column holds two spans of one layer */
        for (int cc = 0; cc < chf->width * chf->depth; cc++)
            for (uint32_t s = chf->cells[cc]; s < chf->cells[cc + 1]; s++)
                for (uint32_t t = s + 1; t < chf->cells[cc + 1]; t++)
                    if (r.reg[s] && r.reg[t])
                        cr_assert_neq(l1[r.reg[s]], l1[r.reg[t]], "case %zu column %d", i, cc);
        free(l1);
        free(l2);
        op_arena_destroy(a);
    }
}

Test(layers, assignment_layer_limit_is_elimit)
{
    /* 1025 floors in one column, each its own region: 1025 layers > OP_MAX_LAYERS. */
    enum { N = OP_MAX_LAYERS + 1 };
    int counts[1] = {N};
    op_test_span *spans = malloc(N * sizeof *spans);
    for (int i = 0; i < N; i++)
        spans[i] = (op_test_span){i * 10, i + 1 < N ? 8 : 100, 63};
    op_chf *chf = op_test_field(A, 1, 1, counts, spans, 4, 2);
    free(spans);
    op_regions r;
    build_regions(chf, OP_PARTITION_LAYERS, 0, 0, A, &r);
    cr_assert_eq(r.region_count, N);
    uint16_t *layer = malloc((N + 1) * sizeof *layer);
    int nl;
    op_err e;
    cr_assert_eq(op_regions_assign_layers(chf, &r, A, layer, &nl, &e), OP_ELIMIT);
    cr_assert(strstr(e.msg, "OP_MAX_LAYERS"), "%s", e.msg);
    /* one floor fewer: exactly OP_MAX_LAYERS layers */
    r.reg[N - 1] = 0;
    r.region_count = N - 1;
    cr_assert_eq(op_regions_assign_layers(chf, &r, A, layer, &nl, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(nl, OP_MAX_LAYERS);
    /* a region id past the count is refused, not read out of bounds */
    r.reg[0] = (uint16_t)(N + 5);
    cr_assert_eq(op_regions_assign_layers(chf, &r, A, layer, &nl, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "span 0 has region 1030"), "%s", e.msg);
    free(layer);
}

/* ---- layer-first partition ---- */

/* A copy of chf sharing spans and links, with its own areas. */
static op_chf *with_new_areas(op_arena *a, const op_chf *g)
{
    op_chf *chf = op_arena_alloc(a, sizeof *chf);
    *chf = *g;
    chf->areas = op_arena_alloc(a, (size_t)g->span_count + 1);
    memcpy(chf->areas, g->areas, g->span_count);
    return chf;
}

Test(layers, layer_first_partition, .timeout = 120)
{
    for (size_t i = 0; i < 2 * sizeof cases / sizeof cases[0]; i++) {
        const rcase *c = &cases[i / 2];
        op_arena *a = op_arena_create(0);
        op_chf *g = i % 2 ? storey_field(a, c->seed + 200, c->w, c->d, c->floors, c->nareas)
                          : random_field(a, c->seed + 200, c->w, c->d, c->floors, c->nareas);
        /* every third field as a tile grid with a band of 3 cells (islands reaching it
         * stay; check_partition asserts it) */
        g->border = i % 3 == 2 ? 3 : 0;
        /* a "volume": a box of cells whose walkable spans take area 7 */
        op_chf *chf = with_new_areas(a, g);
        for (int z = c->d / 4; z < c->d / 2; z++)
            for (int x = c->w / 3; x < 2 * c->w / 3; x++) {
                int cc = x + z * c->w;
                for (uint32_t s = chf->cells[cc]; s < chf->cells[cc + 1]; s++)
                    if (chf->areas[s])
                        chf->areas[s] = 7;
            }
        op_region_settings rs;
        op_region_settings_default(&rs);
        rs.partition = OP_PARTITION_LAYERS;
        rs.min_region_area = c->min_area;
        op_regions r, r2, gr;
        uint16_t *rl, *rl2, *sl;
        int nl;
        op_err e;
        op_arena *scratch = op_arena_create(0);
        cr_assert_eq(op_regions_build_layer_first(g, chf, &rs, a, scratch, &r, &rl, &e), OP_OK,
                     "%s", e.msg);
        /* the two steps give the same bytes as the whole */
        cr_assert_eq(op_regions_span_layers(g, a, scratch, &sl, &nl, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(op_regions_build_from_layers(chf, sl, c->min_area, a, scratch, &r2, &rl2, &e),
                     OP_OK, "%s", e.msg);
        assert_same_regions(&r, &r2, "steps");
        /* span layers are the assignment of the geometry field's layer regions (islands
         * kept) */
        build_regions(g, OP_PARTITION_LAYERS, 0, 0, a, &gr);
        uint16_t *gl = malloc(((size_t)gr.region_count + 1) * 2);
        int gn;
        naive_assign(g, &gr, gl, &gn);
        cr_assert_eq(gn, nl);
        for (uint32_t s = 0; s < g->span_count; s++)
            cr_assert_eq(sl[s], g->areas[s] ? gl[gr.reg[s]] : OP_NO_LAYER, "span %u", s);
        free(gl);
        /* regions: components of linked, same layer, same area; then islands */
        check_partition(chf, &r, c->min_area, 0, OP_PARTITION_LAYERS);
        for (uint32_t s = 0; s < chf->span_count; s++) {
            if (r.reg[s] == 0)
                continue;
            cr_assert_eq(rl[r.reg[s]], sl[s], "span %u layer", s);
            for (int d = 0; d < 4; d++) {
                uint32_t m = chf->links[s][d];
                if (m != OP_NO_LINK && chf->areas[m] == chf->areas[s] && sl[m] == sl[s])
                    cr_assert_eq(r.reg[m], r.reg[s], "span %u and %u split", s, m);
            }
        }
        /* no column holds two spans of one region */
        for (int cc = 0; cc < c->w * c->d; cc++)
            for (uint32_t s = chf->cells[cc]; s < chf->cells[cc + 1]; s++)
                for (uint32_t t = s + 1; t < chf->cells[cc + 1]; t++)
                    if (r.reg[s])
                        cr_assert_neq(r.reg[s], r.reg[t]);
        op_arena_destroy(scratch);
        op_arena_destroy(a);
    }
}

Test(layers, layer_first_refuses_mismatched_fields)
{
    op_chf *g = random_field(A, 5, 10, 10, 1, 1);
    op_chf *h = random_field(A, 6, 10, 11, 1, 1);
    op_region_settings rs;
    op_region_settings_default(&rs);
    rs.partition = OP_PARTITION_LAYERS;
    op_regions r;
    uint16_t *rl;
    op_err e;
    cr_assert_eq(op_regions_build_layer_first(g, h, &rs, A, A, &r, &rl, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "differs"), "%s", e.msg);
}

Test(layers, layer_first_out_of_memory)
{
    op_chf *g = storey_field(A, 77, 30, 30, 3, 2);
    op_region_settings rs;
    op_region_settings_default(&rs);
    rs.partition = OP_PARTITION_LAYERS;
    rs.min_region_area = 8;
    op_regions r;
    uint16_t *rl;
    op_err e;
    for (int which = 0; which < 2; which++)
        for (long n = 0;; n++) {
            op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
            op_arena_fail_after(which ? out : scratch, n);
            op_status st = op_regions_build_layer_first(g, g, &rs, out, scratch, &r, &rl, &e);
            op_arena_destroy(out);
            op_arena_destroy(scratch);
            if (st == OP_OK)
                break;
            cr_assert_eq(st, OP_ENOMEM, "n %ld: %s", n, e.msg);
            cr_assert(strstr(e.msg, "regions:"), "%s", e.msg);
            cr_assert(n < 5000);
        }
}

/* ---- hash-matrix scenario ---- */

static uint64_t scenario_hash(void)
{
    static const rcase fields[] = {
        {301, 24, 24, 1, 1, 8},  {302, 32, 28, 2, 2, 8},  {303, 40, 36, 3, 1, 12},
        {304, 48, 48, 1, 3, 16}, {305, 44, 40, 2, 2, 10},
    };
    uint64_t h = OP_HASH_INIT;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const rcase *c = &fields[i];
        op_arena *a = op_arena_create(0);
        op_chf *chf = i < 3 ? random_field(a, c->seed, c->w, c->d, c->floors, c->nareas)
                            : storey_field(a, c->seed, c->w, c->d, c->floors, c->nareas);
        op_regions r;
        build_regions(chf, OP_PARTITION_LAYERS, c->min_area, 0, a, &r);
        cr_assert_eq(op_regions_dump(chf, &r, op_hash_sink_write, &h), 0);
        op_arena_destroy(a);
    }
    return h;
}

Test(layers, scenario_layers, .timeout = 120)
{
    uint64_t h = scenario_hash();
    cr_assert_eq(h, scenario_hash());
    op_test_golden("build3d/regions-layers", h);
}

/* Step 1 on single-floor fields (the direct path): every walkable span on layer 0 and one
 * layer used, or no layer at all when nothing is walkable; area-0 spans OP_NO_LAYER. */
Test(layers, span_layers_single_floor)
{
    static const char *const walk[] = {"##0.", "#0#1", "..11"};
    static const char *const none[] = {"00.", ".00"};
    op_arena *a = op_arena_create(0);
    op_err e;
    uint16_t *sl;
    int nl = -1;
    op_chf *g = op_test_field_from_text(a, walk, 3);
    cr_assert_eq(op_regions_span_layers(g, a, a, &sl, &nl, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(nl, 1);
    for (uint32_t s = 0; s < g->span_count; s++)
        cr_assert_eq(sl[s], g->areas[s] ? 0 : OP_NO_LAYER, "span %u", s);
    g = op_test_field_from_text(a, none, 2);
    cr_assert_eq(op_regions_span_layers(g, a, a, &sl, &nl, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(nl, 0);
    for (uint32_t s = 0; s < g->span_count; s++)
        cr_assert_eq(sl[s], OP_NO_LAYER, "span %u", s);
    op_arena_destroy(a);
}

/* ---- layer seams ----
 *
 * Where the layer-first partition (§4, layers assigned per build3d-polys.md §5) puts two
 * linked spans of one walkable surface on different layers of a tile, which
 * build3d-polys.md §5 then leaves unlinked (docs/spec/clarifications.md, polys 18). A ramp
 * climbing from the ground onto a deck that lies over the ground closes a cycle
 * ground - ramp - deck - (over) ground: no layer assignment keeps all three joints, and the
 * §3/§4 order decides which one becomes the seam. Two hand-made fields (layers derived by
 * hand from the rules) show both outcomes; a third test checks the implementation against
 * the naive reading of §3-§5 on the tiles of a generated multi-storey level, where the
 * mechanism was found (gen:multifloor:256:1, tile (4, 15)). */

/* ---- the hand-made field ---- */

/* 12 x 12 cells, walkable height 4 rows, climb 2 rows, area 63 everywhere.
 *   ground: rows z 0..6 at y 0 (open above), except under the ramp (x 4..7, z 2..6);
 *   ramp:   x 4..7, z 2..6 at y 2 (z - 1): its foot (z 2, y 2) links to the ground,
 *           its top (z 6, y 10) to the deck;
 *   deck:   z 7..11, every x, at y 12; ground under it at y 0 with 11 rows of clearance.
 * With pocket != 0, cells x 4..6, z 4..6 also hold ground under the ramp (clearance ramp
 * y - 1 = 5, 7, 9 rows): linked to the west ground (x 3) and to the ground under the deck
 * (z 7), not to x 7 (ramp only). */
enum { W = 12, D = 12 };

static int ramp_cell(int x, int z)
{
    return x >= 4 && x <= 7 && z >= 2 && z <= 6;
}

static int pocket_cell(int x, int z)
{
    return x >= 4 && x <= 6 && z >= 4 && z <= 6;
}

static op_chf *deck_field(op_arena *a, int pocket)
{
    int counts[W * D];
    op_test_span spans[2 * W * D];
    int k = 0;
    for (int z = 0; z < D; z++)
        for (int x = 0; x < W; x++) {
            int c = x + z * W, n = 0;
            if (z >= 7) {
                spans[k + n++] = (op_test_span){0, 11, 63};
                spans[k + n++] = (op_test_span){12, 200, 63};
            } else if (ramp_cell(x, z)) {
                int y = 2 * (z - 1);
                if (pocket && pocket_cell(x, z))
                    spans[k + n++] = (op_test_span){0, y - 1, 63};
                spans[k + n++] = (op_test_span){y, 200, 63};
            } else {
                spans[k + n++] = (op_test_span){0, 200, 63};
            }
            counts[c] = n;
            k += n;
        }
    return op_test_field(a, W, D, counts, spans, 4, 2);
}

/* The span of cell (x, z) with floor row y (must exist). */
static uint32_t span_at(const op_chf *chf, int x, int z, int y)
{
    int c = x + z * chf->width;
    for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
        if (chf->y[s] == y)
            return s;
    cr_assert_fail("no span at (%d, %d) row %d", x, z, y);
    return 0;
}

static uint16_t *span_layers(const op_chf *chf, op_arena *a, int *nl)
{
    uint16_t *sl;
    op_err e;
    cr_assert_eq(op_regions_span_layers(chf, a, a, &sl, nl, &e), OP_OK, "%s", e.msg);
    return sl;
}

Test(layers, closed_ramp_puts_the_ground_under_the_deck_on_its_own_layer)
{
    /* By hand. §3 monotone: rows 0..2 are one sweep each (the ramp foot at z 2, y 2, links
     * to the ground at x 3 and x 8): region 1. Row 3 splits into west ground, ramp, east
     * ground, all continuing 1, so three new regions 2, 3, 4 (in sweep order), continued
     * through row 6. Row 7: the ground sweep has -z neighbours in 2 and 4: new region 5;
     * the deck sweep's only -z neighbours are the ramp's (3) and no other sweep touches 3:
     * the deck continues 3. Links: 1-2, 1-3, 1-4, 2-5, 4-5; overlap: 3-5 (deck over ground).
     * §4 (clarifications, regions 2): a = 1 takes 2; a = 3 takes... its first adjacent
     * region 1, which does not overlap it: merged; a = 4 merges into 1; a = 5 overlaps 1
     * (the deck, now in 1). Layer regions {1, 2, 3, 4} (id 1) and {5} (id 2); §5: id 1 on
     * layer 0, id 2 overlaps it: layer 1. */
    op_arena *a = op_arena_create(0);
    op_chf *chf = deck_field(a, 0);
    int nl;
    uint16_t *sl = span_layers(chf, a, &nl);
    cr_assert_eq(nl, 2);
    for (int x = 0; x < W; x++) {
        cr_assert_eq(sl[span_at(chf, x, 0, 0)], 0, "south ground x %d", x);
        cr_assert_eq(sl[span_at(chf, x, 9, 12)], 0, "deck x %d", x);
        cr_assert_eq(sl[span_at(chf, x, 9, 0)], 1, "ground under the deck x %d", x);
    }
    for (int z = 3; z <= 6; z++)
        cr_assert_eq(sl[span_at(chf, 5, z, 2 * (z - 1))], 0, "ramp z %d", z);
    /* The seam: the ground at z 6 links to the ground under the deck at z 7, layers 0 | 1. */
    uint32_t s6 = span_at(chf, 0, 6, 0), s7 = span_at(chf, 0, 7, 0);
    cr_assert_eq(chf->links[s6][1], s7);
    cr_assert_neq(sl[s6], sl[s7]);
    op_arena_destroy(a);
}

Test(layers, open_pocket_under_the_ramp_keeps_the_ground_and_cuts_the_ramp_foot)
{
    /* By hand. §3: as above, except that the pocket (x 4..6, z 4..6, y 0) joins the west
     * ground's sweep (its -x link), so region 2 = west ground + pocket; row 7's ground sweep
     * still sees 2 and 4 (new region 5), the deck continues 3. Links as above (2-5 now also
     * through the pocket); overlap: 2-3 (pocket under the ramp) and 3-5. §4: a = 1 takes 2
     * and with it the overlap with 3; a = 3: its only adjacent region 1 overlaps it; a = 4
     * and a = 5 merge into 1. Layer regions: all ground (id 1, layer 0) and ramp + deck
     * (id 2, layer 1). The ramp foot (z 2) came with monotone region 1: the seam is now
     * between the foot (layer 0) and the ramp (layer 1). */
    op_arena *a = op_arena_create(0);
    op_chf *chf = deck_field(a, 1);
    int nl;
    uint16_t *sl = span_layers(chf, a, &nl);
    cr_assert_eq(nl, 2);
    for (int x = 0; x < W; x++) {
        cr_assert_eq(sl[span_at(chf, x, 0, 0)], 0, "south ground x %d", x);
        cr_assert_eq(sl[span_at(chf, x, 9, 0)], 0, "ground under the deck x %d", x);
        cr_assert_eq(sl[span_at(chf, x, 9, 12)], 1, "deck x %d", x);
    }
    cr_assert_eq(sl[span_at(chf, 5, 5, 0)], 0, "pocket");
    cr_assert_eq(sl[span_at(chf, 5, 2, 2)], 0, "ramp foot");
    uint32_t f2 = span_at(chf, 5, 2, 2), f3 = span_at(chf, 5, 3, 4);
    cr_assert_eq(chf->links[f2][1], f3);
    cr_assert_eq(sl[f3], 1, "ramp above its foot");
    op_arena_destroy(a);
}

/* ---- amendment R2: no merge into an overlapping region ---- */

/* The number of columns that hold two spans of one region. */
static int doubled_columns(const op_chf *chf, const op_regions *r)
{
    int n = 0;
    for (int c = 0; c < chf->width * chf->depth; c++) {
        int twice = 0;
        for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
            for (uint32_t t = s + 1; t < chf->cells[c + 1]; t++)
                twice |= r->reg[s] != 0 && r->reg[s] == r->reg[t];
        n += twice;
    }
    return n;
}

Test(layers, deck_never_merges_into_the_ground_under_it)
{
    /* The deck field: every monotone region is below MergeRegionArea 400 and all are
     * linked through the ramp, so the literal §5.2 merges them into one region that holds
     * the deck and the ground under it in all 60 deck columns. R2 refuses every merge of
     * two regions that share a column. */
    op_arena *a = op_arena_create(0);
    for (int pocket = 0; pocket < 2; pocket++) {
        op_chf *chf = deck_field(a, pocket);
        with_distance(a, chf);
        for (int p = 0; p < 2; p++) {
            op_regions r;
            build_regions(chf, (op_partition)p, 0, 400, a, &r);
            cr_assert_eq(doubled_columns(chf, &r), 0, "pocket %d partition %d", pocket, p);
            check_partition(chf, &r, 0, 400, (op_partition)p);
            op_regions nv;
            naive_regions(chf, (op_partition)p, 0, 400, &nv);
            assert_same_regions(&r, &nv, pocket ? "pocket, naive" : "naive");
            naive_free(&nv);
            /* The deck and the ground under it stay apart, and each is one region (the
             * small ground pieces merge into the ground as before). */
            uint32_t deck = r.reg[span_at(chf, 0, 9, 12)], under = r.reg[span_at(chf, 0, 9, 0)];
            cr_assert_neq(deck, under, "pocket %d partition %d", pocket, p);
            for (int x = 0; x < W; x++) {
                cr_assert_eq(r.reg[span_at(chf, x, 11, 12)], deck);
                cr_assert_eq(r.reg[span_at(chf, x, 7, 0)], under);
            }
        }
    }
    op_arena_destroy(a);
}

Test(layers, multifloor_tile_regions_cover_no_column_twice, .timeout = 60)
{
    /* gen:multifloor:256:1, tile (4, 15), demo settings: the tile docs/quality.md found,
     * where the literal §5.2 merged a ramp-and-deck region with the ground pocket under it
     * (columns x 18..31, rows 29..38 twice). The watershed itself makes no region that
     * covers a column twice there, so with R2 no region does. */
    op_arena *in = op_arena_create(0), *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("multifloor", 256, 1, in, &soup, &e), OP_OK, "%s", e.msg);
    op_settings s;
    op_settings_default(&s);
    op_level *lvl;
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_tile_stages st;
    cr_assert_eq(op_level_build_stages(lvl, 4, 15, OP_STAGE_SPANS, 0, out, scratch, &st, &e), OP_OK,
                 "%s", e.msg);
    op_regions r;
    build_regions(&st.chf, OP_PARTITION_WATERSHED, 64, 0, scratch, &r);
    cr_assert_eq(doubled_columns(&st.chf, &r), 0, "the watershed alone");
    build_regions(&st.chf, OP_PARTITION_WATERSHED, 64, 400, scratch, &r);
    cr_assert_eq(doubled_columns(&st.chf, &r), 0, "after merging");
    op_level_destroy(lvl);
    op_arena_destroy(scratch);
    op_arena_destroy(out);
    op_arena_destroy(in);
}

/* ---- the implementation against the naive reading on generated tiles ---- */

Test(layers, span_layers_of_generated_tiles_follow_the_text, .timeout = 60)
{
    op_arena *in = op_arena_create(0), *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("multifloor", 64, 1, in, &soup, &e), OP_OK, "%s", e.msg);
    op_settings s;
    op_settings_default(&s);
    s.partition = OP_PARTITION_LAYERS;
    op_level *lvl;
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_tile_rect tr = op_level_tiles(lvl);
    int tiles = 0, upper = 0;
    for (int tz = tr.tz0; tz <= tr.tz1; tz++)
        for (int tx = tr.tx0; tx <= tr.tx1; tx++) {
            op_arena_reset(out);
            op_arena_reset(scratch);
            op_tile_stages st;
            cr_assert_eq(
                op_level_build_stages(lvl, tx, tz, OP_STAGE_REGIONS, 0, out, scratch, &st, &e),
                OP_OK, "%s", e.msg);
            if (st.skipped)
                continue;
            /* §4 with every island kept: the naive partition without the band rule and
             * with MinRegionArea 0 removes nothing. */
            op_chf g = st.chf;
            g.border = 0;
            op_regions nr;
            naive_regions(&g, OP_PARTITION_LAYERS, 0, 0, &nr);
            uint16_t *layer = malloc(((size_t)nr.region_count + 1) * sizeof *layer);
            int nl;
            naive_assign(&g, &nr, layer, &nl);
            for (uint32_t i = 0; i < g.span_count; i++) {
                uint16_t want = g.areas[i] ? layer[nr.reg[i]] : OP_NO_LAYER;
                cr_assert_eq(st.span_layer[i], want, "tile (%d, %d) span %u", tx, tz, i);
                upper += want != OP_NO_LAYER && want > 0;
            }
            free(layer);
            naive_free(&nr);
            tiles++;
        }
    cr_assert_gt(tiles, 20);
    cr_assert_gt(upper, 1000, "the level has spans on upper layers");
    op_level_destroy(lvl);
    op_arena_destroy(scratch);
    op_arena_destroy(out);
    op_arena_destroy(in);
}

/* Label pairs against every pair written out, on random multi-floor fields with random
 * labels (some 0, some labels spread over several floors), with and without the same-area
 * rule: the adjacency pairs (op__link_pairs) and the column-sharing sets (op__overlap_sets,
 * which skips columns of fewer than two labelled spans and reuses references, so this is
 * where a wrong skip would show). */
static int has_pair(const uint64_t *p, size_t n, uint64_t x)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] == x)
            return 1;
    return 0;
}

static size_t distinct(uint64_t *p, size_t n)
{
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!has_pair(p, u, p[i]))
            p[u++] = p[i];
    return u;
}

Test(layers, label_pairs_equal_every_pair, .timeout = 120)
{
    for (uint64_t seed = 1; seed <= 24; seed++) {
        op_arena *a = op_arena_create(0);
        op_chf *chf = seed % 2 ? storey_field(a, seed, 14, 12, 3, 2)
                               : random_field(a, seed, 16, 10, (int)(seed % 4) + 1, 2);
        op_test_rng g = {seed * 7919};
        uint32_t nl = (uint32_t)op_test_rand_int(&g, 1, 12);
        uint32_t *reg = calloc(chf->span_count + 1, sizeof *reg);
        uint8_t *area = calloc(nl + 1, 1);
        for (uint32_t r = 1; r <= nl; r++)
            area[r] = (uint8_t)op_test_rand_int(&g, 1, 2);
        for (uint32_t s = 0; s < chf->span_count; s++)
            reg[s] =
                op_test_rand_int(&g, 0, 4) == 0 ? 0 : (uint32_t)op_test_rand_int(&g, 1, (int)nl);
        for (int same = 0; same < 2; same++) {
            uint64_t *pa;
            size_t na;
            op_err e;
            cr_assert_eq(op__link_pairs(chf, reg, area, same, A, &pa, &na, &e), OP_OK, "%s", e.msg);
            na = distinct(pa, na);
            /* Every adjacency pair, written out. */
            size_t ea = 0;
            uint64_t *xa = malloc((chf->span_count * 4 + 1) * 8);
            for (uint32_t s = 0; s < chf->span_count; s++) {
                uint32_t r = reg[s];
                for (int d = 0; r != 0 && d < 4; d++) {
                    uint32_t m = chf->links[s][d];
                    if (m != OP_NO_LINK && reg[m] != 0 && reg[m] != r &&
                        (!same || area[reg[m]] == area[r]))
                        xa[ea++] = (uint64_t)r << 32 | reg[m];
                }
            }
            ea = distinct(xa, ea);
            cr_assert_eq(na, ea, "seed %u same %d: %zu adjacency pairs, expected %zu",
                         (unsigned)seed, same, na, ea);
            for (size_t i = 0; i < ea; i++)
                cr_assert(has_pair(pa, na, xa[i]), "seed %u: adjacency pair missing",
                          (unsigned)seed);
            free(xa);
            char what[64];
            snprintf(what, sizeof what, "seed %u same %d", (unsigned)seed, same);
            check_overlap_sets(chf, reg, area, same, nl, what);
        }
        free(reg);
        free(area);
        op_arena_destroy(a);
    }
}

/* ---- the one-flood layer-first labelling against its two steps ---- */

static void assert_same_layer_labels(const op_chf *chf, const uint16_t *key, int min_area,
                                     const char *what)
{
    op_arena *a = op_arena_create(0), *scratch = op_arena_create(0);
    op_regions r1, r2;
    uint16_t *rl1, *rl2;
    op_err e;
    cr_assert_eq(op_regions_build_from_layers(chf, key, min_area, a, scratch, &r1, &rl1, &e), OP_OK,
                 "%s: %s", what, e.msg);
    cr_assert_eq(
        op__regions_build_from_layers_two_step(chf, key, min_area, a, scratch, &r2, &rl2, &e),
        OP_OK, "%s: %s", what, e.msg);
    cr_assert_eq(r1.region_count, r2.region_count, "%s: region count", what);
    cr_assert_eq(r1.span_count, r2.span_count, "%s", what);
    for (uint32_t s = 0; s < chf->span_count; s++)
        cr_assert_eq(r1.reg[s], r2.reg[s], "%s: span %u", what, s);
    for (int r = 0; r <= r1.region_count; r++) {
        cr_assert_eq(r1.region_area[r], r2.region_area[r], "%s: area of region %d", what, r);
        cr_assert_eq(rl1[r], rl2[r], "%s: layer of region %d", what, r);
    }
    /* The uint32-label path (fields of more than 0xffff components) gives the same. */
    cr_assert_eq(op__regions_build_from_layers_wide(chf, key, min_area, a, scratch, &r2, &rl2, &e),
                 OP_OK, "%s: %s", what, e.msg);
    cr_assert_eq(r1.region_count, r2.region_count, "%s: wide region count", what);
    for (uint32_t s = 0; s < chf->span_count; s++)
        cr_assert_eq(r1.reg[s], r2.reg[s], "%s: wide span %u", what, s);
    for (int r = 0; r <= r1.region_count; r++) {
        cr_assert_eq(r1.region_area[r], r2.region_area[r], "%s: wide area %d", what, r);
        cr_assert_eq(rl1[r], rl2[r], "%s: wide layer %d", what, r);
    }
    op_arena_destroy(scratch);
    op_arena_destroy(a);
}

/* Random fields with their span layers and with random keys (components then cut across
 * areas and keys everywhere: many R1 groups of several components), bands of 0 and 3
 * cells, MinRegionArea from 0 to past most components; and generated multi-floor and
 * dungeon-like tiles with their own span layers. */
Test(layers, one_flood_labelling_equals_components_then_filter, .timeout = 120)
{
    for (size_t i = 0; i < 2 * sizeof cases / sizeof cases[0]; i++) {
        const rcase *c = &cases[i / 2];
        op_arena *a = op_arena_create(0), *scratch = op_arena_create(0);
        op_chf *chf = i % 2 ? storey_field(a, c->seed + 300, c->w, c->d, c->floors, c->nareas)
                            : random_field(a, c->seed + 300, c->w, c->d, c->floors, c->nareas);
        uint16_t *sl;
        int nl;
        op_err e;
        cr_assert_eq(op_regions_span_layers(chf, a, scratch, &sl, &nl, &e), OP_OK, "%s", e.msg);
        uint16_t *rk = op_arena_alloc(a, ((size_t)chf->span_count + 1) * sizeof *rk);
        uint64_t x = c->seed * 0x9E3779B97F4A7C15ull + 1;
        for (uint32_t s = 0; s < chf->span_count; s++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            rk[s] = (uint16_t)(x % 3);
        }
        static const int mins[] = {0, 3, 12, 50, 400};
        for (int border = 0; border <= 3; border += 3)
            for (int m = 0; m < 5; m++) {
                chf->border = border;
                char what[96];
                snprintf(what, sizeof what, "case %zu border %d min %d span layers", i, border,
                         mins[m]);
                assert_same_layer_labels(chf, sl, mins[m], what);
                snprintf(what, sizeof what, "case %zu border %d min %d random keys", i, border,
                         mins[m]);
                assert_same_layer_labels(chf, rk, mins[m], what);
            }
        op_arena_destroy(scratch);
        op_arena_destroy(a);
    }
    static const char *const gens[] = {"multifloor", "furniture"};
    for (int gi = 0; gi < 2; gi++) {
        op_arena *in = op_arena_create(0), *out = op_arena_create(0), *scratch = op_arena_create(0);
        op_soup soup;
        op_err e;
        cr_assert_eq(op_levelgen(gens[gi], 64, 1, in, &soup, &e), OP_OK, "%s", e.msg);
        op_settings s;
        op_settings_default(&s);
        s.partition = OP_PARTITION_LAYERS;
        op_level *lvl;
        cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
        int tiles = 0;
        for (int tz = 0; tz < 4; tz++)
            for (int tx = 0; tx < 4; tx++) {
                op_tile_stages st;
                if (op_level_build_stages(lvl, tx, tz, OP_STAGE_SPANS, 0, out, scratch, &st, &e) !=
                        OP_OK ||
                    st.skipped || !st.span_layer)
                    continue;
                tiles++;
                for (int m = 0; m < 3; m++) {
                    char what[96];
                    snprintf(what, sizeof what, "%s tile (%d, %d) min %d", gens[gi], tx, tz,
                             m * 40);
                    assert_same_layer_labels(&st.chf, st.span_layer, m * 40, what);
                }
            }
        cr_assert_gt(tiles, 0, "%s: no tile built", gens[gi]);
        op_level_destroy(lvl);
        op_arena_destroy(scratch);
        op_arena_destroy(out);
        op_arena_destroy(in);
    }
}
