/*
 * Point queries on a mesh (docs/queries.md §1-§3): filters, polygon geometry in world
 * coordinates, the height of a polygon's detail surface, the closest point of a
 * polygon, the nearest polygon to a point (Detour's rule: over a polygon, the height
 * difference less the agent's climb) and the height of the mesh at a point.
 * Input: a mesh (read only); output: a polygon reference and a position. Cost: a scan
 * of the tiles whose square meets the query box, then of their polygons' bounds.
 */
#include <math.h>
#include <string.h>

#include "onepath/limits.h"
#include "predicates.h"
#include "query_internal.h"

void op_query_filter_default(op_query_filter *f)
{
    for (int a = 0; a < OP_QUERY_AREAS; a++)
        f->area_cost[a] = 1.0;
    f->include_flags = 0xffffu;
    f->exclude_flags = 0;
}

int op_query_passable(const op_mesh *m, const op_query_filter *f, op_polyref r)
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    unsigned fl = t->flags[r.poly];
    double c = f->area_cost[t->areas[r.poly] & 63u];
    return (fl & f->include_flags) != 0 && (fl & f->exclude_flags) == 0 && c >= 0.0 && isfinite(c);
}

double op__dist3(const double a[3], const double b[3])
{
    double dx = b[0] - a[0], dy = b[1] - a[1], dz = b[2] - a[2];
    return sqrt(dx * dx + dy * dy + dz * dz);
}

int op__poly_world(const op_mesh *m, op_polyref r, double *v)
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    const uint16_t *pv = &t->polys[(size_t)r.poly * t->nvp];
    int n = op_tile_poly_nverts(t, r.poly);
    for (int k = 0; k < n; k++)
        op_tile_world_vert(t, pv[k], &v[3 * k]);
    return n;
}

/* World position of detail vertex idx of polygon r (polygon vertices first, then extras). */
static void detail_vert(const op_tile *t, int p, const double *pw, int n, int idx, double out[3])
{
    if (idx < n) {
        memcpy(out, &pw[3 * idx], 3 * sizeof(double));
        return;
    }
    const float *d = &t->dverts[3 * ((size_t)t->dmeshes[4 * p] + (size_t)(idx - n))];
    for (int i = 0; i < 3; i++)
        out[i] = t->origin[i] + (double)d[i];
}

/* Closest point of segment a-b to (x, z) in the x-z plane: parameter in [0, 1]. */
static double seg_param(const double a[3], const double b[3], double x, double z)
{
    double dx = b[0] - a[0], dz = b[2] - a[2], l2 = dx * dx + dz * dz;
    if (l2 <= 0.0)
        return 0.0;
    double s = ((x - a[0]) * dx + (z - a[2]) * dz) / l2;
    return s < 0.0 ? 0.0 : (s > 1.0 ? 1.0 : s);
}

static double lerp(double a, double b, double s)
{
    return a + (b - a) * s;
}

/* Whether (x, z) lies in triangle abc (closed; either orientation); fills the height. */
static int tri_height(const double a[3], const double b[3], const double c[3], double x, double z,
                      double *y)
{
    double p[3] = {x, 0.0, z};
    double area = op__cross_xz(a, b, c);
    if (area == 0.0)
        return 0;
    double wa = op__cross_xz(b, c, p), wb = op__cross_xz(c, a, p), wc = op__cross_xz(a, b, p);
    if (area < 0.0) {
        wa = -wa;
        wb = -wb;
        wc = -wc;
        area = -area;
    }
    if (wa < 0.0 || wb < 0.0 || wc < 0.0)
        return 0;
    *y = (wa * a[1] + wb * b[1] + wc * c[1]) / area;
    return 1;
}

/* Height of polygon r's detail surface at (x, z): the first detail triangle containing
 * the point; else (a point on or just outside the boundary after rounding) the height
 * at the nearest point of the nearest detail triangle edge (first on ties). */
