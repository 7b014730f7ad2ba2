/*
 * Tile data (build3d-polys.md §5): polygons and detail of one tile cell → tile
 * layers with tile-local float32 vertices, in-tile adjacency and portal marks, and
 * the validator every decoded or built tile passes. Input: a poly mesh of a few
 * hundred polygons; output: one op_tile per non-empty layer.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/limits.h"
#include "onepath/tile.h"
#include "predicates.h"
#include "tile_internal.h"

/* ---- assembly ---- */

typedef struct edge_rec {
    uint16_t lo, hi; /* vertex indices, lo < hi */
    uint8_t fwd;     /* 1 when the edge runs lo -> hi in its polygon */
    uint8_t k;
    int poly;
} edge_rec;

static int poly_nverts(const uint16_t *p, int nvp)
{
    int n = 0;
    while (n < nvp && p[n] != OP_POLY_NULL)
        n++;
    return n;
}

static int portal_side(const op_tile *t, int a, int b)
{
    const float ts = (float)t->tile_size;
    const float *va = &t->verts[3 * a], *vb = &t->verts[3 * b];
    if (va[0] == 0.0f && vb[0] == 0.0f)
        return 0;
    if (va[2] == ts && vb[2] == ts)
        return 1;
    if (va[0] == ts && vb[0] == ts)
        return 2;
    if (va[2] == 0.0f && vb[2] == 0.0f)
        return 3;
    return -1;
}

/* Marks the edges of one group (same two vertices): a pair of opposite edges of two
 * polygons links them; a lone edge is a layer seam when its contour edge led into another
 * layer (seam[], amendments.md R3), else a portal when it lies on the tile boundary; the
 * rest stay walls. The outcome does not depend on the order inside the group. */
static void mark_group(op_tile *t, const uint16_t *seam, const edge_rec *g, size_t n)
{
    size_t nvp = (size_t)t->nvp;
    if (n == 2 && g[0].fwd != g[1].fwd && g[0].poly != g[1].poly) {
        t->neis[(size_t)g[0].poly * nvp + g[0].k] = (uint16_t)(g[1].poly + 1);
        t->neis[(size_t)g[1].poly * nvp + g[1].k] = (uint16_t)(g[0].poly + 1);
    } else if (n == 1) {
        size_t e = (size_t)g[0].poly * nvp + g[0].k;
        int side = portal_side(t, g[0].lo, g[0].hi);
        if (seam[e] != OP_NEI_WALL)
            t->neis[e] = seam[e];
        else if (side >= 0)
            t->neis[e] = (uint16_t)(OP_NEI_PORTAL | side);
    }
}

/* In-tile adjacency: edges shared by exactly two polygons in opposite directions; other
 * edges become seams (seam[] != 0), portals (on the tile boundary) or walls. Edges are
 * grouped by their lower vertex (a counting sort), then by the upper one inside that small
 * bucket. */
