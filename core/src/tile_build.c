/*
 * Span stage, one tile's heightfield (build3d-spans.md §1-§4): for a soup,
 * selection, the skip rule, y0 and rows, classification, rasterization, filters;
 * for heightfield and voxel-chunk input, the columns the tile shows, then filters.
 *
 * Input: a soup / heightfield / chunk, settings, a tile (tx, tz). Output: the
 * filtered op_heightfield of the tile's build grid (TileCells + 2B cells a side).
 * A tile's result depends only on its own triangles in input order, so a single
 * tile rebuild equals the same tile of a full build.
 */
#include <math.h>
#include <string.h>

#include "heightfield_internal.h"
#include "level_internal.h"
#include "onepath/limits.h"

/* y0 and rows of a soup tile (§1.3) from its lowest and highest vertex y:
 * y0 = max(minY - CellHeight, -2^21 + 1), rows = ceil((maxY - y0) / CellHeight) +
 * WalkableHeight + 2. */
static op_status rows_of(double lo, double hi, const op_settings *s, const op_span_settings *ss,
                         int tx, int tz, double *y0, int *rows, op_err *err)
{
    double base = lo - s->cell_height;
    if (base < -OP_MAX_COORD + 1.0)
        base = -OP_MAX_COORD + 1.0;
    double r = ceil((hi - base) / s->cell_height) + (double)ss->walkable_height + 2.0;
    if (r > OP_MAX_ROWS)
        return op_err_set(err, OP_ERANGE, "tile (%d, %d): %.0f rows > %d", tx, tz, r, OP_MAX_ROWS);
    *y0 = base;
    *rows = (int)r;
    return OP_OK;
}

/* rows_of over the vertices of triangles ids[0, n). */
static op_status soup_rows(const op_soup *soup, const op_settings *s, const op_span_settings *ss,
                           const uint32_t *ids, size_t n, int tx, int tz, double *y0, int *rows,
                           op_err *err)
{
    double lo = 0.0, hi = 0.0;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            double y = soup->verts[3 * (size_t)soup->tris[3 * (size_t)ids[i] + (size_t)k] + 1];
            if ((i == 0 && k == 0) || y < lo)
                lo = y;
            if ((i == 0 && k == 0) || y > hi)
                hi = y;
        }
    return rows_of(lo, hi, s, ss, tx, tz, y0, rows, err);
}

/* The grid of tile (tx, tz): TileCells + 2B cells a side, minimum corner
 * (x0 + tx*TileSize - B*cs, y0, z0 + tz*TileSize - B*cs). */
static op_status tile_init(op_heightfield *hf, op_arena *out, const op_settings *s,
                           const op_tile_grid *g, double x0, double z0, int tx, int tz, double y0,
                           int rows, op_err *err)
{
    double origin[3] = {x0 + ((double)tx * s->tile_size - (double)g->border * g->cs), y0,
                        z0 + ((double)tz * s->tile_size - (double)g->border * g->cs)};
    return op_heightfield_init(hf, out, g->grid_cells, g->grid_cells, rows, origin, g->cs,
                               s->cell_height, err);
}

static int any_may_be_walkable(const op_soup *soup, const uint32_t *ids, size_t n, float cosv)
{
    for (size_t i = 0; i < n; i++) {
        const int *ix = &soup->tris[3 * (size_t)ids[i]];
        if (op_triangle_may_be_walkable(&soup->verts[3 * (size_t)ix[0]],
                                        &soup->verts[3 * (size_t)ix[1]],
                                        &soup->verts[3 * (size_t)ix[2]], cosv))
            return 1;
    }
    return 0;
}

static void classify_ids(const op_soup *soup, const uint32_t *ids, size_t n, float cosv,
                         uint8_t *areas)
{
    for (size_t i = 0; i < n; i++) {
        size_t t = ids[i];
        const int *ix = &soup->tris[3 * t];
        int area = soup->areas ? soup->areas[t] : OP_WALKABLE_AREA;
        areas[i] = (uint8_t)(op_triangle_walkable(&soup->verts[3 * (size_t)ix[0]],
                                                  &soup->verts[3 * (size_t)ix[1]],
                                                  &soup->verts[3 * (size_t)ix[2]], cosv)
                                 ? area
                                 : 0);
    }
}

op_status op_tile_heightfield_build(const op_soup *soup, const op_settings *s, int tx, int tz,
                                    op_arena *out, op_arena *scratch, op_heightfield *hf,
                                    int *skipped, op_err *err)
{
    *skipped = 0;
    op_status st = op_settings_validate(s, err);
    if (st == OP_OK)
        st = op_soup_validate(soup, err);
    op_tile_range r;
    if (st == OP_OK)
        st = op_soup_tile_range(soup, s, &r, err);
    uint32_t *ids = NULL;
    size_t n = 0;
    if (st == OP_OK)
        st = op_tile_select(soup, s, &r, tx, tz, scratch, &ids, &n, err);
    if (st != OP_OK)
        return st;
    return op_tile_heightfield_build_ids(soup, s, tx, tz, ids, n, out, scratch, hf, skipped, err);
}

