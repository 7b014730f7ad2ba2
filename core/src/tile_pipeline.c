/*
 * The per-tile pipeline (build3d-polys.md §2): spans → regions → border cut →
 * contours → polygons → detail → tile layers. Input: a prepared level and a tile key;
 * output: every stage's result (op_tile_stages). A tile's result depends only on its
 * own binned triangles (soup) or the columns it shows (heightfield, voxel chunk), so it
 * is the same whether built alone or in a full build.
 */
#include <string.h>
#include <time.h>

#include "contours_internal.h"
#include "detail_internal.h"
#include "level_internal.h"
#include "onepath/limits.h"
#include "polys_internal.h"
#include "regions_internal.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Charges the time since *t0 to stage k and restarts the clock. Timing never feeds
 * back into a result. */
static void lap(op_tile_stages *st, op_stage k, double *t0)
{
    double t = now_ms();
    st->stage_ms[k] += t - *t0;
    *t0 = t;
}

op_status op__tile_err(op_status st, int tx, int tz, int layer, op_err *err)
{
    if (st == OP_OK || !err || strncmp(err->msg, "tile (", 6) == 0)
        return st;
    char was[OP_ERR_MSG_MAX];
    memcpy(was, err->msg, sizeof was);
    if (layer >= 0)
        return op_err_set(err, st, "tile (%d, %d) layer %d: %s", tx, tz, layer, was);
    return op_err_set(err, st, "tile (%d, %d): %s", tx, tz, was);
}

/* Regions of st->chf. Layers: labelled from the span layers the span stage left in
 * st->span_layer (build3d-runtime.md §2.1: decided before any volume). */
static op_status regions_step(const op_level *l, op_arena *out, op_arena *scratch,
                              op_tile_stages *st, op_err *err)
{
    op_region_settings rs = {l->settings.partition, l->settings.min_region_area,
                             l->settings.merge_region_area};
    if (rs.partition == OP_PARTITION_LAYERS)
        return op_regions_build_from_layers(&st->chf, st->span_layer, rs.min_region_area, out,
                                            scratch, &st->regions, &st->region_layer, err);
    return op_regions_build(&st->chf, &rs, out, scratch, &st->regions, err);
}

/* Spans [i0, i1) with a region join the border region. */
static void relabel(uint16_t *reg, uint32_t i0, uint32_t i1, int border_id)
{
    for (uint32_t i = i0; i < i1; i++)
        if (reg[i] != 0)
            reg[i] = (uint16_t)border_id;
}

/* §2.3: every region span outside the core cells joins the border region. */
static op_status cut_border(const op_level *l, op_arena *out, op_tile_stages *st, op_err *err)
{
    const op_chf *chf = &st->chf;
    op_regions *r = &st->regions;
    int b = l->grid.border, tc = l->grid.tile_cells;
    if (r->region_count + 1 > OP_MAX_REGIONS)
        return op_err_set(err, OP_ELIMIT, "tile (%d, %d): %d regions + border > %d", st->tx, st->tz,
                          r->region_count, OP_MAX_REGIONS);
    int border_id = r->region_count + 1, inside = 0;
    /* Cells are z-major, so each row's spans are one index range: the core cells of a
     * core row are its middle part, every other span of the grid is border. */
    for (int z = 0; z < chf->depth; z++) {
        const uint32_t *row = &chf->cells[(size_t)z * (size_t)chf->width];
        int core_row = z >= b && z < b + tc && chf->width > b;
        int x0 = core_row ? b : chf->width;
        int x1 = core_row ? (b + tc < chf->width ? b + tc : chf->width) : chf->width;
        relabel(r->reg, row[0], row[x0], border_id);
        /* Whether any core span has a region: the first one found settles it. */
        for (uint32_t i = row[x0]; !inside && i < row[x1]; i++)
            inside = r->reg[i] != 0;
        relabel(r->reg, row[x1], row[chf->width], border_id);
    }
    uint8_t *areas = op_arena_alloc(out, (size_t)border_id + 1);
    if (!areas)
        return op_err_set(err, OP_ENOMEM, "tile (%d, %d): out of memory (region areas)", st->tx,
                          st->tz);
    memcpy(areas, r->region_area, (size_t)r->region_count + 1);
    areas[border_id] = 0;
    r->region_area = areas;
    r->region_count = border_id;
    st->border_region = border_id;
    st->skipped = !inside;
    return OP_OK;
}

