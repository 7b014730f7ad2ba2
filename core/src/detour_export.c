/*
 * Detour export (docs/spec/detour-export.md): the tile layers of one tile cell → one
 * tile of Detour navmesh data, and a mesh → RecastDemo's navmesh set. Input: validated
 * op_tiles (a cell holds a few layers of a few hundred polygons); output: little-endian
 * bytes written field by field at the offsets of spec §3 (never a struct copy).
 * Invariants: polygons wound as Detour winds them (spec §3.3), every reference inside
 * the tile, the bounding-volume tree covering every polygon and its detail, and the
 * bytes a pure function of the cell's tiles and the settings.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/detour.h"
#include "onepath/limits.h"
#include "detour_internal.h"

/* Detour's portal sides (DetourNavMesh.cpp: 0 = +x, 2 = +z, 4 = -x, 6 = -z) for
 * onepath's (navmesh-format.md §3: 0 = -x, 1 = +z, 2 = +x, 3 = -z). */
static const uint16_t detour_side[4] = {4, 2, 0, 6};
#define DT_EXT_LINK 0x8000u

/* ---- little-endian writers ---- */

static void put_u16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)(v & 0xffu);
    p[1] = (uint8_t)((v >> 8) & 0xffu);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)((v >> (8 * i)) & 0xffu);
}

static void put_i32(uint8_t *p, int32_t v)
{
    put_u32(p, (uint32_t)v);
}

static void put_f32(uint8_t *p, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    put_u32(p, u);
}

/* ---- params and references ---- */

static int ceil_log2(unsigned v)
{
    int b = 0;
    while (b < 31 && (1u << b) < v)
        b++;
    return b;
}

op_status op_detour_params_make(double orig_x, double orig_z, double tile_size, int ntiles,
                                int max_polys, op_detour_params *p, op_err *err)
{
    memset(p, 0, sizeof *p);
    if (ntiles < 1 || max_polys < 1 || !(tile_size > 0.0))
        return op_err_set(err, OP_EINVAL, "detour: %d tiles, %d polygons, tile size %g", ntiles,
                          max_polys, tile_size);
    p->tile_bits = ceil_log2((unsigned)ntiles);
    p->poly_bits = ceil_log2((unsigned)max_polys);
    if (p->tile_bits + p->poly_bits > OP_DETOUR_REF_BITS)
        return op_err_set(err, OP_ELIMIT,
                          "detour: %d tiles (%d bits) and up to %d polygons a tile (%d bits) need "
                          "%d reference bits > %d (32-bit references keep 10 salt bits)",
                          ntiles, p->tile_bits, max_polys, p->poly_bits,
                          p->tile_bits + p->poly_bits, OP_DETOUR_REF_BITS);
    p->orig[0] = (float)orig_x;
    p->orig[1] = 0.0f;
    p->orig[2] = (float)orig_z;
    p->tile_width = p->tile_height = (float)tile_size;
    p->max_tiles = ntiles;
    p->max_polys = 1 << p->poly_bits; /* all the bits reserve: room for rebuilt tiles */
    op_err_clear(err);
    return OP_OK;
}

uint32_t op_detour_tile_ref(const op_detour_params *p, int i)
{
    return (1u << (p->tile_bits + p->poly_bits)) | ((uint32_t)i << p->poly_bits);
}

void op_detour_params_write(const op_detour_params *p, uint8_t out[OP_DETOUR_PARAMS_SIZE])
{
    for (int i = 0; i < 3; i++)
        put_f32(out + 4 * i, p->orig[i]);
    put_f32(out + 12, p->tile_width);
    put_f32(out + 16, p->tile_height);
    put_i32(out + 20, p->max_tiles);
    put_i32(out + 24, p->max_polys);
}

/* ---- one cell: layout ---- */

/* Counts and byte offsets of one Detour tile (spec §3.1). */
typedef struct cell {
    const op_tile *const *layers;
    int nlayers;
    double grid[2];  /* grid origin x, z (spec §2.1) */
    double seam_tol; /* navmesh-format.md §6.4: agent max climb + cell height */
    int npolys, nverts, ndverts, ndtris, nlinks, nbv;
    size_t off_verts, off_polys, off_links, off_dmesh, off_dverts, off_dtris, off_bv, size;
} cell;

/* One cell in layer order; validate: each layer passes op_tile_validate (untrusted
 * input; the mesh's tiles were validated when added). */
