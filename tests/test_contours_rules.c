/*
 * Contour rules of build3d-regions.md §6 that the other suites did not pin (a mutation run
 * changed each and only a golden hash, or nothing, noticed): every test here is a small
 * hand-made field (or, for the bridge rules, hand-made loops given to the hole joiner) on
 * which the rule as written and its nearest wrong variant give different contours.
 *
 *  simplification: the wall split at exactly MaxEdgeLength; tile-border (-1) stretches never
 *    length-split; the lowest index among equal smallest / largest vertices (a loop passing
 *    one corner on two floors, as a ramp over its own start does);
 *  tracing: the corner height through the second edge's neighbour;
 *  holes: the smallest containing outline and its tie; a leftmost vertex on an outline edge;
 *    a joined loop of exactly zero area; holes joined in leftmost-vertex order; a hole
 *    touching itself at its leftmost corner; the interior cones at p and at q; bridge
 *    distance ties; a bridge through a later hole or across its own hole.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../core/src/contours_internal.h"
#include "onepath/contours.h"
#include "op_fields.h"
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

TestSuite(contour_rules, .init = setup, .fini = teardown, .timeout = 60);

static op_contour_set build(const op_chf *chf, const op_regions *r, double err, int edge)
{
    op_contour_settings cs;
    op_contour_settings_default(&cs);
    cs.max_error = err;
    cs.max_edge_length = edge;
    cs.keep_raw = 1;
    op_contour_set set;
    op_err e;
    cr_assert_eq(op_contours_build(chf, r, &cs, OUT, SCR, &set, &e), OP_OK, "%s", e.msg);
    op_arena_reset(SCR);
    return set;
}

static op_contour_set build_text(const char *const *rows, int depth, double err, int edge)
{
    op_chf *chf = op_test_field_from_text(A, rows, depth);
    return build(chf, label_regions(A, chf, 0, 0), err, edge);
}

static int has_vert(const op_contour *c, int x, int y, int z)
{
    for (int i = 0; i < c->nverts; i++)
        if (c->verts[i].x == x && c->verts[i].y == y && c->verts[i].z == z)
            return 1;
    return 0;
}

/* ===== simplification ===== */

/* A 12 x 3 room: its long walls are exactly MaxEdgeLength = 12 cells, which is not more
 * than the limit, so they stay single edges; at 11 each is split at its middle vertex. */
Test(contour_rules, wall_of_exactly_max_edge_length_is_not_split)
{
    static const char *const rows[] = {".............", ".############.", ".############.",
                                       ".############.", ".............."};
    op_contour_set set = build_text(rows, 5, 1.3, 12);
    cr_assert_eq(set.count, 1);
    cr_assert_eq(set.contours[0].nverts, 4, "a 12-cell wall split at MaxEdgeLength 12");
    set = build_text(rows, 5, 1.3, 11);
    cr_assert_eq(set.contours[0].nverts, 6, "12 > 11: both long walls split once");
    cr_assert(has_vert(&set.contours[0], 7, 0, 1) && has_vert(&set.contours[0], 7, 0, 4));
}

/* A field-filling 20 x 3 floor: every edge leaves the grid (-1). Only walls are split by
 * length, so its 20-cell sides stay whole at MaxEdgeLength 12. */
Test(contour_rules, tile_border_stretches_are_never_length_split)
{
    static const char *const rows[] = {"####################", "####################",
                                       "####################"};
    op_contour_set set = build_text(rows, 3, 1.3, 12);
    cr_assert_eq(set.count, 1);
    const op_contour *c = &set.contours[0];
    cr_assert_eq(c->nverts, 4, "%d vertices: a -1 stretch was length-split", c->nverts);
    for (int i = 0; i < c->nverts; i++)
        cr_assert_eq(c->verts[i].neighbour, OP_TILE_BORDER);
}

/* Simplifies a hand-made loop (all walls) of region 1 with MaxError err, no length split. */
static int simplify(const op_contour_vert *raw, int n, double err, op_contour_vert *out)
{
    op_contour_settings cs;
    op_contour_settings_default(&cs);
    cs.max_error = err;
    cs.max_edge_length = 0;
    uint8_t areas[2] = {0, 63};
    op_regions r = {0, NULL, 1, areas};
    op_err e;
    op__simplify_ctx ctx = {&cs, &r, SCR, &e, NULL, NULL, NULL};
    int m = 0, fallback = 0;
    cr_assert_eq(op__simplify_loop(&ctx, raw, n, op__loop_area2(raw, n), 1, out, &m, &fallback),
                 OP_OK, "%s", e.msg);
    cr_assert_eq(fallback, 0);
    return m;
}