static op_status link_polys(op_tile *t, const uint16_t *seam, op_arena *scratch, op_err *err)
{
    int nvp = t->nvp;
    size_t cap = (size_t)t->npolys * (size_t)nvp, nv = (size_t)t->nverts;
    op_arena_mark m = op_arena_get_mark(scratch);
    edge_rec *e = op_arena_alloc(scratch, (cap ? cap : 1) * sizeof *e);
    uint32_t *start = op_arena_calloc(scratch, nv + 2, sizeof *start);
    if (!e || !start)
        return op_err_set(err, OP_ENOMEM, "tile: out of memory (%zu bytes for edges)",
                          cap * sizeof *e + (nv + 2) * sizeof *start);
    for (size_t i = 0; i < cap; i++)
        t->neis[i] = OP_NEI_WALL;
    for (int p = 0; p < t->npolys; p++) {
        const uint16_t *pv = &t->polys[(size_t)p * nvp];
        int n = poly_nverts(pv, nvp);
        for (int k = 0; k < n; k++) {
            uint16_t a = pv[k], b = pv[k + 1 < n ? k + 1 : 0];
            start[(a < b ? a : b) + 2]++;
        }
    }
    for (size_t v = 2; v < nv + 2; v++)
        start[v] += start[v - 1];
    for (int p = 0; p < t->npolys; p++) { /* start[lo + 1] is lo's next free slot */
        const uint16_t *pv = &t->polys[(size_t)p * nvp];
        int n = poly_nverts(pv, nvp);
        for (int k = 0; k < n; k++) {
            uint16_t a = pv[k], b = pv[k + 1 < n ? k + 1 : 0];
            edge_rec r = {a < b ? a : b, a < b ? b : a, (uint8_t)(a < b), (uint8_t)k, p};
            e[start[r.lo + 1]++] = r;
        }
    }
    for (size_t v = 0; v < nv; v++) {
        edge_rec *b = &e[start[v]];
        size_t n = start[v + 1] - start[v];
        for (size_t i = 1; i < n; i++) { /* insertion sort by hi: buckets hold a few edges */
            edge_rec x = b[i];
            size_t j = i;
            for (; j > 0 && b[j - 1].hi > x.hi; j--)
                b[j] = b[j - 1];
            b[j] = x;
        }
        for (size_t i = 0; i < n;) {
            size_t j = i + 1;
            while (j < n && b[j].hi == b[i].hi)
                j++;
            mark_group(t, seam, &b[i], j - i);
            i = j;
        }
    }
    op_arena_release(scratch, m);
    return OP_OK;
}

typedef struct layer_ctx {
    const op_poly_mesh *pm;
    const op_detail_mesh *dm;
    const int *poly_layer;
    const op_tile_source *src;
    const op_settings *s;
    const int *order; /* polygons by layer, ascending inside a layer: layer l is */
    const int *start; /* order[start[l] .. start[l + 1]) */
    int32_t *remap;   /* mesh vertex -> layer vertex, -1 when unused (all -1 between layers) */
    int *used;        /* the layer's mesh vertices, ascending (count_layer) */
} layer_ctx;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Counts polygons, vertices, detail vertices and triangles of a layer and fills remap: the
 * vertices its polygons use, numbered in mesh order. Costs the layer's own polygons and
 * vertices, not the mesh's (a tile built in one piece has one mesh for all its layers). */