static op_status check_layers(const op_tile *const *layers, int nlayers, int validate, op_err *err)
{
    if (!layers || nlayers < 1 || !layers[0])
        return op_err_set(err, OP_EINVAL, "detour: a cell needs at least one tile layer");
    const op_tile *a = layers[0];
    for (int i = 0; i < nlayers; i++) {
        const op_tile *t = layers[i];
        op_status st;
        if (t && validate && (st = op_tile_validate(t, err)) != OP_OK)
            return st;
        if (!t || t->tx != a->tx || t->tz != a->tz || t->nvp != a->nvp ||
            t->tile_size != a->tile_size || t->origin[0] != a->origin[0] ||
            t->origin[2] != a->origin[2] || (i > 0 && t->layer <= layers[i - 1]->layer))
            return op_err_set(err, OP_EINVAL,
                              "detour: tile layer %d of cell (%d, %d) is not a later layer of the "
                              "same cell",
                              i, a->tx, a->tz);
    }
    return OP_OK;
}

static op_status count_cell(cell *c, op_err *err)
{
    const op_tile *t0 = c->layers[0];
    long np = 0, nv = 0, ndv = 0, ndt = 0, nl = 0;
    for (int i = 0; i < c->nlayers; i++) {
        const op_tile *t = c->layers[i];
        np += t->npolys;
        nv += t->nverts;
        for (int p = 0; p < t->npolys; p++) {
            int n = op_tile_poly_nverts(t, p);
            const uint32_t *dm = &t->dmeshes[4 * (size_t)p];
            uint32_t ntris = dm[3] ? dm[3] : (uint32_t)(n - 2); /* no detail: the fan */
            if (ntris > OP_DETOUR_MAX_DETAIL_TRIS || dm[1] > OP_DETOUR_MAX_DETAIL_VERTS)
                return op_err_set(err, OP_ELIMIT,
                                  "detour: cell (%d, %d) layer %d polygon %d has %u detail "
                                  "triangles and %u extra vertices, Detour holds %d of each",
                                  t->tx, t->tz, t->layer, p, ntris, dm[1],
                                  OP_DETOUR_MAX_DETAIL_TRIS);
            ndv += dm[1];
            ndt += ntris;
            for (int k = 0; k < n; k++) {
                uint16_t v = t->neis[(size_t)p * t->nvp + k];
                nl += v == OP_NEI_WALL ? 0 : OP_NEI_IS_SEAM(v) ? 1 : (v & OP_NEI_PORTAL) ? 4 : 1;
            }
        }
    }
    if (np < 1)
        return op_err_set(err, OP_EINVAL, "detour: cell (%d, %d) has no polygon", t0->tx, t0->tz);
    if (np > OP_DETOUR_MAX_POLYS || nv > OP_DETOUR_MAX_VERTS)
        return op_err_set(err, OP_ELIMIT,
                          "detour: cell (%d, %d) has %ld polygons and %ld vertices, a Detour tile "
                          "holds %d and %d",
                          t0->tx, t0->tz, np, nv, OP_DETOUR_MAX_POLYS, OP_DETOUR_MAX_VERTS);
    c->npolys = (int)np;
    c->nverts = (int)nv;
    c->ndverts = (int)ndv;
    c->ndtris = (int)ndt;
    /* Detour links: one per in-tile neighbour, at most four per portal edge
     * (findConnectingPolys keeps four); at least one, since addTile writes the last. */
    c->nlinks = nl > 0 ? (int)nl : 1;
    c->nbv = 2 * c->npolys - 1;
    c->off_verts = OP_DETOUR_HEADER_SIZE;
    c->off_polys = c->off_verts + 12 * (size_t)c->nverts;
    c->off_links = c->off_polys + OP_DETOUR_POLY_SIZE * (size_t)c->npolys;
    c->off_dmesh = c->off_links + OP_DETOUR_LINK_SIZE * (size_t)c->nlinks;
    c->off_dverts = c->off_dmesh + OP_DETOUR_DMESH_SIZE * (size_t)c->npolys;
    c->off_dtris = c->off_dverts + 12 * (size_t)c->ndverts;
    c->off_bv = c->off_dtris + 4 * (size_t)c->ndtris;
    c->size = c->off_bv + OP_DETOUR_BVNODE_SIZE * (size_t)c->nbv;
    return OP_OK;
}

/* ---- one cell: world positions ---- */

/* World positions of every polygon vertex and detail extra, float32 (spec §2.1). */
typedef struct world {
    float *verts, *dverts;
    float ymin, ymax;
} world;