static double detail_height(const op_mesh *m, op_polyref r, double x, double z)
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    double pw[3 * OP_MAX_VERTS_PER_POLY];
    int n = op__poly_world(m, r, pw);
    const uint32_t *dm = &t->dmeshes[4 * (size_t)r.poly];
    double best = INFINITY, by = pw[1];
    for (uint32_t i = 0; i < dm[3]; i++) {
        const uint8_t *tri = &t->dtris[4 * ((size_t)dm[2] + i)];
        double v[3][3], y;
        for (int j = 0; j < 3; j++)
            detail_vert(t, r.poly, pw, n, tri[j], v[j]);
        if (tri_height(v[0], v[1], v[2], x, z, &y))
            return y;
        for (int j = 0; j < 3; j++) {
            const double *a = v[j], *b = v[(j + 1) % 3];
            double s = seg_param(a, b, x, z);
            double qx = lerp(a[0], b[0], s) - x, qz = lerp(a[2], b[2], s) - z;
            double d = qx * qx + qz * qz;
            if (d < best) {
                best = d;
                by = lerp(a[1], b[1], s);
            }
        }
    }
    if (dm[3] == 0) { /* no detail: the polygon's own fan */
        for (int k = 1; k + 1 < n; k++) {
            double y;
            if (tri_height(&pw[0], &pw[3 * k], &pw[3 * (k + 1)], x, z, &y))
                return y;
        }
    }
    return by;
}

static int poly_contains(const double *pw, int n, double x, double z)
{
    double p[3] = {x, 0.0, z};
    for (int k = 0; k < n; k++)
        if (op__cross_xz(&pw[3 * k], &pw[3 * ((k + 1) % n)], p) < 0.0)
            return 0;
    return 1;
}

void op_query_closest_point(const op_mesh *m, op_polyref r, const double pos[3], double out[3])
{
    double pw[3 * OP_MAX_VERTS_PER_POLY];
    int n = op__poly_world(m, r, pw);
    double x = pos[0], z = pos[2];
    if (!poly_contains(pw, n, x, z)) {
        double best = INFINITY, bx = x, bz = z;
        for (int k = 0; k < n; k++) {
            const double *a = &pw[3 * k], *b = &pw[3 * ((k + 1) % n)];
            double s = seg_param(a, b, pos[0], pos[2]);
            double qx = lerp(a[0], b[0], s), qz = lerp(a[2], b[2], s);
            double d = (qx - pos[0]) * (qx - pos[0]) + (qz - pos[2]) * (qz - pos[2]);
            if (d < best) {
                best = d;
                bx = qx;
                bz = qz;
            }
        }
        x = bx;
        z = bz;
    }
    out[0] = x;
    out[1] = detail_height(m, r, x, z);
    out[2] = z;
}

op_status op_query_poly_height(const op_mesh *m, op_polyref r, double x, double z, double *y,
                               op_err *err)
{
    double pw[3 * OP_MAX_VERTS_PER_POLY], pos[3] = {x, 0.0, z}, c[3];
    int n = op__poly_world(m, r, pw);
    if (!poly_contains(pw, n, x, z)) {
        op_query_closest_point(m, r, pos, c);
        *y = c[1];
        return op_err_set(err, OP_ENOTFOUND, "query: (%g, %g) is outside polygon %d of tile %d", x,
                          z, r.poly, r.tile);
    }
    *y = detail_height(m, r, x, z);
    return OP_OK;
}

/* World bounds of polygon r: its vertices and its detail extras. */
static void poly_bounds(const op_mesh *m, op_polyref r, double bmin[3], double bmax[3])
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    double pw[3 * OP_MAX_VERTS_PER_POLY];
    int n = op__poly_world(m, r, pw);
    for (int i = 0; i < 3; i++)
        bmin[i] = bmax[i] = pw[i];
    const uint32_t *dm = &t->dmeshes[4 * (size_t)r.poly];
    for (int k = 1; k < n + (int)dm[1]; k++) {
        double v[3];
        detail_vert(t, r.poly, pw, n, k, v);
        for (int i = 0; i < 3; i++) {
            bmin[i] = v[i] < bmin[i] ? v[i] : bmin[i];
            bmax[i] = v[i] > bmax[i] ? v[i] : bmax[i];
        }
    }
}

