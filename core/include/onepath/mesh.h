/*
 * The mesh (docs/spec/navmesh-format.md §5, §6): a set of tile layers keyed (tx, tz,
 * layer), built with one set of settings, whose portal edges are stitched across
 * tile boundaries and whose layer seams are stitched between the layers of one tile
 * cell. Queries (onepath/query.h) run on it.
 *
 * Ownership: the mesh COPIES every tile it is given into its own arena, so the
 * caller may free or reuse its tile (a per-tile build arena, a decoded blob) right
 * after op_mesh_add_tile returns. Tiles are kept in key order (tz, tx, layer), so
 * nothing depends on the order in which they were added.
 */
#ifndef ONEPATH_MESH_H
#define ONEPATH_MESH_H

#include <stdint.h>

#include "onepath/arena.h"
#include "onepath/settings.h"
#include "onepath/status.h"
#include "onepath/tile.h"

typedef struct op_mesh op_mesh;

/* A polygon of a mesh: tile = index of the tile in key order (op_mesh_tile), poly =
 * polygon index in that tile. Valid until the mesh changes (add_tile). */
typedef struct op_polyref {
    int tile;
    int poly;
} op_polyref;

/* One stitched link (navmesh-format.md §5.4, §6): polygon edge (poly, edge) of its tile
 * meets edge nei_edge of polygon nei_poly of tile nei_tile over u in [o0, o1], u being the
 * world coordinate `axis` (0 = x, 2 = z): for a portal the coordinate along the shared
 * boundary (z on sides 0 and 2, x on sides 1 and 3), for a layer seam x unless the edge's
 * two ends have the same x, then z. */
typedef struct op_link {
    int poly, edge;
    int nei_tile; /* tile index in key order */
    int nei_poly;
    int nei_edge;
    int axis;
    double o0, o1;
} op_link;

/* Creates an empty mesh for tiles built with settings s (copied; validated). Free with
 * op_mesh_destroy. */
op_status op_mesh_create(const op_settings *s, op_mesh **out, op_err *err);
void op_mesh_destroy(op_mesh *m);

/* Copies tile t into the mesh after op_tile_validate. Refused: a key already present
 * (OP_EINVAL naming it), a tile_size or nvp other than the settings' (OP_EINVAL), a
 * tile without polygons (OP_EINVAL), a layer whose origin x or z differs from another
 * layer's of its tile cell (OP_EINVAL; seams are matched in tile-local x, z, §6).
 * Stitching is redone lazily by op_mesh_stitch. */
op_status op_mesh_add_tile(op_mesh *m, const op_tile *t, op_err *err);

/* Stitches every portal (navmesh-format.md §5) and layer seam (§6). Queries need a
 * stitched mesh; adding a tile afterwards un-stitches it. Idempotent. */
op_status op_mesh_stitch(op_mesh *m, op_err *err);
int op_mesh_is_stitched(const op_mesh *m);

const op_settings *op_mesh_settings(const op_mesh *m);
int op_mesh_tile_count(const op_mesh *m);
/* Tile i in key order (tz, tx, layer); NULL outside [0, count). */
const op_tile *op_mesh_tile(const op_mesh *m, int i);
/* Index of key (tx, tz, layer), -1 when absent. */
int op_mesh_find_tile(const op_mesh *m, int tx, int tz, int layer);
/* Total polygons over all tiles, and the dense index of a polygon (tile base + poly):
 * 0..total-1 in key order, usable to index per-polygon arrays. */
long op_mesh_poly_count(const op_mesh *m);
long op_mesh_poly_index(const op_mesh *m, op_polyref r);

/* The links of edge `edge` of polygon `poly` in tile `tile` (a portal or a seam),
 * ordered per §5.4 (then by the neighbour's edge index): *links points into the mesh.
 * Returns the count (0 for walls, in-tile edges and unstitched meshes). */
int op_mesh_edge_links(const op_mesh *m, int tile, int poly, int edge, const op_link **links);
/* Total number of links (each mutual link counted from both sides). */
long op_mesh_link_count(const op_mesh *m);

/* FNV-1a 64 over a canonical dump of the tiles (key, vertices, polygons, neighbours) and
 * links in key order: for tests. Not the §2 mesh hash, which is over blob hashes. */
uint64_t op_mesh_dump_hash(const op_mesh *m);

/* Deep copy of src into dst with arrays from a (dst->regs kept when present). */
op_status op_tile_copy(const op_tile *src, op_arena *a, op_tile *dst, op_err *err);

/* World position of tile vertex v of tile t (origin + local, double). */
void op_tile_world_vert(const op_tile *t, int v, double out[3]);

/* Number of used vertex slots of polygon p. */
int op_tile_poly_nverts(const op_tile *t, int p);

/* ---- building a level into a mesh ---- */

typedef struct op_level op_level;

/* Builds every tile of the level (op_level_build_stages up to OP_STAGE_TILE) on
 * `threads` threads, adds the layers in row-major tile order, and stitches. On
 * success *out owns a new mesh; on failure *out is NULL and err names the tile. */
op_status op_mesh_build_level(const op_level *lvl, int threads, op_mesh **out, op_err *err);

#endif