/* Contours of st's field, of every span (layer < 0) or of the view of one layer
 * (build3d-runtime.md §2.3). */
static op_status contours_on(const op_level *l, const op__tile_base *cached, int keep_raw,
                             int layer, op_arena *out, op_arena *scratch, op_tile_stages *st,
                             op_err *err)
{
    op_contour_settings cs;
    op_contour_settings_default(&cs);
    cs.max_error = l->settings.contour_max_error;
    cs.max_edge_length = (int)(l->settings.max_edge_length / l->settings.cell_size + 0.5);
    cs.straight_region_borders = l->settings.straight_region_borders;
    cs.border_region = st->border_region;
    cs.keep_raw = keep_raw;
    if (layer >= 0) {
        cs.span_layer = st->span_layer;
        cs.layer = layer;
    }
    /* A rebuild copies the contours of the regions the edit provably left alone
     * (build3d-runtime.md §5.7). */
    op__contour_record rec;
    memset(&rec, 0, sizeof rec);
    rec.stretches_reused = &st->stretches_reused; /* §5.13 */
    op_status s = op__contours_build_reuse(&st->chf, &st->regions, &cs,
                                           cached ? cached->contours : NULL, &st->contours_reused,
                                           cached ? &rec : NULL, out, scratch, &st->contours, err);
    if (s != OP_OK)
        return s;
    /* Contours of the border region are ignored from here on (§2.4). */
    op_contour_set *set = &st->contours;
    int kept = 0;
    for (int i = 0; i < set->count; i++)
        if (set->contours[i].region != st->border_region)
            set->contours[kept++] = set->contours[i];
    set->count = kept;
    return OP_OK;
}

/* minRow is the lowest row of a vertex some polygon uses (welding keeps vertices that end
 * up in no polygon); then the vertical reach limit of §2.5. */
static op_status reach_check(const op_level *l, op_tile_stages *st, op_err *err)
{
    const op_poly_mesh *pm = &st->polys;
    int lo = 0, hi = 0, any = 0;
    for (size_t i = 0; i < (size_t)pm->npolys * (size_t)pm->nvp; i++) {
        if (pm->polys[i] == OP_POLY_MESH_NULL)
            continue;
        int row = pm->verts[3 * pm->polys[i] + 1];
        if (!any || row < lo)
            lo = row;
        if (!any || row > hi)
            hi = row;
        any = 1;
    }
    st->min_row = lo;
    double reach = (double)(hi - lo + 2 * (l->span.walkable_climb + 1)) * l->settings.cell_height;
    if (reach > l->settings.max_local_extent)
        return op_err_set(err, OP_ELIMIT,
                          "tile (%d, %d): vertical reach %.3f wu exceeds max_local_extent %.3f",
                          st->tx, st->tz, reach, l->settings.max_local_extent);
    return OP_OK;
}

/* Layers (build3d-polys.md §5): with Layers each polygon takes its region's layer from the
 * layer-first partition; other partitions put every polygon on layer 0. */
