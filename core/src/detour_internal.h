/* The Detour export's world frame (docs/spec/detour-export.md §2.1), shared with the corridor
 * search, which reproduces Detour's float32 node positions (docs/queries.md §4). */
#ifndef OP_DETOUR_INTERNAL_H
#define OP_DETOUR_INTERNAL_H

#include "onepath/tile.h"

/* The grid origin of tile t on axis i (0 = x, 2 = z): `setting` (the settings' grid origin)
 * when t's origin is exactly setting + k·TileSize, else origin − k·TileSize (k = tx or tz). */
double op__detour_grid(const op_tile *t, int i, double setting);

/* The world coordinate (double; the export writes its f32) of tile-local coordinate `local`
 * on axis i: origin + local, except on the tile's boundary lines (local bitwise 0 or
 * (float)TileSize), which take grid + k·TileSize, one value for both tiles of the line. */
double op__detour_coord(const op_tile *t, double grid, int i, float local);

#endif
