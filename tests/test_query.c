/*
 * Queries (docs/queries.md) on hand-made meshes with answers worked out from the
 * rules: nearest polygon (distance, tie to the lower key, floors), detail heights, a
 * path across a T-junction portal, a U-shaped corridor over two tiles (corners and the
 * tile crossing), an unreachable island (partial path), area costs changing the route.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "onepath/query.h"
#include "op_handmesh.h"

static op_arena *arena, *out, *scratch;
static op_settings S;

static void setup(void)
{
    arena = op_arena_create(0);
    out = op_arena_create(0);
    scratch = op_arena_create(0);
    hm_settings(&S);
}
static void teardown(void)
{
    op_arena_destroy(arena);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
}

static op_mesh *mesh_of(op_tile *t, int n)
{
    op_mesh *m;
    op_err e;
    cr_assert_eq(op_mesh_create(&S, &m, &e), OP_OK, "%s", e.msg);
    for (int i = 0; i < n; i++)
        cr_assert_eq(op_mesh_add_tile(m, &t[i], &e), OP_OK, "tile %d: %s", i, e.msg);
    cr_assert_eq(op_mesh_stitch(m, &e), OP_OK, "%s", e.msg);
    return m;
}

static void tile_of(int tx, int tz, int layer, double oy, const float *v, int nv, const int *p,
                    int np, const int *areas, op_tile *t)
{
    cr_assert_eq(hm_tile(arena, tx, tz, layer, 10.0, oy, v, nv, p, np, areas, t), 0);
}

/* Square [0,10]^2 (one polygon) in (0,0); (1,0) split at z = 4; (1,0) layer 1 at y 5. */
static op_mesh *t_junction(void)
{
    static const float sq[] = {0, 0, 0, 10, 0, 0, 10, 0, 10, 0, 0, 10};
    static const int psq[] = {0, 1, 2, 3, -1, -1};
    static const float vb[] = {0, 0, 0, 10, 0, 0, 10, 0, 4, 0, 0, 4, 10, 0, 10, 0, 0, 10};
    static const int pb[] = {0, 1, 2, 3, -1, -1, 3, 2, 4, 5, -1, -1};
    op_tile t[3];
    tile_of(0, 0, 0, 0.0, sq, 4, psq, 1, NULL, &t[0]);
    tile_of(1, 0, 0, 0.0, vb, 6, pb, 2, NULL, &t[1]);
    tile_of(1, 0, 1, 5.0, sq, 4, psq, 1, NULL, &t[2]);
    return mesh_of(t, 3);
}

static void expect_ref(op_polyref r, int tile, int poly)
{
    cr_expect(r.tile == tile && r.poly == poly, "ref (%d, %d) != (%d, %d)", r.tile, r.poly, tile,
              poly);
}

static void expect_pos(const double *p, double x, double y, double z)
{
    cr_expect(fabs(p[0] - x) < 1e-9 && fabs(p[1] - y) < 1e-9 && fabs(p[2] - z) < 1e-9,
              "(%g, %g, %g) != (%g, %g, %g)", p[0], p[1], p[2], x, y, z);
}

Test(query, nearest_distance_ties_and_floors, .init = setup, .fini = teardown)
{
    op_mesh *m = t_junction();
    op_err e;
    op_polyref r;
    double c[3];
    const double half[3] = {2, 4, 2};
    const double above[3] = {5, 3, 5};
    cr_assert_eq(op_query_nearest(m, above, half, NULL, &r, c, &e), OP_OK, "%s", e.msg);
    expect_ref(r, 0, 0);
    expect_pos(c, 5, 0, 5);
    /* On the shared line x = 10 at z = 2: A0 and B0 both at distance 0; A's key first. */
    const double line[3] = {10, 0, 2};
    cr_assert_eq(op_query_nearest(m, line, half, NULL, &r, c, &e), OP_OK);
    expect_ref(r, 0, 0);
    /* Between the floors of (1, 0): y 3 is 2 from the upper layer, 3 from the lower. */
    const double mid[3] = {15, 3, 2};
    cr_assert_eq(op_query_nearest(m, mid, half, NULL, &r, c, &e), OP_OK);
    expect_ref(r, 2, 0);
    expect_pos(c, 15, 5, 2);
    /* Outside every polygon: the closest boundary point (x clamped to 0). */
    const double west[3] = {-1.5, 0, 3};
    cr_assert_eq(op_query_nearest(m, west, half, NULL, &r, c, &e), OP_OK);
    expect_ref(r, 0, 0);
    expect_pos(c, 0, 0, 3);
    const double far[3] = {50, 0, 50};
    cr_expect_eq(op_query_nearest(m, far, half, NULL, &r, c, &e), OP_ENOTFOUND);
    expect_ref(r, -1, -1);
    /* Height: the layer nearest in y within half_y. */
    double y;
    cr_assert_eq(op_query_height(m, mid, 10.0, NULL, &r, &y, &e), OP_OK);
    expect_ref(r, 2, 0);
    cr_expect_eq(y, 5.0);
    cr_assert_eq(op_query_height(m, mid, 2.5, NULL, &r, &y, &e), OP_OK);
    expect_ref(r, 2, 0);
    cr_expect_eq(op_query_height(m, mid, 1.5, NULL, &r, &y, &e), OP_ENOTFOUND);
    op_mesh_destroy(m);
}

