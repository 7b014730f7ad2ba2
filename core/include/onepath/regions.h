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

/* Partitions chf (which must carry its distance field for watershed) per rs.
 * Output arrays come from out. */
op_status op_regions_build(const op_chf *chf, const op_region_settings *rs, op_arena *out,
                           op_arena *scratch, op_regions *res, op_err *err);

int op_regions_dump(const op_chf *chf, const op_regions *r, op_write_fn write, void *ctx);

#endif
