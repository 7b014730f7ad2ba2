/*
 * The Detour export's bytes (docs/spec/detour-export.md), read back field by field at the
 * spec's offsets: a hand-made tile whose Detour form is worked out here by hand (winding,
 * neighbours, detail flags, the fan), the bounding-volume tree's invariants on real tiles,
 * every refusal at its limit and one past it, and the determinism contracts: the same set
 * at any thread count, each cell built alone equal to its tile of the full set, pinned
 * hashes. Detour itself reads the export in test_detour.cpp.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/build.h"
#include "onepath/detour.h"
#include "onepath/hash.h"
#include "onepath/levelgen.h"
#include "onepath/limits.h"
#include "onepath/obj.h"
#include "op_handmesh.h"
#include "op_test.h"

/* ---- little-endian reads ---- */

static uint32_t u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static int32_t i32(const uint8_t *p)
{
    return (int32_t)u32(p);
}
static unsigned u16(const uint8_t *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}
static float f32(const uint8_t *p)
{
    uint32_t u = u32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Offsets of a tile's sections from its header counts (spec §3.1). */
typedef struct sections {
    int np, nv, nl, nd, nt, nb;
    size_t verts, polys, links, dmesh, dverts, dtris, bv, size;
} sections;

static sections sections_of(const uint8_t *d)
{
    sections s;
    s.np = i32(d + 24);
    s.nv = i32(d + 28);
    s.nl = i32(d + 32);
    s.nd = i32(d + 40);
    s.nt = i32(d + 44);
    s.nb = i32(d + 48);
    s.verts = 100;
    s.polys = s.verts + 12 * (size_t)s.nv;
    s.links = s.polys + 32 * (size_t)s.np;
    s.dmesh = s.links + 12 * (size_t)s.nl;
    s.dverts = s.dmesh + 12 * (size_t)s.np;
    s.dtris = s.dverts + 12 * (size_t)s.nd;
    s.bv = s.dtris + 4 * (size_t)s.nt;
    s.size = s.bv + 16 * (size_t)s.nb;
    return s;
}

static op_arena *A, *S;

static void setup(void)
{
    A = op_arena_create(0);
    S = op_arena_create(0);
    cr_assert(A && S);
}

static void teardown(void)
{
    op_arena_destroy(A);
    op_arena_destroy(S);
}

/* ---- a hand-made cell ---- */

/* Tile (1, 2) of size 10: a quad v0..v3 counter-clockwise (x right, z up) on the -x side
 * and a triangle next to it. */
static const float quad_verts[] = {0, 0, 2, 4, 0, 2, 4, 0.5f, 6, 0, 0.5f, 6, 7, 0, 4};
static const int quad_polys[] = {0, 1, 2, 3, -1, -1, 1, 4, 2, -1, -1, -1};

static void quad_tile(op_tile *t)
{
    cr_assert_eq(hm_tile(A, 1, 2, 0, 10.0, 3.0, quad_verts, 5, quad_polys, 2, NULL, t), 0);
}

Test(detour_export, a_hand_made_tile_by_the_spec, .init = setup, .fini = teardown)
{
    op_settings s;
    hm_settings(&s);
    op_tile t;
    quad_tile(&t);
    /* Give the quad two detail triangles with hand-set flags: (0, 1, 2) with edges 0 and 1
     * on the boundary (bits 0, 1), (0, 2, 3) with edges 1 and 2 (bits 1, 2). */
    static const uint8_t tris[] = {0, 1, 2, 3, 0, 2, 3, 6, 0, 1, 2, 7};
    t.dtris = (uint8_t *)tris;
    t.ndtris = 3;
    uint32_t dm[8] = {0, 0, 0, 2, 0, 0, 2, 1};
    t.dmeshes = dm;
    const op_tile *layers[] = {&t};
    uint8_t *d;
    size_t size;
    int np;
    op_err e;
    cr_assert_eq(op_detour_tile_data(layers, 1, &s, A, S, &d, &size, &np, &e), OP_OK, "%s", e.msg);
    sections x = sections_of(d);
    cr_assert_eq(size, x.size);
    cr_expect_eq(u32(d), 0x444e4156u);
    cr_expect_eq(i32(d + 4), 7);
    cr_expect(i32(d + 8) == 1 && i32(d + 12) == 2 && i32(d + 16) == 0);
    cr_expect(x.np == 2 && x.nv == 5 && x.nd == 0 && x.nt == 3 && x.nb == 3);
    cr_expect_eq(i32(d + 36), 2, "detailMeshCount");
    cr_expect(i32(d + 52) == 0 && i32(d + 56) == 2, "no off-mesh connections, base NP");
    /* quad: 1 portal (edge 3: v3 -> v0 on x = 0) + 1 in-tile; triangle: 1 in-tile */
    cr_expect_eq(x.nl, 4 + 1 + 1);
    cr_expect_eq(f32(d + 68), (float)s.agent_max_climb);
    cr_expect(f32(d + 72) == 10.0f && f32(d + 76) == 3.0f && f32(d + 80) == 20.0f, "bmin");
    cr_expect(f32(d + 84) == 20.0f && f32(d + 88) == 3.5f && f32(d + 92) == 30.0f, "bmax");
    cr_expect_eq(f32(d + 96), (float)(1.0 / 0.5));
    /* quad in Detour order: v0, v3, v2, v1 */
    const uint8_t *p0 = d + x.polys;
    cr_expect(u16(p0 + 4) == 0 && u16(p0 + 6) == 3 && u16(p0 + 8) == 2 && u16(p0 + 10) == 1);
    /* edges v0->v3 (onepath edge 3, the -x portal: Detour side 4), v3->v2 (edge 2, wall),
     * v2->v1 (edge 1, the triangle: index 1 + 1), v1->v0 (edge 0, wall) */
    cr_expect(u16(p0 + 16) == (0x8000u | 4u) && u16(p0 + 18) == 0 && u16(p0 + 20) == 2 &&
              u16(p0 + 22) == 0);
    cr_expect(p0[30] == 4 && p0[31] == 63 && u16(p0 + 28) == (unsigned)s.flags);
    /* triangle (1, 4, 2) -> (1, 2, 4): its edge 2 -> 1 is the quad */
    const uint8_t *p1 = p0 + 32;
    cr_expect(u16(p1 + 4) == 1 && u16(p1 + 6) == 2 && u16(p1 + 8) == 4);
    cr_expect(u16(p1 + 16) == 1 && u16(p1 + 18) == 0 && u16(p1 + 20) == 0);
    /* world vertices: v3 = (10 + 0, 3.5, 20 + 6) */
    cr_expect(f32(d + x.verts + 36) == 10.0f && f32(d + x.verts + 40) == 3.5f &&
              f32(d + x.verts + 44) == 26.0f);
    /* detail: quad tris (0, 1, 2 | 3) -> (0, 2, 3) with flags: onepath edges 2, 1, 0 ->
     * bits 0, 2, 4: 0b011 -> 0 | 4 | 16 = 20; (0, 2, 3 | 6) -> (0, 1, 2), 0b110 -> 1 | 4 = 5 */
    const uint8_t *t0 = d + x.dtris;
    cr_expect(t0[0] == 0 && t0[1] == 2 && t0[2] == 3 && t0[3] == 20, "%u %u %u %u", t0[0], t0[1],
              t0[2], t0[3]);
    cr_expect(t0[4] == 0 && t0[5] == 1 && t0[6] == 2 && t0[7] == 5, "%u %u %u %u", t0[4], t0[5],
              t0[6], t0[7]);
    /* triangle's (0, 1, 2 | 7) = (v1, v4, v2) -> (v1, v2, v4) = Detour's (0, 1, 2), every
     * edge on the boundary: 1 | 4 | 16 */
    cr_expect(t0[8] == 0 && t0[9] == 1 && t0[10] == 2 && t0[11] == 21);
    const uint8_t *dm1 = d + x.dmesh + 12;
    cr_expect(u32(dm1) == 0 && u32(dm1 + 4) == 2 && dm1[8] == 0 && dm1[9] == 1);
    for (size_t i = x.links; i < x.dmesh; i++)
        cr_assert_eq(d[i], 0, "links are left to addTile");
}

Test(detour_export, a_polygon_without_detail_gets_the_fan, .init = setup, .fini = teardown)
{
    op_settings s;
    hm_settings(&s);
    /* a hexagon, no detail triangles at all */
    static const float v[] = {2, 0, 1, 5, 0, 1, 7, 0, 3, 5, 0, 6, 2, 0, 6, 1, 0, 3};
    static const int p[] = {0, 1, 2, 3, 4, 5};
    op_tile t;
    cr_assert_eq(hm_tile(A, 0, 0, 0, 10.0, 0.0, v, 6, p, 1, NULL, &t), 0);
    t.ndtris = 0;
    uint32_t dm[4] = {0, 0, 0, 0};
    t.dmeshes = dm;
    const op_tile *layers[] = {&t};
    uint8_t *d;
    size_t size;
    int np;
    op_err e;
    cr_assert_eq(op_detour_tile_data(layers, 1, &s, A, S, &d, &size, &np, &e), OP_OK, "%s", e.msg);
    sections x = sections_of(d);
    cr_assert_eq(x.nt, 4);
    static const uint8_t want[] = {0, 1, 2, 1 | 4, 0, 2, 3, 4, 0, 3, 4, 4, 0, 4, 5, 4 | 16};
    cr_expect_arr_eq(d + x.dtris, want, sizeof want);
    cr_expect_eq((d + x.dmesh)[9], 4);
}

/* Two layers of one cell meeting at x = 4 (a seam, navmesh-format.md §3): layer 0's quad
 * (0..4) x (2..6), layer 1's quad (4..8) x (2..6) at height dy above it. */
static void seam_cell(op_tile *a, op_tile *b, float dy, float b_z1)
{
    static const float va[] = {0, 0, 2, 4, 0, 2, 4, 0, 6, 0, 0, 6};
    float vb[] = {4, dy, 2, 8, dy, 2, 8, dy, 6, 4, dy, b_z1};
    static const int quad[] = {0, 1, 2, 3, -1, -1};
    cr_assert_eq(hm_tile(A, 0, 0, 0, 10.0, 0.0, va, 4, quad, 1, NULL, a), 0);
    cr_assert_eq(hm_tile(A, 0, 0, 1, 10.0, 0.0, vb, 4, quad, 1, NULL, b), 0);
    a->neis[1] = (uint16_t)(OP_NEI_SEAM | 1u); /* edge v1 -> v2, x = 4 */
    b->neis[3] = (uint16_t)(OP_NEI_SEAM | 0u); /* edge v3 -> v0, x = 4 */
}

/* Detour neighbour of Detour edge j of polygon i of tile data d. */
static unsigned dt_nei(const uint8_t *d, int i, int j)
{
    sections x = sections_of(d);
    return u16(d + x.polys + 32 * (size_t)i + 16 + 2 * (size_t)j);
}

Test(detour_export, a_layer_seam_is_an_in_tile_link, .init = setup, .fini = teardown)
{
    op_settings s;
    hm_settings(&s); /* seam rule: within climb 0.75 + cell height 0.25 = 1.0 */
    op_tile a, b;
    const op_tile *layers[] = {&a, &b};
    uint8_t *d;
    size_t size;
    int np;
    op_err e;
    /* onepath edge 1 of a 4-gon is Detour edge 4 - 1 - 1 = 2; edge 3 is Detour edge 0 */
    seam_cell(&a, &b, 1.0f, 6.0f);
    cr_assert_eq(op_detour_tile_data(layers, 2, &s, A, S, &d, &size, &np, &e), OP_OK, "%s", e.msg);
    cr_expect_eq(dt_nei(d, 0, 2), 2, "layer 0's quad -> polygon 1 (layer 1's), index + 1");
    cr_expect_eq(dt_nei(d, 1, 0), 1, "and back");
    cr_expect_eq(i32(d + 32), 4 + 1 + 1, "links: layer 0's -x portal 4, each seam 1");
    /* heights apart by more than the rule allows: walls, as onepath's mesh leaves them */
    seam_cell(&a, &b, 1.01f, 6.0f);
    cr_assert_eq(op_detour_tile_data(layers, 2, &s, A, S, &d, &size, &np, &e), OP_OK, "%s", e.msg);
    cr_expect(dt_nei(d, 0, 2) == 0 && dt_nei(d, 1, 0) == 0);
    /* ends that do not meet (layer 1's edge is shorter): no Detour form, walls */
    seam_cell(&a, &b, 0.5f, 5.0f);
    cr_assert_eq(op_detour_tile_data(layers, 2, &s, A, S, &d, &size, &np, &e), OP_OK, "%s", e.msg);
    cr_expect(dt_nei(d, 0, 2) == 0 && dt_nei(d, 1, 0) == 0);
}

/* ---- refusals ---- */

Test(detour_export, params_keep_ten_salt_bits, .init = setup, .fini = teardown)
{
    op_detour_params p;
    op_err e;
    cr_assert_eq(op_detour_params_make(0, 0, 9.6, 1 << 11, 1 << 11, &p, &e), OP_OK);
    cr_expect(p.tile_bits == 11 && p.poly_bits == 11 && p.max_polys == 2048);
    cr_expect_eq(op_detour_tile_ref(&p, 3), (1u << 22) | (3u << 11));
    cr_assert_eq(op_detour_params_make(0, 0, 9.6, (1 << 11) + 1, 1 << 11, &p, &e), OP_ELIMIT);
    cr_expect(strstr(e.msg, "2049 tiles") && strstr(e.msg, "2048 polygons"), "%s", e.msg);
    cr_assert_eq(op_detour_params_make(0, 0, 9.6, 1, 1, &p, &e), OP_OK);
    cr_expect(p.tile_bits == 0 && p.poly_bits == 0 && op_detour_tile_ref(&p, 0) == 1u);
    cr_expect_eq(op_detour_params_make(0, 0, 9.6, 0, 1, &p, &e), OP_EINVAL);
    cr_expect_eq(op_detour_params_make(0, 0, 0.0, 1, 1, &p, &e), OP_EINVAL);
    uint8_t raw[OP_DETOUR_PARAMS_SIZE];
    cr_assert_eq(op_detour_params_make(-19.2, 9.6, 9.6, 5, 100, &p, &e), OP_OK);
    op_detour_params_write(&p, raw);
    cr_expect(f32(raw) == -19.2f && f32(raw + 8) == 9.6f && f32(raw + 12) == 9.6f);
    cr_expect(i32(raw + 20) == 5 && i32(raw + 24) == 128);
}

static op_status one(const op_tile *t, const op_settings *s, op_err *e)
{
    const op_tile *layers[] = {t};
    uint8_t *d;
    size_t size;
    int np;
    return op_detour_tile_data(layers, 1, s, A, S, &d, &size, &np, e);
}

Test(detour_export, refuses_what_is_not_one_cell, .init = setup, .fini = teardown)
{
    op_settings s;
    hm_settings(&s);
    op_tile a, b;
    quad_tile(&a);
    quad_tile(&b);
    const op_tile *layers[] = {&a, &b};
    uint8_t *d;
    size_t size;
    int np;
    op_err e;
    cr_expect_eq(op_detour_tile_data(layers, 0, &s, A, S, &d, &size, &np, &e), OP_EINVAL);
    cr_expect_eq(op_detour_tile_data(layers, 2, &s, A, S, &d, &size, &np, &e), OP_EINVAL,
                 "two layer 0");
    b.layer = 1;
    cr_expect_eq(op_detour_tile_data(layers, 2, &s, A, S, &d, &size, &np, &e), OP_OK, "%s", e.msg);
    cr_expect_eq(np, 4);
    b.tx = 2;
    cr_expect_eq(op_detour_tile_data(layers, 2, &s, A, S, &d, &size, &np, &e), OP_EINVAL);
    cr_expect(strstr(e.msg, "cell (1, 2)"), "%s", e.msg);
    b.tx = 1;
    b.neis[0] = 9; /* polygon 8 of a two-polygon layer */
    cr_expect_eq(op_detour_tile_data(layers, 2, &s, A, S, &d, &size, &np, &e), OP_EPROTO,
                 "layers are validated");
    cr_expect(d == NULL && size == 0 && np == 0);
}

/* A strip of n triangles along z (n + 2 vertices, plus extra unused ones),
 * counter-clockwise, inside [0, 10]: built directly, since hm_tile's neighbour search is
 * quadratic. Triangle i shares an edge with i - 1 and i + 1 only. */
static void strip(int n, int extra, op_tile *t)
{
    memset(t, 0, sizeof *t);
    t->tile_size = 10.0;
    t->nvp = HM_NVP;
    t->nverts = n + 2 + extra;
    t->npolys = n;
    t->verts = op_arena_alloc(A, sizeof(float) * 3 * (size_t)t->nverts);
    t->polys = op_arena_alloc(A, sizeof(uint16_t) * HM_NVP * (size_t)n);
    t->neis = op_arena_calloc(A, HM_NVP * (size_t)n, sizeof(uint16_t));
    t->areas = op_arena_alloc(A, (size_t)n);
    t->flags = op_arena_alloc(A, sizeof(uint16_t) * (size_t)n);
    t->dmeshes = op_arena_calloc(A, 4 * (size_t)n, sizeof(uint32_t));
    t->dverts = op_arena_alloc(A, 1);
    t->dtris = op_arena_alloc(A, 1);
    cr_assert(t->verts && t->polys && t->neis && t->areas && t->flags && t->dmeshes);
    int rows = t->nverts / 2 + 1;
    for (int i = 0; i < t->nverts; i++) {
        t->verts[3 * i] = (i % 2) ? 2.0f : 1.0f;
        t->verts[3 * i + 1] = 0.0f;
        t->verts[3 * i + 2] = 1.0f + 8.0f * (float)(i / 2) / (float)rows;
    }
    for (int i = 0; i < n; i++) {
        uint16_t *q = &t->polys[HM_NVP * i];
        q[0] = (uint16_t)i; /* (i, i+1, i+2) turns left for even i, (i, i+2, i+1) for odd */
        q[1] = (uint16_t)(i % 2 ? i + 2 : i + 1);
        q[2] = (uint16_t)(i % 2 ? i + 1 : i + 2);
        q[3] = q[4] = q[5] = OP_POLY_NULL;
        t->areas[i] = 63;
        t->flags[i] = 1;
    }
    for (int i = 0; i < n; i++)
        for (int j = i - 1; j <= i + 1; j += 2)
            for (int k = 0; j >= 0 && j < n && k < 3; k++)
                for (int l = 0; l < 3; l++) {
                    const uint16_t *a = &t->polys[HM_NVP * i], *b = &t->polys[HM_NVP * j];
                    if (a[k] == b[(l + 1) % 3] && a[(k + 1) % 3] == b[l])
                        t->neis[HM_NVP * i + k] = (uint16_t)(j + 1);
                }
}

Test(detour_export, polygon_and_vertex_limits, .init = setup, .fini = teardown, .timeout = 60)
{
    op_settings s;
    hm_settings(&s);
    op_tile t;
    op_err e;
    /* a layer's own neighbour encoding stops at 32767 polygons: two layers reach past */
    op_tile a, b;
    const op_tile *layers[] = {&a, &b};
    uint8_t *d;
    size_t size;
    int np;
    strip(OP_DETOUR_MAX_POLYS / 2, 0, &a);
    strip(OP_DETOUR_MAX_POLYS / 2 + 1, 0, &b);
    b.layer = 1;
    cr_assert_eq(op_detour_tile_data(layers, 2, &s, A, S, &d, &size, &np, &e), OP_OK, "%s", e.msg);
    cr_expect_eq(np, OP_DETOUR_MAX_POLYS);
    strip(OP_DETOUR_MAX_POLYS / 2 + 1, 0, &a);
    cr_assert_eq(op_detour_tile_data(layers, 2, &s, A, S, &d, &size, &np, &e), OP_ELIMIT, "%s",
                 e.msg);
    cr_expect(strstr(e.msg, "32768 polygons"), "%s", e.msg);
    /* vertices: unused ones count too (a tile holds what its layer's polygons use) */
    strip(1, OP_DETOUR_MAX_VERTS - 3, &t);
    cr_assert_eq(one(&t, &s, &e), OP_OK, "%s", e.msg);
    strip(1, OP_DETOUR_MAX_VERTS / 2 - 3, &a);
    strip(1, OP_DETOUR_MAX_VERTS / 2 - 2, &b);
    b.layer = 1;
    cr_assert_eq(op_detour_tile_data(layers, 2, &s, A, S, &d, &size, &np, &e), OP_ELIMIT,
                 "the layers' vertices add up: %s", e.msg);
    cr_expect(strstr(e.msg, "65535 vertices"), "%s", e.msg);
}

Test(detour_export, detail_triangle_limit, .init = setup, .fini = teardown)
{
    op_settings s;
    hm_settings(&s);
    op_tile t;
    quad_tile(&t);
    uint8_t *tris = op_arena_alloc(A, 4 * (OP_DETOUR_MAX_DETAIL_TRIS + 2));
    for (int i = 0; i < OP_DETOUR_MAX_DETAIL_TRIS + 2; i++) {
        tris[4 * i] = 0, tris[4 * i + 1] = 1, tris[4 * i + 2] = 2, tris[4 * i + 3] = 0;
    }
    uint32_t dm[8] = {0, 0, 0, OP_DETOUR_MAX_DETAIL_TRIS, 0, 0, OP_DETOUR_MAX_DETAIL_TRIS, 1};
    t.dtris = tris;
    t.dmeshes = dm;
    t.ndtris = OP_DETOUR_MAX_DETAIL_TRIS + 1;
    op_err e;
    cr_assert_eq(one(&t, &s, &e), OP_OK, "%s", e.msg);
    dm[3] = OP_DETOUR_MAX_DETAIL_TRIS + 1;
    dm[6] = OP_DETOUR_MAX_DETAIL_TRIS + 1;
    t.ndtris = OP_DETOUR_MAX_DETAIL_TRIS + 2;
    cr_assert_eq(one(&t, &s, &e), OP_ELIMIT);
    cr_expect(strstr(e.msg, "polygon 0 has 256 detail triangles"), "%s", e.msg);
}

Test(detour_export, coordinate_and_height_limits, .init = setup, .fini = teardown)
{
    op_settings s;
    hm_settings(&s);
    op_tile t;
    quad_tile(&t);
    op_err e;
    /* the quad's far corner x = origin + 7 (the triangle's vertex 4) */
    t.origin[0] = OP_DETOUR_MAX_COORD - 7.0;
    t.tx = (int)(t.origin[0] / 10.0); /* the grid origin G = origin - tx * 10 is then 5 m */
    cr_assert_eq(one(&t, &s, &e), OP_OK, "%s", e.msg);
    t.origin[0] = OP_DETOUR_MAX_COORD - 6.5;
    cr_assert_eq(one(&t, &s, &e), OP_ERANGE);
    cr_expect(strstr(e.msg, "coordinate"), "%s", e.msg);
    /* heights: the 16-bit boxes hold 65535 / q = 32767.5 m with cs = 0.5 */
    quad_tile(&t);
    t.verts[3 * 4 + 1] = 32000.0f;
    cr_assert_eq(one(&t, &s, &e), OP_OK, "%s", e.msg);
    t.verts[3 * 4 + 1] = 33000.0f;
    cr_assert_eq(one(&t, &s, &e), OP_ELIMIT);
    cr_expect(strstr(e.msg, "bounding-volume"), "%s", e.msg);
}

/* ---- real levels ---- */

static op_mesh *build_mesh(const char *spec, const char *partition, int threads)
{
    op_soup soup;
    op_err e;
    op_status st;
    if (!strncmp(spec, "gen:", 4)) {
        char kind[32];
        int size;
        cr_assert_eq(sscanf(spec + 4, "%31[a-z]:%d", kind, &size), 2);
        st = op_levelgen(kind, size, 1, A, &soup, &e);
    } else
        st = op_obj_read_file(op_test_level(spec), A, &soup, &e);
    cr_assert_eq(st, OP_OK, "%s", e.msg);
    op_settings s;
    op_settings_default(&s);
    if (partition)
        cr_assert_eq(op_settings_set(&s, "partition", partition, &e), OP_OK);
    op_level *lvl;
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_mesh *m;
    cr_assert_eq(op_mesh_build_level(lvl, threads, &m, &e), OP_OK, "%s", e.msg);
    op_level_destroy(lvl);
    return m;
}

static void export_set(const op_mesh *m, op_detour_set *set)
{
    op_err e;
    cr_assert_eq(op_detour_set_build(m, A, S, set, &e), OP_OK, "%s", e.msg);
}

/* The set file: header, then tile header and data per tile, nothing else. */
static void check_set_layout(const op_detour_set *set)
{
    const uint8_t *b = set->bytes;
    cr_assert_eq(u32(b), 0x4d534554u);
    cr_assert_eq(i32(b + 4), 1);
    cr_assert_eq(i32(b + 8), set->ntiles);
    size_t off = 40;
    for (int i = 0; i < set->ntiles; i++) {
        const op_detour_tile *t = &set->tiles[i];
        cr_assert_eq(u32(b + off), t->ref);
        cr_assert_eq((size_t)i32(b + off + 4), t->size);
        cr_assert_eq(t->data, b + off + 8);
        sections x = sections_of(t->data);
        cr_assert_eq(x.size, t->size, "tile %d: sections add up to dataSize", i);
        cr_assert(i32(t->data + 8) == t->tx && i32(t->data + 12) == t->tz);
        cr_assert_eq(x.np, t->npolys);
        cr_assert_leq(x.np, set->params.max_polys);
        off += 8 + t->size;
    }
    cr_assert_eq(off, set->size);
}

Test(detour_export, same_set_at_any_thread_count, .init = setup, .fini = teardown)
{
    const char *levels[][2] = {{"dungeon.obj", NULL}, {"gen:multifloor:64", "layers"}};
    for (int l = 0; l < 2; l++) {
        op_detour_set ref;
        op_mesh *m1 = build_mesh(levels[l][0], levels[l][1], 1);
        export_set(m1, &ref);
        check_set_layout(&ref);
        for (int threads = 2; threads <= 3; threads++) {
            op_mesh *m = build_mesh(levels[l][0], levels[l][1], threads);
            op_detour_set set;
            export_set(m, &set);
            cr_assert_eq(set.size, ref.size);
            cr_expect_arr_eq(set.bytes, ref.bytes, ref.size, "%s at %d threads", levels[l][0],
                             threads);
            op_mesh_destroy(m);
        }
        op_test_golden(l == 0 ? "detour/set-dungeon" : "detour/set-multifloor-layers",
                       op_hash_bytes(ref.bytes, ref.size));
        op_mesh_destroy(m1);
    }
}

/* Every cell built alone (op_level_build_stages) gives the bytes of its tile in the set:
 * the function onepathd serves is the export's. */
Test(detour_export, a_cell_built_alone_is_its_tile_of_the_set, .init = setup, .fini = teardown,
     .timeout = 120)
{
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("multifloor", 64, 1, A, &soup, &e), OP_OK);
    op_settings s;
    op_settings_default(&s);
    cr_assert_eq(op_settings_set(&s, "partition", "layers", &e), OP_OK);
    op_level *lvl;
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_mesh *m;
    cr_assert_eq(op_mesh_build_level(lvl, 2, &m, &e), OP_OK, "%s", e.msg);
    op_detour_set set;
    export_set(m, &set);
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    int multi = 0;
    for (int i = 0; i < set.ntiles; i++) {
        const op_detour_tile *dt = &set.tiles[i];
        op_tile_stages st;
        cr_assert_eq(
            op_level_build_stages(lvl, dt->tx, dt->tz, OP_STAGE_TILE, 0, out, scratch, &st, &e),
            OP_OK, "%s", e.msg);
        op_arena_reset(scratch);
        const op_tile *layers[OP_MAX_LAYERS];
        for (int k = 0; k < st.ntiles; k++)
            layers[k] = &st.tiles[k];
        multi += st.ntiles > 1;
        uint8_t *d;
        size_t size;
        int np;
        cr_assert_eq(op_detour_tile_data(layers, st.ntiles, op_level_settings(lvl), out, scratch,
                                         &d, &size, &np, &e),
                     OP_OK, "%s", e.msg);
        cr_assert_eq(size, dt->size, "cell (%d, %d)", dt->tx, dt->tz);
        cr_assert_arr_eq(d, dt->data, size, "cell (%d, %d)", dt->tx, dt->tz);
        op_arena_reset(out);
        op_arena_reset(scratch);
    }
    cr_expect_gt(multi, 0, "some cell has several layers");
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    op_mesh_destroy(m);
    op_level_destroy(lvl);
}

