/*
 * Regions (../shared/spec/build3d-regions.md §1–§5): partition the walkable spans of a
 * compact heightfield into regions (watershed, monotone or layers), then filter
 * and number them. Integer arithmetic only.
 */
#ifndef ONEPATH_REGIONS_H
#define ONEPATH_REGIONS_H

#include <stdint.h>
#include "onepath/spans.h"

typedef struct op_region_settings {
    op_partition partition;
    int min_region_area;   /* spans */
    int merge_region_area; /* spans; unused for layers */
} op_region_settings;

/* §7 defaults: watershed, 64, 400. */
void op_region_settings_default(op_region_settings *rs);
op_status op_region_settings_validate(const op_region_settings *rs, op_err *err);

typedef struct op_regions {
    uint32_t span_count;  /* = chf->span_count */
    uint16_t *reg;        /* region id per span; 0 = no region */
    int region_count;     /* ids are 1..region_count */
    uint8_t *region_area; /* region_count + 1 entries: area id of each region (index 0 unused) */
} op_regions;

/* Partitions chf (which must carry its distance field for watershed) per rs: §2, §3 or
 * §4, then §5 as amended (../shared/spec/amendments.md R1, R2): islands are groups of
 * linked regions; in a tile grid (chf->border > 0) a group with a span in the border band
 * is no island (docs/spec/clarifications.md, regions 5). Output arrays come from out,
 * temporaries from scratch (the caller resets it). Errors: OP_EINVAL (NULL, watershed without
 * chf->dist), OP_ERANGE (settings), OP_ELIMIT (more than OP_MAX_REGIONS regions, naming the count),
 * OP_ENOMEM. */
op_status op_regions_build(const op_chf *chf, const op_region_settings *rs, op_arena *out,
                           op_arena *scratch, op_regions *res, op_err *err);

/* Canonical text dump: a header line, one line per region (id, area), then one
 * line per span (index, x, z, floor row, area, region). Returns the first nonzero write
 * result, 0 on success. */
int op_regions_dump(const op_chf *chf, const op_regions *r, op_write_fn write, void *ctx);

/* ---- layers (§4 and build3d-polys.md §5) ---- */

#define OP_NO_LAYER 0xffffu

/* A region's layer (build3d-polys.md §5, first bullet): regions are visited in id order;
 * a region may not share a column with a region of the layer it takes; it takes the
 * lowest-numbered layer of an adjacent region (linked, any area) that is free, else the
 * lowest free layer. layer receives r->region_count + 1 entries (layer[0] = OP_NO_LAYER);
 * *nlayers the number of layers used. More than OP_MAX_LAYERS layers: OP_ELIMIT.
 * Scratch only from scratch. */
op_status op_regions_assign_layers(const op_chf *chf, const op_regions *r, op_arena *scratch,
                                   uint16_t *layer, int *nlayers, op_err *err);

/*
 * Layer-first partition (§4 "Layer-first partition"), in two steps so that a tile can
 * keep the first and rerun only the second after an area change.
 *
 * Step 1, once per tile: the layer of every span, decided on the geometry-only field
 * (after erosion, before volumes): the §4 layer partition with every island kept, then
 * op_regions_assign_layers. *span_layer (span_count entries, from out) holds each span's
 * layer, OP_NO_LAYER for spans of area 0 in geometry_chf.
 *
 * Step 2, every (re)build: the regions of chf are the connected components of "linked,
 * same layer and same area" (ids in order of first span), then §5 island removal with
 * min_region_area (regions reaching chf->border's band stay, as in op_regions_build) and
 * numbering. *region_layer (region_count + 1 entries, from out; index 0
 * = OP_NO_LAYER) is each region's layer, which is what the tile stage needs. chf must have
 * the same spans and links as the geometry field (only areas differ). A span walkable in
 * chf but OP_NO_LAYER in span_layer (an area-0 span that a volume made walkable) is
 * grouped with linked such spans of its area, and its region's layer is OP_NO_LAYER.
 *
 * op_regions_build_layer_first runs both; geometry_chf and chf must have the same grid
 * and span count (else OP_EINVAL). It never takes the sweep-and-merge path on chf.
 */
op_status op_regions_span_layers(const op_chf *geometry_chf, op_arena *out, op_arena *scratch,
                                 uint16_t **span_layer, int *nlayers, op_err *err);
op_status op_regions_build_from_layers(const op_chf *chf, const uint16_t *span_layer,
                                       int min_region_area, op_arena *out, op_arena *scratch,
                                       op_regions *res, uint16_t **region_layer, op_err *err);
op_status op_regions_build_layer_first(const op_chf *geometry_chf, const op_chf *chf,
                                       const op_region_settings *rs, op_arena *out,
                                       op_arena *scratch, op_regions *res, uint16_t **region_layer,
                                       op_err *err);

#endif
