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
#include "op_test.h"

#define W       OP_NEI_WALL
#define P(side) (OP_NEI_PORTAL | (side))
#define N       OP_POLY_MESH_NULL

/* A mesh of nvp 6 over the caller's arrays on the demo frame (B = 5, 32 cells of 0.3), every
 * edge internal (en filled here), region 1 and area 63 for every polygon. */
static op_poly_mesh demo_mesh(int nverts, int32_t *verts, int npolys, uint32_t *polys, int32_t *en,
                              uint16_t *regs, uint8_t *areas)
{
    for (int i = 0; i < npolys * 6; i++)
        en[i] = OP_EDGE_INTERNAL;
    for (int i = 0; i < npolys; i++)
        regs[i] = 1, areas[i] = 63;
    op_poly_mesh pm;
    memset(&pm, 0, sizeof pm);
    pm.nverts = nverts;
    pm.verts = verts;
    pm.npolys = npolys;
    pm.nvp = 6;
    pm.polys = polys;
    pm.edge_neighbour = en;
    pm.regs = regs;
    pm.areas = areas;
    pm.frame = (op_tile_frame){5, 32, 0.3, 9.6, 0.2};
    return pm;
}

/* op_tile_assemble of tile (0, 0) with default settings and no detail; returns ntiles. */
static int assemble(const op_poly_mesh *pm, const int *layer_of, int nlayers, op_arena *out,
                    op_tile *tiles)
{
    op_settings s;
    op_settings_default(&s);
    op_tile_source src = {0, 0, 0.0, 0, 0.0, 0.0, NULL, 0};
    op_arena *scratch = op_arena_create(0);
    int ntiles = 0;
    op_err e;
    cr_assert_eq(
        op_tile_assemble(pm, NULL, layer_of, nlayers, &src, &s, out, scratch, tiles, &ntiles, &e),
        OP_OK, "%s", e.msg);
    op_arena_destroy(scratch);
    return ntiles;
}

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
    uint16_t regs[4];
    uint8_t areas[4];
    int32_t en[24];
    op_poly_mesh pm = demo_mesh(8, verts, 4, polys, en, regs, areas);
    regs[2] = 2;
    op_arena *out = op_arena_create(0);
    op_tile tile;
    cr_assert_eq(assemble(&pm, NULL, 1, out, &tile), 1);
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
}

/* A layer's vertices are the mesh vertices its polygons use, in ascending mesh order
 * (build3d-polys.md §5), whether the layer uses most of its id range (read off in one
 * scan) or a few ids spread over it (sorted): random meshes of dense and sparse layers,
 * each tile layer checked against the used set computed here by marking. */
Test(tile_link, layer_vertices_are_the_used_ones_ascending)
{
    enum { NV = 300, NP = 120, NL = 4, NVP = 6 };
    op_test_rng rng = {42};
    for (int round = 0; round < 40; round++) {
        int32_t verts[3 * NV];
        for (int v = 0; v < NV; v++) { /* distinct cells inside the tile: 30 x 10 */
            verts[3 * v + 0] = 5 + v % 30;
            verts[3 * v + 1] = op_test_rand_int(&rng, 0, 20);
            verts[3 * v + 2] = 5 + v / 30;
        }
        uint32_t polys[NP * NVP];
        int layer_of[NP];
        int np = 0;
        while (np < NP) {
            /* layer 0 anywhere; 1 a narrow band of ids far from 0; 2 and 3 a few ids
             * spread over the whole range (sparse: the sort) */
            int l = op_test_rand_int(&rng, 0, 9) < 6 ? 0 : op_test_rand_int(&rng, 1, NL - 1);
            int lo = l == 1 ? 200 : 0, hi = l == 1 ? 239 : NV - 1;
            uint32_t a, b, c;
            if (l >= 2) {
                int base = op_test_rand_int(&rng, 0, NV / 30 - 1) * 30; /* one row */
                a = (uint32_t)(base + op_test_rand_int(&rng, 0, 29));
                b = (uint32_t)((base + 30 + op_test_rand_int(&rng, 0, 29)) % NV);
                c = (uint32_t)(base + op_test_rand_int(&rng, 0, 29));
                if (op_test_rand_int(&rng, 0, 3))
                    continue; /* keep layers 2 and 3 sparse */
            } else {
                a = (uint32_t)op_test_rand_int(&rng, lo, hi);
                b = (uint32_t)op_test_rand_int(&rng, lo, hi);
                c = (uint32_t)op_test_rand_int(&rng, lo, hi);
            }
            long ax = verts[3 * a], az = verts[3 * a + 2], bx = verts[3 * b], bz = verts[3 * b + 2],
                 cx = verts[3 * c], cz = verts[3 * c + 2];
            long o = (bx - ax) * (cz - az) - (bz - az) * (cx - ax);
            if (o == 0)
                continue;
            if (o < 0) { /* counter-clockwise, x right and z up */
                uint32_t t = b;
                b = c;
                c = t;
            }
            uint32_t *p = &polys[np * NVP];
            p[0] = a, p[1] = b, p[2] = c;
            for (int k = 3; k < NVP; k++)
                p[k] = N;
            layer_of[np++] = l;
        }
        int32_t en[NP * NVP];
        uint16_t regs[NP];
        uint8_t areas[NP];
        op_poly_mesh pm = demo_mesh(NV, verts, NP, polys, en, regs, areas);
        op_arena *out = op_arena_create(0);
        op_tile tiles[NL];
        int ntiles = assemble(&pm, layer_of, NL, out, tiles);
        int k = 0;
        for (int l = 0; l < NL; l++) {
            int used[NV] = {0}, rank[NV], nused = 0, lpolys = 0;
            for (int p = 0; p < NP; p++)
                if (layer_of[p] == l) {
                    lpolys++;
                    for (int j = 0; j < 3; j++)
                        used[polys[p * NVP + j]] = 1;
                }
            if (!lpolys)
                continue;
            for (int v = 0; v < NV; v++)
                rank[v] = used[v] ? nused++ : -1;
            cr_assert_lt(k, ntiles);
            const op_tile *t = &tiles[k++];
            cr_assert_eq(t->layer, l);
            cr_assert_eq(t->nverts, nused, "round %d layer %d: %d vertices, want %d", round, l,
                         t->nverts, nused);
            for (int v = 0; v < NV; v++)
                if (used[v]) {
                    const float *o = &t->verts[3 * rank[v]];
                    cr_assert(o[0] == op_tile_local(&pm.frame, verts[3 * v]) &&
                                  o[2] == op_tile_local(&pm.frame, verts[3 * v + 2]),
                              "round %d layer %d: vertex %d is not mesh vertex %d", round, l,
                              rank[v], v);
                }
            int q = 0;
            for (int p = 0; p < NP; p++)
                if (layer_of[p] == l) {
                    for (int j = 0; j < 3; j++)
                        cr_assert_eq(t->polys[q * NVP + j], rank[polys[p * NVP + j]],
                                     "round %d layer %d polygon %d", round, l, q);
                    q++;
                }
        }
        cr_assert_eq(k, ntiles);
        op_arena_destroy(out);
    }
}
