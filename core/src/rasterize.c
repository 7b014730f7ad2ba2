/*
 * Span stage, classification and rasterization (build3d-spans.md §2, §3).
 *
 * Input: triangles (float32 vertices) with one area id each and a heightfield
 * frame. Output: fragments (column, rows [smin, smax), area) appended to the
 * heightfield, whose columns are then rebuilt (heightfield.c).
 *
 * Rule (§3.2): a triangle leaves a fragment in cell (x, z) iff its XZ projection
 * meets the open cell square, decided in double on the row polygon R (the triangle
 * clipped to the row's closed z slab) and the cell's point set P (R's vertices in
 * the x slab plus R's strict crossings with the two x lines), followed by the
 * degeneracy test. Every crossing depends only on its edge and its line, never on
 * the grid or the loops, so two tiles that share a cell compute bitwise identical
 * fragments there, and the cells beside a line share its crossings.
 * Typical sizes: a tile grid of 46 x 46 cells, 1-20k triangles, 1-3 cells each.
 */
#include <math.h>

#include "heightfield_internal.h"
#include "onepath/limits.h"
#include "predicates.h"

/* ---- classification (§2) ---- */

int op_triangle_walkable(const float *v0, const float *v1, const float *v2, float slope_cos)
{
    /* float32 throughout, as rcMarkWalkableTriangles: e0 = v1 - v0, e1 = v2 - v0, n = e0 x e1. */
    float e0x = v1[0] - v0[0], e0y = v1[1] - v0[1], e0z = v1[2] - v0[2];
    float e1x = v2[0] - v0[0], e1y = v2[1] - v0[1], e1z = v2[2] - v0[2];
    float nx = e0y * e1z - e0z * e1y;
    float ny = e0z * e1x - e0x * e1z;
    float nz = e0x * e1y - e0y * e1x;
    float len2 = nx * nx + ny * ny + nz * nz;
    if (!(len2 > 0.0f))
        return 0; /* degenerate: Recast's 0 * inf = NaN fails the test as well */
    float d = 1.0f / sqrtf(len2);
    return ny * d > slope_cos;
}

int op_triangle_may_be_walkable(const float *v0, const float *v1, const float *v2, float slope_cos)
{
    double e0x = (double)v1[0] - v0[0], e0y = (double)v1[1] - v0[1], e0z = (double)v1[2] - v0[2];
    double e1x = (double)v2[0] - v0[0], e1y = (double)v2[1] - v0[1], e1z = (double)v2[2] - v0[2];
    double nx = e0y * e1z - e0z * e1y;
    double ny = e0z * e1x - e0x * e1z;
    double nz = e0x * e1y - e0y * e1x;
    double len = sqrt(nx * nx + ny * ny + nz * nz);
    return len > 0.0 && ny >= ((double)slope_cos - 1e-3) * len;
}

void op_classify_triangles(const op_soup *soup, float slope_cos, uint8_t *areas_out)
{
    size_t ntris = soup->tris_len / 3;
    for (size_t t = 0; t < ntris; t++) {
        const int *ix = &soup->tris[3 * t];
        const float *v0 = &soup->verts[3 * (size_t)ix[0]];
        const float *v1 = &soup->verts[3 * (size_t)ix[1]];
        const float *v2 = &soup->verts[3 * (size_t)ix[2]];
        int area = soup->areas ? soup->areas[t] : OP_WALKABLE_AREA;
        areas_out[t] = (uint8_t)(op_triangle_walkable(v0, v1, v2, slope_cos) ? area : 0);
    }
}

/* ---- clipping (§3.2) ---- */

typedef struct vtx {
    double p[3];
} vtx;

/* Largest row polygon: three vertices plus at most two strict crossings per line
 * (a triangle's cyclic sequence of z values is unimodal), so 7; 5 when convex. */
#define MAX_POLY 8

static inline double clampd(double v, double a, double b)
{
    double lo = a < b ? a : b, hi = a < b ? b : a;
    return v < lo ? lo : (v > hi ? hi : v);
}

