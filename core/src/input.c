/*
 * Input validation (build3d-polys.md §6): every soup, heightfield and voxel chunk
 * is untrusted. Messages name the index and the value that was wrong.
 */
#include <math.h>

#include "onepath/input.h"
#include "onepath/limits.h"

op_status op_soup_validate(const op_soup *soup, op_err *err)
{
    if (!soup)
        return op_err_set(err, OP_EINVAL, "soup: NULL");
    if (soup->verts_len % 3 != 0)
        return op_err_set(err, OP_EINVAL, "soup: %zu vertex floats is not a multiple of 3",
                          soup->verts_len);
    if (soup->tris_len % 3 != 0)
        return op_err_set(err, OP_EINVAL, "soup: %zu triangle indices is not a multiple of 3",
                          soup->tris_len);
    if ((soup->verts_len && !soup->verts) || (soup->tris_len && !soup->tris))
        return op_err_set(err, OP_EINVAL, "soup: NULL array with a nonzero length");
    static const char axis[3] = {'x', 'y', 'z'};
    for (size_t i = 0; i < soup->verts_len; i++) {
        float v = soup->verts[i];
        if (!isfinite(v))
            return op_err_set(err, OP_EINVAL, "soup: vertex %zu %c = %g is not finite", i / 3,
                              axis[i % 3], (double)v);
        if (fabs((double)v) > OP_MAX_COORD)
            return op_err_set(err, OP_ERANGE, "soup: vertex %zu %c = %.9g is beyond +-2^21", i / 3,
                              axis[i % 3], (double)v);
    }
    size_t nverts = soup->verts_len / 3;
    for (size_t i = 0; i < soup->tris_len; i++) {
        int ix = soup->tris[i];
        if (ix < 0 || (size_t)ix >= nverts)
            return op_err_set(err, OP_ERANGE,
                              "soup: triangle %zu index %d is outside [0, %zu) vertices", i / 3, ix,
                              nverts);
    }
    if (soup->areas) {
        for (size_t t = 0; t < soup->tris_len / 3; t++)
            if (soup->areas[t] > OP_MAX_AREA)
                return op_err_set(err, OP_ERANGE, "soup: triangle %zu area %u is above %d", t,
                                  (unsigned)soup->areas[t], OP_MAX_AREA);
    }
    op_err_clear(err);
    return OP_OK;
}

void op_soup_bounds(const op_soup *soup, float bmin[3], float bmax[3])
{
    /* Bounds of the vertices the triangles use (unused vertices do not widen the grid);
     * of all vertices when there is no triangle. Branch-free min/max in locals: this runs
     * over every index of a level of millions of triangles. */
    const float *v = soup->verts;
    const int *ix = soup->tris;
    size_t n = soup->tris_len, step = 1;
    if (n == 0) {
        ix = NULL;
        n = soup->verts_len / 3;
    }
    if (n == 0) {
        for (int a = 0; a < 3; a++)
            bmin[a] = bmax[a] = 0.0f;
        return;
    }
    const float *p = &v[3 * (size_t)(ix ? ix[0] : 0)];
    float x0 = p[0], y0 = p[1], z0 = p[2], x1 = x0, y1 = y0, z1 = z0;
    for (size_t i = step; i < n; i++) {
        p = ix ? &v[3 * (size_t)ix[i]] : &v[3 * i];
        x0 = p[0] < x0 ? p[0] : x0;
        x1 = p[0] > x1 ? p[0] : x1;
        y0 = p[1] < y0 ? p[1] : y0;
        y1 = p[1] > y1 ? p[1] : y1;
        z0 = p[2] < z0 ? p[2] : z0;
        z1 = p[2] > z1 ? p[2] : z1;
    }
    bmin[0] = x0;
    bmin[1] = y0;
    bmin[2] = z0;
    bmax[0] = x1;
    bmax[1] = y1;
    bmax[2] = z1;
}