static op_status layers_step(op_arena *out, op_tile_stages *st, op_err *err)
{
    const op_poly_mesh *pm = &st->polys;
    st->nlayers = 1;
    st->poly_layer = NULL;
    if (!st->region_layer)
        return OP_OK;
    st->poly_layer = op_arena_alloc(out, ((size_t)pm->npolys + 1) * sizeof(int));
    if (!st->poly_layer)
        return op_err_set(err, OP_ENOMEM, "tile (%d, %d): out of memory (layers)", st->tx, st->tz);
    int top = 0;
    for (int p = 0; p < pm->npolys; p++) {
        uint16_t l = st->region_layer[pm->regs[p]];
        if (l == OP_NO_LAYER)
            return op_err_set(err, OP_EINTERNAL, "tile (%d, %d): polygon %d has no layer", st->tx,
                              st->tz, p);
        st->poly_layer[p] = l;
        if (l + 1 > top)
            top = l + 1;
    }
    if (top > OP_MAX_LAYERS)
        return op_err_set(err, OP_ELIMIT, "tile (%d, %d): %d layers > %d", st->tx, st->tz, top,
                          OP_MAX_LAYERS);
    st->nlayers = top > 0 ? top : 1;
    return OP_OK;
}

/* build3d-polys.md §5 "at most 65536 vertices per layer", per layer in every path: the
 * vertices each layer's polygons use (what its tile layer will hold) and its polygons,
 * counted right after the polygons, before the detail stage. fixed_layer >= 0: every
 * polygon of st's mesh is on that layer (layer by layer); else st->poly_layer (or layer 0)
 * over st->nlayers layers, from a mesh that may weld many layers (built in one piece). */
static op_status layer_limits(const op_tile_stages *st, int fixed_layer, op_arena *scratch,
                              op_err *err)
{
    const op_poly_mesh *pm = &st->polys;
    int nl = fixed_layer >= 0 || !st->poly_layer ? 1 : st->nlayers;
    size_t np = (size_t)pm->npolys, nvp = (size_t)pm->nvp;
    op_arena_mark m = op_arena_get_mark(scratch);
    int *start = op_arena_calloc(scratch, (size_t)nl + 2, sizeof *start);
    int *order = op_arena_alloc(scratch, (np + 1) * sizeof *order);
    int *seen = op_arena_calloc(scratch, (size_t)pm->nverts + 1, sizeof *seen);
    if (!start || !order || !seen)
        return op_err_set(err, OP_ENOMEM, "tile (%d, %d): out of memory (layer counts)", st->tx,
                          st->tz);
    /* Polygons by layer (a counting sort); seen[v] = the last layer + 1 that used v. */
    for (size_t p = 0; p < np; p++)
        start[(nl > 1 ? st->poly_layer[p] : 0) + 2]++;
    for (int l = 2; l < nl + 2; l++)
        start[l] += start[l - 1];
    for (size_t p = 0; p < np; p++)
        order[start[(nl > 1 ? st->poly_layer[p] : 0) + 1]++] = (int)p;
    op_status s = OP_OK;
    for (int l = 0; l < nl && s == OP_OK; l++) {
        int layer = fixed_layer >= 0 ? fixed_layer : l, nverts = 0;
        for (int i = start[l]; i < start[l + 1]; i++)
            for (size_t k = 0; k < nvp; k++) {
                uint32_t v = pm->polys[(size_t)order[i] * nvp + k];
                if (v == OP_POLY_MESH_NULL)
                    break;
                if (seen[v] != l + 1) {
                    seen[v] = l + 1;
                    nverts++;
                }
            }
        int npolys = start[l + 1] - start[l];
        if (nverts >= OP_MAX_LAYER_VERTS)
            s = op_err_set(err, OP_ELIMIT,
                           "tile (%d, %d) layer %d: %d vertices, the format holds %d "
                           "(OP_MAX_LAYER_VERTS)",
                           st->tx, st->tz, layer, nverts, OP_MAX_LAYER_VERTS - 1);
        else if (npolys > OP_MAX_LAYER_POLYS)
            s = op_err_set(err, OP_ELIMIT,
                           "tile (%d, %d) layer %d: %d polygons, the format holds %d "
                           "(OP_MAX_LAYER_POLYS)",
                           st->tx, st->tz, layer, npolys, OP_MAX_LAYER_POLYS);
    }
    op_arena_release(scratch, m);
    return s;
}