/* The crossing of edge (a, b) with the line p[ax] = L (§3.2): exactly L on ax and,
 * on each other axis, (a * (b_ax - L) + b * (L - a_ax)) / (b_ax - a_ax) clamped to
 * the edge's range. One rounding at the end: exact whenever the products and the
 * sum are (then a crossing at a cell corner lands on it), and the same for (b, a). */
static inline double lerp_at(double ca, double cb, double wa, double wb, double d)
{
    return clampd((ca * wa + cb * wb) / d, ca, cb);
}

static inline void crossing(const vtx *a, const vtx *b, int ax, double L, vtx *q)
{
    double wa = b->p[ax] - L, wb = L - a->p[ax], d = b->p[ax] - a->p[ax];
    int o1 = ax == 0 ? 1 : 0, o2 = ax == 2 ? 1 : 2; /* the other two axes */
    q->p[ax] = L;
    q->p[o1] = lerp_at(a->p[o1], b->p[o1], wa, wb, d);
    q->p[o2] = lerp_at(a->p[o2], b->p[o2], wa, wb, d);
}

/* The row polygon (§3.2): the triangle's vertices with zb <= z <= zt and, after each
 * vertex a, the crossings of edge (a, b) with the lines zb, zt that lie strictly
 * between a.z and b.z, in their order along the edge. */
static inline int clip_row(const vtx *in, vtx *out, double zb, double zt)
{
    int m = 0;
    for (int i = 0; i < 3; i++) {
        const vtx *a = &in[i], *b = &in[i == 2 ? 0 : i + 1];
        double va = a->p[2], vb = b->p[2];
        if (va >= zb && va <= zt)
            out[m++] = *a;
        if (va < vb) {
            if (va < zb && zb < vb)
                crossing(a, b, 2, zb, &out[m++]);
            if (va < zt && zt < vb)
                crossing(a, b, 2, zt, &out[m++]);
        } else if (vb < va) {
            if (vb < zt && zt < va)
                crossing(a, b, 2, zt, &out[m++]);
            if (vb < zb && zb < va)
                crossing(a, b, 2, zb, &out[m++]);
        }
    }
    return m;
}

/* What the crossings of a row polygon's edges with one line x = L contribute to a
 * cell's point set (§3.2): their count and y / z ranges (their x is L). A crossing
 * is computed once per line and shared by the cells on both sides. */
typedef struct line_sum {
    int n;
    double ylo, yhi, zlo, zhi;
} line_sum;

/* Empty sums hold infinities, so that merging is plain min / max. */
static inline void sum_add(line_sum *s, const vtx *q)
{
    s->n++;
    s->ylo = q->p[1] < s->ylo ? q->p[1] : s->ylo;
    s->yhi = q->p[1] > s->yhi ? q->p[1] : s->yhi;
    s->zlo = q->p[2] < s->zlo ? q->p[2] : s->zlo;
    s->zhi = q->p[2] > s->zhi ? q->p[2] : s->zhi;
}

static inline void line_crossings(const vtx *r, int n, double L, line_sum *s)
{
    s->n = 0;
    s->ylo = s->zlo = INFINITY;
    s->yhi = s->zhi = -INFINITY;
    for (int i = 0; i < n; i++) {
        const vtx *a = &r[i], *b = &r[i + 1 == n ? 0 : i + 1];
        double va = a->p[0], vb = b->p[0];
        if (!((va < L && L < vb) || (vb < L && L < va)))
            continue;
        vtx q;
        crossing(a, b, 0, L, &q);
        sum_add(s, &q);
    }
}

/* Bounds of one axis over a polygon. */
static inline void bounds(const vtx *v, int n, int ax, double *lo, double *hi)
{
    double a = v[0].p[ax], b = a;
    for (int i = 1; i < n; i++) {
        if (v[i].p[ax] < a)
            a = v[i].p[ax];
        if (v[i].p[ax] > b)
            b = v[i].p[ax];
    }
    *lo = a;
    *hi = b;
}

/* Where fragments go: a callback (op_triangle_fragments) or the heightfield. */
typedef struct raster_ctx {
    op_heightfield *hf; /* NULL with a callback */
    int area;
    op_fragment_fn fn;
    void *fn_ctx;
    double inv_cs; /* 1 / cs, for CellOf's estimate */
    op_err *err;
} raster_ctx;

