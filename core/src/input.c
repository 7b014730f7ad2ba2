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
    bmin[0] = bmin[1] = bmin[2] = 0.0f;
    bmax[0] = bmax[1] = bmax[2] = 0.0f;
    int first = 1;
    size_t ntri_idx = soup->tris_len;
    /* Bounds of the vertices the triangles use: unused vertices do not widen the grid. */
    for (size_t i = 0; i < ntri_idx; i++) {
        const float *v = &soup->verts[3 * (size_t)soup->tris[i]];
        for (int a = 0; a < 3; a++) {
            if (first || v[a] < bmin[a])
                bmin[a] = v[a];
            if (first || v[a] > bmax[a])
                bmax[a] = v[a];
        }
        first = 0;
    }
    if (!first)
        return;
    for (size_t i = 0; i + 2 < soup->verts_len; i += 3) {
        for (int a = 0; a < 3; a++) {
            if (first || soup->verts[i + a] < bmin[a])
                bmin[a] = soup->verts[i + a];
            if (first || soup->verts[i + a] > bmax[a])
                bmax[a] = soup->verts[i + a];
        }
        first = 0;
    }
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