static void expect_verts(const op_contour_vert *v, int n, const int (*want)[3], int nwant)
{
    cr_assert_eq(n, nwant, "%d vertices, want %d", n, nwant);
    for (int i = 0; i < n; i++)
        cr_assert(v[i].x == want[i][0] && v[i].y == want[i][1] && v[i].z == want[i][2],
                  "vertex %d: (%d %d %d), want (%d %d %d)", i, v[i].x, v[i].y, v[i].z, want[i][0],
                  want[i][1], want[i][2]);
}

/* A loop passing its smallest corner P = (0, 0) twice, as a ramp over its own start does: the
 * 20 m square at height 0, then a small lobe P (3, 0) (0, 3) at height 8. With one neighbour
 * value all round the kept ends are the smallest and largest (x, z), lowest index on ties: P at
 * height 0 and (20, 20). Refinement at MaxError 3 keeps (20, 0) and (0, 20) (14 away) and
 * nothing of the lobe (at most 3 from the chord (0, 20) -> P), so P at height 8 goes. Taking
 * the later P instead keeps height 8 and loses P at height 0. */
Test(contour_rules, smallest_vertex_tie_keeps_the_lowest_index)
{
    static const op_contour_vert raw[] = {{0, 0, 0, 0},  {20, 0, 0, 0}, {20, 0, 20, 0},
                                          {0, 0, 20, 0}, {0, 8, 0, 0},  {3, 8, 0, 0},
                                          {0, 8, 3, 0}};
    op_contour_vert out[8];
    int m = simplify(raw, 7, 3.0, out);
    static const int want[][3] = {{0, 0, 0}, {20, 0, 0}, {20, 0, 20}, {0, 0, 20}};
    expect_verts(out, m, want, 4);
}

/* The same loop turned half round: the largest corner (20, 20) is passed twice. */
Test(contour_rules, largest_vertex_tie_keeps_the_lowest_index)
{
    static const op_contour_vert raw[] = {{20, 0, 20, 0}, {0, 0, 20, 0},  {0, 0, 0, 0},
                                          {20, 0, 0, 0},  {20, 8, 20, 0}, {17, 8, 20, 0},
                                          {20, 8, 17, 0}};
    op_contour_vert out[8];
    int m = simplify(raw, 7, 3.0, out);
    static const int want[][3] = {{20, 0, 20}, {0, 0, 20}, {0, 0, 0}, {20, 0, 0}};
    expect_verts(out, m, want, 4);
}

/* ===== tracing ===== */

/* The mirror of contours/vertex_height_is_the_highest_floor_around_the_corner: (0,0) y 0 is
 * the region; (0,1) y 10 is not linked to it, (1,0) y 3 is, and (1,1) y 7 is linked to (1,0).
 * The corner (1,1) of the +z edge sees (1,1) only through the second edge's neighbour. */
Test(contour_rules, corner_height_reaches_the_diagonal_through_the_second_edge)
{
    int counts[4] = {1, 1, 1, 1};
    op_test_span spans[4] = {{0, 100, 63}, {3, 100, 63}, {10, 100, 63}, {7, 100, 63}};
    op_chf *chf = op_test_field(A, 2, 2, counts, spans, 10, 4);
    cr_assert_eq(chf->links[0][1], OP_NO_LINK);
    cr_assert_neq(chf->links[0][2], OP_NO_LINK);
    int ids[4] = {1, 0, 0, 0};
    op_contour_set set = build(chf, regions_from_ids(A, chf, ids), 1.3, 12);
    cr_assert_eq(set.count, 1);
    static const int want[][4] = {{0, 0, 1, -1}, {0, 0, 0, -1}, {1, 3, 0, 0}, {1, 7, 1, 0}};
    const op_contour *c = &set.contours[0];
    cr_assert_eq(c->nverts, 4);
    for (int i = 0; i < 4; i++)
        cr_assert(c->verts[i].x == want[i][0] && c->verts[i].y == want[i][1] &&
                      c->verts[i].z == want[i][2] && c->verts[i].neighbour == want[i][3],
                  "vertex %d: (%d %d %d n%d)", i, c->verts[i].x, c->verts[i].y, c->verts[i].z,
                  c->verts[i].neighbour);
}