/* Rows of a fragment (§3.4) and its push into the column. */
static inline void emit(raster_ctx *rc, int x, int z, double ymin, double ymax)
{
    if (rc->fn) {
        rc->fn(rc->fn_ctx, x, z, ymin, ymax);
        return;
    }
    op_heightfield *hf = rc->hf;
    double oy = hf->origin[1], ch = hf->ch;
    double fmin = op__floor((ymin - oy) / ch), fmax = op__ceil((ymax - oy) / ch);
    if (fmax < fmin + 1.0)
        fmax = fmin + 1.0;
    if (fmax <= 0.0 || fmin >= (double)hf->rows)
        return;
    int smin = fmin < 0.0 ? 0 : (int)fmin;
    int smax = fmax > (double)hf->rows ? hf->rows : (int)fmax;
    op__hf_push(hf, (uint32_t)x + (uint32_t)z * (uint32_t)hf->width, smin, smax, rc->area);
}

/* One fragment, making room for it first. */
static inline op_status emit_one(raster_ctx *rc, int x, int z, double ymin, double ymax)
{
    if (rc->hf && rc->hf->frag_count >= rc->hf->frag_cap) {
        op_status st = op__hf_reserve(rc->hf, 1, rc->err);
        if (st != OP_OK)
            return st;
    }
    emit(rc, x, z, ymin, ymax);
    return OP_OK;
}

/* The cells of row z where the row polygon rp (n vertices) leaves a fragment (§3.2):
 * only cells whose closed square the row's box meets are tried, elsewhere the clip
 * is empty or lies on one boundary line. With on_zline the row polygon lies on one
 * of the row's lines (a wall on a line, §3.2's wall rule) and only the x part of the
 * degeneracy test applies. */
static op_status raster_row(const op_heightfield *hf, raster_ctx *rc, const vtx *rp, int n,
                            int64_t z, double zb, double zt, int on_zline)
{
    const double cs = hf->cs, inv = rc->inv_cs, ox = hf->line_origin[0];
    const int64_t gx0 = hf->cell0[0];
    double rxlo = rp[0].p[0], rxhi = rxlo, rylo = rp[0].p[1], ryhi = rylo;
    double rzlo = rp[0].p[2], rzhi = rzlo;
    for (int i = 1; i < n; i++) {
        rxlo = rp[i].p[0] < rxlo ? rp[i].p[0] : rxlo;
        rxhi = rp[i].p[0] > rxhi ? rp[i].p[0] : rxhi;
        rylo = rp[i].p[1] < rylo ? rp[i].p[1] : rylo;
        ryhi = rp[i].p[1] > ryhi ? rp[i].p[1] : ryhi;
        rzlo = rp[i].p[2] < rzlo ? rp[i].p[2] : rzlo;
        rzhi = rp[i].p[2] > rzhi ? rp[i].p[2] : rzhi;
    }
    if (!on_zline && (rzhi == zb || rzlo == zt))
        return OP_OK; /* the row's polygon lies on one boundary line */
    int64_t kx0 = op__cell_of(rxlo, ox, cs, inv) - gx0;
    int64_t kx1 = op__cell_of(rxhi, ox, cs, inv) - gx0;
    if (kx1 < 0 || kx0 >= hf->width)
        return OP_OK;
    if (kx0 == kx1) {
        /* The row lies in one cell: P is R itself (no vertex beyond its lines, so
         * no crossing); it is on one edge line only if every x is the left line. */
        if (rxhi != ox + (double)(gx0 + kx0) * cs)
            return emit_one(rc, (int)kx0, (int)z, rylo, ryhi);
        return OP_OK;
    }
    if (kx0 < 0)
        kx0 = 0;
    if (kx1 >= hf->width)
        kx1 = hf->width - 1;
    /* Row vertices by x: each cell takes the window of those in [xl, xr]. */
    const vtx *vs[MAX_POLY];
    for (int i = 0; i < n; i++) {
        int k = i;
        while (k > 0 && vs[k - 1]->p[0] > rp[i].p[0]) {
            vs[k] = vs[k - 1];
            k--;
        }
        vs[k] = &rp[i];
    }
    /* Room for a fragment in every cell of the row (rarely grows). */
    if (rc->hf && (size_t)rc->hf->frag_count + (size_t)(kx1 - kx0 + 1) > rc->hf->frag_cap) {
        op_status st = op__hf_reserve(rc->hf, (size_t)(kx1 - kx0 + 1), rc->err);
        if (st != OP_OK)
            return st;
    }
    int i0 = 0, i1 = 0;
    line_sum left, right;
    double xl = ox + (double)(gx0 + kx0) * cs;
    line_crossings(rp, n, xl, &left);
    for (int64_t x = kx0; x <= kx1; x++, left = right) {
        double xr = ox + (double)(gx0 + x + 1) * cs;
        line_crossings(rp, n, xr, &right);
        /* The cell's points: row vertices in [xl, xr], crossings at xl and xr. */
        while (i0 < n && vs[i0]->p[0] < xl)
            i0++;
        if (i1 < i0)
            i1 = i0;
        while (i1 < n && vs[i1]->p[0] <= xr)
            i1++;
        int np = left.n + right.n + (i1 - i0);
        double ylo = left.ylo < right.ylo ? left.ylo : right.ylo;
        double yhi = left.yhi > right.yhi ? left.yhi : right.yhi;
        double czlo = left.zlo < right.zlo ? left.zlo : right.zlo;
        double czhi = left.zhi > right.zhi ? left.zhi : right.zhi;
        double cxlo = left.n ? xl : (right.n ? xr : INFINITY);
        double cxhi = right.n ? xr : (left.n ? xl : -INFINITY);
        for (int i = i0; i < i1; i++) {
            const double *v = vs[i]->p;
            cxlo = v[0] < cxlo ? v[0] : cxlo;
            cxhi = v[0] > cxhi ? v[0] : cxhi;
            ylo = v[1] < ylo ? v[1] : ylo;
            yhi = v[1] > yhi ? v[1] : yhi;
            czlo = v[2] < czlo ? v[2] : czlo;
            czhi = v[2] > czhi ? v[2] : czhi;
        }
        if (np && cxhi != xl && cxlo != xr && (on_zline || (czhi != zb && czlo != zt)))
            emit(rc, (int)x, (int)z, ylo, yhi); /* not empty, not on one edge line */
        xl = xr;
    }
    return OP_OK;
}