/* World float32 of one tile-local coordinate: op__detour_coord with the cell's grid. */
static double world_coord(const cell *c, const op_tile *t, int i, float local)
{
    return op__detour_coord(t, c->grid[i / 2], i, local);
}

static op_status to_world(const cell *c, const op_tile *t, const float *local, int n, float *out,
                          world *w, op_err *err)
{
    for (int v = 0; v < n; v++)
        for (int i = 0; i < 3; i++) {
            double d = world_coord(c, t, i, local[3 * v + i]);
            if (!(fabs(d) <= OP_DETOUR_MAX_COORD))
                return op_err_set(err, OP_ERANGE,
                                  "detour: cell (%d, %d) layer %d has a coordinate %g beyond "
                                  "+-%g (Detour keeps world float32)",
                                  t->tx, t->tz, t->layer, d, OP_DETOUR_MAX_COORD);
            float f = (float)d;
            out[3 * v + i] = f;
            if (i == 1) {
                w->ymin = f < w->ymin ? f : w->ymin;
                w->ymax = f > w->ymax ? f : w->ymax;
            }
        }
    return OP_OK;
}

static op_status world_positions(const cell *c, op_arena *scratch, world *w, op_err *err)
{
    w->verts = op_arena_alloc(scratch, (size_t)c->nverts * 3 * sizeof(float) + 1);
    w->dverts = op_arena_alloc(scratch, (size_t)c->ndverts * 3 * sizeof(float) + 1);
    if (!w->verts || !w->dverts)
        return op_err_set(err, OP_ENOMEM, "detour: out of memory (%d vertices)",
                          c->nverts + c->ndverts);
    w->ymin = INFINITY;
    w->ymax = -INFINITY;
    int vb = 0, dvb = 0;
    for (int i = 0; i < c->nlayers; i++) {
        const op_tile *t = c->layers[i];
        op_status st;
        if ((st = to_world(c, t, t->verts, t->nverts, &w->verts[3 * vb], w, err)) != OP_OK ||
            (st = to_world(c, t, t->dverts, t->ndverts, &w->dverts[3 * dvb], w, err)) != OP_OK)
            return st;
        vb += t->nverts;
        dvb += t->ndverts;
    }
    return OP_OK;
}

/* ---- one cell: header, polygons, detail ---- */

/* The header's box and bounding-volume factor (spec §3.2, §3.6). */
typedef struct frame {
    float bmin[3], bmax[3], q;
} frame;

static void tile_frame(const cell *c, const world *w, const op_settings *s, frame *f)
{
    const op_tile *t = c->layers[0];
    op_tile_grid g;
    op_tile_grid_derive(s, &g);
    float ts = (float)t->tile_size;
    f->bmin[0] = (float)world_coord(c, t, 0, 0.0f);
    f->bmin[1] = w->ymin;
    f->bmin[2] = (float)world_coord(c, t, 2, 0.0f);
    f->bmax[0] = (float)world_coord(c, t, 0, ts);
    f->bmax[1] = w->ymax;
    f->bmax[2] = (float)world_coord(c, t, 2, ts);
    f->q = (float)(1.0 / g.cs);
}

static void write_header(const cell *c, const frame *f, const op_settings *s, uint8_t *d)
{
    const op_tile *t = c->layers[0];
    int32_t ints[15] = {
        OP_DETOUR_MAGIC, OP_DETOUR_VERSION, t->tx,      t->tz,     0,      0, c->npolys, c->nverts,
        c->nlinks,       c->npolys,         c->ndverts, c->ndtris, c->nbv, 0, c->npolys};
    for (int i = 0; i < 15; i++)
        put_i32(d + 4 * i, ints[i]);
    put_f32(d + 60, (float)s->agent_height);
    put_f32(d + 64, (float)s->agent_radius);
    put_f32(d + 68, (float)s->agent_max_climb);
    for (int i = 0; i < 3; i++) {
        put_f32(d + 72 + 4 * i, f->bmin[i]);
        put_f32(d + 84 + 4 * i, f->bmax[i]);
    }
    put_f32(d + 96, f->q);
}

/* Height of an edge from (ua, ya) to (ub, yb) at u, as navmesh-format.md §5.3 and §6.4
 * interpolate it. */
static double edge_y(double ua, double ya, double ub, double yb, double u)
{
    return ua == ub ? ya : ya + (yb - ya) * ((u - ua) / (ub - ua));
}

