/*
 * The span stage of a level tile around its volumes (build3d-spans.md §1.10,
 * docs/spec/build3d-runtime.md §2, §5): the tile's base (compact heightfield before any
 * volume, its eroded areas, its span layers), then obstacles, erosion, area volumes and the
 * distance field. A build from scratch computes the base on its way; a cached rebuild starts
 * from a copy of it; both run the same steps after it, which is why they give the same bytes.
 */
#include <string.h>

#include "distance_internal.h"
#include "level_internal.h"
#include "regions_internal.h"
#include "volumes_internal.h"

/* The tile's filtered heightfield from the level's input kind (build3d-spans.md §1.5-§1.9);
 * heightfield and chunk tiles are never skipped here. */
static op_status tile_heightfield(const op_level *l, int tx, int tz, op_arena *scratch,
                                  op_heightfield *hf, int *skipped, op_err *err)
{
    *skipped = 0;
    if (l->kind == OP_LEVEL_HEIGHTFIELD)
        return op_tile_heightfield_build_hf_valid(&l->hf, &l->settings, tx, tz, scratch, hf, err);
    if (l->kind == OP_LEVEL_CHUNK)
        return op_tile_heightfield_build_chunk_valid(&l->chunk, &l->settings, tx, tz, scratch, hf,
                                                     err);
    int k = op_level_tile_index(l, tx, tz);
    const uint32_t *ids = &l->bin_ids[l->bin_start[k]];
    size_t n = l->bin_start[k + 1] - l->bin_start[k];
    return op__tile_heightfield_build_level(l, tx, tz, ids, n, scratch, hf, skipped, err);
}

/* Heightfield, filters and compaction: the base's field, areas before erosion. */
static op_status geometry(const op_level *l, int tx, int tz, op_arena *out, op_arena *scratch,
                          op__tile_base *b, op_err *err)
{
    memset(b, 0, sizeof *b);
    /* The heightfield and its rasterizer buffers are the tile's largest scratch and die
     * with the compaction: released there, the later stages reuse the same (already
     * faulted-in, cache-warm) memory instead of growing the worker's footprint. */
    op_arena_mark hf_mark = op_arena_get_mark(scratch);
    op_heightfield hf;
    op_status s = tile_heightfield(l, tx, tz, scratch, &hf, &b->skipped, err);
    if (s != OP_OK || b->skipped)
        return s;
    s = op_chf_build(&hf, l->span.walkable_height, l->span.walkable_climb, out, &b->chf, err);
    op_arena_release(scratch, hf_mark);
    b->chf.border = l->grid.border;
    return s;
}

static uint8_t *areas_copy(op_arena *out, const uint8_t *src, uint32_t n)
{
    uint8_t *a = op_arena_alloc(out, (size_t)n + 1);
    if (a)
        memcpy(a, src, n);
    return a;
}

OP_COLD static op_status nomem(const op_tile_stages *st, const char *what, op_err *err)
{
    return op_err_set(err, OP_ENOMEM, "tile (%d, %d): out of memory (%s)", st->tx, st->tz, what);
}

/* The base's eroded areas and span layers, when the build needs them and they are not
 * there yet (a build from scratch). */
static op_status complete_base(const op_level *l, op__tile_base *b, int need_eroded, int want_base,
                               op_arena *out, op_arena *scratch, const op_tile_stages *st,
                               op_err *err)
{
    int layers = l->settings.partition == OP_PARTITION_LAYERS;
    op_chf geo = b->chf;
    op_status s;
    if (!b->eroded && (need_eroded || layers)) {
        if (!(geo.areas = areas_copy(out, b->chf.areas, b->chf.span_count)))
            return nomem(st, "areas", err);
        if ((s = op_erode(&geo, l->span.walkable_radius, scratch, err)) != OP_OK)
            return s;
        b->eroded = geo.areas;
    }
    if (want_base && l->settings.partition == OP_PARTITION_WATERSHED && !b->dist) {
        /* A capture keeps the eroded field's distance: a rebuild then only updates it. */
        uint32_t *d = op_arena_alloc(out, ((size_t)b->chf.span_count + 1) * sizeof *d);
        if (!d)
            return nomem(st, "distance", err);
        geo.areas = (uint8_t *)b->eroded;
        if ((s = op_distance_compute(&geo, d, scratch, err)) != OP_OK)
            return s;
        b->dist = d;
    }
    if (layers && !b->span_layer) {
        /* build3d-runtime.md §2.1: decided on the field eroded without any volume. */
        uint16_t *sl;
        int nl;
        geo.areas = (uint8_t *)b->eroded;
        if ((s = op_regions_span_layers(&geo, out, scratch, &sl, &nl, err)) != OP_OK)
            return op__tile_err(s, st->tx, st->tz, -1, err);
        b->span_layer = sl;
    }
    return OP_OK;
}