/* The wall rule (§3.2): a triangle whose three vertices share one x (or one z) that is
 * exactly a cell line lies on that line, and belongs to the cell behind it: the side
 * its normal (e0 x e1, outward as for floors) points away from. Returns the axis
 * (0 for x, 2 for z) and the grid's local index of that column (x) or row (z) in
 * *cell, or -1 when the triangle is no such wall (a degenerate one included). */
static int wall_on_line(const op_heightfield *hf, const vtx *t, double inv, int64_t *cell)
{
    for (int ax = 0; ax <= 2; ax += 2) {
        double c = t[0].p[ax];
        if (t[1].p[ax] != c || t[2].p[ax] != c)
            continue;
        int i = ax == 0 ? 0 : 1;
        double o = hf->line_origin[i];
        int64_t k = op__cell_of(c, o, hf->cs, inv);
        if (c != o + (double)k * hf->cs)
            return -1; /* inside a column (row): the plain rule applies */
        /* The normal's component along ax: n.x = orient(y, z), n.z = orient(x, y). */
        int u = ax == 0 ? 1 : 0, w = ax == 0 ? 2 : 1;
        int side = op__orient2d(t[0].p[u], t[0].p[w], t[1].p[u], t[1].p[w], t[2].p[u], t[2].p[w]);
        if (side == 0)
            return -1; /* degenerate: a segment, no area on either side */
        *cell = (side > 0 ? k - 1 : k) - hf->cell0[i];
        return ax;
    }
    return -1;
}