/* Whether seam edge m of polygon q of layer u meets seam edge k of polygon p of layer t
 * end to end (spec §4): it names t's layer, its two ends are t's edge's ends the other way
 * round in tile-local x and z, and the heights at both ends pass navmesh-format.md §6.4. */
static int seam_meets(const cell *c, const op_tile *t, int p, int k, const op_tile *u, int q, int m)
{
    if (u->neis[(size_t)q * u->nvp + m] != (OP_NEI_SEAM | (unsigned)t->layer))
        return 0;
    int n = op_tile_poly_nverts(t, p), nq = op_tile_poly_nverts(u, q);
    const float *a0 = &t->verts[3 * t->polys[(size_t)p * t->nvp + k]];
    const float *a1 = &t->verts[3 * t->polys[(size_t)p * t->nvp + (k + 1) % n]];
    const float *b0 = &u->verts[3 * u->polys[(size_t)q * u->nvp + m]];
    const float *b1 = &u->verts[3 * u->polys[(size_t)q * u->nvp + (m + 1) % nq]];
    if (b0[0] != a1[0] || b0[2] != a1[2] || b1[0] != a0[0] || b1[2] != a0[2])
        return 0;
    int ax = a0[0] != a1[0] ? 0 : 2;
    double ua = a0[ax], ub = a1[ax], lo = ua < ub ? ua : ub, hi = ua < ub ? ub : ua;
    double ya = t->origin[1] + (double)a0[1], yb = t->origin[1] + (double)a1[1];
    double za = u->origin[1] + (double)b0[1], zb = u->origin[1] + (double)b1[1];
    double d0 = edge_y(ua, ya, ub, yb, lo) - edge_y(ub, za, ua, zb, lo);
    double d1 = edge_y(ua, ya, ub, yb, hi) - edge_y(ub, za, ua, zb, hi);
    return d0 <= c->seam_tol && -d0 <= c->seam_tol && d1 <= c->seam_tol && -d1 <= c->seam_tol;
}

/* The Detour polygon across seam edge k of polygon p of the cell's layer li: the first
 * polygon (in order) of the layer the seam names with a seam edge meeting it end to end;
 * -1 when there is none, and the edge stays a wall (spec §4). */
static int seam_partner(const cell *c, int li, int p, int k)
{
    const op_tile *t = c->layers[li];
    int want = OP_NEI_SEAM_LAYER(t->neis[(size_t)p * t->nvp + k]), base = 0;
    for (int j = 0; j < c->nlayers; base += c->layers[j]->npolys, j++) {
        const op_tile *u = c->layers[j];
        if (u->layer != want)
            continue;
        for (int q = 0; q < u->npolys; q++)
            for (int m = 0; m < op_tile_poly_nverts(u, q); m++)
                if (seam_meets(c, t, p, k, u, q, m))
                    return base + q;
    }
    return -1;
}

/* Detour's value for edge k of polygon p of the cell's layer li, whose first polygon is
 * polygon poly_base of the Detour tile (spec §3.4). */
static uint16_t detour_nei(const cell *c, int li, int p, int k, int poly_base)
{
    const op_tile *t = c->layers[li];
    uint16_t v = t->neis[(size_t)p * t->nvp + k];
    if (v == OP_NEI_WALL)
        return 0;
    if (OP_NEI_IS_SEAM(v)) {
        int q = seam_partner(c, li, p, k);
        return q < 0 ? 0 : (uint16_t)(q + 1);
    }
    if (v & OP_NEI_PORTAL)
        return (uint16_t)(DT_EXT_LINK | detour_side[v & 3u]);
    return (uint16_t)(poly_base + v); /* in-tile: (index + 1) rebased */
}

/* Polygon p of the cell's layer li as dtPoly at d: Detour vertex j is onepath vertex
 * (n - j) mod n, so Detour edge j is onepath edge n - 1 - j walked backwards (spec §3.3). */
static void write_poly(const cell *c, int li, int p, int vert_base, int poly_base, uint8_t *d)
{
    const op_tile *t = c->layers[li];
    int n = op_tile_poly_nverts(t, p);
    const uint16_t *pv = &t->polys[(size_t)p * t->nvp];
    memset(d, 0, OP_DETOUR_POLY_SIZE); /* firstLink, unused slots: Detour fills links */
    for (int j = 0; j < n; j++) {
        put_u16(d + 4 + 2 * j, (unsigned)(vert_base + pv[(n - j) % n]));
        put_u16(d + 16 + 2 * j, detour_nei(c, li, p, n - 1 - j, poly_base));
    }
    put_u16(d + 28, t->flags[p]);
    d[30] = (uint8_t)n;
    d[31] = (uint8_t)(t->areas[p] & 0x3fu); /* type ground (0) in the top two bits */
}