/* A triangle's rasterization key: its three vertices' float32 bits in order and its
 * input area. */
static void tri_key(const op_soup *soup, uint32_t t, uint32_t key[10])
{
    const int *ix = &soup->tris[3 * (size_t)t];
    for (int k = 0; k < 3; k++)
        memcpy(&key[3 * k], &soup->verts[3 * (size_t)ix[k]], 3 * sizeof(float));
    key[9] = soup->areas ? soup->areas[t] : OP_WALKABLE_AREA;
}

/* ids without the triangles whose key equals an earlier one's, in input order, into
 * keep (n entries; *kept set). An exact copy (same bits, same order, same area) leaves
 * exactly the fragments of its first occurrence, and a column's spans are a function of
 * the set of its fragments (§3.5), so dropping it changes no byte; without this, 10^6
 * copies of one face cost 10^6 rasterizations. Cost: one hash probe per triangle. */
static op_status drop_copies(const op_soup *soup, const uint32_t *ids, size_t n, op_arena *scratch,
                             uint32_t *keep, size_t *kept, int tx, int tz, op_err *err)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    op_arena_mark m = op_arena_get_mark(scratch);
    uint32_t *slot = op_arena_alloc(scratch, cap * sizeof *slot);
    if (!slot)
        return op_err_set(err, OP_ENOMEM, "tile (%d, %d): out of memory (%zu bytes of copies)", tx,
                          tz, cap * sizeof *slot);
    memset(slot, 0xff, cap * sizeof *slot);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t key[10], other[10];
        tri_key(soup, ids[i], key);
        uint64_t h = 0xcbf29ce484222325u;
        for (int j = 0; j < 10; j++)
            h = (h ^ key[j]) * 0x100000001b3u;
        size_t at = (size_t)(h ^ h >> 29) & (cap - 1);
        int copy = 0;
        for (; slot[at] != 0xffffffffu; at = (at + 1) & (cap - 1)) {
            tri_key(soup, ids[slot[at]], other);
            if (!memcmp(key, other, sizeof key)) {
                copy = 1;
                break;
            }
        }
        if (copy)
            continue;
        slot[at] = (uint32_t)i;
        keep[k++] = ids[i];
    }
    op_arena_release(scratch, m);
    *kept = k;
    return OP_OK;
}

/* The tile's heightfield from its triangles ids[0, n) in input order. tri_class == NULL:
 * copies dropped and triangles classified here; else tri_class[t] is triangle t's area
 * after classification, or OP__TRI_COPY for a copy of an earlier triangle (a level's,
 * level.c), which leaves the same triangles with the same areas. yr == NULL: y0 and rows
 * from the triangles' vertices; else yr[0], yr[1] are their lowest and highest vertex y
 * (a level's bin, level.c), which give the same. */
static op_status heightfield_of(const op_soup *soup, const op_settings *s, int tx, int tz,
                                const uint32_t *ids, size_t n, const uint8_t *tri_class,
                                const float *yr, op_arena *out, op_arena *scratch,
                                op_heightfield *hf, int *skipped, op_err *err)
{
    *skipped = 0;
    op_tile_grid g;
    op_span_settings ss;
    op_tile_grid_derive(s, &g);
    op_span_settings_derive(s, &ss);
    if (!any_may_be_walkable(soup, ids, n, ss.slope_cos)) {
        *skipped = 1;
        /* A level's skipped tile stops here (tile_volumes.c): no grid to clear. */
        if (tri_class) {
            memset(hf, 0, sizeof *hf);
            return OP_OK;
        }
        return tile_init(hf, out, s, &g, g.origin_x, g.origin_z, tx, tz, 0.0, 1, err);
    }
    double y0 = 0.0;
    int rows = 1;
    op_status st = yr ? rows_of(yr[0], yr[1], s, &ss, tx, tz, &y0, &rows, err)
                      : soup_rows(soup, s, &ss, ids, n, tx, tz, &y0, &rows, err);
    uint32_t *keep = st == OP_OK ? op_arena_alloc(scratch, (n ? n : 1) * sizeof *keep) : NULL;
    uint8_t *areas = keep ? op_arena_alloc(scratch, n ? n : 1) : NULL;
    if (st == OP_OK && !areas)
        st = op_err_set(err, OP_ENOMEM, "tile (%d, %d): out of memory (%zu triangle ids)", tx, tz,
                        n);
    if (st == OP_OK && !tri_class) {
        st = drop_copies(soup, ids, n, scratch, keep, &n, tx, tz, err);
        if (st == OP_OK)
            classify_ids(soup, keep, n, ss.slope_cos, areas);
    } else if (st == OP_OK) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            uint8_t c = tri_class[ids[i]];
            keep[k] = ids[i];
            areas[k] = c;
            k += c != OP__TRI_COPY;
        }
        n = k;
    }
    ids = keep;
    if (st == OP_OK)
        st = tile_init(hf, out, s, &g, g.origin_x, g.origin_z, tx, tz, y0, rows, err);
    if (st != OP_OK)
        return st;
    op_heightfield_use_grid_lines(hf, g.origin_x, g.origin_z, (int64_t)tx * g.tile_cells - g.border,
                                  (int64_t)tz * g.tile_cells - g.border);
    st = op_rasterize_ids(hf, soup, ids, n, areas, ss.merge_threshold, err);
    if (st != OP_OK)
        return st;
    op_filters_apply(hf, ss.walkable_height, ss.walkable_climb);
    return OP_OK;
}

