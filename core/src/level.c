/*
 * A prepared level: validated input and settings, the tile range, and for a soup each
 * tile's triangles in input order (build3d-polys.md §1 selection), binned once so that a
 * tile build reads only its own triangles. Typical: 10^4..10^7 triangles, 10..10^6
 * tiles; the bins hold one uint32 per (triangle, tile) pair. Heightfield and voxel-chunk
 * levels (input-formats.md §5) need no bins: a tile reads its columns directly.
 */
#include <stdlib.h>
#include <string.h>

#include "level_internal.h"
#include "onepath/limits.h"

/* The part every kind of level shares: settings and volumes validated, the level
 * allocated with its grid and span settings. */
static op_status level_new(const op_settings *s, const op_volume *vols, int nvols, op_level **out,
                           op_err *err)
{
    op_status st;
    if ((st = op_settings_validate(s, err)) != OP_OK)
        return st;
    if (nvols < 0 || (nvols > 0 && !vols))
        return op_err_set(err, OP_EINVAL, "level: bad volume list (%d)", nvols);
    for (int i = 0; i < nvols; i++)
        if ((st = op_volume_validate(&vols[i], err)) != OP_OK)
            return st;
    op_level *l = calloc(1, sizeof *l);
    if (!l || !(l->arena = op_arena_create(0))) {
        free(l);
        return op_err_set(err, OP_ENOMEM, "level: out of memory");
    }
    l->settings = *s;
    l->vols = vols;
    l->nvols = nvols;
    op_tile_grid_derive(s, &l->grid);
    op_span_settings_derive(s, &l->span);
    *out = l;
    return OP_OK;
}

op_status op_level_create(const op_soup *soup, const op_settings *s, const op_volume *vols,
                          int nvols, op_level **out, op_err *err)
{
    *out = NULL;
    op_status st;
    if ((st = op_soup_validate(soup, err)) != OP_OK)
        return st;
    if (soup->tris_len / 3 > 0xffffffffu)
        return op_err_set(err, OP_ERANGE, "level: %zu triangles > 2^32 - 1", soup->tris_len / 3);
    op_level *l;
    if ((st = level_new(s, vols, nvols, &l, err)) != OP_OK)
        return st;
    l->kind = OP_LEVEL_SOUP;
    l->soup = *soup;
    op_soup_bounds(soup, l->bmin, l->bmax);
    /* The binning's temporaries (a tile rectangle per triangle) live only here. */
    op_arena *scratch = op_arena_create(0);
    if (!scratch) {
        op_level_destroy(l);
        return op_err_set(err, OP_ENOMEM, "level: out of memory");
    }
    if ((st = op_soup_tile_range(soup, s, &l->rect, err)) == OP_OK)
        st = op_tile_buckets(soup, s, &l->rect, l->arena, scratch, &l->bin_start, &l->bin_ids, err);
    op_arena_destroy(scratch);
    if (st != OP_OK) {
        op_level_destroy(l);
        return st;
    }
    *out = l;
    op_err_clear(err);
    return OP_OK;
}

/* Tile range and bounds of a columns input (width x depth columns, rows rows from
 * (ox, oy, oz)): every tile whose core cells tx·TC … tx·TC + TC − 1 hold a column. */
static op_status columns_level(op_level *l, int width, int depth, int rows, double ox, double oy,
                               double oz, op_err *err)
{
    int tc = l->grid.tile_cells;
    int nx = (width + tc - 1) / tc, nz = (depth + tc - 1) / tc;
    if ((long long)nx * nz > OP_MAX_TILES)
        return op_err_set(err, OP_ERANGE, "level: %d x %d = %lld tiles > %d", nx, nz,
                          (long long)nx * nz, OP_MAX_TILES);
    l->rect = (op_tile_rect){0, 0, nx - 1, nz - 1};
    double cs = l->grid.cs, ch = l->settings.cell_height;
    l->bmin[0] = (float)ox;
    l->bmin[1] = (float)oy;
    l->bmin[2] = (float)oz;
    l->bmax[0] = (float)(ox + width * cs);
    l->bmax[1] = (float)(oy + rows * ch);
    l->bmax[2] = (float)(oz + depth * cs);
    return OP_OK;
}

op_status op_level_create_hf(const op_hf_input *hf, const op_settings *s, const op_volume *vols,
                             int nvols, op_level **out, op_err *err)
{
    *out = NULL;
    op_status st;
    op_level *l;
    if ((st = op_hf_input_validate(hf, err)) != OP_OK ||
        (st = level_new(s, vols, nvols, &l, err)) != OP_OK)
        return st;
    l->kind = OP_LEVEL_HEIGHTFIELD;
    l->hf = *hf;
    if ((st = columns_level(l, hf->width, hf->depth, hf->rows, hf->origin_x, hf->origin_y,
                            hf->origin_z, err)) != OP_OK) {
        op_level_destroy(l);
        return st;
    }
    *out = l;
    op_err_clear(err);
    return OP_OK;
}

op_status op_level_create_chunk(const op_voxel_chunk *vc, const op_settings *s,
                                const op_volume *vols, int nvols, op_level **out, op_err *err)
{
    *out = NULL;
    op_status st;
    op_level *l;
    if ((st = op_voxel_chunk_validate(vc, err)) != OP_OK ||
        (st = level_new(s, vols, nvols, &l, err)) != OP_OK)
        return st;
    l->kind = OP_LEVEL_CHUNK;
    l->chunk = *vc;
    if ((st = columns_level(l, vc->sx, vc->sz, vc->sy, vc->origin_x, 0.0, vc->origin_z, err)) !=
        OP_OK) {
        op_level_destroy(l);
        return st;
    }
    *out = l;
    op_err_clear(err);
    return OP_OK;
}

void op_level_destroy(op_level *l)
{
    if (!l)
        return;
    op_arena_destroy(l->arena);
    free(l);
}

op_tile_rect op_level_tiles(const op_level *l)
{
    return l->rect;
}

const op_settings *op_level_settings(const op_level *l)
{
    return &l->settings;
}

int op_level_tile_count(const op_level *l)
{
    return (l->rect.tx1 - l->rect.tx0 + 1) * (l->rect.tz1 - l->rect.tz0 + 1);
}

int op_level_tile_index(const op_level *l, int tx, int tz)
{
    if (tx < l->rect.tx0 || tx > l->rect.tx1 || tz < l->rect.tz0 || tz > l->rect.tz1)
        return -1;
    return (tz - l->rect.tz0) * (l->rect.tx1 - l->rect.tx0 + 1) + (tx - l->rect.tx0);
}

void op_level_bounds(const op_level *l, float bmin[3], float bmax[3])
{
    memcpy(bmin, l->bmin, sizeof l->bmin);
    memcpy(bmax, l->bmax, sizeof l->bmax);
}