/* The layer of every polygon of st's mesh, or -1 when they lie on several: the mesh is
 * then the whole tile's (partition = layers built at once), and an error of the polygon
 * stage (its own mesh bound, OP_MAX_TILE_MESH_VERTS) names the tile only. */
static int mesh_layer(const op_tile_stages *st, int fixed_layer)
{
    if (fixed_layer >= 0 || !st->region_layer)
        return fixed_layer >= 0 ? fixed_layer : 0;
    /* region_layer covers the regions below the border band's id. */
    int n = st->border_region > 0 ? st->border_region - 1 : st->regions.region_count, one = -1;
    for (int r = 1; r <= n; r++) {
        int l = st->region_layer[r];
        if (l == OP_NO_LAYER || l == one)
            continue;
        if (one >= 0)
            return -1;
        one = l;
    }
    return one < 0 ? 0 : one;
}

/* Polygons, detail and tile data of st's contours. fixed_layer >= 0: every polygon is on
 * that layer (a layer-by-layer build) and st->tiles is already allocated. */
static op_status mesh_steps(const op_level *l, const op__tile_base *cached,
                            const uint16_t *kept_from, op_stage last, op_arena *out,
                            op_arena *scratch, op_tile_stages *st, int fixed_layer, op_arena_mark m,
                            double *t0, op_err *err)
{
    op_tile_frame f = {l->grid.border, l->grid.tile_cells, l->grid.cs, l->settings.tile_size,
                       l->settings.cell_height};
    /* A rebuild copies the polygons of the contours whose input is the base's
     * (build3d-runtime.md §5.12). */
    op_status s = op__polys_build_reuse(&st->contours, &f, l->settings.max_verts_per_poly,
                                        cached ? cached->polys : NULL, &st->polys_reused, NULL,
                                        NULL, out, scratch, &st->polys, err);
    op_arena_release(scratch, m); /* the stage's scratch is dead (op__tile_build) */
    if (s != OP_OK)
        s = op__tile_err(s, st->tx, st->tz, mesh_layer(st, fixed_layer), err);
    if (s == OP_OK)
        s = reach_check(l, st, err);
    if (s == OP_OK && fixed_layer < 0)
        s = layers_step(out, st, err);
    if (s == OP_OK)
        s = layer_limits(st, fixed_layer, scratch, err);
    lap(st, OP_STAGE_POLYS, t0);
    if (s != OP_OK || last == OP_STAGE_POLYS)
        return s;
    op_detail_settings ds = {l->settings.detail_sample_distance, l->settings.detail_max_error,
                             l->span.walkable_climb};
    /* A rebuild copies the detail of the polygons the edit provably left alone
     * (build3d-runtime.md §5.6); those of a span layer kept whole (§5.11) without reading
     * their spans again (rule 3a). */
    s = op__detail_build_reuse(&st->polys, &st->chf, &st->regions, &ds, st->min_row,
                               cached ? cached->detail : NULL, kept_from, &st->detail_reused, out,
                               scratch, &st->detail, err);
    op_arena_release(scratch, m);
    lap(st, OP_STAGE_DETAIL, t0);
    if (s != OP_OK || last == OP_STAGE_DETAIL)
        return s;
    if (fixed_layer >= 0) {
        st->nlayers = fixed_layer + 1;
        st->poly_layer = op_arena_alloc(out, ((size_t)st->polys.npolys + 1) * sizeof(int));
        if (!st->poly_layer)
            return op_err_set(err, OP_ENOMEM, "tile (%d, %d): out of memory (layers)", st->tx,
                              st->tz);
        for (int p = 0; p < st->polys.npolys; p++)
            st->poly_layer[p] = fixed_layer;
    }
    /* region_layer covers the regions before the border cut: ids below the band's. */
    op_tile_source src = {st->tx,           st->tz,           st->chf.origin[1], st->min_row,
                          l->grid.origin_x, l->grid.origin_z, st->region_layer,  st->border_region};
    if (l->kind == OP_LEVEL_HEIGHTFIELD) {
        src.origin_x = l->hf.origin_x;
        src.origin_z = l->hf.origin_z;
    } else if (l->kind == OP_LEVEL_CHUNK) {
        src.origin_x = l->chunk.origin_x;
        src.origin_z = l->chunk.origin_z;
    }
    if (fixed_layer < 0)
        st->tiles = op_arena_alloc(out, (size_t)st->nlayers * sizeof *st->tiles);
    if (!st->tiles)
        return op_err_set(err, OP_ENOMEM, "tile (%d, %d): out of memory (tiles)", st->tx, st->tz);
    s = op_tile_assemble(&st->polys, &st->detail, st->poly_layer, st->nlayers, &src, &l->settings,
                         out, scratch, st->tiles, &st->ntiles, err);
    lap(st, OP_STAGE_TILE, t0);
    return s;
}

