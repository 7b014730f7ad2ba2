/*
 * The mesh and portal stitching (navmesh-format.md §5) on hand-made tiles whose links
 * are known from the rules: overlaps along the shared line (T-junctions), the height
 * check at both overlap ends (interpolated, tolerance inclusive), mutual links, order
 * by neighbour key then polygon, independence from insertion order, refusals.
 */
#include <criterion/criterion.h>

#include "onepath/mesh.h"
#include "op_handmesh.h"

static op_arena *arena;
static op_settings S;

static void setup(void)
{
    arena = op_arena_create(0);
    hm_settings(&S);
}
static void teardown(void)
{
    op_arena_destroy(arena);
}

/* A square [0,10]^2 at local height y (one polygon). */
static void square(int tx, int tz, int layer, double oy, float y, op_tile *t)
{
    const float v[] = {0, y, 0, 10, y, 0, 10, y, 10, 0, y, 10};
    const int p[] = {0, 1, 2, 3, -1, -1};
    cr_assert_eq(hm_tile(arena, tx, tz, layer, 10.0, oy, v, 4, p, 1, NULL, t), 0);
}

/* Tile cell (1, 0) layer 0: polygons [0,10]x[0,4] and [0,10]x[4,10]. */
static void split_tile(op_tile *t)
{
    const float v[] = {0, 0, 0, 10, 0, 0, 10, 0, 4, 0, 0, 4, 10, 0, 10, 0, 0, 10};
    const int p[] = {0, 1, 2, 3, -1, -1, 3, 2, 4, 5, -1, -1};
    cr_assert_eq(hm_tile(arena, 1, 0, 0, 10.0, 0.0, v, 6, p, 2, NULL, t), 0);
}

static void add(op_mesh *m, const op_tile *t)
{
    op_err e;
    cr_assert_eq(op_mesh_add_tile(m, t, &e), OP_OK, "%s", e.msg);
}

static void expect_link(const op_link *l, int nei_tile, int nei_poly, int nei_edge, double o0,
                        double o1)
{
    cr_expect_eq(l->nei_tile, nei_tile);
    cr_expect_eq(l->nei_poly, nei_poly);
    cr_expect_eq(l->nei_edge, nei_edge);
    cr_expect_eq(l->o0, o0, "o0 %g != %g", l->o0, o0);
    cr_expect_eq(l->o1, o1, "o1 %g != %g", l->o1, o1);
}

/* Every link has its reverse with the same overlap. */
static void expect_mutual(const op_mesh *m)
{
    for (int i = 0; i < op_mesh_tile_count(m); i++) {
        const op_tile *t = op_mesh_tile(m, i);
        for (int p = 0; p < t->npolys; p++)
            for (int k = 0; k < t->nvp; k++) {
                const op_link *l;
                int n = op_mesh_edge_links(m, i, p, k, &l);
                for (int q = 0; q < n; q++) {
                    const op_link *b;
                    int nb = op_mesh_edge_links(m, l[q].nei_tile, l[q].nei_poly, l[q].nei_edge, &b);
                    int found = 0;
                    for (int r = 0; r < nb; r++)
                        found += b[r].nei_tile == i && b[r].nei_poly == p && b[r].nei_edge == k &&
                                 b[r].o0 == l[q].o0 && b[r].o1 == l[q].o1;
                    cr_expect_eq(found, 1, "link (%d %d %d) -> (%d %d) not mutual", i, p, k,
                                 l[q].nei_tile, l[q].nei_poly);
                }
            }
    }
}

/* A's +x edge meets B's two polygons (T-junction at z = 4), layer 2 of B at height
 * difference exactly 1.0 (linked), layer 1 five units up and layer 3 at 1.001 (not). */