static void count_layer(const layer_ctx *c, int layer, op_tile *t)
{
    const op_poly_mesh *pm = c->pm;
    t->npolys = t->ndverts = t->ndtris = 0;
    t->nverts = 0;
    int lo = pm->nverts, hi = -1; /* the range of the used ids */
    for (int i = c->start[layer]; i < c->start[layer + 1]; i++) {
        int p = c->order[i];
        t->npolys++;
        const uint32_t *pv = &pm->polys[(size_t)p * pm->nvp];
        for (int k = 0; k < pm->nvp && pv[k] != OP_POLY_MESH_NULL; k++)
            if (c->remap[pv[k]] < 0) {
                int v = (int)pv[k];
                c->remap[v] = 0;
                c->used[t->nverts++] = v;
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
        if (c->dm) {
            t->ndverts += (int)c->dm->meshes[4 * p + 1];
            t->ndtris += (int)c->dm->meshes[4 * p + 3];
        }
    }
    /* Ascending ids: a layer that uses most of its range (a one-layer tile uses every
     * mesh vertex) is read off remap in one scan; a sparse one is sorted. Either way
     * used[] ends up ascending, the same list. */
    if ((size_t)(hi - lo + 1) <= 8 * (size_t)t->nverts) {
        int n = 0;
        for (int v = lo; v <= hi; v++)
            if (c->remap[v] == 0)
                c->used[n++] = v;
    } else {
        qsort(c->used, (size_t)t->nverts, sizeof *c->used, cmp_int);
    }
    for (int i = 0; i < t->nverts; i++)
        c->remap[c->used[i]] = i;
}

/* Back to all -1 after a layer. */
static void clear_layer(const layer_ctx *c, const op_tile *t)
{
    for (int i = 0; i < t->nverts; i++)
        c->remap[c->used[i]] = -1;
}

static op_status alloc_tile(op_tile *t, int nvp, op_arena *out, op_err *err)
{
    size_t np = (size_t)t->npolys;
    t->verts = op_arena_alloc(out, (size_t)t->nverts * 3 * sizeof(float) + 1);
    t->polys = op_arena_alloc(out, np * (size_t)nvp * 2 + 1);
    t->neis = op_arena_alloc(out, np * (size_t)nvp * 2 + 1);
    t->areas = op_arena_alloc(out, np + 1);
    t->flags = op_arena_alloc(out, np * 2 + 1);
    t->regs = op_arena_alloc(out, np * 2 + 1);
    t->dmeshes = op_arena_alloc(out, np * 16 + 1);
    t->dverts = op_arena_alloc(out, (size_t)t->ndverts * 12 + 1);
    t->dtris = op_arena_alloc(out, (size_t)t->ndtris * 4 + 1);
    if (!t->verts || !t->polys || !t->neis || !t->areas || !t->flags || !t->regs || !t->dmeshes ||
        !t->dverts || !t->dtris)
        return op_err_set(err, OP_ENOMEM, "tile (%d, %d) layer %d: out of memory", t->tx, t->tz,
                          t->layer);
    return OP_OK;
}

/* The seam value of edge k of polygon p on `layer` (amendments.md R3): its contour edge's
 * neighbour is a region of another layer. OP_NEI_WALL otherwise. */
static uint16_t seam_of(const layer_ctx *c, int p, int k, int layer)
{
    const op_tile_source *src = c->src;
    int32_t r = c->pm->edge_neighbour[(size_t)p * c->pm->nvp + k];
    if (!src->region_layer || r <= 0 || r >= src->nregion_layer)
        return OP_NEI_WALL;
    uint16_t l = src->region_layer[r];
    return (l == OP_NO_LAYER || l == layer) ? (uint16_t)OP_NEI_WALL : (uint16_t)(OP_NEI_SEAM | l);
}

static void fill_layer(const layer_ctx *c, int layer, uint16_t *seam, op_tile *t)
{
    const op_poly_mesh *pm = c->pm;
    const op_tile_frame *f = &pm->frame;
    const int32_t *remap = c->remap;
    for (int i = 0; i < t->nverts; i++) {
        int v = c->used[i];
        float *o = &t->verts[3 * i];
        o[0] = op_tile_local(f, pm->verts[3 * v + 0]);
        o[1] = op_tile_local_y(f, pm->verts[3 * v + 1], c->src->min_row);
        o[2] = op_tile_local(f, pm->verts[3 * v + 2]);
    }
    int q = 0;
    uint32_t dv = 0, dt = 0;
    for (int i = c->start[layer]; i < c->start[layer + 1]; i++) {
        int p = c->order[i];
        const uint32_t *pv = &pm->polys[(size_t)p * pm->nvp];
        for (int k = 0; k < pm->nvp; k++) {
            t->polys[(size_t)q * pm->nvp + k] =
                pv[k] == OP_POLY_MESH_NULL ? (uint16_t)OP_POLY_NULL : (uint16_t)remap[pv[k]];
            seam[(size_t)q * pm->nvp + k] =
                pv[k] == OP_POLY_MESH_NULL ? (uint16_t)OP_NEI_WALL : seam_of(c, p, k, layer);
        }
        int area = pm->areas[p];
        t->areas[q] = (uint8_t)(area == OP_WALKABLE_AREA ? c->s->area : area);
        t->flags[q] = (uint16_t)c->s->flags;
        t->regs[q] = pm->regs[p];
        uint32_t ev = 0, et = 0;
        if (c->dm) {
            const uint32_t *dmm = &c->dm->meshes[4 * p];
            ev = dmm[1];
            et = dmm[3];
            memcpy(&t->dverts[3 * dv], &c->dm->verts[3 * dmm[0]], ev * 3 * sizeof(float));
            memcpy(&t->dtris[4 * dt], &c->dm->tris[4 * dmm[2]], et * 4);
        }
        uint32_t *o = &t->dmeshes[4 * q];
        o[0] = dv;
        o[1] = ev;
        o[2] = dt;
        o[3] = et;
        dv += ev;
        dt += et;
        q++;
    }
}

op_status op_tile_assemble(const op_poly_mesh *pm, const op_detail_mesh *dm, const int *poly_layer,
                           int nlayers, const op_tile_source *src, const op_settings *s,
                           op_arena *out, op_arena *scratch, op_tile *tiles, int *ntiles,
                           op_err *err)
{
    *ntiles = 0;
    if (nlayers < 1 || nlayers > OP_MAX_LAYERS)
        return op_err_set(err, OP_ELIMIT, "tile (%d, %d): %d layers outside 1..%d", src->tx,
                          src->tz, nlayers, OP_MAX_LAYERS);
    size_t nv = (size_t)pm->nverts, np = (size_t)pm->npolys;
    int32_t *remap = op_arena_alloc(scratch, (nv + 1) * sizeof *remap);
    int *used = op_arena_alloc(scratch, (nv + 1) * sizeof *used);
    int *order = op_arena_alloc(scratch, (np + 1) * sizeof *order);
    int *start = op_arena_calloc(scratch, (size_t)nlayers + 2, sizeof *start);
    if (!remap || !used || !order || !start)
        return op_err_set(err, OP_ENOMEM, "tile: out of memory (vertex remap)");
    for (size_t v = 0; v < nv; v++)
        remap[v] = -1;
    /* Polygons by layer, a counting sort that keeps their order; a polygon whose layer is
     * outside 0..nlayers-1 goes to no tile layer. */
    for (size_t p = 0; p < np; p++) {
        int l = poly_layer ? poly_layer[p] : 0;
        if (l >= 0 && l < nlayers)
            start[l + 2]++;
    }
    for (int l = 2; l < nlayers + 2; l++)
        start[l] += start[l - 1];
    for (size_t p = 0; p < np; p++) {
        int l = poly_layer ? poly_layer[p] : 0;
        if (l >= 0 && l < nlayers)
            order[start[l + 1]++] = (int)p;
    }
    layer_ctx c = {pm, dm, poly_layer, src, s, order, start, remap, used};
    for (int layer = 0; layer < nlayers; layer++) {
        op_tile *t = &tiles[*ntiles];
        memset(t, 0, sizeof *t);
        t->tx = src->tx;
        t->tz = src->tz;
        t->layer = layer;
        t->nvp = pm->nvp;
        t->tile_size = pm->frame.tile_size;
        t->origin[0] = src->origin_x + (double)src->tx * pm->frame.tile_size;
        t->origin[1] = src->frame_origin_y + (double)src->min_row * s->cell_height;
        t->origin[2] = src->origin_z + (double)src->tz * pm->frame.tile_size;
        count_layer(&c, layer, t);
        if (t->npolys == 0)
            continue; /* a tile layer with no polygons is omitted */
        /* The tile pipeline counts both before its detail stage; a mesh assembled by other
         * callers meets them here. */
        if (t->nverts >= OP_MAX_LAYER_VERTS)
            return op_err_set(err, OP_ELIMIT,
                              "tile (%d, %d) layer %d: %d vertices, the format holds %d "
                              "(OP_MAX_LAYER_VERTS)",
                              t->tx, t->tz, layer, t->nverts, OP_MAX_LAYER_VERTS - 1);
        if (t->npolys > OP_MAX_LAYER_POLYS)
            return op_err_set(err, OP_ELIMIT,
                              "tile (%d, %d) layer %d: %d polygons, the format holds %d "
                              "(OP_MAX_LAYER_POLYS)",
                              t->tx, t->tz, layer, t->npolys, OP_MAX_LAYER_POLYS);
        op_status st = alloc_tile(t, pm->nvp, out, err);
        if (st != OP_OK)
            return st;
        op_arena_mark m = op_arena_get_mark(scratch);
        uint16_t *seam = op_arena_alloc(scratch, (size_t)t->npolys * (size_t)pm->nvp * 2 + 1);
        if (!seam)
            return op_err_set(err, OP_ENOMEM, "tile (%d, %d) layer %d: out of memory (seams)",
                              t->tx, t->tz, layer);
        fill_layer(&c, layer, seam, t);
        clear_layer(&c, t);
        st = link_polys(t, seam, scratch, err);
        op_arena_release(scratch, m);
        if (st != OP_OK)
            return st;
        if ((st = op__tile_check(t, err)) != OP_OK)
            return st;
        (*ntiles)++;
    }
    return OP_OK;
}

/* ---- validation ---- */

static int finite_f(float v)
{
    return v == v && v - v == 0.0f;
}

/* nv: poly_nverts of polygon p, computed once by op_tile_validate for the three checks. */
static op_status check_poly(const op_tile *t, int p, int nv, op_err *err)
{
    const uint16_t *pv = &t->polys[(size_t)p * t->nvp];
    for (int k = nv; k < t->nvp; k++)
        if (pv[k] != OP_POLY_NULL)
            return op_err_set(err, OP_EPROTO, "tile: polygon %d has a vertex after padding", p);
    if (nv < 3)
        return op_err_set(err, OP_EPROTO, "tile: polygon %d has %d vertices", p, nv);
    for (int k = 0; k < nv; k++) {
        if (pv[k] >= t->nverts)
            return op_err_set(err, OP_EPROTO, "tile: polygon %d vertex %d index %u >= %d", p, k,
                              pv[k], t->nverts);
        for (int j = 0; j < k; j++)
            if (pv[j] == pv[k])
                return op_err_set(err, OP_EPROTO, "tile: polygon %d repeats vertex %u", p, pv[k]);
    }
    double area2 = 0.0;
    for (int k = 0; k < nv; k++) {
        const float *a = &t->verts[3 * pv[k > 0 ? k - 1 : nv - 1]];
        const float *b = &t->verts[3 * pv[k]];
        const float *c = &t->verts[3 * pv[k + 1 < nv ? k + 1 : 0]];
        if (op__orient2d(a[0], a[2], b[0], b[2], c[0], c[2]) < 0)
            return op_err_set(err, OP_EPROTO,
                              "tile: polygon %d turns clockwise at vertex %d (not convex or not "
                              "counter-clockwise)",
                              p, k);
        area2 += (double)b[0] * c[2] - (double)c[0] * b[2];
    }
    /* Counter-clockwise with x right and z up. No right turn plus a nonzero area means
     * convex and positive; a zero sum means all vertices are collinear. */
    if (!(area2 > 0.0))
        return op_err_set(err, OP_EPROTO, "tile: polygon %d has no positive area", p);
    return OP_OK;
}

static op_status check_neis(const op_tile *t, int p, int nv, op_err *err)
{
    const uint16_t *pv = &t->polys[(size_t)p * t->nvp];
    for (int k = 0; k < t->nvp; k++) {
        uint16_t n = t->neis[(size_t)p * t->nvp + k];
        if (k >= nv) {
            if (n != OP_NEI_WALL)
                return op_err_set(err, OP_EPROTO, "tile: polygon %d unused edge %d has a neighbour",
                                  p, k);
            continue;
        }
        uint16_t a = pv[k], b = pv[k + 1 < nv ? k + 1 : 0];
        if (OP_NEI_IS_SEAM(n)) {
            int l = OP_NEI_SEAM_LAYER(n);
            if (l >= OP_MAX_LAYERS || l == t->layer)
                return op_err_set(err, OP_EPROTO,
                                  "tile: polygon %d edge %d is a seam into layer %d (own layer "
                                  "%d, at most %d)",
                                  p, k, l, t->layer, OP_MAX_LAYERS - 1);
        } else if (n & OP_NEI_PORTAL) {
            int side = n & 0x7fff;
            if (side > 3 || portal_side(t, a, b) != side)
                return op_err_set(err, OP_EPROTO,
                                  "tile: polygon %d edge %d is marked portal %d but is not on that "
                                  "side",
                                  p, k, side);
        } else if (n != OP_NEI_WALL) {
            int q = n - 1;
            if (q >= t->npolys || q == p)
                return op_err_set(err, OP_EPROTO, "tile: polygon %d edge %d neighbour %d invalid",
                                  p, k, q);
            const uint16_t *qv = &t->polys[(size_t)q * t->nvp];
            int qn = poly_nverts(qv, t->nvp), found = 0;
            for (int j = 0; j < qn; j++)
                if (qv[j] == b && qv[j + 1 < qn ? j + 1 : 0] == a &&
                    t->neis[(size_t)q * t->nvp + j] == p + 1)
                    found = 1;
            if (!found)
                return op_err_set(err, OP_EPROTO,
                                  "tile: polygon %d edge %d and polygon %d do not link back", p, k,
                                  q);
        }
    }
    return OP_OK;
}

static op_status check_detail(const op_tile *t, int p, int nv, uint32_t *nextv, uint32_t *nextt,
                              op_err *err)
{
    const uint32_t *d = &t->dmeshes[4 * p];
    if (d[0] != *nextv || d[2] != *nextt || d[1] > (uint32_t)t->ndverts - d[0] ||
        d[3] > (uint32_t)t->ndtris - d[2])
        return op_err_set(err, OP_EPROTO, "tile: polygon %d detail range is not contiguous/inside",
                          p);
    uint32_t lim = (uint32_t)nv + d[1];
    for (uint32_t i = 0; i < d[3]; i++) {
        const uint8_t *tri = &t->dtris[4 * (d[2] + i)];
        if (tri[0] >= lim || tri[1] >= lim || tri[2] >= lim)
            return op_err_set(err, OP_EPROTO, "tile: polygon %d detail triangle %u index >= %u", p,
                              i, lim);
    }
    *nextv += d[1];
    *nextt += d[3];
    return OP_OK;
}

op_status op_tile_validate(const op_tile *t, op_err *err)
{
    if (t->nvp < OP_MIN_VERTS_PER_POLY || t->nvp > OP_MAX_VERTS_PER_POLY)
        return op_err_set(err, OP_EPROTO, "tile: nvp = %d outside 3..6", t->nvp);
    if (t->nverts < 0 || t->nverts >= OP_MAX_LAYER_VERTS || t->npolys < 0 ||
        t->npolys > OP_MAX_LAYER_POLYS || t->ndverts < 0 || t->ndtris < 0)
        return op_err_set(err, OP_EPROTO, "tile: negative or too large counts");
    if (t->layer < 0 || t->layer >= OP_MAX_LAYERS)
        return op_err_set(err, OP_EPROTO, "tile: layer %d outside 0..%d", t->layer,
                          OP_MAX_LAYERS - 1);
    float ts = (float)t->tile_size;
    if (!(t->tile_size > 0.0) || !finite_f(ts))
        return op_err_set(err, OP_EPROTO, "tile: tile_size %g is not positive", t->tile_size);
    for (int v = 0; v < t->nverts; v++) {
        const float *p = &t->verts[3 * v];
        if (!finite_f(p[0]) || !finite_f(p[1]) || !finite_f(p[2]) || p[0] < 0.0f || p[0] > ts ||
            p[2] < 0.0f || p[2] > ts || p[1] < 0.0f)
            return op_err_set(err, OP_EPROTO, "tile: vertex %d (%g, %g, %g) outside the tile", v,
                              (double)p[0], (double)p[1], (double)p[2]);
    }
    for (int i = 0; i < 3 * t->ndverts; i++)
        if (!finite_f(t->dverts[i]))
            return op_err_set(err, OP_EPROTO, "tile: detail vertex %d is not finite", i / 3);
    uint32_t nextv = 0, nextt = 0;
    for (int p = 0; p < t->npolys; p++) {
        op_status st;
        int nv = poly_nverts(&t->polys[(size_t)p * t->nvp], t->nvp);
        if ((st = check_poly(t, p, nv, err)) || (st = check_neis(t, p, nv, err)) ||
            (st = check_detail(t, p, nv, &nextv, &nextt, err)))
            return st;
        if (t->areas[p] > OP_MAX_AREA)
            return op_err_set(err, OP_EPROTO, "tile: polygon %d area %u > 63", p, t->areas[p]);
        if (t->regs && (t->regs[p] < 1 || t->regs[p] > OP_MAX_REGIONS))
            return op_err_set(err, OP_EPROTO, "tile: polygon %d region %u outside 1..%d", p,
                              t->regs[p], OP_MAX_REGIONS);
    }
    if (nextv != (uint32_t)t->ndverts || nextt != (uint32_t)t->ndtris)
        return op_err_set(err, OP_EPROTO, "tile: detail arrays hold entries no polygon uses");
    op_err_clear(err);
    return OP_OK;
}

/* ---- the check of the tiles the pipeline makes ----
 *
 * op_tile_validate stops at the first failed test so as to name it; on a tile that passes,
 * which every tile the pipeline makes does, its tests are a chain of data-dependent branches
 * (the neighbour kind of every edge, the loops over each polygon's vertex count). Here the
 * same tests are folded into flags over fixed slots, and a tile they refuse is handed to
 * op_tile_validate for its message. Only the verdict has to agree: a test may read garbage
 * when another test fails (never outside the arrays), as the tile is then refused anyway. */

/* orient2d(a, b, c) >= 0 in XZ: op__orient2d's filter inline, the exact sign asked of it
 * only where the filter cannot decide (the same cases its own filter leaves). */
static inline int turn_ok(const float *a, const float *b, const float *c)
{
    const double ax = a[0], ay = a[2], bx = b[0], by = b[2], cx = c[0], cy = c[2];
    const double detleft = (ax - cx) * (by - cy), detright = (ay - cy) * (bx - cx);
    const double det = detleft - detright;
    const double bound = OP__CCW_ERRBOUND * (fabs(detleft) + fabs(detright));
    if (det > bound)
        return 1;
    if (-det > bound)
        return 0;
    return op__orient2d(ax, ay, bx, by, cx, cy) >= 0;
}

/* Bit s set when edge a-b lies on tile side s (portal_side's four tests; portal_side is
 * the lowest set bit). */
static inline unsigned side_bits(const float *va, const float *vb, float ts)
{
    return (unsigned)((va[0] == 0.0f) & (vb[0] == 0.0f)) |
           (unsigned)((va[2] == ts) & (vb[2] == ts)) << 1 |
           (unsigned)((va[0] == ts) & (vb[0] == ts)) << 2 |
           (unsigned)((va[2] == 0.0f) & (vb[2] == 0.0f)) << 3;
}

/* check_poly, check_neis and check_detail of polygon p, and its area and region: 1 when
 * all pass. */
static int poly_ok(const op_tile *t, int p, float ts, uint32_t *nextv, uint32_t *nextt)
{
    const int nvp = t->nvp;
    const uint16_t *pv = &t->polys[(size_t)p * (size_t)nvp];
    const uint16_t *pn = &t->neis[(size_t)p * (size_t)nvp];
    /* Vertices first, padding after (nonnull a prefix), each index below nverts (which is
     * below OP_POLY_NULL, so in-range indices are the non-null ones), at least 3. */
    unsigned nonnull = 0, in = 0;
    for (int k = 0; k < nvp; k++) {
        nonnull |= (unsigned)(pv[k] != OP_POLY_NULL) << k;
        in |= (unsigned)(pv[k] < (unsigned)t->nverts) << k;
    }
    if (in != nonnull || (in & (in + 1)) != 0 || in < 7u)
        return 0;
    const int nv = __builtin_ctz(~in);
    int ok = 1;
    for (int k = 1; k < nv; k++)
        for (int j = 0; j < k; j++)
            ok &= pv[j] != pv[k];
    double area2 = 0.0;
    for (int k = 0; k < nv; k++) {
        const float *a = &t->verts[3 * pv[k > 0 ? k - 1 : nv - 1]];
        const float *b = &t->verts[3 * pv[k]];
        const float *c = &t->verts[3 * pv[k + 1 < nv ? k + 1 : 0]];
        ok &= turn_ok(a, b, c);
        area2 += (double)b[0] * c[2] - (double)c[0] * b[2];
    }
    ok &= area2 > 0.0;
    for (int k = nv; k < nvp; k++)
        ok &= pn[k] == OP_NEI_WALL;
    for (int k = 0; k < nv; k++) {
        const unsigned n = pn[k], a = pv[k], b = pv[k + 1 < nv ? k + 1 : 0];
        const unsigned kind = n & 0xc000u;
        if (kind == OP_NEI_SEAM) {
            const unsigned l = n & 0x3fffu;
            ok &= (l < OP_MAX_LAYERS) & (l != (unsigned)t->layer);
        } else if (kind == OP_NEI_PORTAL) {
            const unsigned side = n & 0x7fffu;
            ok &= side <= 3 && (side_bits(&t->verts[3 * a], &t->verts[3 * b], ts) &
                                ((2u << side) - 1u)) == 1u << side;
        } else if (n != OP_NEI_WALL) {
            const int q = (int)n - 1;
            if (q >= t->npolys || q == p)
                return 0;
            /* Some slot j of q runs b -> a and links back to p. In a valid q (every polygon
             * is checked) its vertices are distinct, so b is in one slot at most, below q's
             * count, and the slot after it is the next non-null one, else slot 0. */
            const uint16_t *qv = &t->polys[(size_t)q * (size_t)nvp];
            const uint16_t *qn = &t->neis[(size_t)q * (size_t)nvp];
            int jb = -1;
            for (int j = 0; j < nvp; j++)
                jb = qv[j] == b ? j : jb;
            if (jb < 0)
                return 0;
            const unsigned nx = jb + 1 < nvp && qv[jb + 1] != OP_POLY_NULL ? qv[jb + 1] : qv[0];
            ok &= (nx == a) & (qn[jb] == (unsigned)p + 1u);
        }
    }
    const uint32_t *d = &t->dmeshes[4 * (size_t)p];
    if (d[0] != *nextv || d[2] != *nextt || d[1] > (uint32_t)t->ndverts - d[0] ||
        d[3] > (uint32_t)t->ndtris - d[2])
        return 0;
    const uint32_t lim = (uint32_t)nv + d[1];
    const uint8_t *tri = &t->dtris[4 * (size_t)d[2]];
    for (uint32_t i = 0; i < d[3]; i++, tri += 4)
        ok &= (tri[0] < lim) & (tri[1] < lim) & (tri[2] < lim);
    *nextv += d[1];
    *nextt += d[3];
    ok &= t->areas[p] <= OP_MAX_AREA;
    if (t->regs)
        ok &= (uint32_t)t->regs[p] - 1u < (uint32_t)OP_MAX_REGIONS;
    return ok;
}

/* 1 exactly when op_tile_validate accepts t. */
static int tile_ok(const op_tile *t)
{
    if (t->nvp < OP_MIN_VERTS_PER_POLY || t->nvp > OP_MAX_VERTS_PER_POLY || t->nverts < 0 ||
        t->nverts >= OP_MAX_LAYER_VERTS || t->npolys < 0 || t->npolys > OP_MAX_LAYER_POLYS ||
        t->ndverts < 0 || t->ndtris < 0 || t->layer < 0 || t->layer >= OP_MAX_LAYERS)
        return 0;
    const float ts = (float)t->tile_size;
    if (!(t->tile_size > 0.0) || !finite_f(ts))
        return 0;
    /* Vertices: x and z in [0, ts] (which also excludes NaN and infinities, ts being finite),
     * y >= 0 and finite. Checked before the polygons read them (no NaN reaches turn_ok). */
    int ok = 1;
    for (int v = 0; v < t->nverts; v++) {
        const float *p = &t->verts[3 * v];
        ok &= (p[0] >= 0.0f) & (p[0] <= ts) & (p[2] >= 0.0f) & (p[2] <= ts) & (p[1] >= 0.0f) &
              (p[1] - p[1] == 0.0f);
    }
    for (int i = 0; i < 3 * t->ndverts; i++)
        ok &= t->dverts[i] - t->dverts[i] == 0.0f; /* finite_f: NaN and infinities give NaN */
    if (!ok)
        return 0;
    uint32_t nextv = 0, nextt = 0;
    for (int p = 0; ok && p < t->npolys; p++)
        ok = poly_ok(t, p, ts, &nextv, &nextt);
    return ok && nextv == (uint32_t)t->ndverts && nextt == (uint32_t)t->ndtris;
}

op_status op__tile_check(const op_tile *t, op_err *err)
{
    if (tile_ok(t)) {
        op_err_clear(err);
        return OP_OK;
    }
    return op_tile_validate(t, err);
}