/* Detour's tree walk (escape offsets) over a tile's nodes: every polygon once, each box
 * inside its parent's and around its polygon's vertices quantised as Detour does. */
static void check_bvtree(const uint8_t *d)
{
    sections x = sections_of(d);
    float bmin[3] = {f32(d + 72), f32(d + 76), f32(d + 80)}, q = f32(d + 96);
    cr_assert_eq(x.nb, 2 * x.np - 1);
    int *seen = calloc((size_t)x.np, sizeof *seen);
    /* stack of (end node, parent box) */
    int end[64], depth = 0;
    unsigned box[64][6];
    end[0] = x.nb;
    for (int a = 0; a < 3; a++)
        box[0][a] = 0, box[0][3 + a] = 65535;
    for (int n = 0; n < x.nb; n++) {
        while (n >= end[depth])
            depth--;
        const uint8_t *node = d + x.bv + 16 * (size_t)n;
        unsigned lo[3] = {u16(node), u16(node + 2), u16(node + 4)};
        unsigned hi[3] = {u16(node + 6), u16(node + 8), u16(node + 10)};
        for (int a = 0; a < 3; a++)
            cr_assert(lo[a] <= hi[a] && lo[a] >= box[depth][a] && hi[a] <= box[depth][3 + a],
                      "node %d axis %d", n, a);
        int idx = i32(node + 12);
        if (idx >= 0) {
            cr_assert_lt(idx, x.np);
            seen[idx]++;
            const uint8_t *p = d + x.polys + 32 * (size_t)idx;
            for (int k = 0; k < p[30]; k++) {
                const uint8_t *v = d + x.verts + 12 * (size_t)u16(p + 4 + 2 * k);
                for (int a = 0; a < 3; a++) {
                    float c = (f32(v + 4 * a) - bmin[a]) * q; /* Detour's float steps */
                    cr_assert(c >= 0.0f && (unsigned)(int)c >= lo[a] && (unsigned)(int)c <= hi[a],
                              "poly %d vertex %d axis %d", idx, k, a);
                }
            }
        } else {
            cr_assert(n - idx <= end[depth] && depth < 63, "escape inside the parent");
            depth++;
            end[depth] = n - idx;
            for (int a = 0; a < 3; a++)
                box[depth][a] = lo[a], box[depth][3 + a] = hi[a];
        }
    }
    for (int i = 0; i < x.np; i++)
        cr_assert_eq(seen[i], 1, "polygon %d in the tree", i);
    free(seen);
}

