/*
 * Span stage, tile grid and triangle selection (build3d-spans.md §1).
 *
 * Input: a valid soup and settings. Output: the soup's tile range, the tiles of
 * one triangle, the triangles of one tile (input order). Everything is decided in
 * global cell indices against the world lines grid origin + k * cs (op_cell_of), the same lines
 * the rasterizer clips against, so a triangle that can leave a fragment in a tile's
 * grid is always selected for it. Typical: 10^5 triangles, each in 1-4 tiles.
 */
#include <string.h>
#include "heightfield_internal.h"
#include "onepath/limits.h"

/* floor(a / b) for b > 0. */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

op_status op_soup_tile_range(const op_soup *soup, const op_settings *s, op_tile_range *r,
                             op_err *err)
{
    op_tile_grid g;
    op_tile_grid_derive(s, &g);
    if (!(g.cs >= OP_MIN_CELL_SIZE))
        return op_err_set(err, OP_ERANGE,
                          "tiles: cell size tile_size / tile_cells = %g is below %g", g.cs,
                          OP_MIN_CELL_SIZE);
    float bmin[3], bmax[3];
    op_soup_bounds(soup, bmin, bmax);
    int64_t t[4] = {
        floor_div(op_cell_of(bmin[0], g.origin_x, g.cs), g.tile_cells),
        floor_div(op_cell_of(bmin[2], g.origin_z, g.cs), g.tile_cells),
        floor_div(op_cell_of(bmax[0], g.origin_x, g.cs), g.tile_cells),
        floor_div(op_cell_of(bmax[2], g.origin_z, g.cs), g.tile_cells),
    };
    int64_t count = (t[2] - t[0] + 1) * (t[3] - t[1] + 1);
    if (count > OP_MAX_TILES)
        return op_err_set(err, OP_ERANGE, "tiles: the soup spans %lld tiles > %d", (long long)count,
                          OP_MAX_TILES);
    r->tx0 = (int)t[0];
    r->tz0 = (int)t[1];
    r->tx1 = (int)t[2];
    r->tz1 = (int)t[3];
    op_err_clear(err);
    return OP_OK;
}

int op_triangle_tiles(const op_soup *soup, size_t t, const op_tile_grid *g, const op_tile_range *r,
                      op_tile_range *out)
{
    const int *ix = &soup->tris[3 * t];
    int32_t lo[2], hi[2];
    for (int i = 0; i < 2; i++) {
        int ax = i ? 2 : 0;
        float a = soup->verts[3 * (size_t)ix[0] + (size_t)ax], b = a;
        for (int k = 1; k < 3; k++) {
            float v = soup->verts[3 * (size_t)ix[k] + (size_t)ax];
            a = v < a ? v : a;
            b = v > b ? v : b;
        }
        /* Cells c0..c1 of the box meet tile t's grid cells t*TC - B .. t*TC + TC + B - 1
         * iff floor((c0 - B) / TC) <= t <= floor((c1 + B) / TC): found from the tile
         * lines themselves (op_last_tile_at). */
        op_axis_grid line;
        op_axis_grid_init(&line, g, i ? g->origin_z : g->origin_x);
        lo[i] = op_last_tile_at(&line, a, 0);
        hi[i] = op_last_tile_at(&line, b, 1);
    }
    out->tx0 = lo[0] < r->tx0 ? r->tx0 : lo[0];
    out->tz0 = lo[1] < r->tz0 ? r->tz0 : lo[1];
    out->tx1 = hi[0] > r->tx1 ? r->tx1 : hi[0];
    out->tz1 = hi[1] > r->tz1 ? r->tz1 : hi[1];
    return out->tx0 <= out->tx1 && out->tz0 <= out->tz1;
}

