/*
 * The mesh and portal stitching (navmesh-format.md §5) on hand-made tiles whose links
 * are known from the rules: overlaps along the shared line (T-junctions), the height
 * check at both overlap ends (interpolated, tolerance inclusive), mutual links, order
 * by neighbour key then polygon, independence from insertion order, refusals; and layer
 * seam stitching between the layers of one tile cell (§6): collinear, opposite, overlap
 * and height rule, the layer each seam names.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "onepath/limits.h"
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

/* ---- layer seams (§6) ---- */

/* A rectangle [x0,x1] x [z0,z1] at local height y on (0, 0, layer), one polygon, edges
 * 0: z0 side (+x), 1: x1 side (+z), 2: z1 side (-x), 3: x0 side (-z). */
static void rect(int layer, double oy, float x0, float z0, float x1, float z1, float y, op_tile *t)
{
    const float v[] = {x0, y, z0, x1, y, z0, x1, y, z1, x0, y, z1};
    const int p[] = {0, 1, 2, 3, -1, -1};
    cr_assert_eq(hm_tile(arena, 0, 0, layer, 10.0, oy, v, 4, p, 1, NULL, t), 0);
}

static void seam(op_tile *t, int poly, int edge, int layer)
{
    t->neis[poly * HM_NVP + edge] = (uint16_t)(OP_NEI_SEAM | (unsigned)layer);
}

static op_mesh *mesh_of(op_tile *t, int n)
{
    op_mesh *m;
    op_err e;
    cr_assert_eq(op_mesh_create(&S, &m, &e), OP_OK, "%s", e.msg);
    for (int i = 0; i < n; i++)
        add(m, &t[i]);
    cr_assert_eq(op_mesh_stitch(m, &e), OP_OK, "%s", e.msg);
    return m;
}

/* Layer 0: [0,10] x [0,5] at y 0, its z = 5 edge (10,5) -> (0,5) a seam into layer 1.
 * Layer 1 (origin 0.5 up): [0,4] x [5,10] and [4,10] x [5,10], their z = 5 edges seams
 * into layer 0: a T-junction, links over x 0..4 and 4..10. Layer 0's z = 0 edge names
 * layer 7, which does not exist. */
Test(mesh, seams_link_collinear_opposite_edges_of_one_cell, .init = setup, .fini = teardown)
{
    op_tile t[2];
    rect(0, 0.0, 0, 0, 10, 5, 0.0f, &t[0]);
    seam(&t[0], 0, 2, 1);
    seam(&t[0], 0, 0, 7);
    const float v1[] = {0, 0, 5, 4, 0, 5, 4, 0, 10, 0, 0, 10, 10, 0, 5, 10, 0, 10};
    const int p1[] = {0, 1, 2, 3, -1, -1, 1, 4, 5, 2, -1, -1};
    cr_assert_eq(hm_tile(arena, 0, 0, 1, 10.0, 0.5, v1, 6, p1, 2, NULL, &t[1]), 0);
    seam(&t[1], 0, 0, 0);
    seam(&t[1], 1, 0, 0);
    op_mesh *m = mesh_of(t, 2);
    const op_link *l;
    cr_assert_eq(op_mesh_edge_links(m, 0, 0, 2, &l), 2);
    expect_link(&l[0], 1, 0, 0, 0.0, 4.0);
    expect_link(&l[1], 1, 1, 0, 4.0, 10.0);
    cr_expect_eq(l[0].axis, 0);
    cr_expect_eq(op_mesh_edge_links(m, 0, 0, 0, &l), 0, "layer 7 is absent");
    cr_assert_eq(op_mesh_edge_links(m, 1, 1, 0, &l), 1);
    expect_link(&l[0], 0, 0, 2, 4.0, 10.0);
    cr_expect_eq(op_mesh_link_count(m), 4);
    expect_mutual(m);
    op_mesh_destroy(m);
}

/* Layer 0 as above (its z = 5 seam names layer 1) against one layer-1 rectangle whose
 * edge k is a seam into layer `names`: the number of links of layer 0's seam. */
static int pair_links(float z0, float z1, int edge, int names, double oy)
{
    op_tile t[2];
    rect(0, 0.0, 0, 0, 10, 5, 0.0f, &t[0]);
    seam(&t[0], 0, 2, 1);
    rect(1, oy, 0, z0, 10, z1, 0.0f, &t[1]);
    seam(&t[1], 0, edge, names);
    op_mesh *m = mesh_of(t, 2);
    const op_link *l;
    int n = op_mesh_edge_links(m, 0, 0, 2, &l);
    expect_mutual(m);
    op_mesh_destroy(m);
    return n;
}

