/*
 * Regions (build3d-regions.md §2, §3, §5, §7): settings, hand-made fields whose regions
 * are derived by hand from the rules, invariants on seeded random fields, a naive second
 * implementation compared span by span, and the hash-matrix scenarios
 * build3d/regions-watershed and build3d/regions-monotone.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "onepath/limits.h"
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

TestSuite(regions, .init = setup, .fini = teardown, .timeout = 60);

/* ---- settings (§7) ---- */

Test(regions, defaults_are_watershed_64_400)
{
    op_region_settings rs;
    op_err e;
    op_region_settings_default(&rs);
    cr_assert_eq(rs.partition, OP_PARTITION_WATERSHED);
    cr_assert_eq(rs.min_region_area, 64);
    cr_assert_eq(rs.merge_region_area, 400);
    cr_assert_eq(op_region_settings_validate(&rs, &e), OP_OK, "%s", e.msg);
}

Test(regions, validate_refuses_each_bad_field)
{
    op_region_settings rs;
    op_err e;
    op_region_settings_default(&rs);
    rs.min_region_area = -1;
    cr_assert_eq(op_region_settings_validate(&rs, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "min_region_area = -1"), "%s", e.msg);
    op_region_settings_default(&rs);
    rs.merge_region_area = -5;
    cr_assert_eq(op_region_settings_validate(&rs, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "merge_region_area = -5"), "%s", e.msg);
    op_region_settings_default(&rs);
    rs.partition = (op_partition)3;
    cr_assert_eq(op_region_settings_validate(&rs, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "partition = 3"), "%s", e.msg);
    cr_assert_eq(op_region_settings_validate(NULL, &e), OP_EINVAL);
}