/* One square whose detail has a raised centre (5, 2, 5): four triangles. */
Test(query, height_from_detail_triangles, .init = setup, .fini = teardown)
{
    static const float sq[] = {0, 0, 0, 10, 0, 0, 10, 0, 10, 0, 0, 10};
    static const int psq[] = {0, 1, 2, 3, -1, -1};
    op_tile t;
    tile_of(0, 0, 0, 1.0, sq, 4, psq, 1, NULL, &t);
    t.dverts = op_arena_alloc(arena, 3 * sizeof(float));
    t.dverts[0] = 5;
    t.dverts[1] = 2;
    t.dverts[2] = 5;
    t.ndverts = 1;
    t.dtris = op_arena_alloc(arena, 16);
    const uint8_t tris[] = {0, 1, 4, 1, 1, 2, 4, 1, 2, 3, 4, 1, 3, 0, 4, 1};
    memcpy(t.dtris, tris, 16);
    t.ndtris = 4;
    t.dmeshes[1] = 1;
    t.dmeshes[3] = 4;
    op_mesh *m = mesh_of(&t, 1);
    op_polyref r = {0, 0};
    double y;
    op_err e;
    cr_assert_eq(op_query_poly_height(m, r, 5, 5, &y, &e), OP_OK);
    cr_expect_eq(y, 3.0);
    cr_assert_eq(op_query_poly_height(m, r, 7.5, 5, &y, &e), OP_OK);
    cr_expect(fabs(y - 2.0) < 1e-12, "%g", y);
    cr_assert_eq(op_query_poly_height(m, r, 5, 1, &y, &e), OP_OK);
    cr_expect(fabs(y - 1.4) < 1e-12, "%g", y);
    cr_expect_eq(op_query_poly_height(m, r, 11, 5, &y, &e), OP_ENOTFOUND);
    cr_expect(fabs(y - 1.0) < 1e-12, "%g", y);
    op_mesh_destroy(m);
}