/* Whether tile t's square (x, z) meets the box lo..hi. */
static int tile_meets(const op_tile *t, const double lo[3], const double hi[3])
{
    return t->origin[0] <= hi[0] && t->origin[0] + t->tile_size >= lo[0] && t->origin[2] <= hi[2] &&
           t->origin[2] + t->tile_size >= lo[2];
}

/* Whether (pos x, pos z) lies over polygon r (§2.2): the exact orientation of every edge
 * in the tile's stored float32 positions, the point taken to tile-local coordinates. The
 * validator proves the polygon convex and counter-clockwise in those same positions, so
 * the answer is an exact convex containment and cannot depend on rounding of world
 * coordinates. */
static int poly_over(const op_tile *t, int p, const double pos[3])
{
    const uint16_t *pv = &t->polys[(size_t)p * t->nvp];
    int n = op_tile_poly_nverts(t, p);
    double x = pos[0] - t->origin[0], z = pos[2] - t->origin[2];
    for (int k = 0; k < n; k++) {
        const float *a = &t->verts[3 * (size_t)pv[k]], *b = &t->verts[3 * (size_t)pv[(k + 1) % n]];
        if (op__orient2d(a[0], a[2], b[0], b[2], x, z) < 0)
            return 0;
    }
    return 1;
}

/* §2.3's distance of candidate r to pos, with its nearest point c: over the polygon, the
 * height difference less the climb (clamped at 0), squared, as Detour's findNearestPoly
 * measures it; elsewhere the squared 3-D distance to the closest point. */
static double nearest_dist(const op_mesh *m, op_polyref r, const double pos[3], double climb,
                           double c[3])
{
    if (poly_over(op_mesh_tile(m, r.tile), r.poly, pos)) {
        c[0] = pos[0];
        c[1] = detail_height(m, r, pos[0], pos[2]);
        c[2] = pos[2];
        double dy = fabs(pos[1] - c[1]) - climb;
        return dy > 0.0 ? dy * dy : 0.0;
    }
    op_query_closest_point(m, r, pos, c);
    double dx = c[0] - pos[0], dy = c[1] - pos[1], dz = c[2] - pos[2];
    return dx * dx + dy * dy + dz * dz;
}

op_status op_query_nearest(const op_mesh *m, const double pos[3], const double half[3],
                           const op_query_filter *f, op_polyref *ref, double nearest[3],
                           op_err *err)
{
    op_query_filter def;
    if (!f) {
        op_query_filter_default(&def);
        f = &def;
    }
    double lo[3], hi[3], best = INFINITY, bc[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        lo[i] = pos[i] - half[i];
        hi[i] = pos[i] + half[i];
    }
    double climb = op_mesh_settings(m)->agent_max_climb;
    op_polyref found = {-1, -1};
    for (int ti = 0; ti < op_mesh_tile_count(m); ti++) {
        const op_tile *t = op_mesh_tile(m, ti);
        if (!tile_meets(t, lo, hi))
            continue;
        for (int p = 0; p < t->npolys; p++) {
            op_polyref r = {ti, p};
            double bmin[3], bmax[3], c[3];
            poly_bounds(m, r, bmin, bmax);
            if (bmin[0] > hi[0] || bmax[0] < lo[0] || bmin[1] > hi[1] || bmax[1] < lo[1] ||
                bmin[2] > hi[2] || bmax[2] < lo[2] || !op_query_passable(m, f, r))
                continue;
            double d = nearest_dist(m, r, pos, climb, c);
            if (d < best) { /* strict: the first in key order wins ties */
                best = d;
                found = r;
                memcpy(bc, c, sizeof bc);
            }
        }
    }
    *ref = found;
    if (found.tile < 0)
        return op_err_set(err, OP_ENOTFOUND,
                          "query: no polygon within (%g, %g, %g) +- (%g, %g, %g)", pos[0], pos[1],
                          pos[2], half[0], half[1], half[2]);
    if (nearest)
        memcpy(nearest, bc, sizeof bc);
    return OP_OK;
}