/* build3d-regions.md §4 "Layer-by-layer build": with Layers and a detail stage that does
 * not sample heights (sd <= 0.9 cells), each layer of the tile is built on its own from its
 * own spans (build3d-runtime.md §2.3). */
static int layer_by_layer(const op_level *l)
{
    return l->settings.partition == OP_PARTITION_LAYERS &&
           l->settings.detail_sample_distance / l->grid.cs <= 0.9;
}

/* The layer span i belongs to (build3d-runtime.md §2.3.1): its span layer when it has a
 * region, else none. */
static uint16_t in_layer(const op_tile_stages *st, uint32_t i)
{
    return st->regions.reg[i] != 0 ? st->span_layer[i] : (uint16_t)OP_NO_LAYER;
}

static op_status layers_apart(const op_level *l, op_stage last, int keep_raw, op_arena *out,
                              op_arena *scratch, op_tile_stages *st, double *t0, op_err *err)
{
    int nl = 0;
    for (uint32_t i = 0; i < st->chf.span_count; i++)
        if (in_layer(st, i) != OP_NO_LAYER && in_layer(st, i) + 1 > nl)
            nl = in_layer(st, i) + 1;
    st->layer_by_layer = 1;
    if (last >= OP_STAGE_TILE) {
        st->tiles = op_arena_alloc(out, ((size_t)nl + 1) * sizeof *st->tiles);
        if (!st->tiles)
            return op_err_set(err, OP_ENOMEM, "tile (%d, %d): out of memory (tiles)", st->tx,
                              st->tz);
    }
    op_tile_stages one = *st;
    for (int layer = 0; layer < nl; layer++) {
        op_arena_mark m = op_arena_get_mark(scratch);
        op_status s = contours_on(l, NULL, keep_raw, layer, out, scratch, &one, err);
        lap(&one, OP_STAGE_CONTOURS, t0);
        if (s == OP_OK && last > OP_STAGE_CONTOURS) {
            one.tiles = st->tiles ? &st->tiles[st->ntiles] : NULL;
            one.ntiles = 0;
            s = mesh_steps(l, NULL, NULL, last, out, scratch, &one, layer, m, t0, err);
        }
        op_arena_release(scratch, m);
        if (s != OP_OK)
            return s;
        st->ntiles += one.ntiles;
    }
    for (int k = 0; k < 6; k++)
        st->stage_ms[k] = one.stage_ms[k];
    /* The intermediate results stay those of the last layer. */
    st->contours = one.contours;
    st->polys = one.polys;
    st->detail = one.detail;
    st->min_row = one.min_row;
    st->nlayers = nl;
    return OP_OK;
}

