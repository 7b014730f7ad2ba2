/*
 * The nearest-polygon rule (docs/queries.md §2) on hand-made meshes whose answers follow
 * from the rule by hand: a point directly under or over a polygon within the agent's
 * climb (settings agent_max_climb, 0.75 in the test settings) snaps to it even when
 * another polygon is nearer in 3-D (the old plain 3-D rule chose the other one); beyond
 * the climb the 3-D distance decides again; the over test is exact and closed (one ulp
 * either side of a shared edge decides), ties go to the first key; the climb is the
 * mesh's settings value; tiles away from the origin (the over test is tile-local).
 */
#include <criterion/criterion.h>
#include <math.h>

#include "onepath/query.h"
#include "op_handmesh.h"

static op_arena *arena;
static op_settings S;
static const double half[3] = {2, 4, 2};

static void setup(void)
{
    arena = op_arena_create(0);
    hm_settings(&S);
}
static void teardown(void)
{
    op_arena_destroy(arena);
}

/* Tile cell (tx, 0): layer 0 a floor G = [0, 4] x [0, 10] at world y gy, layer 1 a
 * raised slab R = [4, 10] x [0, 10] at world y ry. Key order: G is (0, 0), R is (1, 0).
 * G's east edge x = 4 lies under (or over) R's west edge. */
static op_mesh *floor_and_slab(const op_settings *s, int tx, double gy, double ry)
{
    static const float g[] = {0, 0, 0, 4, 0, 0, 4, 0, 10, 0, 0, 10};
    static const float r[] = {4, 0, 0, 10, 0, 0, 10, 0, 10, 4, 0, 10};
    static const int quad[] = {0, 1, 2, 3, -1, -1}; /* counter-clockwise, x right, z up */
    op_tile t[2];
    cr_assert_eq(hm_tile(arena, tx, 0, 0, 10.0, gy, g, 4, quad, 1, NULL, &t[0]), 0);
    cr_assert_eq(hm_tile(arena, tx, 0, 1, 10.0, ry, r, 4, quad, 1, NULL, &t[1]), 0);
    op_mesh *m;
    op_err e;
    cr_assert_eq(op_mesh_create(s, &m, &e), OP_OK, "%s", e.msg);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(op_mesh_add_tile(m, &t[i], &e), OP_OK, "tile %d: %s", i, e.msg);
    cr_assert_eq(op_mesh_stitch(m, &e), OP_OK, "%s", e.msg);
    return m;
}