Test(query, path_across_t_junction, .init = setup, .fini = teardown)
{
    op_mesh *m = t_junction();
    op_err e;
    const double a[3] = {5, 0, 1}, b[3] = {15, 0, 8};
    op_polyref s = {0, 0}, g = {1, 1};
    op_path p;
    cr_assert_eq(op_query_path(m, NULL, s, a, g, b, out, scratch, &p, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(p.npolys, 2);
    cr_expect_eq(p.partial, 0);
    expect_ref(p.polys[0], 0, 0);
    expect_ref(p.polys[1], 1, 1);
    /* Node position = midpoint (10, 0, 7) of the overlap z 4..10. */
    /* Costs are float32 sums (queries.md §4.4): a few units in the last place of a float. */
    cr_expect(fabs(p.cost - (sqrt(25.0 + 36.0) + sqrt(25.0 + 1.0))) < 1e-5, "%.9g", p.cost);
    op_straight_path sp;
    cr_assert_eq(op_query_straight(m, p.polys, p.npolys, a, b, out, scratch, &sp, &e), OP_OK, "%s",
                 e.msg);
    cr_assert_eq(sp.npoints, 3);
    expect_pos(sp.points[0].pos, 5, 0, 1);
    cr_expect_eq(sp.points[0].flags, OP_STRAIGHT_START);
    expect_pos(sp.points[1].pos, 10, 0, 4.5);
    cr_expect_eq(sp.points[1].flags, OP_STRAIGHT_TILE);
    expect_ref(sp.points[1].poly, 1, 1);
    expect_pos(sp.points[2].pos, 15, 0, 8);
    cr_expect_eq(sp.points[2].flags, OP_STRAIGHT_END);
    op_mesh_destroy(m);
}

/*
 * A U over tiles (0,0) and (1,0), opening to +z: left arm [6,8]x[2,8], bottom
 * [6,14]x[0,2] cut at x = 8, 10 (tile line) and 12, right arm [12,14]x[2,8].
 * From (7, 7) to (13, 7): corners (8, 2) and (12, 2), tile crossing at (10, 2).
 */
static op_mesh *u_corridor(void)
{
    /* tile (0,0): 0 (6,0) 1 (8,0) 2 (10,0) 3 (10,2) 4 (8,2) 5 (6,2) 6 (8,8) 7 (6,8) */
    static const float v0[] = {6, 0, 0, 8, 0, 0, 10, 0, 0, 10, 0, 2,
                               8, 0, 2, 6, 0, 2, 8,  0, 8, 6,  0, 8};
    static const int p0[] = {5, 4, 6, 7, -1, -1, 0, 1, 4, 5, -1, -1, 1, 2, 3, 4, -1, -1};
    /* tile (1,0) local: 0 (0,0) 1 (2,0) 2 (4,0) 3 (4,2) 4 (2,2) 5 (0,2) 6 (4,8) 7 (2,8) */
    static const float v1[] = {0, 0, 0, 2, 0, 0, 4, 0, 0, 4, 0, 2,
                               2, 0, 2, 0, 0, 2, 4, 0, 8, 2, 0, 8};
    static const int p1[] = {0, 1, 4, 5, -1, -1, 1, 2, 3, 4, -1, -1, 4, 3, 6, 7, -1, -1};
    op_tile t[2];
    tile_of(0, 0, 0, 0.0, v0, 8, p0, 3, NULL, &t[0]);
    tile_of(1, 0, 0, 0.0, v1, 8, p1, 3, NULL, &t[1]);
    return mesh_of(t, 2);
}

Test(query, u_corridor_corners_and_tile_crossing, .init = setup, .fini = teardown)
{
    op_mesh *m = u_corridor();
    op_err e;
    const double a[3] = {7, 0, 7}, b[3] = {13, 0, 7};
    op_polyref s, g;
    const double half[3] = {1, 1, 1};
    cr_assert_eq(op_query_nearest(m, a, half, NULL, &s, NULL, &e), OP_OK);
    cr_assert_eq(op_query_nearest(m, b, half, NULL, &g, NULL, &e), OP_OK);
    expect_ref(s, 0, 0);
    expect_ref(g, 1, 2);
    op_path p;
    cr_assert_eq(op_query_path(m, NULL, s, a, g, b, out, scratch, &p, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(p.npolys, 6);
    cr_expect_eq(p.partial, 0);
    const int want[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}};
    for (int i = 0; i < 6; i++)
        expect_ref(p.polys[i], want[i][0], want[i][1]);
    op_straight_path sp;
    cr_assert_eq(op_query_straight(m, p.polys, p.npolys, a, b, out, scratch, &sp, &e), OP_OK);
    cr_assert_eq(sp.npoints, 5);
    expect_pos(sp.points[0].pos, 7, 0, 7);
    expect_pos(sp.points[1].pos, 8, 0, 2);
    expect_pos(sp.points[2].pos, 10, 0, 2);
    expect_pos(sp.points[3].pos, 12, 0, 2);
    expect_pos(sp.points[4].pos, 13, 0, 7);
    cr_expect_eq(sp.points[0].flags, OP_STRAIGHT_START);
    cr_expect_eq(sp.points[1].flags, 0u);
    cr_expect_eq(sp.points[2].flags, OP_STRAIGHT_TILE);
    cr_expect_eq(sp.points[3].flags, 0u);
    cr_expect_eq(sp.points[4].flags, OP_STRAIGHT_END);
    /* A corridor with a gap is refused. */
    op_polyref gap[2] = {{0, 0}, {1, 2}};
    cr_expect_eq(op_query_straight(m, gap, 2, a, b, out, scratch, &sp, &e), OP_EINVAL);
    op_mesh_destroy(m);
}

/* Strip [0,6]x[0,2] of three squares and an island [7,9]x[0,2]: the path towards the
 * island ends at the strip's last square (node (4, 0, 1) is the nearest to the end). */
Test(query, unreachable_island_gives_partial_path, .init = setup, .fini = teardown)
{
    static const float v[] = {0, 0, 0, 2, 0, 0, 4, 0, 0, 6, 0, 0, 6, 0, 2, 4, 0, 2,
                              2, 0, 2, 0, 0, 2, 7, 0, 0, 9, 0, 0, 9, 0, 2, 7, 0, 2};
    static const int p[] = {0, 1, 6, 7, -1, -1, 1, 2, 5,  6,  -1, -1,
                            2, 3, 4, 5, -1, -1, 8, 9, 10, 11, -1, -1};
    op_tile t;
    tile_of(0, 0, 0, 0.0, v, 12, p, 4, NULL, &t);
    op_mesh *m = mesh_of(&t, 1);
    op_err e;
    const double a[3] = {1, 0, 1}, b[3] = {8, 0, 1};
    op_polyref s = {0, 0}, g = {0, 3};
    op_path path;
    cr_assert_eq(op_query_path(m, NULL, s, a, g, b, out, scratch, &path, &e), OP_OK);
    cr_expect_eq(path.partial, 1);
    cr_assert_eq(path.npolys, 3);
    for (int i = 0; i < 3; i++)
        expect_ref(path.polys[i], 0, i);
    op_straight_path sp;
    cr_assert_eq(op_query_straight(m, path.polys, 3, a, b, out, scratch, &sp, &e), OP_OK);
    cr_assert_eq(sp.npoints, 2);
    expect_pos(sp.points[1].pos, 6, 0, 1); /* the end clamped to the last polygon */
    /* The same start and end polygon: a one-polygon corridor. */
    cr_assert_eq(op_query_path(m, NULL, g, b, g, b, out, scratch, &path, &e), OP_OK);
    cr_expect_eq(path.npolys, 1);
    cr_expect_eq(path.partial, 0);
    op_mesh_destroy(m);
}

/*
 * S [0,2]x[0,2], M [2,4]x[0,2] (area 2), E [4,6]x[0,2]; above them U1, U2, U3 at
 * z 2..4. From (1,1) to (5,1): through M (cost 4) by default; with area 2 costing 10
 * the way over the top (about 7.41, see below) is cheaper than 22.
 */
Test(query, area_costs_change_the_route, .init = setup, .fini = teardown)
{
    static const float v[] = {0, 0, 0, 2, 0, 0, 4, 0, 0, 6, 0, 0, 0, 0, 2, 2, 0, 2,
                              4, 0, 2, 6, 0, 2, 0, 0, 4, 2, 0, 4, 4, 0, 4, 6, 0, 4};
    static const int p[] = {0, 1, 5, 4, -1, -1, 1, 2, 6,  5, -1, -1, 2, 3, 7,  6,  -1, -1,
                            4, 5, 9, 8, -1, -1, 5, 6, 10, 9, -1, -1, 6, 7, 11, 10, -1, -1};
    static const int areas[] = {63, 2, 63, 63, 63, 63};
    op_tile t;
    tile_of(0, 0, 0, 0.0, v, 12, p, 6, areas, &t);
    op_mesh *m = mesh_of(&t, 1);
    op_err e;
    const double a[3] = {1, 0, 1}, b[3] = {5, 0, 1};
    op_polyref s = {0, 0}, g = {0, 2};
    op_path path;
    cr_assert_eq(op_query_path(m, NULL, s, a, g, b, out, scratch, &path, &e), OP_OK);
    cr_assert_eq(path.npolys, 3);
    expect_ref(path.polys[1], 0, 1);
    cr_expect(fabs(path.cost - 4.0) < 1e-12, "%g", path.cost);
    op_query_filter f;
    op_query_filter_default(&f);
    f.area_cost[2] = 10.0;
    cr_assert_eq(op_query_path(m, &f, s, a, g, b, out, scratch, &path, &e), OP_OK);
    cr_assert_eq(path.npolys, 5);
    const int want[5] = {0, 3, 4, 5, 2};
    for (int i = 0; i < 5; i++)
        expect_ref(path.polys[i], 0, want[i]);
    /* By hand (queries.md §4.3: a node's position is fixed at its first touch): 0 (1,1) ->
     * 3 at (1,2): 1; -> 4 at (3,2) (first touched from 1): 2; -> 5 at (4,3): sqrt 2; -> 2,
     * fixed at (4,1) when 1 touched it first: 2; then to b (5,1): 1. */
    cr_expect(fabs(path.cost - (6.0 + sqrt(2.0))) < 1e-5, "%.9g", path.cost);
    /* Area 2 impassable: the same detour; flags excluded: no way at all. */
    f.area_cost[2] = -1.0;
    cr_assert_eq(op_query_path(m, &f, s, a, g, b, out, scratch, &path, &e), OP_OK);
    cr_expect_eq(path.npolys, 5);
    op_query_filter_default(&f);
    f.exclude_flags = 1;
    cr_assert_eq(op_query_path(m, &f, s, a, g, b, out, scratch, &path, &e), OP_OK);
    cr_expect_eq(path.partial, 1);
    cr_expect_eq(path.npolys, 1);
    op_mesh_destroy(m);
}

/* The filter applies to the point queries too; refusals of the corridor search. */
Test(query, filters_and_refusals, .init = setup, .fini = teardown)
{
    op_mesh *m = t_junction();
    op_err e;
    op_polyref r;
    double c[3], y;
    const double half[3] = {2, 4, 2}, p[3] = {5, 0, 5};
    op_query_filter f;
    op_query_filter_default(&f);
    f.exclude_flags = 1;
    cr_expect_eq(op_query_nearest(m, p, half, &f, &r, c, &e), OP_ENOTFOUND);
    cr_expect_eq(op_query_height(m, p, 1.0, &f, &r, &y, &e), OP_ENOTFOUND);
    op_query_filter_default(&f);
    f.area_cost[63] = -1.0; /* every polygon here is area 63 */
    cr_expect_eq(op_query_nearest(m, p, half, &f, &r, c, &e), OP_ENOTFOUND);
    op_path path;
    op_polyref bad = {7, 0}, ok = {0, 0};
    cr_expect_eq(op_query_path(m, NULL, bad, p, ok, p, out, scratch, &path, &e), OP_EINVAL);
    op_polyref badp = {0, 5};
    cr_expect_eq(op_query_path(m, NULL, ok, p, badp, p, out, scratch, &path, &e), OP_EINVAL);
    op_straight_path sp;
    cr_expect_eq(op_query_straight(m, &ok, 0, p, p, out, scratch, &sp, &e), OP_EINVAL);
    /* An unstitched mesh is refused by the corridor search. */
    static const float sq[] = {0, 0, 0, 10, 0, 0, 10, 0, 10, 0, 0, 10};
    static const int psq[] = {0, 1, 2, 3, -1, -1};
    op_tile t;
    tile_of(3, 3, 0, 0.0, sq, 4, psq, 1, NULL, &t);
    op_mesh *u;
    cr_assert_eq(op_mesh_create(&S, &u, &e), OP_OK);
    cr_assert_eq(op_mesh_add_tile(u, &t, &e), OP_OK);
    cr_expect_eq(op_query_path(u, NULL, ok, p, ok, p, out, scratch, &path, &e), OP_EINVAL);
    cr_expect(strstr(e.msg, "not stitched") != NULL, "%s", e.msg);
    op_mesh_destroy(u);
    op_mesh_destroy(m);
}

/* Out of memory in the search scratch is reported, not a crash. */
Test(query, search_out_of_memory, .init = setup, .fini = teardown)
{
    op_mesh *m = u_corridor();
    op_err e;
    const double a[3] = {7, 0, 7}, b[3] = {13, 0, 7};
    op_polyref s = {0, 0}, g = {1, 2};
    op_path p;
    for (long n = 0; n < 4; n++) {
        op_arena_fail_after(scratch, n);
        op_status st = op_query_path(m, NULL, s, a, g, b, out, scratch, &p, &e);
        cr_expect(st == OP_ENOMEM, "fail after %ld: %d", n, st);
        op_arena_fail_after(scratch, -1);
        op_arena_reset(scratch);
    }
    cr_expect_eq(op_query_path(m, NULL, s, a, g, b, out, scratch, &p, &e), OP_OK);
    op_mesh_destroy(m);
}