Test(detour_export, bvtree_holds_every_polygon, .init = setup, .fini = teardown)
{
    op_mesh *m = build_mesh("gen:stairs:64", NULL, 2);
    op_detour_set set;
    export_set(m, &set);
    for (int i = 0; i < set.ntiles; i++)
        check_bvtree(set.tiles[i].data);
    op_mesh_destroy(m);
}

/* Out of memory at every allocation: OP_ENOMEM and no output, never a crash (the arena
 * fail-after-N loop of the style anchors). */
Test(detour_export, out_of_memory_at_every_allocation, .init = setup, .fini = teardown)
{
    op_mesh *m = build_mesh("gen:multifloor:32", "layers", 1);
    int ok = 0;
    long n = 0;
    for (; n < 1024 && !ok; n++) {
        op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
        op_arena_fail_after(out, n);
        op_arena_fail_after(scratch, n);
        op_detour_set set;
        op_err e;
        op_status st = op_detour_set_build(m, out, scratch, &set, &e);
        cr_assert(st == OP_OK || st == OP_ENOMEM, "after %ld: %s", n, e.msg);
        if (st == OP_ENOMEM)
            cr_assert(set.bytes == NULL && set.ntiles == 0 && strstr(e.msg, "out of memory"));
        ok = st == OP_OK;
        op_arena_destroy(out);
        op_arena_destroy(scratch);
    }
    cr_expect(ok && n > 8, "the export fails at each of its first allocations, then succeeds");
    op_mesh_destroy(m);
}