op_status op__tile_build(const op_level *l, int tx, int tz, const op_volume *vols, int nvols,
                         const op__tile_base *cached, op__tile_base *base_out, op_stage last,
                         int keep_raw, op_arena *out, op_arena *scratch, op_tile_stages *st,
                         op_err *err)
{
    memset(st, 0, sizeof *st);
    st->tx = tx;
    st->tz = tz;
    if (op_level_tile_index(l, tx, tz) < 0)
        return op_err_set(err, OP_ERANGE,
                          "tile (%d, %d) is outside the level's tiles %d..%d x %d..%d", tx, tz,
                          l->rect.tx0, l->rect.tx1, l->rect.tz0, l->rect.tz1);
    op__tile_base base;
    uint16_t *kept_from = NULL; /* §5.11: the base region of each region of a kept layer */
    /* Every stage's results are in out; what a stage leaves in scratch is dead once it
     * returns, so it goes back before the next stage: a worker's scratch peak is then its
     * largest stage's, not the sum of all of them. */
    op_arena_mark m = op_arena_get_mark(scratch);
    double t0 = now_ms();
    op_status s = op__tile_spans(l, tx, tz, vols, nvols, cached, base_out != NULL, &base, last, out,
                                 scratch, st, err);
    op_arena_release(scratch, m);
    if (base_out && s == OP_OK)
        *base_out = base;
    lap(st, OP_STAGE_SPANS, &t0);
    if (s != OP_OK || st->skipped || last == OP_STAGE_SPANS)
        return s;
    /* A rebuild whose regions input is the capture's takes the capture's regions, border
     * cut included (build3d-runtime.md §5.9): the span stage decided it (and then skipped
     * the distance field, which only the regions stage reads). */
    if (st->regions_reused) {
        s = op__regions_from_base(cached->regions, out, &st->regions, &st->region_layer,
                                  &st->border_region);
        if (s != OP_OK)
            return op_err_set(err, s, "tile (%d, %d): out of memory (regions)", tx, tz);
    } else {
        /* With layers, the span layers whose areas the edit left alone keep the capture's
         * regions, renumbered (build3d-runtime.md §5.11). */
        op_region_settings rs = {l->settings.partition, l->settings.min_region_area,
                                 l->settings.merge_region_area};
        if (cached && op__regions_layers_fit(cached->regions, &st->chf, st->span_layer, &rs,
                                             l->grid.tile_cells))
            s = op__regions_layers_local(cached->regions, &st->chf, rs.min_region_area,
                                         l->grid.tile_cells, out, scratch, &st->regions,
                                         &st->region_layer, &st->border_region, &st->skipped,
                                         &st->layers_reused, &kept_from, err);
        op_arena_release(scratch, m);
        if (s == OP_OK && st->layers_reused == 0) {
            s = regions_step(l, out, scratch, st, err);
            op_arena_release(scratch, m);
            if (s == OP_OK)
                s = cut_border(l, out, st, err);
        }
    }
    lap(st, OP_STAGE_REGIONS, &t0);
    if (s != OP_OK || st->skipped || last == OP_STAGE_REGIONS)
        return s;
    if (layer_by_layer(l)) {
        s = layers_apart(l, last, keep_raw, out, scratch, st, &t0, err);
        op_arena_release(scratch, m);
        return s;
    }
    s = contours_on(l, cached, keep_raw, -1, out, scratch, st, err);
    op_arena_release(scratch, m);
    lap(st, OP_STAGE_CONTOURS, &t0);
    if (s != OP_OK || last == OP_STAGE_CONTOURS)
        return s;
    s = mesh_steps(l, cached, kept_from, last, out, scratch, st, -1, m, &t0, err);
    op_arena_release(scratch, m);
    return s;
}

op_status op_level_build_stages(const op_level *l, int tx, int tz, op_stage last, int keep_raw,
                                op_arena *out, op_arena *scratch, op_tile_stages *st, op_err *err)
{
    /* The level's volumes were checked when it was created. */
    return op__tile_build(l, tx, tz, l->vols, l->nvols, NULL, NULL, last, keep_raw, out, scratch,
                          st, err);
}