Test(mesh, seam_refusals_by_rule, .init = setup, .fini = teardown)
{
    cr_expect_eq(pair_links(5, 10, 0, 0, 1.0), 1, "opposite, on the line, 1.0 up: linked");
    cr_expect_eq(pair_links(5, 10, 0, 0, 1.001), 0, "1.001 > tolerance");
    cr_expect_eq(pair_links(5, 10, 0, 2, 0.0), 0, "names layer 2, not 0");
    cr_expect_eq(pair_links(5.5f, 10, 0, 0, 0.0), 0, "off the line");
    cr_expect_eq(pair_links(0, 5, 2, 0, 0.0), 0, "the same direction (overlapping floors)");
}

/* A diagonal seam: layer 0's triangle (0,0) (10,0) (0,10) has its hypotenuse (10,0) ->
 * (0,10) a seam into layer 1, whose triangle (5,5) (10,10) (0,10) runs (0,10) -> (5,5)
 * over half of it (x 0..5; u is x, the ends' x differ). Layer 1's seam names layer 0, its
 * other edges are walls. In world x the link lies at the tile cell's origin 10 + x. */
Test(mesh, diagonal_seam_links_over_the_shared_stretch, .init = setup, .fini = teardown)
{
    op_tile t[2];
    const float v0[] = {0, 0, 0, 10, 0, 0, 0, 0, 10};
    const int p0[] = {0, 1, 2, -1, -1, -1};
    cr_assert_eq(hm_tile(arena, 1, 0, 0, 10.0, 0.0, v0, 3, p0, 1, NULL, &t[0]), 0);
    seam(&t[0], 0, 1, 1);
    const float v1[] = {5, 0.8f, 5, 10, 0.8f, 10, 0, 0.8f, 10};
    const int p1[] = {0, 1, 2, -1, -1, -1};
    cr_assert_eq(hm_tile(arena, 1, 0, 1, 10.0, 0.0, v1, 3, p1, 1, NULL, &t[1]), 0);
    seam(&t[1], 0, 2, 0);
    op_mesh *m = mesh_of(t, 2);
    const op_link *l;
    cr_assert_eq(op_mesh_edge_links(m, 0, 0, 1, &l), 1);
    expect_link(&l[0], 1, 0, 2, 10.0, 15.0);
    cr_expect_eq(l[0].axis, 0);
    expect_mutual(m);
    op_mesh_destroy(m);
}

Test(mesh, layers_of_one_cell_share_origin_x_and_z, .init = setup, .fini = teardown)
{
    op_tile a, b;
    rect(0, 0.0, 0, 0, 10, 5, 0.0f, &a);
    rect(1, 3.0, 0, 0, 10, 5, 0.0f, &b);
    b.origin[0] += 1e-9;
    op_mesh *m;
    op_err e;
    cr_assert_eq(op_mesh_create(&S, &m, &e), OP_OK);
    add(m, &a);
    cr_expect_eq(op_mesh_add_tile(m, &b, &e), OP_EINVAL);
    cr_expect(strstr(e.msg, "differs from layer 0") != NULL, "%s", e.msg);
    b.origin[0] = a.origin[0];
    b.origin[2] -= 0.5;
    cr_expect_eq(op_mesh_add_tile(m, &b, &e), OP_EINVAL);
    b.origin[2] = a.origin[2];
    add(m, &b); /* origin y may differ */
    op_mesh_destroy(m);
}

/* Neighbour values with bit 15 set are portals 0x8000..0x8003 or seams 0xc000 | layer into
 * another layer below OP_MAX_LAYERS (navmesh-format.md §3); the validator refuses the
 * rest, and more polygons than in-tile values can name. */
Test(mesh, validator_refuses_bad_seams_and_flag_values, .init = setup, .fini = teardown)
{
    op_tile t;
    op_err e;
    rect(2, 0.0, 0, 0, 10, 5, 0.0f, &t);
    static const struct {
        uint16_t v;
        const char *what;
    } bad[] = {
        {OP_NEI_SEAM | 2, "into layer 2"}, /* its own layer */
        {OP_NEI_SEAM | 1024, "into layer 1024"}, {OP_NEI_SEAM | 0x3fff, "into layer 16383"},
        {OP_NEI_PORTAL | 4, "portal 4"},         {OP_NEI_PORTAL | 0x2000, "portal 8192"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint16_t keep = t.neis[2];
        t.neis[2] = bad[i].v;
        cr_expect_eq(op_tile_validate(&t, &e), OP_EPROTO, "%#x accepted", bad[i].v);
        cr_expect(strstr(e.msg, bad[i].what) != NULL, "%#x: %s", bad[i].v, e.msg);
        t.neis[2] = keep;
    }
    t.neis[2] = OP_NEI_SEAM | 0;
    cr_expect_eq(op_tile_validate(&t, &e), OP_OK, "%s", e.msg);
    t.neis[2] = OP_NEI_SEAM | 1023;
    cr_expect_eq(op_tile_validate(&t, &e), OP_OK, "%s", e.msg);
    t.npolys = OP_MAX_LAYER_POLYS + 1;
    cr_expect_eq(op_tile_validate(&t, &e), OP_EPROTO);
}