Test(regions, watershed_without_distance_is_einval)
{
    static const char *const pic[] = {"###"};
    op_chf *chf = op_test_field_from_text(A, pic, 1);
    op_region_settings rs;
    op_regions r;
    op_err e;
    op_region_settings_default(&rs);
    cr_assert_eq(op_regions_build(chf, &rs, A, A, &r, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "distance"), "%s", e.msg);
    rs.partition = OP_PARTITION_MONOTONE; /* monotone does not need it */
    cr_assert_eq(op_regions_build(chf, &rs, A, A, &r, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(r.region_count, 0); /* 3 spans < 64: an island */
}

Test(regions, out_of_memory_names_the_stage)
{
    op_chf *chf = random_field(A, 7, 16, 16, 2, 2);
    op_region_settings rs;
    op_regions r;
    op_err e;
    op_region_settings_default(&rs);
    for (int p = 0; p < 3; p++) {
        rs.partition = (op_partition)p;
        /* Fail the n-th allocation for every n until the build succeeds. */
        for (long n = 0;; n++) {
            op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
            op_arena_fail_after(scratch, n);
            op_status st = op_regions_build(chf, &rs, out, scratch, &r, &e);
            op_arena_destroy(out);
            op_arena_destroy(scratch);
            if (st == OP_OK)
                break;
            cr_assert_eq(st, OP_ENOMEM, "partition %d n %ld: %s", p, n, e.msg);
            cr_assert(strstr(e.msg, "regions:"), "%s", e.msg);
            cr_assert(n < 5000);
        }
    }
}

Test(regions, out_arena_failure_is_enomem)
{
    op_chf *chf = random_field(A, 8, 12, 12, 1, 1);
    op_region_settings rs;
    op_regions r;
    op_err e;
    op_region_settings_default(&rs);
    rs.min_region_area = 0;
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_arena_fail_after(out, 0);
    cr_assert_eq(op_regions_build(chf, &rs, out, scratch, &r, &e), OP_ENOMEM);
    cr_assert(strstr(e.msg, "regions: result"), "%s", e.msg);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
}

static int text_sink(void *ctx, const char *data, size_t len)
{
    strncat((char *)ctx, data, len);
    return 0;
}

Test(regions, dump_format)
{
    static const char *const pic[] = {"#0"};
    op_chf *chf = op_test_field_from_text(A, pic, 1);
    op_regions r;
    build_regions(chf, OP_PARTITION_MONOTONE, 0, 0, A, &r);
    char buf[256] = "";
    cr_assert_eq(op_regions_dump(chf, &r, text_sink, buf), 0);
    cr_assert_str_eq(buf, "regions 1 spans 2\nregion 1 area 63\n0 0 0 0 63 1\n1 1 0 0 0 0\n");
}

/* ---- hand-made fields ---- */

static void expect_picture(const op_chf *chf, const op_regions *r, const char *const *want)
{
    /* want: one char per cell ('.' = no region), region id as a digit. */
    for (int z = 0; z < chf->depth; z++)
        for (int x = 0; x < chf->width; x++) {
            int c = x + z * chf->width;
            int got = chf->cells[c] < chf->cells[c + 1] ? r->reg[chf->cells[c]] : 0;
            int exp = want[z][x] == '.' ? 0 : want[z][x] - '0';
            cr_assert_eq(got, exp, "cell (%d, %d): region %d, expected %d", x, z, got, exp);
        }
}

/*
 * Watershed by hand (§2). Field, 7 x 3, z = 0 on top, hole at (3, 2):
 *
 *     z=0  #######
 *     z=1  #######
 *     z=2  ###.###
 *
 * Distances (§1: boundary = missing link): rows 0 and 2, (0,1), (6,1) and (3,1) (its +z
 * link is missing) are 0; (1,1), (2,1), (4,1), (5,1) are 2 (one orthogonal step from a
 * boundary span).
 * Level 2: no region exists, so growth joins nothing; basins in span order: (1,1) opens
 * region 1 and floods (2,1) (same level, linked); (3,1) is level 0, so (4,1) opens
 * region 2 and floods (5,1).
 * Level 0, round 1 (state at the round's start): (1,0), (2,0), (0,1), (1,2), (2,2) see
 * region 1 -> 1; (4,0), (5,0), (6,1), (4,2), (5,2) see region 2 -> 2; (3,1) sees 1 and 2
 * -> the smaller, 1; (3,0) sees only unassigned spans (its neighbours join in this same
 * round) -> nothing; the corners likewise.
 * Round 2, candidates next to round-1 joins: (0,0), (0,2) -> 1; (6,0), (6,2) -> 2; (3,0)
 * sees (2,0) = 1, (4,0) = 2, (3,1) = 1 -> 1.
 * Round 3: no candidate left. No basin. Regions: 1 = x 0..3 of rows 0-1 and x 0..2 of
 * row 2 (11 spans), 2 = x 4..6 (9 spans); numbering keeps 1, 2 (first spans (0,0), (4,0)).
 */
Test(regions, watershed_hand_derived)
{
    static const char *const pic[] = {"#######", "#######", "###.###"};
    op_chf *chf = text_field(A, pic, 3);
    static const uint32_t want_dist[] = {0, 0, 0, 0, 0, 0, 0, 0, 2, 2,
                                         0, 2, 2, 0, 0, 0, 0, 0, 0, 0};
    for (uint32_t s = 0; s < chf->span_count; s++)
        cr_assert_eq(chf->dist[s], want_dist[s], "oracle distance of span %u", s);
    op_regions r;
    build_regions(chf, OP_PARTITION_WATERSHED, 0, 0, A, &r);
    static const char *const want[] = {"1111222", "1111222", "111.222"};
    cr_assert_eq(r.region_count, 2);
    expect_picture(chf, &r, want);
    check_partition(chf, &r, 0, 0, OP_PARTITION_WATERSHED);
}

Test(regions, watershed_rounds_are_synchronous)
{
    /* Joins of a round are decided on the state at its start (§2). Two rows of five,
     * distances set by hand (the watershed only reads dist):
     *     row 0: a b c d e   dist 6 2 4 2 6
     *     row 1: f g h i j   dist 0 0 0 0 0
     * Level 6: a opens 1, e opens 2. Level 4: c has no region neighbour -> basin 3.
     * Level 2, round 1: b sees a (1) and c (3) -> 1; d sees c (3) and e (2) -> 2.
     * Level 0, round 1: f..j each see only their upper neighbour (their row neighbours
     * are unassigned at the round's start): 1 1 3 2 2. Joining one by one in index order
     * would give h min(3, g = 1) = 1 instead. Numbering by first span: 1 -> 1, 3 -> 2,
     * 2 -> 3. */
    static const char *const pic[] = {"#####", "#####"};
    op_chf *chf = op_test_field_from_text(A, pic, 2);
    static uint32_t dist[] = {6, 2, 4, 2, 6, 0, 0, 0, 0, 0};
    chf->dist = dist;
    op_regions r;
    build_regions(chf, OP_PARTITION_WATERSHED, 0, 0, A, &r);
    static const char *const want[] = {"11233", "11233"};
    cr_assert_eq(r.region_count, 3);
    expect_picture(chf, &r, want);
    op_regions nv;
    naive_regions(chf, OP_PARTITION_WATERSHED, 0, 0, &nv);
    assert_same_regions(&r, &nv, "naive");
    naive_free(&nv);
}

Test(regions, two_regions_touching_at_a_corner)
{
    /* Corner contact is no link: two components, two regions in every partition; with
     * MinRegionArea 5 both are islands (4 spans, no neighbour) and vanish. */
    static const char *const pic[] = {"##..", "##..", "..##", "..##"};
    op_chf *chf = text_field(A, pic, 4);
    static const char *const want[] = {"11..", "11..", "..22", "..22"};
    for (int p = 0; p < 3; p++) {
        op_regions r;
        build_regions(chf, (op_partition)p, 0, 400, A, &r);
        cr_assert_eq(r.region_count, 2, "partition %d", p);
        expect_picture(chf, &r, want);
        build_regions(chf, (op_partition)p, 5, 400, A, &r);
        cr_assert_eq(r.region_count, 0, "partition %d", p);
        build_regions(chf, (op_partition)p, 4, 400, A, &r);
        cr_assert_eq(r.region_count, 2, "partition %d: 4 spans is not fewer than 4", p);
    }
}

/*
 * Monotone by hand (§3) on a square with a hole:
 *   rows 0-1: one sweep each -> region 1;
 *   rows 2-4: two sweeps (left, right) both touching region 1 -> neither continues it
 *             (another sweep of the row touches 1): row 2 opens 2 (left) and 3 (right),
 *             rows 3-4 continue them;
 *   rows 5-6: one sweep touching 2 and 3 -> new region 4, continued by row 6.
 * Merging with MergeRegionArea 10: pass 1 visits 2 (6 spans): neighbours 1 and 4 share
 * two links each -> the smaller id, 1; then 3 (6 spans) likewise into 1; 4 has 14 spans.
 * Pass 2 merges nothing. Numbering: {1,2,3} -> 1, {4} -> 2.
 */
Test(regions, monotone_square_with_hole)
{
    static const char *const pic[] = {"#######", "#######", "##...##", "##...##",
                                      "##...##", "#######", "#######"};
    op_chf *chf = text_field(A, pic, 7);
    op_regions r;
    build_regions(chf, OP_PARTITION_MONOTONE, 0, 0, A, &r);
    static const char *const want0[] = {"1111111", "1111111", "22...33", "22...33",
                                        "22...33", "4444444", "4444444"};
    cr_assert_eq(r.region_count, 4);
    expect_picture(chf, &r, want0);
    build_regions(chf, OP_PARTITION_MONOTONE, 0, 10, A, &r);
    static const char *const want1[] = {"1111111", "1111111", "11...11", "11...11",
                                        "11...11", "2222222", "2222222"};
    cr_assert_eq(r.region_count, 2);
    expect_picture(chf, &r, want1);
    /* Everything below MergeRegionArea: one region per same-area component. */
    for (int p = 0; p < 3; p++) {
        build_regions(chf, (op_partition)p, 0, 400, A, &r);
        cr_assert_eq(r.region_count, 1, "partition %d", p);
        check_partition(chf, &r, 0, 400, (op_partition)p);
    }
}

Test(regions, one_cell_corridor)
{
    /* Two 5x5 rooms joined by a corridor one cell wide: every corridor span is a
     * boundary span (distance 0). Corridor spans must end in a room's region or their
     * own; the result is connected regions, and with merging everything is one region. */
    static const char *const pic[] = {"#####....#####", "#####....#####", "##############",
                                      "#####....#####", "#####....#####"};
    op_chf *chf = text_field(A, pic, 5);
    for (int p = 0; p < 3; p++) {
        op_regions r;
        build_regions(chf, (op_partition)p, 0, 0, A, &r);
        check_partition(chf, &r, 0, 0, (op_partition)p);
        op_regions nv;
        naive_regions(chf, (op_partition)p, 0, 0, &nv);
        assert_same_regions(&r, &nv, "naive");
        naive_free(&nv);
        build_regions(chf, (op_partition)p, 0, 400, A, &r);
        cr_assert_eq(r.region_count, 1, "partition %d", p);
    }
    /* Watershed: the rooms' interiors are two basins (distance 2 at their centre rows,
     * not linked at that level through the corridor), so without merging the corridor
     * splits at least two regions. */
    op_regions r;
    build_regions(chf, OP_PARTITION_WATERSHED, 0, 0, A, &r);
    cr_assert_geq(r.region_count, 2);
    int c_left = 2 + 2 * 14, c_right = 11 + 2 * 14;
    cr_assert_neq(r.reg[chf->cells[c_left]], r.reg[chf->cells[c_right]]);
}

Test(regions, areas_never_mix)
{
    /* Two areas side by side: regions follow the area border in every partition. */
    static const char *const pic[] = {"1111122222", "1111122222", "1111122222", "1111122222"};
    op_chf *chf = text_field(A, pic, 4);
    for (int p = 0; p < 3; p++) {
        op_regions r;
        build_regions(chf, (op_partition)p, 0, 400, A, &r);
        cr_assert_eq(r.region_count, 2, "partition %d", p);
        static const char *const want[] = {"1111122222", "1111122222", "1111122222", "1111122222"};
        expect_picture(chf, &r, want);
        cr_assert_eq(r.region_area[1], 1);
        cr_assert_eq(r.region_area[2], 2);
    }
}

Test(regions, area_zero_spans_have_no_region)
{
    static const char *const pic[] = {"#####", "#0#0#", "#####"};
    op_chf *chf = text_field(A, pic, 3);
    for (int p = 0; p < 3; p++) {
        op_regions r;
        build_regions(chf, (op_partition)p, 0, 0, A, &r);
        cr_assert_eq(r.reg[chf->cells[1 + 5]], 0);
        cr_assert_eq(r.reg[chf->cells[3 + 5]], 0);
        check_partition(chf, &r, 0, 0, (op_partition)p);
    }
}

/*
 * Tile border band (clarifications.md, regions 5): a region with a span in the band is no
 * island, since the rest of it lies in a neighbouring tile. Field 12 x 12, band 3 cells
 * (core x, z in 3..8), MinRegionArea 8:
 *
 *     z=5   ######......   corridor piece, 6 spans, x 0..2 in the band
 *     z=8   ......##....   island inside the core, 2 spans
 *     z=10  .........###   island inside the band, 3 spans
 *
 * Plain build (border 0): all three are islands (fewer than 8 spans, no neighbour) and
 * vanish. Tile build (border 3): the corridor piece and the band island reach the band and
 * stay (regions 1 and 2 in order of first span); the core island still goes. The same for
 * every partition, merging on or off, and for the layer-first entry point.
 */
static const char *const band_pic[] = {
    "............", "............", "............", "............", "............", "######......",
    "............", "............", "......##....", "............", ".........###", "............"};

static const char *const empty_pic[] = {
    "............", "............", "............", "............", "............", "............",
    "............", "............", "............", "............", "............", "............"};

/* MinRegionArea 8 on chf: the plain build (border 0) gives picture `plain`, the tile build
 * (border 3) `tile`, for every partition, merging on or off, and for the layer-first entry
 * point; MinRegionArea 6 without the band gives `six`. */
static void expect_band_pictures(op_chf *chf, const char *const *plain, const char *const *tile,
                                 const char *const *six)
{
    for (int p = 0; p < 3; p++)
        for (int merge = 0; merge <= 400; merge += 400) {
            op_regions r;
            chf->border = 0;
            build_regions(chf, (op_partition)p, 8, merge, A, &r);
            expect_picture(chf, &r, plain);
            chf->border = 3;
            build_regions(chf, (op_partition)p, 8, merge, A, &r);
            expect_picture(chf, &r, tile);
            check_partition(chf, &r, 8, merge, (op_partition)p);
            chf->border = 0;
            build_regions(chf, (op_partition)p, 6, merge, A, &r);
            expect_picture(chf, &r, six);
        }
    op_region_settings rs;
    op_region_settings_default(&rs);
    rs.partition = OP_PARTITION_LAYERS;
    rs.min_region_area = 8;
    for (int b = 0; b <= 3; b += 3) {
        op_regions r;
        uint16_t *rl;
        op_err e;
        chf->border = b;
        cr_assert_eq(op_regions_build_layer_first(chf, chf, &rs, A, A, &r, &rl, &e), OP_OK, "%s",
                     e.msg);
        expect_picture(chf, &r, b ? tile : plain);
    }
}

Test(regions, band_piece_is_kept_in_a_tile_build_only)
{
    static const char *const tile[] = {"............", "............", "............",
                                       "............", "............", "111111......",
                                       "............", "............", "............",
                                       "............", ".........222", "............"};
    /* With MinRegionArea 6 the corridor piece is no island even without the band. */
    static const char *const six[] = {"............", "............", "............",
                                      "............", "............", "111111......",
                                      "............", "............", "............",
                                      "............", "............", "............"};
    expect_band_pictures(text_field(A, band_pic, 12), empty_pic, tile, six);
}

/* R1 (../shared/spec/amendments.md): islands are connected groups of regions. Two pieces
 * of two areas each (so every partition makes two regions of each piece, each the other's
 * only neighbour): 6 spans in all, below MinRegionArea 8. The literal §5.1 kept both
 * pieces (every region has a neighbour); R1 removes the group, except the piece in row
 * z 10, which lies in the band of a tile build (border 3). A group of exactly
 * MinRegionArea spans stays. */
static const char *const pair_pic[] = {
    "............", "............", "............", "............", "............", "...111222...",
    "............", "............", "............", "............", "......111222", "............"};

Test(regions, island_group_of_two_regions_goes_unless_it_reaches_the_band)
{
    static const char *const tile[] = {"............", "............", "............",
                                       "............", "............", "............",
                                       "............", "............", "............",
                                       "............", "......111222", "............"};
    static const char *const six[] = {"............", "............", "............",
                                      "............", "............", "...111222...",
                                      "............", "............", "............",
                                      "............", "......333444", "............"};
    expect_band_pictures(text_field(A, pair_pic, 12), empty_pic, tile, six);
}

Test(regions, band_changes_nothing_but_islands)
{
    /* On seeded fields with a band of 5 cells, every span with a region in the plain build
     * keeps one, in the same grouping (ids may shift); the only new regions are former
     * islands that reach the band. check_partition asserts that no removed island does. */
    for (uint64_t seed = 90; seed < 96; seed++)
        for (int p = 0; p < 3; p++) {
            op_chf *chf = seed % 2 ? random_field(A, seed, 30, 26, 2, 2)
                                   : storey_field(A, seed, 30, 26, 2, 2);
            op_regions r0, r1;
            chf->border = 0;
            build_regions(chf, (op_partition)p, 12, 30, A, &r0);
            chf->border = 5;
            build_regions(chf, (op_partition)p, 12, 30, A, &r1);
            check_partition(chf, &r1, 12, 30, (op_partition)p);
            uint8_t *band = band_spans(chf);
            uint16_t *map = calloc((size_t)r0.region_count + 1, sizeof *map);
            /* R1: a group (a walkable component) reaching the band keeps all its spans. */
            uint32_t ncomp;
            uint32_t *comp = walkable_components(chf, &ncomp);
            uint8_t *reaches = calloc((size_t)ncomp + 1, 1);
            for (uint32_t s = 0; s < chf->span_count; s++)
                reaches[comp[s]] |= band[s];
            int kept = 0;
            for (uint32_t s = 0; s < chf->span_count; s++) {
                if (r0.reg[s] == 0) {
                    cr_assert(r1.reg[s] == 0 || reaches[comp[s]],
                              "seed %d partition %d: span %u kept away from the band", (int)seed, p,
                              s);
                    kept += r1.reg[s] != 0;
                    continue;
                }
                cr_assert_neq(r1.reg[s], 0, "seed %d partition %d: span %u lost its region",
                              (int)seed, p, s);
                if (map[r0.reg[s]] == 0)
                    map[r0.reg[s]] = r1.reg[s];
                cr_assert_eq(map[r0.reg[s]], r1.reg[s], "seed %d partition %d: span %u regrouped",
                             (int)seed, p, s);
            }
            cr_assert_geq(r1.region_count, r0.region_count);
            cr_assert_eq(r1.region_count > r0.region_count, kept > 0);
            free(map);
            free(reaches);
            free(comp);
            free(band);
        }
}

/* ---- random fields: invariants and the naive implementation ---- */

typedef struct rcase {
    uint64_t seed;
    int w, d, floors, nareas, min_area, merge_area;
} rcase;

static const rcase cases[] = {
    {1, 12, 12, 1, 1, 0, 0},    {2, 16, 10, 1, 2, 4, 12},   {3, 20, 20, 2, 1, 8, 30},
    {4, 24, 18, 3, 2, 6, 40},   {5, 30, 30, 1, 3, 10, 60},  {6, 32, 24, 2, 2, 0, 100},
    {7, 40, 40, 1, 1, 64, 400}, {8, 36, 36, 3, 1, 12, 25},  {9, 28, 40, 2, 3, 3, 9},
    {10, 44, 30, 1, 2, 20, 0},  {11, 48, 48, 2, 1, 30, 80}, {12, 64, 64, 1, 2, 64, 400},
};

static void run_random(op_partition p)
{
    for (size_t i = 0; i < 2 * sizeof cases / sizeof cases[0]; i++) {
        const rcase *c = &cases[i / 2];
        op_arena *a = op_arena_create(0);
        op_chf *chf = i % 2 ? storey_field(a, c->seed, c->w, c->d, c->floors, c->nareas)
                            : random_field(a, c->seed, c->w, c->d, c->floors, c->nareas);
        op_regions r, nv;
        build_regions(chf, p, c->min_area, c->merge_area, a, &r);
        check_partition(chf, &r, c->min_area, c->merge_area, p);
        if (p == OP_PARTITION_LAYERS)
            check_layers(chf, &r);
        char what[64];
        snprintf(what, sizeof what, "case %zu partition %d", i, (int)p);
        if (c->w * c->d <= 48 * 48) {
            naive_regions(chf, p, c->min_area, c->merge_area, &nv);
            assert_same_regions(&r, &nv, what);
            naive_free(&nv);
            /* The same field as a tile grid with a band of 4 cells. */
            chf->border = 4;
            build_regions(chf, p, c->min_area, c->merge_area, a, &r);
            check_partition(chf, &r, c->min_area, c->merge_area, p);
            naive_regions(chf, p, c->min_area, c->merge_area, &nv);
            strcat(what, " band 4");
            assert_same_regions(&r, &nv, what);
            naive_free(&nv);
        }
        op_arena_destroy(a);
    }
}

Test(regions, watershed_random_fields, .timeout = 120)
{
    run_random(OP_PARTITION_WATERSHED);
}

/* The watershed counts its levels in one pass when every distance is within the grid's
 * bound, 2 (width - 1) (regions_watershed.c), and in two passes past it: the same regions
 * either way. Every random field below has its exact distances (within the bound) and then
 * the same distances scaled past it (an order-preserving map: the same levels, so the same
 * regions); both against the naive watershed of the same distances. */
Test(regions, watershed_levels_within_and_past_the_grid_bound, .timeout = 120)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const rcase *c = &cases[i];
        op_arena *a = op_arena_create(0);
        op_chf *chf = random_field(a, c->seed, c->w, c->d, c->floors, c->nareas);
        uint32_t bound = 2 * ((uint32_t)chf->width - 1), top = 0;
        for (uint32_t s = 0; s < chf->span_count; s++)
            if (chf->areas[s] != 0 && chf->dist[s] > top)
                top = chf->dist[s];
        cr_assert_leq(top, bound, "case %zu: distance %u past the bound %u", i, top, bound);
        op_regions exact, scaled, nv;
        build_regions(chf, OP_PARTITION_WATERSHED, c->min_area, c->merge_area, a, &exact);
        char what[64];
        snprintf(what, sizeof what, "case %zu exact", i);
        naive_regions(chf, OP_PARTITION_WATERSHED, c->min_area, c->merge_area, &nv);
        assert_same_regions(&exact, &nv, what);
        naive_free(&nv);
        for (uint32_t s = 0; s < chf->span_count; s++)
            chf->dist[s] = chf->dist[s] * 7 + bound + 1;
        build_regions(chf, OP_PARTITION_WATERSHED, c->min_area, c->merge_area, a, &scaled);
        snprintf(what, sizeof what, "case %zu scaled", i);
        assert_same_regions(&scaled, &exact, what);
        naive_regions(chf, OP_PARTITION_WATERSHED, c->min_area, c->merge_area, &nv);
        assert_same_regions(&scaled, &nv, what);
        naive_free(&nv);
        op_arena_destroy(a);
    }
}