/* A wall lying on the line x = L: each row's polygon goes to the one column behind it. */
static op_status raster_xwall(const op_heightfield *hf, raster_ctx *rc, const vtx *tri, int64_t col,
                              int64_t kz0, int64_t kz1)
{
    const double cs = hf->cs, oz = hf->line_origin[1];
    const int64_t gz0 = hf->cell0[1];
    if (col < 0 || col >= hf->width)
        return OP_OK;
    vtx row[MAX_POLY];
    for (int64_t z = kz0; z <= kz1; z++) {
        double zb = oz + (double)(gz0 + z) * cs, zt = oz + (double)(gz0 + z + 1) * cs;
        int n = clip_row(tri, row, zb, zt);
        if (n == 0)
            continue;
        double zlo, zhi, ylo, yhi;
        bounds(row, n, 2, &zlo, &zhi);
        bounds(row, n, 1, &ylo, &yhi);
        if (zhi == zb || zlo == zt)
            continue; /* on one z line as well: a corner, no area */
        op_status st = emit_one(rc, (int)col, (int)z, ylo, yhi);
        if (st != OP_OK)
            return st;
    }
    return OP_OK;
}

/* The cells of hf's grid where the triangle leaves a fragment, in row-major order
 * (§3.2, §3.3). */
static op_status raster_tri(const op_heightfield *hf, const float *v0, const float *v1,
                            const float *v2, raster_ctx *rc)
{
    const double cs = hf->cs, inv = rc->inv_cs, oz = hf->line_origin[1];
    const int64_t gz0 = hf->cell0[1];
    vtx tri[3] = {{{v0[0], v0[1], v0[2]}}, {{v1[0], v1[1], v1[2]}}, {{v2[0], v2[1], v2[2]}}};
    double zlo, zhi;
    bounds(tri, 3, 2, &zlo, &zhi);
    int64_t kz0 = op__cell_of(zlo, oz, cs, inv) - gz0, kz1 = op__cell_of(zhi, oz, cs, inv) - gz0;
    int64_t wall_cell = 0;
    int wall = wall_on_line(hf, tri, inv, &wall_cell);
    if (wall == 2)
        kz0 = kz1 = wall_cell; /* the one row behind a wall on a z line */
    if (kz1 < 0 || kz0 >= hf->depth)
        return OP_OK;
    if (kz0 < 0)
        kz0 = 0;
    if (kz1 >= hf->depth)
        kz1 = hf->depth - 1;
    if (wall == 0)
        return raster_xwall(hf, rc, tri, wall_cell, kz0, kz1);
    if (wall == 2) {
        double zb = oz + (double)(gz0 + kz0) * cs;
        return raster_row(hf, rc, tri, 3, kz0, zb, oz + (double)(gz0 + kz0 + 1) * cs, 1);
    }
    vtx row[MAX_POLY];
    for (int64_t z = kz0; z <= kz1; z++) {
        double zb = oz + (double)(gz0 + z) * cs, zt = oz + (double)(gz0 + z + 1) * cs;
        const vtx *rp = tri;
        int n = 3;
        if (zlo < zb || zhi > zt) { /* otherwise the row polygon is the triangle */
            n = clip_row(tri, row, zb, zt);
            rp = row;
        }
        if (n == 0)
            continue;
        op_status st = raster_row(hf, rc, rp, n, z, zb, zt, 0);
        if (st != OP_OK)
            return st;
    }
    return OP_OK;
}

void op_triangle_fragments(const op_heightfield *hf, const float *v0, const float *v1,
                           const float *v2, op_fragment_fn fn, void *ctx)
{
    raster_ctx rc = {NULL, 0, fn, ctx, 1.0 / hf->cs, NULL};
    (void)raster_tri(hf, v0, v1, v2, &rc);
}

static op_status check_vertex(const float *verts, size_t vi, op_err *err)
{
    for (int a = 0; a < 3; a++) {
        float v = verts[3 * vi + (size_t)a];
        if (!isfinite(v))
            return op_err_set(err, OP_EINVAL, "rasterize: vertex %zu %c = %g is not finite", vi,
                              "xyz"[a], (double)v);
        if (fabs((double)v) > OP_MAX_COORD)
            return op_err_set(err, OP_ERANGE, "rasterize: vertex %zu %c = %.9g is beyond +-2^21",
                              vi, "xyz"[a], (double)v);
    }
    return OP_OK;
}