static op_mesh *t_junction_mesh(int reverse)
{
    op_tile t[5];
    square(0, 0, 0, 0.0, 0.0f, &t[0]);
    split_tile(&t[1]);
    square(1, 0, 1, 5.0, 0.0f, &t[2]);
    square(1, 0, 2, 0.0, 1.0f, &t[3]);
    square(1, 0, 3, 0.0, 1.001f, &t[4]);
    op_mesh *m;
    op_err e;
    cr_assert_eq(op_mesh_create(&S, &m, &e), OP_OK, "%s", e.msg);
    for (int i = 0; i < 5; i++)
        add(m, &t[reverse ? 4 - i : i]);
    cr_assert_eq(op_mesh_stitch(m, &e), OP_OK, "%s", e.msg);
    return m;
}

Test(mesh, t_junction_links_ordered_by_key_then_polygon, .init = setup, .fini = teardown)
{
    op_mesh *m = t_junction_mesh(0);
    cr_assert_eq(op_mesh_tile_count(m), 5);
    cr_assert_eq(op_mesh_find_tile(m, 1, 0, 2), 3);
    const op_link *l;
    /* A0 edge 1 runs (10,0) -> (10,10): side 2. */
    cr_assert_eq(op_mesh_edge_links(m, 0, 0, 1, &l), 3);
    expect_link(&l[0], 1, 0, 3, 0.0, 4.0);
    expect_link(&l[1], 1, 1, 3, 4.0, 10.0);
    expect_link(&l[2], 3, 0, 3, 0.0, 10.0);
    /* B0 edge 3 runs (0,4) -> (0,0), B1 edge 3 (0,10) -> (0,4): side 0. */
    cr_assert_eq(op_mesh_edge_links(m, 1, 0, 3, &l), 1);
    expect_link(&l[0], 0, 0, 1, 0.0, 4.0);
    cr_assert_eq(op_mesh_edge_links(m, 1, 1, 3, &l), 1);
    expect_link(&l[0], 0, 0, 1, 4.0, 10.0);
    cr_expect_eq(op_mesh_edge_links(m, 2, 0, 3, &l), 0, "5 units up: no link");
    cr_expect_eq(op_mesh_edge_links(m, 4, 0, 3, &l), 0, "1.001 > tolerance: no link");
    cr_expect_eq(op_mesh_edge_links(m, 0, 0, 3, &l), 0, "no tile at -x");
    cr_expect_eq(op_mesh_link_count(m), 6);
    expect_mutual(m);
    op_mesh_destroy(m);
}

Test(mesh, insertion_order_does_not_matter, .init = setup, .fini = teardown)
{
    op_mesh *a = t_junction_mesh(0), *b = t_junction_mesh(1);
    cr_expect_eq(op_mesh_dump_hash(a), op_mesh_dump_hash(b));
    op_mesh_destroy(a);
    op_mesh_destroy(b);
}

/* A's +x edge climbs from y 0 at z 0 to y 4 at z 10. B0's edge over z 0..4 follows it
 * (y 0 .. 1.6): linked. B1's edge over z 4..10 is at y 3 .. 4: at z = 4 the difference
 * is 1.4 although the ends at z = 10 agree: not linked. */
Test(mesh, heights_compared_at_both_overlap_ends, .init = setup, .fini = teardown)
{
    const float va[] = {0, 0, 0, 10, 0, 0, 10, 4, 10, 0, 4, 10};
    const int pa[] = {0, 1, 2, 3, -1, -1};
    const float vb[] = {0, 0, 0, 10,      0, 0, 10, 1.6f, 4, 0, 1.6f,
                        4, 0, 3, 4.0001f, 0, 4, 10, 10,   4, 10};
    /* B1 starts just above z = 4 so it does not share B0's edge (a wall between them). */
    const int pb[] = {0, 1, 2, 3, -1, -1, 4, 6, 5, -1, -1, -1};
    op_tile a, b;
    cr_assert_eq(hm_tile(arena, 0, 0, 0, 10.0, 0.0, va, 4, pa, 1, NULL, &a), 0);
    cr_assert_eq(hm_tile(arena, 1, 0, 0, 10.0, 0.0, vb, 7, pb, 2, NULL, &b), 0);
    op_mesh *m;
    op_err e;
    cr_assert_eq(op_mesh_create(&S, &m, &e), OP_OK);
    add(m, &a);
    add(m, &b);
    cr_assert_eq(op_mesh_stitch(m, &e), OP_OK, "%s", e.msg);
    const op_link *l;
    cr_assert_eq(op_mesh_edge_links(m, 0, 0, 1, &l), 1);
    expect_link(&l[0], 1, 0, 3, 0.0, 4.0);
    expect_mutual(m);
    op_mesh_destroy(m);
}