/* Detour's index of onepath detail vertex index i of an n-gon: polygon vertices map as
 * the polygon does, extras keep their place. */
static uint8_t detour_dindex(uint8_t i, int n)
{
    return i < n ? (uint8_t)((n - i) % n) : i;
}

/* Triangles of polygon p at d (4 bytes each); returns the count. Each onepath triangle
 * (a, b, c) becomes (a, c, b): Detour's edges 0, 1, 2 are onepath's 2, 1, 0, and the
 * boundary bit of edge k moves to bit 2k (dtGetDetailTriEdgeFlags). No detail: Detour's
 * own fan (0, j - 1, j). */
static int write_dtris(const op_tile *t, int p, uint8_t *d)
{
    int n = op_tile_poly_nverts(t, p);
    const uint32_t *dm = &t->dmeshes[4 * (size_t)p];
    if (dm[3] == 0) {
        for (int j = 2; j < n; j++, d += 4) {
            d[0] = 0;
            d[1] = (uint8_t)(j - 1);
            d[2] = (uint8_t)j;
            d[3] = (uint8_t)((1u << 2) | (j == 2 ? 1u : 0u) | (j == n - 1 ? 1u << 4 : 0u));
        }
        return n - 2;
    }
    for (uint32_t k = 0; k < dm[3]; k++, d += 4) {
        const uint8_t *s = &t->dtris[4 * ((size_t)dm[2] + k)];
        unsigned f = s[3];
        d[0] = detour_dindex(s[0], n);
        d[1] = detour_dindex(s[2], n);
        d[2] = detour_dindex(s[1], n);
        d[3] = (uint8_t)(((f >> 2) & 1u) | (((f >> 1) & 1u) << 2) | ((f & 1u) << 4));
    }
    return (int)dm[3];
}

static void write_polys(const cell *c, const world *w, uint8_t *d)
{
    int pb = 0, vb = 0, dvb = 0, dtb = 0;
    for (int i = 0; i < c->nlayers; i++) {
        const op_tile *t = c->layers[i];
        for (int p = 0; p < t->npolys; p++) {
            int q = pb + p;
            write_poly(c, i, p, vb, pb, d + c->off_polys + OP_DETOUR_POLY_SIZE * (size_t)q);
            const uint32_t *dm = &t->dmeshes[4 * (size_t)p];
            uint8_t *pd = d + c->off_dmesh + OP_DETOUR_DMESH_SIZE * (size_t)q;
            int nt = write_dtris(t, p, d + c->off_dtris + 4 * (size_t)dtb);
            put_u32(pd, (uint32_t)(dvb + (int)dm[0]));
            put_u32(pd + 4, (uint32_t)dtb);
            pd[8] = (uint8_t)dm[1];
            pd[9] = (uint8_t)nt;
            pd[10] = pd[11] = 0;
            dtb += nt;
        }
        pb += t->npolys;
        vb += t->nverts;
        dvb += t->ndverts;
    }
    for (int i = 0; i < 3 * c->nverts; i++)
        put_f32(d + c->off_verts + 4 * (size_t)i, w->verts[i]);
    for (int i = 0; i < 3 * c->ndverts; i++)
        put_f32(d + c->off_dverts + 4 * (size_t)i, w->dverts[i]);
    memset(d + c->off_links, 0, c->off_dmesh - c->off_links); /* built by addTile */
}

/* ---- one cell: bounding-volume tree (spec §3.6) ---- */

typedef struct bv_item {
    uint16_t bmin[3], bmax[3];
    int i;
} bv_item;

/* Quantises polygon bounds against the header's bmin with factor q exactly as Detour's
 * builder does, in float: (int)((v - bmin) * q) for the minimum and the maximum alike.
 * Detour's query widens its own box by a step on each side and computes it with the same
 * float operations, so a polygon that reaches the query box is never missed. */
static op_status bv_quantise(const float *lo, const float *hi, const float *hb, float q,
                             bv_item *it, op_err *err)
{
    for (int a = 0; a < 3; a++) {
        float l = (lo[a] - hb[a]) * q, h = (hi[a] - hb[a]) * q;
        if (!(h <= 65535.0f))
            return op_err_set(err, OP_ELIMIT,
                              "detour: polygon %d reaches %g bounding-volume steps on axis %d, "
                              "the 16-bit boxes hold 65535",
                              it->i, (double)h, a);
        it->bmin[a] = (uint16_t)(l > 0.0f ? (int)l : 0);
        it->bmax[a] = (uint16_t)(h > 0.0f ? (int)h : 0);
    }
    return OP_OK;
}

