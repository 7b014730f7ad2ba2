/*
 * In-tile adjacency of op_tile_assemble (build3d-polys.md §5): an edge shared by
 * exactly two polygons in opposite directions links them; a lone edge whose two
 * vertices lie on x = 0, z = TileSize, x = TileSize or z = 0 is a portal to that side;
 * everything else (an edge of three polygons, two polygons along the same direction, a
 * lone inner edge) is a wall. Expected values worked out by hand from those rules.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "onepath/polys.h"
#include "onepath/tile.h"

#define W       OP_NEI_WALL
#define P(side) (OP_NEI_PORTAL | (side))
#define N       OP_POLY_MESH_NULL

Test(tile_link, links_portals_and_walls_by_the_rules)
{
    /* Cell coordinates (B = 5, 32 cells of 0.3): local x = (c - 5) * 0.3, so cell 5 is
     * 0 and cell 37 is TileSize 9.6. */
    int32_t verts[] = {
        5,  0, 5,  /* v0 (0, 0) */
        15, 0, 5,  /* v1 (3, 0) */
        15, 0, 15, /* v2 (3, 3) */
        5,  0, 15, /* v3 (0, 3) */
        25, 0, 5,  /* v4 (6, 0) */
        25, 0, 15, /* v5 (6, 3) */
        37, 0, 5,  /* v6 (9.6, 0) */
        37, 0, 15, /* v7 (9.6, 3) */
    };
    uint32_t polys[] = {
        0, 1, 2, 3, N, N, /* A: v1-v2 also in B and C (three polygons) */
        1, 4, 5, 2, N, N, /* B: v1-v4 also in C the same way round; v4-v5 opposite D's */
        1, 4, 2, N, N, N, /* C */
        4, 6, 7, 5, N, N, /* D: on z = 0 and x = TileSize */
    };
    uint16_t regs[4] = {1, 1, 2, 1};
    uint8_t areas[4] = {63, 63, 63, 63};
    int32_t en[24];
    for (int i = 0; i < 24; i++)
        en[i] = OP_EDGE_INTERNAL;
    op_poly_mesh pm;
    memset(&pm, 0, sizeof pm);
    pm.nverts = 8;
    pm.verts = verts;
    pm.npolys = 4;
    pm.nvp = 6;
    pm.polys = polys;
    pm.edge_neighbour = en;
    pm.regs = regs;
    pm.areas = areas;
    pm.frame = (op_tile_frame){5, 32, 0.3, 9.6, 0.2};
    op_settings s;
    op_settings_default(&s);
    op_tile_source src = {0, 0, 0.0, 0, 0.0, 0.0, NULL, 0};
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_tile tile;
    int ntiles = 0;
    op_err e;
    cr_assert_eq(op_tile_assemble(&pm, NULL, NULL, 1, &src, &s, out, scratch, &tile, &ntiles, &e),
                 OP_OK, "%s", e.msg);
    cr_assert_eq(ntiles, 1);
    static const uint16_t want[24] = {
        P(3), W,    W, P(0), W, W, /* A */
        W,    4,    W, W,    W, W, /* B: k1 to D (index 3, stored + 1) */
        W,    W,    W, W,    W, W, /* C */
        P(3), P(2), W, 2,    W, W, /* D: k3 to B */
    };
    for (int i = 0; i < 24; i++)
        cr_assert_eq(tile.neis[i], want[i], "polygon %d edge %d: %#x, want %#x", i / 6, i % 6,
                     tile.neis[i], want[i]);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
}