op_status op_tile_select(const op_soup *soup, const op_settings *s, const op_tile_range *r, int tx,
                         int tz, op_arena *out, uint32_t **ids, size_t *n, op_err *err)
{
    *ids = NULL;
    *n = 0;
    if (tx < r->tx0 || tx > r->tx1 || tz < r->tz0 || tz > r->tz1)
        return op_err_set(err, OP_ERANGE,
                          "tiles: tile (%d, %d) is outside the range %d..%d x %d..%d", tx, tz,
                          r->tx0, r->tx1, r->tz0, r->tz1);
    op_tile_grid g;
    op_tile_grid_derive(s, &g);
    size_t ntris = soup->tris_len / 3;
    if (ntris > 0xffffffffu)
        return op_err_set(err, OP_ERANGE, "tiles: %zu triangles exceed 2^32", ntris);
    /* Two passes (count, then fill) so that the list is one exact allocation. */
    size_t count = 0;
    op_tile_range tr;
    for (size_t t = 0; t < ntris; t++)
        if (op_triangle_tiles(soup, t, &g, r, &tr) && tx >= tr.tx0 && tx <= tr.tx1 &&
            tz >= tr.tz0 && tz <= tr.tz1)
            count++;
    uint32_t *list = op_arena_alloc(out, count * sizeof *list);
    if (!list)
        return op_err_set(err, OP_ENOMEM, "tiles: out of memory (%zu bytes of triangle ids)",
                          count * sizeof *list);
    size_t k = 0;
    for (size_t t = 0; t < ntris && k < count; t++)
        if (op_triangle_tiles(soup, t, &g, r, &tr) && tx >= tr.tx0 && tx <= tr.tx1 &&
            tz >= tr.tz0 && tz <= tr.tz1)
            list[k++] = (uint32_t)t;
    *ids = list;
    *n = count;
    op_err_clear(err);
    return OP_OK;
}

/* The tiles of triangle t relative to r (x0, z0, x1, z1), or x0 > x1 when none. */
typedef struct tri_rect {
    int32_t x0, z0, x1, z1;
} tri_rect;

op_status op_tile_buckets(const op_soup *soup, const op_settings *s, const op_tile_range *r,
                          op_arena *out, op_arena *scratch, uint32_t **offsets, uint32_t **ids,
                          op_err *err)
{
    op_tile_grid g;
    op_tile_grid_derive(s, &g);
    size_t ntx = (size_t)(r->tx1 - r->tx0 + 1), ntiles = ntx * (size_t)(r->tz1 - r->tz0 + 1);
    size_t ntris = soup->tris_len / 3;
    op_arena_mark mark = op_arena_get_mark(scratch);
    uint32_t *off = op_arena_calloc(out, ntiles + 1, sizeof *off);
    tri_rect *rect = op_arena_alloc(scratch, (ntris ? ntris : 1) * sizeof *rect);
    if (!off || !rect)
        return op_err_set(err, OP_ENOMEM, "tiles: out of memory (%zu bytes of offsets)",
                          (ntiles + 1) * sizeof *off + ntris * sizeof *rect);
    /* Counting sort by tile: each triangle's tiles once (op_triangle_tiles is the costly
     * part), count, prefix sums, fill in input order. */
    uint64_t total = 0;
    op_tile_range tr;
    for (size_t t = 0; t < ntris; t++) {
        tri_rect *q = &rect[t];
        if (!op_triangle_tiles(soup, t, &g, r, &tr)) {
            q->x0 = 1;
            q->x1 = 0;
            continue;
        }
        q->x0 = tr.tx0 - r->tx0;
        q->x1 = tr.tx1 - r->tx0;
        q->z0 = tr.tz0 - r->tz0;
        q->z1 = tr.tz1 - r->tz0;
        for (int32_t tz = q->z0; tz <= q->z1; tz++)
            for (int32_t tx = q->x0; tx <= q->x1; tx++)
                off[(size_t)tz * ntx + (size_t)tx + 1]++;
        total += (uint64_t)(q->x1 - q->x0 + 1) * (uint64_t)(q->z1 - q->z0 + 1);
    }
    if (total > 0xffffffffu) {
        op_arena_release(scratch, mark);
        return op_err_set(err, OP_ELIMIT, "tiles: %llu triangle-tile pairs exceed 2^32",
                          (unsigned long long)total);
    }
    for (size_t i = 0; i < ntiles; i++)
        off[i + 1] += off[i];
    uint32_t *list = op_arena_alloc(out, (total ? (size_t)total : 1) * sizeof *list);
    uint32_t *fill = op_arena_alloc(scratch, (ntiles ? ntiles : 1) * sizeof *fill);
    if (!list || !fill) {
        op_arena_release(scratch, mark);
        return op_err_set(err, OP_ENOMEM, "tiles: out of memory (%zu bytes of triangle ids)",
                          (size_t)total * sizeof *list + ntiles * sizeof *fill);
    }
    memcpy(fill, off, ntiles * sizeof *fill);
    for (size_t t = 0; t < ntris; t++) {
        const tri_rect *q = &rect[t];
        for (int32_t tz = q->z0; tz <= q->z1; tz++)
            for (int32_t tx = q->x0; tx <= q->x1; tx++)
                list[fill[(size_t)tz * ntx + (size_t)tx]++] = (uint32_t)t;
    }
    if (scratch != out) /* the same arena for both keeps the temporaries */
        op_arena_release(scratch, mark);
    *offsets = off;
    *ids = list;
    op_err_clear(err);
    return OP_OK;
}