Test(regions, monotone_random_fields, .timeout = 120)
{
    run_random(OP_PARTITION_MONOTONE);
}

Test(regions, monotone_rows_are_single_runs_without_filtering)
{
    /* §3: without filtering, a region has at most one sweep per row. */
    op_chf *chf = random_field(A, 21, 40, 30, 3, 2);
    op_regions r;
    build_regions(chf, OP_PARTITION_MONOTONE, 0, 0, A, &r);
    for (int z = 0; z < chf->depth; z++) {
        /* starts[id] = number of spans of id in row z whose -x link is not id */
        int *starts = calloc((size_t)r.region_count + 1, sizeof *starts);
        for (int x = 0; x < chf->width; x++) {
            int c = x + z * chf->width;
            for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
                if (r.reg[s] == 0)
                    continue;
                uint32_t p = chf->links[s][0];
                if (p == OP_NO_LINK || r.reg[p] != r.reg[s])
                    cr_assert_eq(++starts[r.reg[s]], 1, "region %u has two runs in row %d",
                                 r.reg[s], z);
            }
        }
        free(starts);
    }
}

Test(regions, merge_makes_one_region_per_small_component)
{
    /* With MergeRegionArea above every component's size, each same-area component ends
     * as exactly one region (merging continues while a same-area neighbour exists). */
    op_chf *chf = random_field(A, 31, 24, 24, 2, 2);
    uint32_t n = chf->span_count;
    for (int p = 0; p < 2; p++) {
        op_regions r;
        build_regions(chf, (op_partition)p, 0, 1 << 20, A, &r);
        /* same-area components by flood */
        uint32_t *comp = calloc((size_t)n + 1, sizeof *comp), *stack = malloc((n + 1) * 4);
        uint32_t k = 0;
        for (uint32_t s = 0; s < n; s++) {
            if (!chf->areas[s] || comp[s])
                continue;
            uint32_t top = 0;
            comp[s] = ++k;
            stack[top++] = s;
            while (top) {
                uint32_t c = stack[--top];
                for (int d = 0; d < 4; d++) {
                    uint32_t m = chf->links[c][d];
                    if (m != OP_NO_LINK && !comp[m] && chf->areas[m] == chf->areas[c]) {
                        comp[m] = k;
                        stack[top++] = m;
                    }
                }
            }
        }
        cr_assert_eq((uint32_t)r.region_count, k, "partition %d", p);
        for (uint32_t s = 0; s < n; s++)
            for (int d = 0; d < 4; d++) {
                uint32_t m = chf->links[s][d];
                if (m != OP_NO_LINK && comp[s] && comp[m] == comp[s])
                    cr_assert_eq(r.reg[m], r.reg[s]);
            }
        free(comp);
        free(stack);
    }
}