/* Validate first, then act: nothing is added unless every triangle is valid. */
static op_status validate_tris(const float *verts, size_t nverts, const int *tris,
                               const uint8_t *areas, size_t ntris, op_err *err)
{
    if (ntris && (!verts || !tris || !areas))
        return op_err_set(err, OP_EINVAL, "rasterize: NULL array with %zu triangles", ntris);
    for (size_t t = 0; t < ntris; t++) {
        if (areas[t] > OP_MAX_AREA)
            return op_err_set(err, OP_ERANGE, "rasterize: triangle %zu area %u is above %d", t,
                              (unsigned)areas[t], OP_MAX_AREA);
        for (int k = 0; k < 3; k++) {
            int ix = tris[3 * t + (size_t)k];
            if (ix < 0 || (size_t)ix >= nverts)
                return op_err_set(err, OP_ERANGE,
                                  "rasterize: triangle %zu index %d is outside [0, %zu)", t, ix,
                                  nverts);
            op_status st = check_vertex(verts, (size_t)ix, err);
            if (st != OP_OK)
                return st;
        }
    }
    return OP_OK;
}

op_status op_rasterize(op_heightfield *hf, const float *verts, size_t nverts, const int *tris,
                       const uint8_t *areas, size_t ntris, int merge_threshold, op_err *err)
{
    if (!hf || !hf->heads)
        return op_err_set(err, OP_EINVAL, "rasterize: NULL or uninitialised heightfield");
    op_status st = validate_tris(verts, nverts, tris, areas, ntris, err);
    if (st == OP_OK)
        st = op__hf_threshold(hf, merge_threshold, err);
    if (st != OP_OK)
        return st;
    uint32_t first = op__hf_begin(hf);
    int old_threshold = hf->merge_threshold;
    hf->merge_threshold = merge_threshold;
    raster_ctx rc = {hf, 0, NULL, NULL, 1.0 / hf->cs, err};
    for (size_t t = 0; t < ntris && st == OP_OK; t++) {
        const int *ix = &tris[3 * t];
        rc.area = areas[t];
        st = raster_tri(hf, &verts[3 * (size_t)ix[0]], &verts[3 * (size_t)ix[1]],
                        &verts[3 * (size_t)ix[2]], &rc);
    }
    if (st == OP_OK)
        st = op__hf_commit(hf, first, err);
    else
        op__hf_rollback(hf, first);
    if (st != OP_OK) {
        hf->merge_threshold = old_threshold;
        return st;
    }
    op_err_clear(err);
    return OP_OK;
}

op_status op_rasterize_ids(op_heightfield *hf, const op_soup *soup, const uint32_t *ids, size_t n,
                           const uint8_t *areas, int merge_threshold, op_err *err)
{
    if (!hf || !hf->heads || !soup || (n && (!ids || !areas)))
        return op_err_set(err, OP_EINVAL, "rasterize: NULL argument");
    size_t ntris = soup->tris_len / 3;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= ntris)
            return op_err_set(err, OP_ERANGE, "rasterize: triangle id %u is outside [0, %zu)",
                              (unsigned)ids[i], ntris);
        if (areas[i] > OP_MAX_AREA)
            return op_err_set(err, OP_ERANGE, "rasterize: triangle %u area %u is above %d",
                              (unsigned)ids[i], (unsigned)areas[i], OP_MAX_AREA);
    }
    op_status st = op__hf_threshold(hf, merge_threshold, err);
    if (st != OP_OK)
        return st;
    uint32_t first = op__hf_begin(hf);
    int old_threshold = hf->merge_threshold;
    hf->merge_threshold = merge_threshold;
    raster_ctx rc = {hf, 0, NULL, NULL, 1.0 / hf->cs, err};
    for (size_t i = 0; i < n && st == OP_OK; i++) {
        const int *ix = &soup->tris[3 * (size_t)ids[i]];
        rc.area = areas[i];
        st = raster_tri(hf, &soup->verts[3 * (size_t)ix[0]], &soup->verts[3 * (size_t)ix[1]],
                        &soup->verts[3 * (size_t)ix[2]], &rc);
    }
    if (st == OP_OK)
        st = op__hf_commit(hf, first, err);
    else
        op__hf_rollback(hf, first);
    if (st != OP_OK) {
        hf->merge_threshold = old_threshold;
        return st;
    }
    op_err_clear(err);
    return OP_OK;
}