op_status op_tile_heightfield_build_ids(const op_soup *soup, const op_settings *s, int tx, int tz,
                                        const uint32_t *ids, size_t n, op_arena *out,
                                        op_arena *scratch, op_heightfield *hf, int *skipped,
                                        op_err *err)
{
    return heightfield_of(soup, s, tx, tz, ids, n, NULL, NULL, out, scratch, hf, skipped, err);
}

op_status op__tile_heightfield_build_level(const op_level *l, int tx, int tz, const uint32_t *ids,
                                           size_t n, op_arena *scratch, op_heightfield *hf,
                                           int *skipped, op_err *err)
{
    const float *yr = l->bin_y ? &l->bin_y[2 * (size_t)op_level_tile_index(l, tx, tz)] : NULL;
    return heightfield_of(&l->soup, &l->settings, tx, tz, ids, n, l->tri_class, yr, scratch,
                          scratch, hf, skipped, err);
}

/* Tile tx of a columns-input (heightfield or chunk) with `side` columns shows columns
 * tx*TC - B ... (§1.6); tiles showing no core column are out of range. */
static op_status check_input_tile(const op_tile_grid *g, int width, int depth, int tx, int tz,
                                  const char *what, op_err *err)
{
    int nx = (width + g->tile_cells - 1) / g->tile_cells;
    int nz = (depth + g->tile_cells - 1) / g->tile_cells;
    if (tx < 0 || tz < 0 || tx >= nx || tz >= nz)
        return op_err_set(err, OP_ERANGE, "%s: tile (%d, %d) is outside 0..%d x 0..%d", what, tx,
                          tz, nx - 1, nz - 1);
    return OP_OK;
}

/* Input column of grid cell c of tile t, or -1 when the tile shows none there. */
static int input_col(const op_tile_grid *g, int t, int c, int side)
{
    int64_t i = (int64_t)t * g->tile_cells - g->border + c;
    return (i >= 0 && i < side) ? (int)i : -1;
}

static op_status input_rows(const op_span_settings *ss, int in_rows, const char *what, int tx,
                            int tz, int *rows, op_err *err)
{
    int64_t r = (int64_t)in_rows + ss->walkable_height + 2;
    if (r > OP_MAX_ROWS)
        return op_err_set(err, OP_ERANGE, "%s: tile (%d, %d): %lld rows > %d", what, tx, tz,
                          (long long)r, OP_MAX_ROWS);
    *rows = (int)r;
    return OP_OK;
}

op_status op_tile_heightfield_build_hf_valid(const op_hf_input *in, const op_settings *s, int tx,
                                             int tz, op_arena *out, op_heightfield *hf, op_err *err)
{
    op_status st = OP_OK;
    op_tile_grid g;
    op_span_settings ss;
    op_tile_grid_derive(s, &g);
    op_span_settings_derive(s, &ss);
    int rows = 0;
    if (st == OP_OK)
        st = check_input_tile(&g, in->width, in->depth, tx, tz, "heightfield", err);
    if (st == OP_OK)
        st = input_rows(&ss, in->rows, "heightfield", tx, tz, &rows, err);
    if (st == OP_OK)
        st = tile_init(hf, out, s, &g, in->origin_x, in->origin_z, tx, tz, in->origin_y, rows, err);
    if (st != OP_OK)
        return st;
    size_t total = 0;
    op__hf_begin(hf);
    for (int pass = 0; pass < 2; pass++) {
        for (int z = 0; z < g.grid_cells; z++) {
            int k = input_col(&g, tz, z, in->depth);
            for (int x = 0; x < g.grid_cells && k >= 0; x++) {
                int i = input_col(&g, tx, x, in->width);
                if (i < 0)
                    continue;
                size_t c = (size_t)k * (size_t)in->width + (size_t)i;
                if (pass == 0) {
                    total += in->col_start[c + 1] - in->col_start[c];
                    continue;
                }
                for (uint32_t j = in->col_start[c]; j < in->col_start[c + 1]; j++)
                    op__hf_push(hf, (uint32_t)x + (uint32_t)z * (uint32_t)g.grid_cells,
                                in->spans[j].smin, in->spans[j].smax, in->spans[j].area);
            }
        }
        if (pass == 0 && (st = op__hf_reserve(hf, total, err)) != OP_OK)
            return st;
    }
    hf->merge_threshold = 0; /* AddSpan with threshold 0 (§1.6) */
    st = op__hf_commit(hf, 0, err);
    if (st != OP_OK)
        return st;
    op_filters_apply(hf, ss.walkable_height, ss.walkable_climb);
    return OP_OK;
}