Test(regions, region_limit_is_elimit)
{
    /* A checkerboard of areas 1 and 2 on 256 x 256 cells: every span is its own region
     * (no same-area link, nothing to merge), 65536 regions > OP_MAX_REGIONS (65534). */
    int w = 256, d = 256;
    int *counts = malloc((size_t)w * d * sizeof *counts);
    op_test_span *spans = malloc((size_t)w * d * sizeof *spans);
    for (int i = 0; i < w * d; i++) {
        counts[i] = 1;
        spans[i] = (op_test_span){0, 100, 1 + ((i % w + i / w) & 1)};
    }
    op_chf *chf = op_test_field(A, w, d, counts, spans, 10, 4);
    op_region_settings rs;
    op_regions r;
    op_err e;
    op_region_settings_default(&rs);
    rs.partition = OP_PARTITION_MONOTONE;
    rs.min_region_area = 0;
    cr_assert_eq(op_regions_build(chf, &rs, A, A, &r, &e), OP_ELIMIT);
    cr_assert(strstr(e.msg, "65536 regions"), "%s", e.msg);
    /* 65534 regions: exactly at the limit (two cells made area 0). */
    chf->areas[0] = 0;
    chf->areas[1] = 0;
    cr_assert_eq(op_regions_build(chf, &rs, A, A, &r, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(r.region_count, OP_MAX_REGIONS);
    free(counts);
    free(spans);
}

/* ---- hash-matrix scenarios ---- */

static int list_sink(void *ctx, const char *data, size_t len)
{
    return op_hash_sink_write(ctx, data, len);
}

/* Five seeded fields, sizes 24..48, 1-3 floors, 1-3 areas (three of op_test_field_random,
 * two storey fields); region areas scaled to the field size. */
static uint64_t scenario_hash(op_partition p)
{
    static const rcase fields[] = {
        {101, 24, 24, 1, 1, 8, 20},  {102, 32, 28, 2, 2, 8, 40},  {103, 40, 36, 3, 1, 12, 60},
        {104, 48, 48, 1, 3, 16, 80}, {105, 44, 40, 2, 2, 10, 50},
    };
    uint64_t h = OP_HASH_INIT;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const rcase *c = &fields[i];
        op_arena *a = op_arena_create(0);
        op_chf *chf = i < 3 ? random_field(a, c->seed, c->w, c->d, c->floors, c->nareas)
                            : storey_field(a, c->seed, c->w, c->d, c->floors, c->nareas);
        op_regions r;
        build_regions(chf, p, c->min_area, c->merge_area, a, &r);
        cr_assert_eq(op_regions_dump(chf, &r, list_sink, &h), 0);
        op_arena_destroy(a);
    }
    return h;
}

Test(regions, scenario_watershed, .timeout = 120)
{
    uint64_t h = scenario_hash(OP_PARTITION_WATERSHED);
    cr_assert_eq(h, scenario_hash(OP_PARTITION_WATERSHED));
    op_test_golden("build3d/regions-watershed", h);
}

Test(regions, scenario_monotone, .timeout = 120)
{
    uint64_t h = scenario_hash(OP_PARTITION_MONOTONE);
    cr_assert_eq(h, scenario_hash(OP_PARTITION_MONOTONE));
    op_test_golden("build3d/regions-monotone", h);
}