/* ===== holes: which outline, and whether joined ===== */

typedef struct plat {
    int x0, z0, x1, z1, y; /* cells [x0, x1) x [z0, z1) at floor y */
} plat;

/* Region 1, given by hand (several floors, one id, as a region overlapping itself is): a
 * 12 x 12 floor at row 0 with a hole [4, 8)^2, and platforms over it at their floors, not
 * linked to it (climb 2). */
static op_contour_set ring_and_platforms(const plat *p, int np)
{
    enum { W = 12 };
    int counts[W * W], n = 0;
    op_test_span spans[W * W * 4];
    for (int z = 0; z < W; z++)
        for (int x = 0; x < W; x++) {
            int ys[4], k = 0;
            if (!(x >= 4 && x < 8 && z >= 4 && z < 8))
                ys[k++] = 0;
            for (int i = 0; i < np; i++)
                if (x >= p[i].x0 && x < p[i].x1 && z >= p[i].z0 && z < p[i].z1)
                    ys[k++] = p[i].y;
            counts[x + z * W] = k;
            for (int i = 0; i < k; i++)
                spans[n++] = (op_test_span){ys[i], i + 1 < k ? ys[i + 1] - ys[i] : 200, 63};
        }
    op_chf *chf = op_test_field(A, W, W, counts, spans, 10, 2);
    int *ids = malloc(chf->span_count * sizeof *ids);
    for (uint32_t s = 0; s < chf->span_count; s++)
        ids[s] = 1;
    op_regions *r = regions_from_ids(A, chf, ids);
    free(ids);
    return build(chf, r, 1.3, 12);
}

/* The hole's leftmost vertex (4, 4) lies in the ring's outline (area 144) and in the 8 x 8
 * platform's (64): the smallest one takes it, and the hole is bridged to the platform. */
Test(contour_rules, hole_goes_to_the_smallest_containing_outline)
{
    const plat p[] = {{2, 2, 10, 10, 30}};
    op_contour_set set = ring_and_platforms(p, 1);
    cr_assert_eq(set.count, 2);
    cr_assert_eq(set.contours[0].nraw_holes, 0, "the ring's outline took the hole");
    cr_assert_eq(set.contours[1].nraw_holes, 1);
    cr_assert_eq(set.contours[1].nholes, 1);
    cr_assert_eq(set.dropped_holes, 0);
}

/* Two platforms of equal area (64) at floors 30 and 60 both contain it: the lower index (the
 * one discovered first, floor 30) takes it. */
Test(contour_rules, equal_containing_outlines_tie_to_the_lowest_index)
{
    const plat p[] = {{2, 2, 10, 10, 30}, {2, 2, 10, 10, 60}};
    op_contour_set set = ring_and_platforms(p, 2);
    cr_assert_eq(set.count, 3);
    cr_assert_eq(set.contours[1].verts[0].y, 30);
    cr_assert_eq(set.contours[1].nraw_holes, 1, "the hole went elsewhere than floor 30");
    cr_assert_eq(set.contours[2].nraw_holes, 0);
    cr_assert_eq(set.contours[0].nraw_holes, 0);
}

/* The platform [2, 10) x [4, 10) has the hole's leftmost vertex (4, 4) on its bottom edge:
 * boundary counts as inside, so the platform (smaller than the ring) takes the hole, even
 * though no bridge to it exists (the hole lies on the platform's edge) and it is dropped. */
Test(contour_rules, leftmost_vertex_on_an_outline_edge_counts_as_inside)
{
    const plat p[] = {{2, 4, 10, 10, 30}};
    op_contour_set set = ring_and_platforms(p, 1);
    cr_assert_eq(set.count, 2);
    cr_assert_eq(set.contours[1].nraw_holes, 1, "the hole was not given to the platform");
    cr_assert_eq(set.contours[0].nraw_holes, 0);
    cr_assert_eq(set.contours[1].nholes, 0);
    cr_assert_eq(set.dropped_holes, 1);
}

