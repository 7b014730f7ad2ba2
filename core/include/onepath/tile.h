/*
 * Tile data (../shared/spec/build3d-polys.md §5, docs/spec/navmesh-format.md):
 * one layer of one tile cell, as stored and sent. Tile-local float32 positions,
 * polygons with neighbours (in-tile polygon, portal side, or wall), area and flags,
 * detail meshes, and a content hash over its canonical encoding.
 */
#ifndef ONEPATH_TILE_H
#define ONEPATH_TILE_H

#include <stdint.h>
#include "onepath/detail.h"
#include "onepath/polys.h"

/* Neighbour values of a polygon edge (docs/spec/navmesh-format.md §3). */
#define OP_NEI_WALL   0u      /* no neighbour */
#define OP_NEI_PORTAL 0x8000u /* | side (0 = -x, 1 = +z, 2 = +x, 3 = -z): crosses the tile edge */
/* | layer (0..OP_MAX_LAYERS - 1, not the tile's own): a layer seam, where the walkable
 * surface passes into that layer of the same tile cell (amendments.md R3). Has
 * OP_NEI_PORTAL's bit: every value with bit 15 set is linked by the mesh. */
#define OP_NEI_SEAM 0xc000u
/* 1..npolys: the in-tile polygon (index + 1) across the edge (npolys <= OP_MAX_LAYER_POLYS). */

/* Whether neighbour value v is a seam, and its layer. */
#define OP_NEI_IS_SEAM(v)    (((unsigned)(v)&0xc000u) == OP_NEI_SEAM)
#define OP_NEI_SEAM_LAYER(v) ((int)((unsigned)(v)&0x3fffu))

typedef struct op_tile {
    int tx, tz, layer;
    double origin[3]; /* world: TileOriginX(tx), OriginY, TileOriginZ(tz) */
    double tile_size; /* wu */
    int nvp;
    int nverts;
    float *verts; /* nverts * 3, tile-local */
    int npolys;
    uint16_t *polys;   /* npolys * nvp vertex indices, OP_POLY_NULL padded */
    uint16_t *neis;    /* npolys * nvp, edge k = vertex k -> k+1 */
    uint8_t *areas;    /* npolys */
    uint16_t *flags;   /* npolys */
    uint16_t *regs;    /* npolys: region id 1..OP_MAX_REGIONS of the polygon in its tile cell's
                        * build (navmesh-format.md §2 item 7); NULL only in hand-made tiles,
                        * which then cannot be encoded */
    uint32_t *dmeshes; /* npolys * 4: first extra vertex, extra count, first triangle, count */
    int ndverts;
    float *dverts; /* ndverts * 3 */
    int ndtris;
    uint8_t *dtris; /* ndtris * 4 */
} op_tile;

/* Validates a tile (§5 NavTile.Create): ranges, every polygon convex and
 * counter-clockwise in its float32 positions (exact orientation), neighbours
 * consistent (in-tile links mutual, portals on the tile edge), detail ranges and
 * triangles valid, region ids (when present) in 1..OP_MAX_REGIONS. The message names the
 * polygon or vertex. */
op_status op_tile_validate(const op_tile *t, op_err *err);

#include "onepath/settings.h"

/* Where a tile's polygons come from: the tile key and its vertical frame. */
typedef struct op_tile_source {
    int tx, tz;
    double frame_origin_y; /* y0 of the tile's build grid (build3d-polys.md §1) */
    int min_row;           /* lowest polygon vertex row (LocalY origin) */
    /* World XZ origin of the tile grid: the settings' grid origin for a soup (0 unless
     * grid_origin_x / _z move it), the input's origin for heightfield / voxel-chunk input,
     * whose tiles are counted from it (build3d-spans.md §1.8). The tile's origin is
     * origin_x + tx·TileSize (double). */
    double origin_x, origin_z;
    /* Layers partition: region_layer[r] is region r's layer for 0 < r < nregion_layer (the
     * tile's regions, not its border band). A polygon edge that came from a contour edge
     * whose neighbour is a region of another layer is a layer seam (amendments.md R3).
     * NULL: no seams. */
    const uint16_t *region_layer;
    int nregion_layer;
} op_tile_source;

/*
 * Assembles the tile layers of one tile cell (build3d-polys.md §5) from its polygons
 * and their detail: poly_layer[i] is polygon i's layer (NULL: all on layer 0),
 * nlayers the layer count. Writes the non-empty layers to tiles[0..*ntiles) in layer
 * order (tiles must hold nlayers entries), arrays from out, and validates each.
 */
op_status op_tile_assemble(const op_poly_mesh *pm, const op_detail_mesh *dm, const int *poly_layer,
                           int nlayers, const op_tile_source *src, const op_settings *s,
                           op_arena *out, op_arena *scratch, op_tile *tiles, int *ntiles,
                           op_err *err);

#endif