op_status op_hf_input_validate(const op_hf_input *hf, op_err *err)
{
    if (!hf)
        return op_err_set(err, OP_EINVAL, "heightfield: NULL");
    if (hf->width < 1 || hf->depth < 1 || hf->width > OP_MAX_GRID_SIDE ||
        hf->depth > OP_MAX_GRID_SIDE)
        return op_err_set(err, OP_ERANGE, "heightfield: size %d x %d is outside 1..%d", hf->width,
                          hf->depth, OP_MAX_GRID_SIDE);
    if (hf->rows < 1 || hf->rows > OP_MAX_ROWS)
        return op_err_set(err, OP_ERANGE, "heightfield: rows = %d is outside 1..%d", hf->rows,
                          OP_MAX_ROWS);
    const double o[3] = {hf->origin_x, hf->origin_y, hf->origin_z};
    for (int a = 0; a < 3; a++) {
        if (!isfinite(o[a]))
            return op_err_set(err, OP_EINVAL, "heightfield: origin %c = %g is not finite", "xyz"[a],
                              o[a]);
        if (fabs(o[a]) > OP_MAX_COORD)
            return op_err_set(err, OP_ERANGE, "heightfield: origin %c = %.9g is beyond +-2^21",
                              "xyz"[a], o[a]);
    }
    if (!hf->col_start || (!hf->spans && hf->col_start[0] != 0))
        return op_err_set(err, OP_EINVAL, "heightfield: NULL column or span array");
    size_t ncols = (size_t)hf->width * (size_t)hf->depth;
    if (hf->col_start[0] != 0)
        return op_err_set(err, OP_EINVAL, "heightfield: column 0 starts at %u, not 0",
                          hf->col_start[0]);
    for (size_t c = 0; c < ncols; c++) {
        uint32_t a = hf->col_start[c], b = hf->col_start[c + 1];
        if (b < a)
            return op_err_set(err, OP_EINVAL, "heightfield: column %zu ends before it starts", c);
        int prev_top = -1;
        for (uint32_t i = a; i < b; i++) {
            const op_span_in *s = &hf->spans[i];
            if (s->smin >= s->smax || s->smax > hf->rows)
                return op_err_set(
                    err, OP_ERANGE,
                    "heightfield: column (%zu, %zu) span %u rows [%u, %u) is empty or "
                    "beyond %d rows",
                    c % (size_t)hf->width, c / (size_t)hf->width, i - a, (unsigned)s->smin,
                    (unsigned)s->smax, hf->rows);
            if ((int)s->smin <= prev_top)
                return op_err_set(err, OP_EINVAL,
                                  "heightfield: column (%zu, %zu) span %u starts at row %u, not "
                                  "above the previous span's top %d",
                                  c % (size_t)hf->width, c / (size_t)hf->width, i - a,
                                  (unsigned)s->smin, prev_top);
            if (s->area > OP_MAX_AREA)
                return op_err_set(err, OP_ERANGE,
                                  "heightfield: column (%zu, %zu) span %u area %u is above %d",
                                  c % (size_t)hf->width, c / (size_t)hf->width, i - a,
                                  (unsigned)s->area, OP_MAX_AREA);
            prev_top = s->smax;
        }
    }
    op_err_clear(err);
    return OP_OK;
}

op_status op_voxel_chunk_validate(const op_voxel_chunk *vc, op_err *err)
{
    if (!vc)
        return op_err_set(err, OP_EINVAL, "voxel chunk: NULL");
    if (vc->sx < 1 || vc->sz < 1 || vc->sx > OP_MAX_GRID_SIDE || vc->sz > OP_MAX_GRID_SIDE)
        return op_err_set(err, OP_ERANGE, "voxel chunk: size %d x %d is outside 1..%d", vc->sx,
                          vc->sz, OP_MAX_GRID_SIDE);
    if (vc->sy < 1 || vc->sy > OP_MAX_ROWS)
        return op_err_set(err, OP_ERANGE, "voxel chunk: rows = %d is outside 1..%d", vc->sy,
                          OP_MAX_ROWS);
    if (!isfinite(vc->origin_x) || !isfinite(vc->origin_z))
        return op_err_set(err, OP_EINVAL, "voxel chunk: origin (%g, %g) is not finite",
                          vc->origin_x, vc->origin_z);
    if (fabs(vc->origin_x) > OP_MAX_COORD || fabs(vc->origin_z) > OP_MAX_COORD)
        return op_err_set(err, OP_ERANGE, "voxel chunk: origin (%.9g, %.9g) is beyond +-2^21",
                          vc->origin_x, vc->origin_z);
    if (!vc->areas)
        return op_err_set(err, OP_EINVAL, "voxel chunk: NULL area array");
    size_t n = (size_t)vc->sx * (size_t)vc->sy * (size_t)vc->sz;
    for (size_t i = 0; i < n; i++)
        if (vc->areas[i] > OP_MAX_AREA) {
            size_t j = i % (size_t)vc->sy, col = i / (size_t)vc->sy;
            return op_err_set(
                err, OP_ERANGE, "voxel chunk: voxel (%zu, %zu, %zu) area %u is above %d",
                col % (size_t)vc->sx, j, col / (size_t)vc->sx, (unsigned)vc->areas[i], OP_MAX_AREA);
        }
    op_err_clear(err);
    return OP_OK;
}