/* A 4 x 4 platform [2, 6)^2 over the hole's corner: it is the smallest outline containing
 * (4, 4); the simplified join crosses, the raw join succeeds, and the joined loop's area is
 * 16 - 16 = 0 exactly: not positive, so the hole is dropped and the platform stays whole. */
Test(contour_rules, joined_loop_of_exactly_zero_area_drops_the_holes)
{
    const plat p[] = {{2, 2, 6, 6, 30}};
    op_contour_set set = ring_and_platforms(p, 1);
    cr_assert_eq(set.count, 2);
    const op_contour *c = &set.contours[1];
    cr_assert_eq(c->nraw_holes, 1);
    cr_assert_eq(c->nholes, 0, "a zero-area joined loop was kept");
    cr_assert_eq(area2(c->verts, c->nverts), 2 * 16);
    cr_assert_eq(c->nverts, c->raw.nverts);
    cr_assert_eq(set.raw_fallbacks, 1);
    cr_assert_eq(set.dropped_holes, 1);
}

/* ===== holes: join order and bridges ===== */

static void expect_contour(const op_contour *c, const int (*want)[3], int n)
{
    cr_assert_eq(c->nverts, n, "%d vertices, want %d", c->nverts, n);
    for (int i = 0; i < n; i++)
        cr_assert(c->verts[i].x == want[i][0] && c->verts[i].z == want[i][1] &&
                      (c->verts[i].neighbour == c->region) == want[i][2],
                  "vertex %d: (%d %d n%d), want (%d %d%s)", i, c->verts[i].x, c->verts[i].z,
                  c->verts[i].neighbour, want[i][0], want[i][1], want[i][2] ? " bridge" : "");
}

/* Hole A (cells 7..8 x 2..3) is discovered first (lower row), hole B (3..4 x 4..5) has the
 * smaller leftmost vertex: B is joined first, to (1, 1) (a tie with (1, 7) at 13, lowest
 * index), then A's nearest vertex is B's corner (5, 4) (8, nearer than the outline's
 * (11, 1) at 17). In discovery order A would take (11, 1). */
Test(contour_rules, holes_are_joined_in_leftmost_vertex_order)
{
    static const char *const rows[] = {"............", ".##########.", ".######..##.",
                                       ".######..##.", ".##..######.", ".##..######.",
                                       ".##########.", "............"};
    op_contour_set set = build_text(rows, 8, 1.3, 12);
    cr_assert_eq(set.count, 1);
    static const int want[][3] = {
        {1, 1, 1}, {3, 4, 0}, {3, 6, 0}, {5, 6, 0}, {5, 4, 1}, {7, 2, 0},  {7, 4, 0},  {9, 4, 0},
        {9, 2, 0}, {7, 2, 1}, {5, 4, 0}, {3, 4, 1}, {1, 1, 0}, {11, 1, 0}, {11, 7, 0}, {1, 7, 0}};
    expect_contour(&set.contours[0], want, 16);
    cr_assert_eq(set.contours[0].nholes, 2);
}

/* Joins hand-made holes (clockwise, in join order) into a hand-made outline (region 7). */
static int join(const int (*outline)[2], int no, const int (*const *holes)[2], const int *nh,
                int nholes, op_contour_vert *dst, int *joined)
{
    op_contour_vert *o = op_arena_alloc(A, (size_t)no * sizeof *o);
    op__ring rings[4];
    for (int i = 0; i < no; i++)
        o[i] = (op_contour_vert){outline[i][0], 0, outline[i][1], 0};
    cr_assert_gt(op__loop_area2(o, no), 0);
    for (int h = 0; h < nholes; h++) {
        op_contour_vert *v = op_arena_alloc(A, (size_t)nh[h] * sizeof *v);
        for (int i = 0; i < nh[h]; i++)
            v[i] = (op_contour_vert){holes[h][i][0], 0, holes[h][i][1], 0};
        cr_assert_lt(op__loop_area2(v, nh[h]), 0, "hole %d is not clockwise", h);
        rings[h] = (op__ring){v, nh[h]};
    }
    int m = 0;
    op_err e;
    cr_assert_eq(op__join_holes((op__ring){o, no}, rings, nholes, 7, dst, &m, joined, SCR, &e),
                 OP_OK, "%s", e.msg);
    return m;
}