op_status op_query_height(const op_mesh *m, const double pos[3], double half_y,
                          const op_query_filter *f, op_polyref *ref, double *y, op_err *err)
{
    op_query_filter def;
    if (!f) {
        op_query_filter_default(&def);
        f = &def;
    }
    double lo[3] = {pos[0], pos[1] - half_y, pos[2]}, hi[3] = {pos[0], pos[1] + half_y, pos[2]};
    double best = INFINITY, by = 0.0;
    op_polyref found = {-1, -1};
    for (int ti = 0; ti < op_mesh_tile_count(m); ti++) {
        const op_tile *t = op_mesh_tile(m, ti);
        if (!tile_meets(t, lo, hi))
            continue;
        for (int p = 0; p < t->npolys; p++) {
            op_polyref r = {ti, p};
            double pw[3 * OP_MAX_VERTS_PER_POLY];
            int n = op__poly_world(m, r, pw);
            if (!poly_contains(pw, n, pos[0], pos[2]) || !op_query_passable(m, f, r))
                continue;
            double h = detail_height(m, r, pos[0], pos[2]), d = fabs(h - pos[1]);
            if (d <= half_y && d < best) {
                best = d;
                by = h;
                found = r;
            }
        }
    }
    if (ref)
        *ref = found;
    if (found.tile < 0)
        return op_err_set(err, OP_ENOTFOUND, "query: no polygon at (%g, %g) within %g of y %g",
                          pos[0], pos[2], half_y, pos[1]);
    *y = by;
    return OP_OK;
}

/* ---- portals ---- */

int op_query_portal(const op_mesh *m, op_polyref a, op_polyref b, double right[3], double left[3])
{
    const op_tile *t = op_mesh_tile(m, a.tile);
    double pw[3 * OP_MAX_VERTS_PER_POLY];
    int n = op__poly_world(m, a, pw);
    for (int k = 0; k < n; k++) {
        const double *va = &pw[3 * k], *vb = &pw[3 * ((k + 1) % n)];
        uint16_t v = t->neis[(size_t)a.poly * t->nvp + k];
        if (!(v & OP_NEI_PORTAL)) {
            if (a.tile == b.tile && v == (uint16_t)(b.poly + 1)) {
                memcpy(right, va, 3 * sizeof(double));
                memcpy(left, vb, 3 * sizeof(double));
                return 1;
            }
            continue;
        }
        const op_link *l;
        int nl = op_mesh_edge_links(m, a.tile, a.poly, k, &l);
        for (int q = 0; q < nl; q++) {
            if (l[q].nei_tile != b.tile || l[q].nei_poly != b.poly)
                continue;
            int ax = l[q].axis; /* portals and seams alike (navmesh-format.md §5, §6) */
            /* The overlap on a's edge, oriented as the edge (right = start side). */
            double s0 = (l[q].o0 - va[ax]) / (vb[ax] - va[ax]);
            double s1 = (l[q].o1 - va[ax]) / (vb[ax] - va[ax]);
            if (s0 > s1) {
                double tmp = s0;
                s0 = s1;
                s1 = tmp;
            }
            for (int i = 0; i < 3; i++) {
                right[i] = lerp(va[i], vb[i], s0);
                left[i] = lerp(va[i], vb[i], s1);
            }
            right[ax] = va[ax] < vb[ax] ? l[q].o0 : l[q].o1;
            left[ax] = va[ax] < vb[ax] ? l[q].o1 : l[q].o0;
            return 1;
        }
    }
    return 0;
}
