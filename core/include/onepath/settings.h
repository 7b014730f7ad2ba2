/*
 * Build settings (build3d-polys.md §1, build3d-regions.md §7) and the values derived
 * from them. Defaults are the Recast demo values (../levels/README.md).
 * Units: world units (wu) unless a field says cells or rows.
 */
#ifndef ONEPATH_SETTINGS_H
#define ONEPATH_SETTINGS_H

#include "onepath/status.h"

typedef enum op_partition {
    OP_PARTITION_WATERSHED = 0,
    OP_PARTITION_MONOTONE = 1,
    OP_PARTITION_LAYERS = 2,
} op_partition;

typedef struct op_settings {
    double cell_size;              /* wu, > 0; default 0.3 */
    double cell_height;            /* wu, > 0; default 0.2 */
    double tile_size;              /* wu, > 0; default 9.6 (32 cells) */
    double agent_height;           /* wu, >= 0; default 2.0 */
    double agent_radius;           /* wu, >= 0; default 0.6 */
    double agent_max_climb;        /* wu, >= 0; default 0.9 */
    double agent_max_slope;        /* degrees, [0, 90); default 45 */
    op_partition partition;        /* default watershed */
    int min_region_area;           /* spans, >= 0; default 64 */
    int merge_region_area;         /* spans, >= 0; default 400 */
    double contour_max_error;      /* cells, >= 0; default 1.3 */
    double max_edge_length;        /* wu, >= 0 (0 = no split); default 12 */
    int straight_region_borders;   /* bool; default 1 */
    int max_verts_per_poly;        /* [3, 6]; default 6 */
    double detail_sample_distance; /* wu, 0 or >= 0.9 cells; default 1.8 */
    double detail_max_error;       /* wu, >= 0; default 0.2 */
    int area;                /* area id written for walkable (63) polygons, [0, 63]; default 63 */
    int flags;               /* polygon flags, [0, 65535]; default 1 */
    double max_local_extent; /* wu, > 0: a tile's vertical reach limit; default 4096 */
    /* wu, |v| <= OP_MAX_GRID_ORIGIN; default 0: the world point (x, z) where tile (0, 0) of a
     * soup starts; cell lines lie at grid_origin + k * cs (build3d-spans.md §1.1). Heightfield
     * and voxel-chunk input place tiles at their own origin and require 0. */
    double grid_origin_x;
    double grid_origin_z;
} op_settings;

/* "watershed", "monotone", "layers" ("unknown" otherwise). */
const char *op_partition_name(op_partition p);

/* Fills s with the defaults. */
void op_settings_default(op_settings *s);

/* Checks every field's range; on failure names the field and its value. */
op_status op_settings_validate(const op_settings *s, op_err *err);

/*
 * Sets one field from text, as the command line's --set key=value does.
 * Keys are the field names above; partition takes watershed|monotone|layers.
 * Unknown keys and unparsable values are OP_EINVAL naming the key; the field is
 * unchanged on failure. Does not validate ranges (op_settings_validate does).
 */
op_status op_settings_set(op_settings *s, const char *key, const char *value, op_err *err);

/* Span-stage values derived per build3d-polys.md §1 (nominal float32 sizes). */
typedef struct op_span_settings {
    float cs;            /* (float)cell_size */
    float ch;            /* (float)cell_height */
    int walkable_height; /* rows: max(1, ceil(agent_height / ch)) */
    int walkable_climb;  /* rows: floor(agent_max_climb / ch) */
    int walkable_radius; /* cells: ceil(agent_radius / cs) */
    float slope_cos;     /* op_cos_degrees(agent_max_slope) */
    int merge_threshold; /* rows: span merge threshold = walkable_climb */
} op_span_settings;

/* Tile grid values (build3d-polys.md §1). */
typedef struct op_tile_grid {
    int tile_cells;            /* max(1, ceil(tile_size / cell_size - 1e-4)) */
    double cs;                 /* tile_size / tile_cells: the cell size actually used */
    int border;                /* B = walkable_radius + 3 cells */
    int grid_cells;            /* tile_cells + 2 * border */
    double origin_x, origin_z; /* grid_origin_x, grid_origin_z: global cell 0 starts here */
} op_tile_grid;

void op_span_settings_derive(const op_settings *s, op_span_settings *out);
void op_tile_grid_derive(const op_settings *s, op_tile_grid *out);

/* cos(degrees) by the 14-term Taylor series of build3d-polys.md §1, rounded to float. */
float op_cos_degrees(double degrees);

#endif