/* Negative tile keys: (-1, -1) and (-1, 0) share the line z = 0 (sides 1 and 3). */
Test(mesh, negative_keys_link_along_z, .init = setup, .fini = teardown)
{
    op_tile a, b;
    square(-1, -1, 0, 0.0, 0.0f, &a);
    square(-1, 0, 0, 0.0, 0.0f, &b);
    op_mesh *m;
    op_err e;
    cr_assert_eq(op_mesh_create(&S, &m, &e), OP_OK);
    add(m, &b);
    add(m, &a);
    cr_assert_eq(op_mesh_stitch(m, &e), OP_OK);
    cr_assert_eq(op_mesh_find_tile(m, -1, -1, 0), 0);
    const op_link *l;
    /* a's edge 2 runs (10,10) -> (0,10) local: side 1, world x -10 .. 0. */
    cr_assert_eq(op_mesh_edge_links(m, 0, 0, 2, &l), 1);
    expect_link(&l[0], 1, 0, 0, -10.0, 0.0);
    expect_mutual(m);
    op_mesh_destroy(m);
}

Test(mesh, refusals, .init = setup, .fini = teardown)
{
    op_mesh *m;
    op_err e;
    op_tile a, b;
    square(0, 0, 0, 0.0, 0.0f, &a);
    cr_assert_eq(op_mesh_create(&S, &m, &e), OP_OK);
    add(m, &a);
    cr_expect_eq(op_mesh_add_tile(m, &a, &e), OP_EINVAL);
    cr_expect(strstr(e.msg, "already present") != NULL, "%s", e.msg);
    const float sq[] = {0, 0, 0, 10, 0, 0, 10, 0, 10, 0, 0, 10};
    const int psq[] = {0, 1, 2, 3, -1, -1};
    cr_assert_eq(hm_tile(arena, 5, 0, 0, 20.0, 0.0, sq, 4, psq, 1, NULL, &b), 0);
    cr_expect_eq(op_mesh_add_tile(m, &b, &e), OP_EINVAL, "%s", e.msg);
    b = a;
    b.tx = 6;
    b.npolys = 0;
    b.ndtris = 0;
    cr_expect_eq(op_mesh_add_tile(m, &b, &e), OP_EINVAL, "%s", e.msg);
    /* clockwise polygon: the validator refuses it */
    const float v[] = {0, 0, 0, 0, 0, 10, 10, 0, 10, 10, 0, 0};
    const int p[] = {0, 1, 2, 3, -1, -1};
    cr_assert_eq(hm_tile(arena, 7, 0, 0, 10.0, 0.0, v, 4, p, 1, NULL, &b), 0);
    cr_expect_eq(op_mesh_add_tile(m, &b, &e), OP_EPROTO, "%s", e.msg);
    cr_expect_eq(op_mesh_tile_count(m), 1);
    op_settings bad = S;
    bad.cell_size = -1.0;
    op_mesh *m2 = (op_mesh *)1;
    cr_expect_neq(op_mesh_create(&bad, &m2, &e), OP_OK);
    cr_expect_null(m2);
    op_mesh_destroy(m);
}

/* The mesh owns its copies: the caller's arrays may be overwritten after adding. */
Test(mesh, tiles_are_copied, .init = setup, .fini = teardown)
{
    op_tile a;
    square(0, 0, 0, 0.0, 0.0f, &a);
    op_mesh *m;
    op_err e;
    cr_assert_eq(op_mesh_create(&S, &m, &e), OP_OK);
    add(m, &a);
    a.verts[0] = 99.0f;
    cr_expect_eq(op_mesh_tile(m, 0)->verts[0], 0.0f);
    cr_expect_neq(op_mesh_tile(m, 0)->verts, a.verts);
    op_mesh_destroy(m);
}