/* The nearest polygon's tile index (0: G, 1: R) and its nearest point. */
static int nearest_of(const op_mesh *m, double x, double y, double z, double c[3])
{
    const double pos[3] = {x, y, z};
    op_polyref r;
    op_err e;
    cr_assert_eq(op_query_nearest(m, pos, half, NULL, &r, c, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(r.poly, 0);
    return r.tile;
}

/* x and z exactly (taken from the point or a polygon vertex line), y to rounding (a
 * barycentric interpolation of equal heights). */
static void expect_pos(const double *p, double x, double y, double z)
{
    cr_expect(p[0] == x && fabs(p[1] - y) < 1e-12 && p[2] == z,
              "(%.17g, %.17g, %.17g) != (%.17g, %.17g, %.17g)", p[0], p[1], p[2], x, y, z);
}

/* The point (4.1, 0, 5) is 0.1 from G's edge (3-D distance² 0.01) and 0.6 under R
 * (3-D 0.36). Over R within climb 0.75: R's distance is 0, so R, at (4.1, 0.6, 5). The
 * plain 3-D rule answers G. */
Test(query_nearest, under_a_slab_within_climb_beats_a_nearer_floor, .init = setup, .fini = teardown)
{
    op_mesh *m = floor_and_slab(&S, 0, 0.0, 0.6);
    double c[3];
    cr_expect_eq(nearest_of(m, 4.1, 0.0, 5.0, c), 1, "R within climb above the point");
    expect_pos(c, 4.1, 0.6, 5.0);
    /* Further in, G is farther still: R. */
    cr_expect_eq(nearest_of(m, 7.0, 0.0, 5.0, c), 1);
    expect_pos(c, 7.0, 0.6, 5.0);
    /* Over G itself (on the floor): both rules give G, at distance 0. */
    cr_expect_eq(nearest_of(m, 3.9, 0.0, 5.0, c), 0);
    expect_pos(c, 3.9, 0.0, 5.0);
    op_mesh_destroy(m);
}

/* The mirror case: the point lies on a floor G at y 1.2 and 0.6 above R (y 0.6). */
Test(query_nearest, over_a_lower_slab_within_climb, .init = setup, .fini = teardown)
{
    op_mesh *m = floor_and_slab(&S, 0, 1.2, 0.6);
    double c[3];
    cr_expect_eq(nearest_of(m, 4.1, 1.2, 5.0, c), 1);
    expect_pos(c, 4.1, 0.6, 5.0);
    op_mesh_destroy(m);
}

/* R at y 0.9: from the ground (y 0) the height difference 0.9 exceeds the climb by 0.15,
 * distance² 0.0225 > G's 0.01 (3-D): G, at its edge (4, 0, 5). From y 0.1 the excess is
 * 0.05 (0.0025) < G's 0.01 + 0.01: R. From y 0.2 (within climb): R at distance 0. */
Test(query_nearest, beyond_climb_the_3d_distance_decides, .init = setup, .fini = teardown)
{
    op_mesh *m = floor_and_slab(&S, 0, 0.0, 0.9);
    double c[3];
    cr_expect_eq(nearest_of(m, 4.1, 0.0, 5.0, c), 0, "0.9 above: beyond climb, G nearer");
    expect_pos(c, 4.0, 0.0, 5.0);
    cr_expect_eq(nearest_of(m, 4.1, 0.1, 5.0, c), 1);
    expect_pos(c, 4.1, 0.9, 5.0);
    cr_expect_eq(nearest_of(m, 4.1, 0.2, 5.0, c), 1);
    /* Far beyond the climb (R at 0.9 + 1.5 from y -1.5): G at 3-D 0.01 + 2.25 wins over R's
     * (2.4 - 0.75)². */
    cr_expect_eq(nearest_of(m, 4.1, -1.5, 5.0, c), 0);
    expect_pos(c, 4.0, 0.0, 5.0);
    op_mesh_destroy(m);
}

/* The over test is closed and exact: on the shared line x = 4 the point is over both G
 * (height difference 0) and R (0.6, within climb): both at distance 0, G first in key
 * order. One ulp east it is over R only (G's 3-D distance ulp² > 0): R. One ulp west it
 * is over G only (R's 3-D distance > 0.36): G. */
Test(query_nearest, over_is_closed_and_exact_ties_to_the_first_key, .init = setup, .fini = teardown)
{
    op_mesh *m = floor_and_slab(&S, 0, 0.0, 0.6);
    double c[3];
    cr_expect_eq(nearest_of(m, 4.0, 0.0, 5.0, c), 0, "tie at distance 0: G first");
    expect_pos(c, 4.0, 0.0, 5.0);
    double east = nextafter(4.0, 5.0), west = nextafter(4.0, 3.0);
    cr_expect_eq(nearest_of(m, east, 0.0, 5.0, c), 1);
    expect_pos(c, east, 0.6, 5.0);
    cr_expect_eq(nearest_of(m, west, 0.0, 5.0, c), 0);
    expect_pos(c, west, 0.0, 5.0);
    op_mesh_destroy(m);
}

/* The climb is the mesh's settings value: with agent_max_climb 0.25 the slab 0.6 above
 * is 0.35 beyond it (0.1225 > G's 0.01): G. */
Test(query_nearest, climb_comes_from_the_mesh_settings, .init = setup, .fini = teardown)
{
    op_settings s = S;
    s.agent_max_climb = 0.25;
    op_mesh *m = floor_and_slab(&s, 0, 0.0, 0.6);
    double c[3];
    cr_expect_eq(nearest_of(m, 4.1, 0.0, 5.0, c), 0);
    expect_pos(c, 4.0, 0.0, 5.0);
    op_mesh_destroy(m);
}

/* Tiles away from the origin (x in [30, 40] and [-20, -10]): the over test takes the
 * point to tile-local coordinates; the answers are those of the tile at the origin. */
Test(query_nearest, tiles_away_from_the_origin, .init = setup, .fini = teardown)
{
    const int txs[] = {3, -2};
    for (int i = 0; i < 2; i++) {
        double x0 = 10.0 * txs[i];
        op_mesh *m = floor_and_slab(&S, txs[i], 0.0, 0.6);
        double c[3];
        cr_expect_eq(nearest_of(m, x0 + 4.1, 0.0, 5.0, c), 1, "tx %d", txs[i]);
        expect_pos(c, x0 + 4.1, 0.6, 5.0);
        cr_expect_eq(nearest_of(m, x0 + 4.0, 0.0, 5.0, c), 0, "tx %d", txs[i]);
        cr_expect_eq(nearest_of(m, x0 + 3.9, 0.0, 5.0, c), 0, "tx %d", txs[i]);
        op_mesh_destroy(m);
    }
}
