/*
 * Detour export (docs/spec/detour-export.md, normative): the tile layers of one tile
 * cell as ONE tile of Detour navmesh data (the bytes dtCreateNavMeshData makes and
 * dtNavMesh::addTile loads), and a whole mesh as RecastDemo's navmesh set ("MSET"),
 * for Detour 1.5.1 with 32-bit tile and polygon references (no DT_POLYREF64).
 *
 * Pure functions of the tiles and the settings they were built with: no I/O, no
 * dependence on thread count or on the order tiles were added. Every multi-byte value
 * is written little-endian at the explicit offsets the spec lists; nothing is copied
 * from a C struct, so the bytes do not depend on this compiler's layout.
 */
#ifndef ONEPATH_DETOUR_H
#define ONEPATH_DETOUR_H

#include <stddef.h>
#include <stdint.h>

#include "onepath/arena.h"
#include "onepath/mesh.h"
#include "onepath/settings.h"
#include "onepath/status.h"
#include "onepath/tile.h"

/* Detour's tile data tags (DetourNavMesh.h: DT_NAVMESH_MAGIC 'DNAV', version 7) and
 * RecastDemo's navmesh set tags ('MSET', version 1), as the int32 values written. */
#define OP_DETOUR_MAGIC       0x444e4156 /* 'D'<<24 | 'N'<<16 | 'A'<<8 | 'V' */
#define OP_DETOUR_VERSION     7
#define OP_DETOUR_SET_MAGIC   0x4d534554 /* 'M'<<24 | 'S'<<16 | 'E'<<8 | 'T' */
#define OP_DETOUR_SET_VERSION 1

/* Byte sizes of the records (spec §3, §5). */
#define OP_DETOUR_HEADER_SIZE      100 /* dtMeshHeader */
#define OP_DETOUR_POLY_SIZE        32  /* dtPoly */
#define OP_DETOUR_LINK_SIZE        12  /* dtLink (32-bit refs) */
#define OP_DETOUR_DMESH_SIZE       12  /* dtPolyDetail */
#define OP_DETOUR_BVNODE_SIZE      16  /* dtBVNode */
#define OP_DETOUR_SET_HEADER_SIZE  40  /* magic, version, numTiles, dtNavMeshParams */
#define OP_DETOUR_TILE_HEADER_SIZE 8   /* dtTileRef (32 bits), dataSize */

/* dtNavMeshParams of a set, and the reference bits Detour derives from them. */
typedef struct op_detour_params {
    float orig[3];
    float tile_width, tile_height;
    int max_tiles;
    int max_polys;
    int tile_bits; /* log2(nextpow2(max_tiles)) */
    int poly_bits; /* log2(nextpow2(max_polys)) */
} op_detour_params;

/* Derives the params of a set of ntiles Detour tiles of at most max_polys polygons each,
 * whose tile grid starts at world (orig_x, orig_z) with tiles tile_size wide (spec §2).
 * OP_ELIMIT naming both counts when tile_bits + poly_bits > 22 (32-bit references keep 10
 * salt bits, or dtNavMesh::init refuses them); OP_EINVAL for counts below 1. */
op_status op_detour_params_make(double orig_x, double orig_z, double tile_size, int ntiles,
                                int max_polys, op_detour_params *p, op_err *err);

/* The dtTileRef of the tile at index i of a set with params p: salt 1 (what a freshly
 * initialised dtNavMesh gives every tile), tile index i, polygon 0. */
uint32_t op_detour_tile_ref(const op_detour_params *p, int i);

/*
 * One tile cell as Detour tile data (spec §3, §4): layers[0..nlayers) are the tile layers
 * of one cell (same tx, tz, nvp, tile_size, origin x and z), in ascending layer order; s are
 * the settings they were built with (agent height, radius and climb go into the header,
 * the cell size sets the bounding-volume quantisation, the grid origin the tile-line
 * coordinates, climb + cell height the layer-seam rule). This is the function onepathd's
 * `format: "detour"` serves: its bytes depend only on these tiles and settings, never on
 * the rest of the mesh, so a cell rebuilt alone gives the bytes of the full export.
 *
 * On success *data (from out, *size bytes, 4-aligned size) holds the data and *npolys
 * its polygon count. Every layer is validated first (op_tile_validate: OP_EPROTO naming
 * what is wrong). Refused: a layer list that is not one cell in layer order, or has no
 * polygon (OP_EINVAL); a cell beyond Detour's limits (OP_ELIMIT naming the count: more
 * than 32767 polygons, 65534 vertices, 255 detail triangles or vertices of one polygon,
 * a height range the 16-bit bounding volumes cannot hold); a coordinate beyond
 * ±OP_DETOUR_MAX_COORD (OP_ERANGE); OP_ENOMEM. scratch is returned to its state on entry.
 */
op_status op_detour_tile_data(const op_tile *const *layers, int nlayers, const op_settings *s,
                              op_arena *out, op_arena *scratch, uint8_t **data, size_t *size,
                              int *npolys, op_err *err);

/* One tile of a set: where its data lies in the set's bytes. */
typedef struct op_detour_tile {
    int tx, tz;
    uint32_t ref; /* its dtTileRef in the set */
    int npolys;
    const uint8_t *data; /* into op_detour_set.bytes */
    size_t size;
} op_detour_tile;

/* A navmesh set: the file `onepath export --detour` writes. */
typedef struct op_detour_set {
    op_detour_params params;
    int ntiles;
    op_detour_tile *tiles; /* key order (tz, then tx) */
    uint8_t *bytes;        /* the whole set, size bytes */
    size_t size;
} op_detour_set;

/*
 * The navmesh set of mesh m (spec §5): one Detour tile per tile cell, cells in key order
 * (tz, then tx), each tile's data exactly op_detour_tile_data of the cell's layers with
 * the mesh's settings. Arrays come from out; scratch is returned to its state on entry.
 * Errors: those of op_detour_tile_data (naming the cell) and op_detour_params_make;
 * OP_EINVAL for an empty mesh.
 */
op_status op_detour_set_build(const op_mesh *m, op_arena *out, op_arena *scratch,
                              op_detour_set *set, op_err *err);

/* The 28 bytes of p as dtNavMeshParams (spec §2.3), e.g. for a directory of tiles. */
#define OP_DETOUR_PARAMS_SIZE 28
void op_detour_params_write(const op_detour_params *p, uint8_t out[OP_DETOUR_PARAMS_SIZE]);

#endif