/* Bounds of every Detour polygon over its vertices and detail extras. */
static op_status bv_items(const cell *c, const world *w, const float hb[3], float q, bv_item *items,
                          op_err *err)
{
    int pb = 0, vb = 0, dvb = 0;
    for (int i = 0; i < c->nlayers; i++) {
        const op_tile *t = c->layers[i];
        for (int p = 0; p < t->npolys; p++) {
            int n = op_tile_poly_nverts(t, p);
            const uint32_t *dm = &t->dmeshes[4 * (size_t)p];
            float lo[3], hi[3];
            const float *v0 = &w->verts[3 * (size_t)(vb + t->polys[(size_t)p * t->nvp])];
            memcpy(lo, v0, sizeof lo);
            memcpy(hi, v0, sizeof hi);
            for (int k = 0; k < n + (int)dm[1]; k++) {
                const float *v =
                    k < n ? &w->verts[3 * (size_t)(vb + t->polys[(size_t)p * t->nvp + k])]
                          : &w->dverts[3 * ((size_t)dvb + dm[0] + (size_t)(k - n))];
                for (int a = 0; a < 3; a++) {
                    lo[a] = v[a] < lo[a] ? v[a] : lo[a];
                    hi[a] = v[a] > hi[a] ? v[a] : hi[a];
                }
            }
            items[pb + p].i = pb + p;
            op_status st = bv_quantise(lo, hi, hb, q, &items[pb + p], err);
            if (st != OP_OK)
                return st;
        }
        pb += t->npolys;
        vb += t->nverts;
        dvb += t->ndverts;
    }
    return OP_OK;
}

/* Orders items by their minimum on one axis, then by polygon index: a total order, so
 * the tree does not depend on the sort's stability. */
static int bv_cmp_axis(const bv_item *a, const bv_item *b, int axis)
{
    if (a->bmin[axis] != b->bmin[axis])
        return a->bmin[axis] < b->bmin[axis] ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}
static int bv_cmp_x(const void *a, const void *b)
{
    return bv_cmp_axis(a, b, 0);
}
static int bv_cmp_y(const void *a, const void *b)
{
    return bv_cmp_axis(a, b, 1);
}
static int bv_cmp_z(const void *a, const void *b)
{
    return bv_cmp_axis(a, b, 2);
}

static void put_node(uint8_t *d, const uint16_t bmin[3], const uint16_t bmax[3], int32_t i)
{
    for (int a = 0; a < 3; a++) {
        put_u16(d + 2 * a, bmin[a]);
        put_u16(d + 6 + 2 * a, bmax[a]);
    }
    put_i32(d + 12, i);
}

/* Detour's tree: pre-order nodes; a leaf's index is its polygon, an inner node's is
 * minus the node count of its subtree (the escape offset). The split is at the middle
 * of the items sorted along the node's longest axis (x, then y, then z on ties). */
static int bv_subdivide(bv_item *items, int imin, int imax, int cur, uint8_t *nodes)
{
    uint8_t *node = nodes + OP_DETOUR_BVNODE_SIZE * (size_t)cur;
    int n = imax - imin;
    if (n == 1) {
        put_node(node, items[imin].bmin, items[imin].bmax, items[imin].i);
        return cur + 1;
    }
    uint16_t lo[3], hi[3];
    memcpy(lo, items[imin].bmin, sizeof lo);
    memcpy(hi, items[imin].bmax, sizeof hi);
    for (int k = imin + 1; k < imax; k++)
        for (int a = 0; a < 3; a++) {
            lo[a] = items[k].bmin[a] < lo[a] ? items[k].bmin[a] : lo[a];
            hi[a] = items[k].bmax[a] > hi[a] ? items[k].bmax[a] : hi[a];
        }
    int ex = hi[0] - lo[0], ey = hi[1] - lo[1], ez = hi[2] - lo[2];
    int axis = 0, best = ex;
    if (ey > best)
        axis = 1, best = ey;
    if (ez > best)
        axis = 2;
    static int (*const cmp[3])(const void *, const void *) = {bv_cmp_x, bv_cmp_y, bv_cmp_z};
    qsort(items + imin, (size_t)n, sizeof *items, cmp[axis]);
    int split = imin + n / 2;
    int next = bv_subdivide(items, imin, split, cur + 1, nodes);
    next = bv_subdivide(items, split, imax, next, nodes);
    put_node(node, lo, hi, -(next - cur));
    return next;
}