/* Spans s in [s0, s1) with was[s] != 0 and now[s] == 0, and the spans they link to, that
 * are not 0 in dist yet: set to 0 in dist and listed in seeds from seeds[k] on (the boundary
 * spans §8 rule 1 adds when those spans become unwalkable). Returns the new count. */
static uint32_t new_boundary(const op_chf *chf, uint32_t s0, uint32_t s1, const uint8_t *was,
                             const uint8_t *now, uint32_t *dist, uint32_t *seeds, uint32_t k)
{
    for (uint32_t s = s0; s < s1; s++) {
        if (was[s] == 0 || now[s] != 0)
            continue;
        if (dist[s] != 0)
            dist[s] = 0, seeds[k++] = s;
        for (int d = 0; d < 4; d++) {
            uint32_t m = chf->links[s][d];
            if (m != OP_NO_LINK && dist[m] != 0)
                dist[m] = 0, seeds[k++] = m;
        }
    }
    return k;
}

/* The cells (x0, z0, x1, z1) of box widened by g on every side and clamped to the field, or
 * 0 when nothing is left. A row's cells x0..x1 are then the span range
 * [cells[row + x0], cells[row + x1 + 1]). */
static int widen_box(const op_chf *chf, const int box[4], int g, int out[4])
{
    out[0] = box[0] - g < 0 ? 0 : box[0] - g;
    out[1] = box[1] - g < 0 ? 0 : box[1] - g;
    out[2] = box[2] + g > chf->width - 1 ? chf->width - 1 : box[2] + g;
    out[3] = box[3] + g > chf->depth - 1 ? chf->depth - 1 : box[3] + g;
    return out[0] <= out[2] && out[1] <= out[3];
}

/* A rebuild's erosion (build3d-spans.md §7) from the base: the obstacles only add boundary
 * spans, so a span's distance is the smaller of its distance in the field without them (whose
 * erosion the base holds) and its distance to the added spans. Only the spans within
 * 2 * radius of an added one are visited. box: the cells bounding every span the obstacles
 * changed. Outside it no span changed, so only its cells can add boundary spans; and a span
 * whose distance to an added one is under 2 * radius lies less than radius cells from it
 * along x and along z (every link step costs 2 or 3 and moves one cell in x or z; a seed is
 * a changed span or its link neighbour), so outside the box widened by radius the result
 * is the base's erosion (there the areas are the base's, and erosion only clears). */
static op_status erode_update(const op_level *l, const op__tile_base *b, op_chf *chf,
                              const int box[4], op_arena *scratch, const op_tile_stages *st,
                              op_err *err)
{
    uint32_t n = chf->span_count, limit = 2u * (uint32_t)l->span.walkable_radius;
    size_t w = (size_t)chf->width;
    const uint32_t *cells = chf->cells;
    op_arena_mark mark = op_arena_get_mark(scratch);
    uint32_t *dist = op_arena_alloc(scratch, ((size_t)n + 1) * sizeof *dist);
    uint32_t *seeds = op_arena_alloc(scratch, ((size_t)n + 1) * sizeof *seeds);
    if (!dist || !seeds)
        return nomem(st, "erosion", err);
    uint32_t k = 0;
    int c[4], e[4], r = l->span.walkable_radius;
    /* Only the spans of the box widened by max(radius, 1) are read, so only they start
     * unset (the whole array was 0.14 M Ir of a dungeon rebuild's 0.86 M span stage). The
     * seeds lie in the box widened by 1 (a changed span or its link neighbour), which is
     * what new_boundary reads. The repair settles levels L < limit - 2 = 2 * radius - 2
     * only; L is the cost of a path from a seed, each step costs >= 2 and moves at most one
     * cell along x and along z, so a settled span lies within radius - 2 cells of a seed,
     * within radius - 1 of the box; its offers (orthogonal and diagonal neighbours) read
     * within radius of it. The final rule reads the box widened by radius. Each of these
     * reads sees what the whole clear would have left there, by induction over the reads;
     * a field one cell smaller fails test_rebuild's poisoned-scratch rebuilds. */
    if (widen_box(chf, box, r > 1 ? r : 1, e))
        for (size_t z = (size_t)e[1]; z <= (size_t)e[3]; z++) {
            uint32_t i0 = cells[z * w + (size_t)e[0]], i1 = cells[z * w + (size_t)e[2] + 1];
            memset(dist + i0, 0xff, (size_t)(i1 - i0) * sizeof *dist);
        }
    if (widen_box(chf, box, 0, c))
        for (size_t z = (size_t)c[1]; z <= (size_t)c[3]; z++) /* ascending span order */
            k = new_boundary(chf, cells[z * w + (size_t)c[0]], cells[z * w + (size_t)c[2] + 1],
                             b->chf.areas, chf->areas, dist, seeds, k);
    op_status s =
        limit ? op__distance_add_boundary(chf, dist, seeds, k, limit, scratch, err) : OP_OK;
    if (s != OP_OK || !widen_box(chf, box, r, e)) {
        memcpy(chf->areas, b->eroded, n);
        op_arena_release(scratch, mark);
        return s;
    }
    /* The spans before the widened box's first cell, then per row its cells (by the rule)
     * and the cells up to the next row's first box cell (copied), then the rest. */
    uint32_t done = cells[(size_t)e[1] * w + (size_t)e[0]];
    memcpy(chf->areas, b->eroded, done);
    for (size_t z = (size_t)e[1]; z <= (size_t)e[3]; z++) {
        uint32_t i1 = cells[z * w + (size_t)e[2] + 1];
        for (uint32_t i = cells[z * w + (size_t)e[0]]; i < i1; i++)
            if (b->eroded[i] == 0 || dist[i] < limit)
                chf->areas[i] = 0;
        done = z + 1 <= (size_t)e[3] ? cells[(z + 1) * w + (size_t)e[0]] : n;
        memcpy(chf->areas + i1, b->eroded + i1, done - i1);
    }
    op_arena_release(scratch, mark);
    return s;
}