static void expect_joined(const op_contour_vert *v, int m, const int (*want)[3], int n)
{
    cr_assert_eq(m, n, "%d vertices, want %d", m, n);
    for (int i = 0; i < n; i++)
        cr_assert(v[i].x == want[i][0] && v[i].z == want[i][1] &&
                      (v[i].neighbour == 7) == want[i][2],
                  "vertex %d: (%d %d n%d), want (%d %d%s)", i, v[i].x, v[i].z, v[i].neighbour,
                  want[i][0], want[i][1], want[i][2] ? " bridge" : "");
}

/* A bow-tie hole touching itself at its leftmost corner p = (6, 10): two lobes to the right,
 * p listed at indices 0 and 3. The lowest index is p: its interior cone is the whole left
 * side, and the nearest outline vertices (0, 0) and (0, 20) (136 each, lowest index first)
 * take the bridge; the hole is spliced from index 0. The copy at index 3 has the gap between
 * the lobes as its cone, which only (20, 10) lies in. */
static const int bowtie[][2] = {{6, 10}, {8, 14}, {10, 12}, {6, 10}, {10, 8}, {8, 6}};

Test(contour_rules, hole_touching_itself_at_its_leftmost_corner_bridges_from_the_first)
{
    static const int outline[][2] = {{0, 0}, {20, 0}, {20, 10}, {20, 20}, {0, 20}};
    const int(*holes[1])[2] = {bowtie};
    const int nh[1] = {6};
    op_contour_vert dst[32];
    int joined;
    int m = join(outline, 5, holes, nh, 1, dst, &joined);
    cr_assert_eq(joined, 1);
    static const int want[][3] = {{0, 0, 1},   {6, 10, 0},  {8, 14, 0}, {10, 12, 0}, {6, 10, 0},
                                  {10, 8, 0},  {8, 6, 0},   {6, 10, 1}, {0, 0, 0},   {20, 0, 0},
                                  {20, 10, 0}, {20, 20, 0}, {0, 20, 0}};
    expect_joined(dst, m, want, 13);
}

/* The same hole and a spike of the outline reaching into the gap between the lobes, to
 * (12, 10): the nearest vertex (36), clear of every edge and with p inside its own cone, but
 * outside the interior cone at p, so the bridge goes to (0, 0) as before. */
Test(contour_rules, bridge_leaves_p_inside_its_interior_cone)
{
    static const int outline[][2] = {{0, 0},   {20, 0},  {20, 9}, {12, 10},
                                     {20, 11}, {20, 20}, {0, 20}};
    const int(*holes[1])[2] = {bowtie};
    const int nh[1] = {6};
    op_contour_vert dst[32];
    int joined;
    int m = join(outline, 7, holes, nh, 1, dst, &joined);
    cr_assert_eq(joined, 1);
    static const int want[][3] = {{0, 0, 1},  {6, 10, 0},  {8, 14, 0},  {10, 12, 0}, {6, 10, 0},
                                  {10, 8, 0}, {8, 6, 0},   {6, 10, 1},  {0, 0, 0},   {20, 0, 0},
                                  {20, 9, 0}, {12, 10, 0}, {20, 11, 0}, {20, 20, 0}, {0, 20, 0}};
    expect_joined(dst, m, want, 15);
}

/* A square hole whose leftmost vertex (6, 10) is as far (136) from (0, 0) as from (0, 20):
 * the lower index, (0, 0), takes the bridge. */
Test(contour_rules, bridge_distance_ties_go_to_the_lowest_index)
{
    static const int outline[][2] = {{0, 0}, {20, 0}, {20, 20}, {0, 20}};
    static const int hole[][2] = {{6, 10}, {6, 14}, {10, 14}, {10, 10}};
    const int(*holes[1])[2] = {hole};
    const int nh[1] = {4};
    op_contour_vert dst[16];
    int joined;
    int m = join(outline, 4, holes, nh, 1, dst, &joined);
    cr_assert_eq(joined, 1);
    static const int want[][3] = {{0, 0, 1},  {6, 10, 0}, {6, 14, 0}, {10, 14, 0}, {10, 10, 0},
                                  {6, 10, 1}, {0, 0, 0},  {20, 0, 0}, {20, 20, 0}, {0, 20, 0}};
    expect_joined(dst, m, want, 10);
}