static op_status write_bvtree(const cell *c, const world *w, const frame *f, uint8_t *d,
                              op_arena *scratch, op_err *err)
{
    bv_item *items = op_arena_alloc(scratch, (size_t)c->npolys * sizeof *items);
    if (!items)
        return op_err_set(err, OP_ENOMEM, "detour: out of memory (%d bounding volumes)", c->npolys);
    op_status st = bv_items(c, w, f->bmin, f->q, items, err);
    if (st != OP_OK)
        return st;
    int used = bv_subdivide(items, 0, c->npolys, 0, d + c->off_bv);
    return used == c->nbv
               ? OP_OK
               : op_err_set(err, OP_EINTERNAL, "detour: %d tree nodes, expected %d", used, c->nbv);
}

/* ---- one cell ---- */

static op_status layout_cell(const op_tile *const *layers, int nlayers, const op_settings *s,
                             int validate, cell *c, op_err *err)
{
    memset(c, 0, sizeof *c);
    c->layers = layers;
    c->nlayers = nlayers;
    op_status st = check_layers(layers, nlayers, validate, err);
    if (st != OP_OK)
        return st;
    c->grid[0] = op__detour_grid(layers[0], 0, s->grid_origin_x);
    c->grid[1] = op__detour_grid(layers[0], 2, s->grid_origin_z);
    c->seam_tol = s->agent_max_climb + s->cell_height;
    return count_cell(c, err);
}

/* Writes the laid-out cell c into d (c->size bytes). */
static op_status write_cell(const cell *c, const op_settings *s, uint8_t *d, op_arena *scratch,
                            op_err *err)
{
    op_arena_mark m = op_arena_get_mark(scratch);
    world w;
    op_status st = world_positions(c, scratch, &w, err);
    if (st == OP_OK) {
        frame f;
        tile_frame(c, &w, s, &f);
        write_header(c, &f, s, d);
        write_polys(c, &w, d);
        st = write_bvtree(c, &w, &f, d, scratch, err);
    }
    op_arena_release(scratch, m);
    return st;
}

op_status op_detour_tile_data(const op_tile *const *layers, int nlayers, const op_settings *s,
                              op_arena *out, op_arena *scratch, uint8_t **data, size_t *size,
                              int *npolys, op_err *err)
{
    *data = NULL;
    *size = 0;
    *npolys = 0;
    if (!s || !out || !scratch)
        return op_err_set(err, OP_EINVAL, "detour: NULL settings or arena");
    cell c;
    op_status st = layout_cell(layers, nlayers, s, 1, &c, err);
    if (st != OP_OK)
        return st;
    uint8_t *d = op_arena_alloc(out, c.size);
    if (!d)
        return op_err_set(err, OP_ENOMEM, "detour: out of memory (%zu bytes of tile data)", c.size);
    if ((st = write_cell(&c, s, d, scratch, err)) != OP_OK)
        return st;
    *data = d;
    *size = c.size;
    *npolys = c.npolys;
    op_err_clear(err);
    return OP_OK;
}

/* ---- the set ---- */

/* The cells of m in key order: first tile index of each, and one past the last. */
static int cell_starts(const op_mesh *m, int *start)
{
    int n = 0, nt = op_mesh_tile_count(m);
    for (int i = 0; i < nt; i++) {
        const op_tile *t = op_mesh_tile(m, i);
        const op_tile *p = i > 0 ? op_mesh_tile(m, i - 1) : NULL;
        if (!p || p->tx != t->tx || p->tz != t->tz)
            start[n++] = i;
    }
    start[n] = nt;
    return n;
}

static void write_set_header(const op_detour_set *set, uint8_t *d)
{
    put_i32(d, OP_DETOUR_SET_MAGIC);
    put_i32(d + 4, OP_DETOUR_SET_VERSION);
    put_i32(d + 8, set->ntiles);
    op_detour_params_write(&set->params, d + 12);
}

/* Lays out every cell of m (the cells and their layer lists from scratch), then the
 * params; set->tiles from out. */