op_status op_tile_heightfield_build_hf(const op_hf_input *in, const op_settings *s, int tx, int tz,
                                       op_arena *out, op_heightfield *hf, op_err *err)
{
    op_status st = op_settings_validate(s, err);
    if (st == OP_OK)
        st = op__columns_grid_origin(s, "heightfield", err);
    if (st == OP_OK)
        st = op_hf_input_validate(in, err);
    return st != OP_OK ? st : op_tile_heightfield_build_hf_valid(in, s, tx, tz, out, hf, err);
}

/* Runs of non-empty voxels of one chunk column: each voxel is a fragment [j, j+1)
 * with its area; a run merges with threshold 0, so its area is its top voxel's. */
static size_t chunk_column(op_heightfield *hf, const op_voxel_chunk *in, int i, int k, uint32_t col,
                           int push)
{
    const uint8_t *a = &in->areas[((size_t)k * (size_t)in->sx + (size_t)i) * (size_t)in->sy];
    size_t runs = 0;
    for (int j = 0; j < in->sy;) {
        if (a[j] == 0) {
            j++;
            continue;
        }
        int j0 = j;
        while (j < in->sy && a[j] != 0)
            j++;
        if (push)
            op__hf_push(hf, col, j0, j, a[j - 1]);
        runs++;
    }
    return runs;
}

op_status op_tile_heightfield_build_chunk_valid(const op_voxel_chunk *in, const op_settings *s,
                                                int tx, int tz, op_arena *out, op_heightfield *hf,
                                                op_err *err)
{
    op_status st = OP_OK;
    op_tile_grid g;
    op_span_settings ss;
    op_tile_grid_derive(s, &g);
    op_span_settings_derive(s, &ss);
    int rows = 0;
    if (st == OP_OK)
        st = check_input_tile(&g, in->sx, in->sz, tx, tz, "voxel chunk", err);
    if (st == OP_OK)
        st = input_rows(&ss, in->sy, "voxel chunk", tx, tz, &rows, err);
    if (st == OP_OK)
        st = tile_init(hf, out, s, &g, in->origin_x, in->origin_z, tx, tz, 0.0, rows, err);
    if (st != OP_OK)
        return st;
    op__hf_begin(hf);
    for (int pass = 0; pass < 2; pass++) {
        size_t total = 0;
        for (int z = 0; z < g.grid_cells; z++) {
            int k = input_col(&g, tz, z, in->sz);
            for (int x = 0; x < g.grid_cells && k >= 0; x++) {
                int i = input_col(&g, tx, x, in->sx);
                if (i >= 0)
                    total += chunk_column(hf, in, i, k,
                                          (uint32_t)x + (uint32_t)z * (uint32_t)g.grid_cells, pass);
            }
        }
        if (pass == 0 && (st = op__hf_reserve(hf, total, err)) != OP_OK)
            return st;
    }
    hf->merge_threshold = 0;
    st = op__hf_commit(hf, 0, err);
    if (st != OP_OK)
        return st;
    op_filters_apply(hf, ss.walkable_height, ss.walkable_climb);
    return OP_OK;
}

op_status op_tile_heightfield_build_chunk(const op_voxel_chunk *in, const op_settings *s, int tx,
                                          int tz, op_arena *out, op_heightfield *hf, op_err *err)
{
    op_status st = op_settings_validate(s, err);
    if (st == OP_OK)
        st = op__columns_grid_origin(s, "voxel chunk", err);
    if (st == OP_OK)
        st = op_voxel_chunk_validate(in, err);
    return st != OP_OK ? st : op_tile_heightfield_build_chunk_valid(in, s, tx, tz, out, hf, err);
}
