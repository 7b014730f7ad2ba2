/*
 * Reuse of a capture build's regions (docs/spec/build3d-runtime.md §5.9): a rebuild whose
 * regions stage would read exactly what the capture's read (the same field arrays, span
 * layers and settings, byte-equal areas) gets the capture's regions after the border cut,
 * copied, instead of running the partition, the filter and the cut.
 */
#include <string.h>

#include "regions_internal.h"

/* Rules 1-3. */
static int applies(const op__region_base *b, const op_chf *chf, const uint16_t *span_layer,
                   const op_region_settings *rs)
{
    return b && b->reg && chf->cells == b->cells && chf->y == b->y &&
           (const void *)chf->links == (const void *)b->links &&
           chf->span_count == b->span_count && span_layer == b->span_layer &&
           rs->partition == b->rs.partition && rs->min_region_area == b->rs.min_region_area &&
           rs->merge_region_area == b->rs.merge_region_area &&
           memcmp(chf->areas, b->areas, chf->span_count) == 0;
}

static void *copy(op_arena *out, const void *src, size_t n)
{
    void *p = op_arena_alloc(out, n + 1);
    if (p && n)
        memcpy(p, src, n);
    return p;
}

int op__regions_from_base(const op__region_base *b, const op_chf *chf,
                          const uint16_t *span_layer, const op_region_settings *rs, op_arena *out,
                          op_regions *res, uint16_t **region_layer, int *border_region,
                          op_status *st)
{
    *st = OP_OK;
    if (!applies(b, chf, span_layer, rs))
        return 0;
    uint16_t *reg = copy(out, b->reg, (size_t)b->span_count * sizeof *reg);
    uint8_t *area = copy(out, b->region_area, (size_t)b->region_count + 1);
    uint16_t *rl = b->region_layer
                       ? copy(out, b->region_layer, (size_t)b->nregion_layer * sizeof *rl)
                       : NULL;
    if (!reg || !area || (b->region_layer && !rl)) {
        *st = OP_ENOMEM;
        return 0;
    }
    res->span_count = b->span_count;
    res->reg = reg;
    res->region_count = b->region_count;
    res->region_area = area;
    *region_layer = rl;
    *border_region = b->border_region;
    return 1;
}