/* Hole 1 (leftmost (2, 8)) bridges to the outline's (0, 8), so the merged loop holds (2, 8)
 * twice, at indices 5 and 8. Hole 2's leftmost (3, 5) is nearest to both copies (10); every
 * edge at them is skipped, so only the cone at q tells them apart: the first copy's cone
 * (between the bridge and hole 1's upper edge) does not hold (3, 5), the second's (between
 * hole 1's lower edge and the bridge back) does. Hole 2 hangs after index 8. */
Test(contour_rules, bridge_end_q_must_see_p_inside_its_cone)
{
    static const int outline[][2] = {{0, 0}, {20, 0}, {20, 20}, {0, 20}, {0, 8}};
    static const int h1[][2] = {{2, 8}, {6, 9}, {6, 7}};
    static const int h2[][2] = {{3, 5}, {5, 6}, {5, 4}};
    const int(*holes[2])[2] = {h1, h2};
    const int nh[2] = {3, 3};
    op_contour_vert dst[32];
    int joined;
    int m = join(outline, 5, holes, nh, 2, dst, &joined);
    cr_assert_eq(joined, 2);
    static const int want[][3] = {{0, 0, 0}, {20, 0, 0}, {20, 20, 0}, {0, 20, 0}, {0, 8, 1},
                                  {2, 8, 0}, {6, 9, 0},  {6, 7, 0},   {2, 8, 1},  {3, 5, 0},
                                  {5, 6, 0}, {5, 4, 0},  {3, 5, 1},   {2, 8, 1},  {0, 8, 0}};
    expect_joined(dst, m, want, 15);
}

/* The nearest vertex to hole A's leftmost (18, 10) is (30, 10) (144), but the bridge there
 * would pass through hole B, still to be joined: it goes to (30, 0) (244) instead, and B then
 * hangs off A's second copy of (18, 10). */
Test(contour_rules, bridge_never_passes_through_a_later_hole)
{
    static const int outline[][2] = {{0, 0}, {30, 0}, {30, 10}, {30, 20}, {0, 20}};
    static const int ha[][2] = {{18, 10}, {19, 14}, {21, 13}};
    static const int hb[][2] = {{22, 8}, {22, 12}, {26, 12}, {26, 8}};
    const int(*holes[2])[2] = {ha, hb};
    const int nh[2] = {3, 4};
    op_contour_vert dst[32];
    int joined;
    int m = join(outline, 5, holes, nh, 2, dst, &joined);
    cr_assert_eq(joined, 2);
    static const int want[][3] = {{0, 0, 0},   {30, 0, 1},  {18, 10, 0}, {19, 14, 0},
                                  {21, 13, 0}, {18, 10, 1}, {22, 8, 0},  {22, 12, 0},
                                  {26, 12, 0}, {26, 8, 0},  {22, 8, 1},  {18, 10, 1},
                                  {30, 0, 0},  {30, 10, 0}, {30, 20, 0}, {0, 20, 0}};
    expect_joined(dst, m, want, 16);
}

/* An L-shaped hole from (10, 6) whose leg reaches down to z = 0: the nearest outline vertex,
 * the tip (20, -4) of a spike (200), is inside both cones, but the bridge there cuts across
 * the hole's own leg; it goes to (0, 20) (296). */
Test(contour_rules, bridge_never_cuts_across_its_own_hole)
{
    static const int outline[][2] = {{0, -10},  {19, -10}, {20, -4}, {21, -10},
                                     {30, -10}, {30, 20},  {0, 20}};
    static const int hole[][2] = {{10, 6}, {10, 8}, {16, 8}, {16, 0}, {14, 0}, {14, 6}};
    const int(*holes[1])[2] = {hole};
    const int nh[1] = {6};
    op_contour_vert dst[32];
    int joined;
    int m = join(outline, 7, holes, nh, 1, dst, &joined);
    cr_assert_eq(joined, 1);
    static const int want[][3] = {{0, -10, 0},  {19, -10, 0}, {20, -4, 0}, {21, -10, 0},
                                  {30, -10, 0}, {30, 20, 0},  {0, 20, 1},  {10, 6, 0},
                                  {10, 8, 0},   {16, 8, 0},   {16, 0, 0},  {14, 0, 0},
                                  {14, 6, 0},   {10, 6, 1},   {0, 20, 0}};
    expect_joined(dst, m, want, 15);
}