/* A rebuild's distance field (§8) from the base's: the volumes only add boundary spans. */
static op_status distance_update(const op__tile_base *b, op_chf *chf, op_arena *out,
                                 op_arena *scratch, const op_tile_stages *st, op_err *err)
{
    uint32_t n = chf->span_count;
    uint32_t *dist = op_arena_alloc(out, ((size_t)n + 1) * sizeof *dist);
    op_arena_mark mark = op_arena_get_mark(scratch);
    uint32_t *seeds = op_arena_alloc(scratch, ((size_t)n + 1) * sizeof *seeds);
    if (!dist || !seeds)
        return nomem(st, "distance", err);
    memcpy(dist, b->dist, (size_t)n * sizeof *dist);
    uint32_t k = new_boundary(chf, 0, n, b->eroded, chf->areas, dist, seeds, 0);
    op_status s = op__distance_add_boundary(chf, dist, seeds, k, 0xffffffffu, scratch, err);
    op_arena_release(scratch, mark);
    chf->dist = s == OP_OK ? dist : NULL;
    return s;
}

op_status op__tile_spans(const op_level *l, int tx, int tz, const op_volume *vols, int nvols,
                         const op__tile_base *cached, int want_base, op__tile_base *base,
                         op_stage last, op_arena *out, op_arena *scratch, op_tile_stages *st,
                         op_err *err)
{
    op_status s;
    if (cached)
        *base = *cached;
    else if ((s = geometry(l, tx, tz, out, scratch, base, err)) != OP_OK)
        return s;
    st->skipped = base->skipped;
    if (base->skipped)
        return OP_OK;
    op_chf *chf = &st->chf;
    *chf = base->chf;
    chf->dist = NULL;
    if (!(chf->areas = areas_copy(out, base->chf.areas, chf->span_count)))
        return nomem(st, "areas", err);
    int box[4];
    int taken = op__volumes_apply_valid(chf, vols, nvols, OP_VOLUME_OBSTACLE, box);
    /* Without an obstacle on the tile the erosion is the base's; a build from scratch
     * computes it here once (and keeps it for the span layers and the capture). */
    if ((s = complete_base(l, base, want_base || !taken, want_base, out, scratch, st, err)) !=
        OP_OK)
        return s;
    if (!taken)
        memcpy(chf->areas, base->eroded, chf->span_count);
    else if (cached)
        s = erode_update(l, base, chf, box, scratch, st, err);
    else
        s = op_erode(chf, l->span.walkable_radius, scratch, err);
    if (s != OP_OK)
        return s;
    op__volumes_apply_valid(chf, vols, nvols, OP_VOLUME_AREA, NULL);
    chf->dist = NULL;
    st->span_layer = (uint16_t *)base->span_layer;
    /* A rebuild whose regions stage would read exactly what the capture's read takes the
     * capture's regions (build3d-runtime.md §5.9); decided here, on the final areas, so
     * that the distance field is not computed for nothing. */
    if (last != OP_STAGE_SPANS && cached && cached->regions) {
        op_region_settings rs = {l->settings.partition, l->settings.min_region_area,
                                 l->settings.merge_region_area};
        st->regions_reused =
            op__regions_base_fits(cached->regions, chf, st->span_layer, &rs, l->grid.tile_cells);
    }
    /* The distance field is the span stage's last product, but only the watershed
     * partition's regions stage reads it: a build going further with another partition,
     * or one that takes its regions from the entry, skips it (chf.dist stays NULL), as
     * nothing after the regions depends on it. */
    if (last != OP_STAGE_SPANS &&
        (l->settings.partition != OP_PARTITION_WATERSHED || st->regions_reused))
        return OP_OK;
    if (cached && base->dist)
        return distance_update(base, chf, out, scratch, st, err);
    return op_distance_build(chf, out, scratch, err);
}