static op_status layout_set(const op_mesh *m, op_arena *out, op_arena *scratch, op_detour_set *set,
                            cell **cells, op_err *err)
{
    int nt = op_mesh_tile_count(m);
    int *start = op_arena_alloc(scratch, ((size_t)nt + 1) * sizeof *start);
    const op_tile **ptrs = op_arena_alloc(scratch, ((size_t)nt + 1) * sizeof *ptrs);
    if (!start || !ptrs)
        return op_err_set(err, OP_ENOMEM, "detour: out of memory (%d tiles)", nt);
    for (int i = 0; i < nt; i++)
        ptrs[i] = op_mesh_tile(m, i);
    int nc = cell_starts(m, start);
    *cells = op_arena_alloc(scratch, (size_t)nc * sizeof **cells);
    set->tiles = op_arena_calloc(out, (size_t)nc, sizeof *set->tiles);
    if (!*cells || !set->tiles)
        return op_err_set(err, OP_ENOMEM, "detour: out of memory (%d cells)", nc);
    int max_polys = 0;
    size_t total = OP_DETOUR_SET_HEADER_SIZE;
    for (int k = 0; k < nc; k++) {
        cell *c = &(*cells)[k];
        op_status st =
            layout_cell(&ptrs[start[k]], start[k + 1] - start[k], op_mesh_settings(m), 0, c, err);
        if (st != OP_OK)
            return st;
        max_polys = c->npolys > max_polys ? c->npolys : max_polys;
        total += OP_DETOUR_TILE_HEADER_SIZE + c->size;
    }
    set->ntiles = nc;
    set->size = total;
    const cell *c0 = &(*cells)[0];
    return op_detour_params_make(c0->grid[0], c0->grid[1], ptrs[0]->tile_size, nc, max_polys,
                                 &set->params, err);
}

/* Writes every laid-out cell after its tile header into set->bytes. */
static op_status write_set(const op_mesh *m, const cell *cells, op_detour_set *set,
                           op_arena *scratch, op_err *err)
{
    write_set_header(set, set->bytes);
    size_t off = OP_DETOUR_SET_HEADER_SIZE;
    for (int k = 0; k < set->ntiles; k++) {
        const cell *c = &cells[k];
        op_detour_tile *dt = &set->tiles[k];
        dt->tx = c->layers[0]->tx;
        dt->tz = c->layers[0]->tz;
        dt->ref = op_detour_tile_ref(&set->params, k);
        dt->npolys = c->npolys;
        dt->size = c->size;
        dt->data = set->bytes + off + OP_DETOUR_TILE_HEADER_SIZE;
        put_u32(set->bytes + off, dt->ref);
        put_i32(set->bytes + off + 4, (int32_t)c->size);
        op_status st = write_cell(c, op_mesh_settings(m),
                                  set->bytes + off + OP_DETOUR_TILE_HEADER_SIZE, scratch, err);
        if (st != OP_OK)
            return st;
        off += OP_DETOUR_TILE_HEADER_SIZE + c->size;
    }
    return OP_OK;
}

op_status op_detour_set_build(const op_mesh *m, op_arena *out, op_arena *scratch,
                              op_detour_set *set, op_err *err)
{
    memset(set, 0, sizeof *set);
    if (!m || !out || !scratch || op_mesh_tile_count(m) < 1)
        return op_err_set(err, OP_EINVAL, "detour: no mesh or an empty mesh");
    op_arena_mark mark = op_arena_get_mark(scratch);
    cell *cells = NULL;
    op_status st = layout_set(m, out, scratch, set, &cells, err);
    if (st == OP_OK && !(set->bytes = op_arena_alloc(out, set->size)))
        st = op_err_set(err, OP_ENOMEM, "detour: out of memory (%zu bytes of set)", set->size);
    if (st == OP_OK)
        st = write_set(m, cells, set, scratch, err);
    op_arena_release(scratch, mark);
    if (st != OP_OK) {
        memset(set, 0, sizeof *set);
        return st;
    }
    op_err_clear(err);
    return OP_OK;
}

/* ---- shared with the corridor search (query_path.c) ---- */

double op__detour_grid(const op_tile *t, int i, double setting)
{
    double k = (double)(i == 0 ? t->tx : t->tz) * t->tile_size;
    return t->origin[i] == setting + k ? setting : t->origin[i] - k;
}

double op__detour_coord(const op_tile *t, double grid, int i, float local)
{
    if (i == 1)
        return t->origin[1] + (double)local;
    if (local == 0.0f || local == (float)t->tile_size) {
        int k = (i == 0 ? t->tx : t->tz) + (local == 0.0f ? 0 : 1);
        return grid + (double)k * t->tile_size;
    }
    return t->origin[i] + (double)local;
}
