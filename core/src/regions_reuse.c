/*
 * Reuse of a capture build's regions (docs/spec/build3d-runtime.md §5.9): a rebuild whose
 * regions stage would read exactly what the capture's read (the same field arrays, frame,
 * span layers and settings, byte-equal areas) gets the capture's regions after the border
 * cut, copied, instead of running the partition, the filter and the cut.
 */
#include <string.h>

#include "regions_internal.h"

/* Rules 1-3. The distance field (watershed) needs no test of its own: it is a function of
 * the links and the areas (build3d-spans.md §8), both compared here. */
int op__regions_base_fits(const op__region_base *b, const op_chf *chf, const uint16_t *span_layer,
                          const op_region_settings *rs, int tile_cells)
{
    if (!b || !b->reg || !chf || !rs)
        return 0;
    /* Rule 1: the entry's field (its arrays, so its spans, floors and links) and frame. */
    if (chf->cells != b->cells || chf->y != b->y ||
        (const void *)chf->links != (const void *)b->links || chf->span_count != b->span_count ||
        chf->width != b->width || chf->depth != b->depth || chf->border != b->border ||
        tile_cells != b->tile_cells || span_layer != b->span_layer)
        return 0;
    /* Rule 2: the region settings. */
    if (rs->partition != b->rs.partition || rs->min_region_area != b->rs.min_region_area ||
        rs->merge_region_area != b->rs.merge_region_area)
        return 0;
    /* Rule 3: every span's area, walkable or not, core or border band. */
    return memcmp(chf->areas, b->areas, chf->span_count) == 0;
}

static void *copy(op_arena *out, const void *src, size_t n)
{
    void *p = op_arena_alloc(out, n + 1);
    if (p && n)
        memcpy(p, src, n);
    return p;
}

op_status op__regions_from_base(const op__region_base *b, op_arena *out, op_regions *res,
                                uint16_t **region_layer, int *border_region)
{
    uint16_t *reg = copy(out, b->reg, (size_t)b->span_count * sizeof *reg);
    uint8_t *area = copy(out, b->region_area, (size_t)b->region_count + 1);
    uint16_t *rl =
        b->region_layer ? copy(out, b->region_layer, (size_t)b->nregion_layer * sizeof *rl) : NULL;
    if (!reg || !area || (b->region_layer && !rl))
        return OP_ENOMEM;
    res->span_count = b->span_count;
    res->reg = reg;
    res->region_count = b->region_count;
    res->region_area = area;
    *region_layer = rl;
    *border_region = b->border_region;
    return OP_OK;
}
