/*
 * Hand-made tile layers for mesh and query tests: polygons given as vertex lists,
 * neighbours derived by an independent rule (an edge b->a in another polygon of the
 * layer; else a portal when both ends lie bitwise on one tile side; else a wall) and
 * a fan triangulation as the detail mesh.
 */
#ifndef OP_HANDMESH_H
#define OP_HANDMESH_H

#include "onepath/arena.h"
#include "onepath/tile.h"

#define HM_NVP 6

/* Builds tile (tx, tz, layer) of size ts at origin (tx*ts, oy, tz*ts): verts are
 * tile-local (x, y, z) floats, polys HM_NVP indices per polygon padded with -1, areas
 * per polygon (NULL: all 63). Arrays from a. Returns 0 on success. */
int hm_tile(op_arena *a, int tx, int tz, int layer, double ts, double oy, const float *verts,
            int nverts, const int *polys, int npolys, const int *areas, op_tile *t);

#include "onepath/settings.h"

/* Test settings: defaults with tile_size 10, cell_size 0.5, nvp 6, and a stitching
 * height tolerance of exactly 1.0 (max climb 0.75 + cell height 0.25). */
void hm_settings(op_settings *s);

#endif
