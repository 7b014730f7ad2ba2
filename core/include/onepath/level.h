/*
 * A level of one tile, for a caller that already knows the tile's triangles: onepathd keeps
 * every tile's selection per mesh (made once when the mesh is put) and builds a tile from
 * it alone, without binning a soup again; a mesh's soup is checked once, when it is put
 * (op_level_create_unbinned), and each tile's level made from it checks only its list
 * (op_level_create_tile_of). The rest of the level API is in build.h.
 */
#ifndef ONEPATH_LEVEL_H
#define ONEPATH_LEVEL_H

#include <stddef.h>
#include <stdint.h>

#include "onepath/build.h"

/* Prepares a level of tile (tx, tz) alone (op_level_tiles: that one tile) whose triangles
 * are ids[0 .. n) of soup, in increasing order. The tile builds to the bytes of the same
 * tile of op_level_create(soup) when ids is exactly the tile's selection there
 * (build3d-polys.md §1.5: every triangle of soup whose tiles, op_triangle_tiles, hold
 * (tx, tz)), with the same settings; the soup's other triangles are never read.
 * Checked, each failure named: settings and volumes as op_level_create; the soup's shape
 * (op_soup_validate's first checks); tile (tx, tz) one that a triangle of valid
 * coordinates can be selected by (OP_ERANGE); ids increasing and below the triangle count;
 * each listed triangle's indices, vertices and area as op_soup_validate checks them; each
 * listed triangle selected by the tile (OP_EINVAL: a list that is not the tile's
 * selection). Cost: O(n), a few comparisons a triangle. Bounds (op_level_bounds): of the
 * listed triangles' vertices, and of the tile's corner (origin x, 0, origin z of its core
 * cells) when n is 0. The level borrows soup, ids and vols: keep them alive and unchanged
 * while it lives. */
op_status op_level_create_tile(const op_soup *soup, const op_settings *s, const op_volume *vols,
                               int nvols, int tx, int tz, const uint32_t *ids, size_t n,
                               op_level **out, op_err *err);

/* A soup level without bins: validates soup (op_soup_validate), settings and volumes, as
 * op_level_create does, and bins nothing (O(soup), no memory but the level's struct). It
 * has no tile of its own (op_level_tiles is empty, op_level_tile_count 0: every build of it
 * is OP_ERANGE); its tiles are made by op_level_create_tile_of. Bounds: none (0, 0, 0 and
 * 0, 0, 0; op_soup_bounds gives the soup's). It borrows soup and vols. */
op_status op_level_create_unbinned(const op_soup *soup, const op_settings *s, const op_volume *vols,
                                   int nvols, op_level **out, op_err *err);

/* Gives a soup level checked whole (op_level_create_unbinned; a binned level has them
 * already: OP_OK, nothing done) what op_level_create keeps per triangle for its tile builds:
 * each triangle's area after the slope classification, and which are copies of an earlier
 * triangle (the same vertex bits in order and input area). The tile levels made from it
 * afterwards (op_level_create_tile_of, _known) borrow them, so that their builds neither
 * classify nor hash their triangles again (the same bytes). O(triangles) once, a hash probe
 * a triangle; one byte a triangle, kept with the level. OP_EINVAL for another kind of
 * level, OP_ENOMEM. */
op_status op_level_classify(op_level *l, op_err *err);

/* op_level_create_tile over the soup, settings and volumes of base, a soup level whose whole
 * soup was checked (op_level_create*, op_level_create_unbinned; else OP_EINVAL): the same
 * level and the same checks, but for the soup's, which were made with base: ids (increasing,
 * below the triangle count) and each triangle's selection by the tile. The new level
 * borrows base's soup and volumes, and ids: keep them (and base) alive while it lives. */
op_status op_level_create_tile_of(const op_level *base, int tx, int tz, const uint32_t *ids,
                                  size_t n, op_level **out, op_err *err);

/* op_level_create_tile_of for a caller that keeps what that call computes from the list:
 * bmin, bmax the bounds op_level_create_tile_of gives (op_level_bounds) the level of tile
 * (tx, tz) over the same ids, which the caller vouches are the tile's selection. Nothing
 * of a listed triangle is read or checked again (O(1), where op_level_create_tile_of is
 * O(n)); base and the tile are checked as there. Bounds other than those, or ids that are
 * not the selection, give a level whose tile is not the bake's. n 0 (or NULL bounds): as
 * op_level_create_tile_of. onepathd keeps each tile's bounds per mesh from when the mesh
 * was put. */
op_status op_level_create_tile_known(const op_level *base, int tx, int tz, const uint32_t *ids,
                                     size_t n, const float bmin[3], const float bmax[3],
                                     op_level **out, op_err *err);

#endif
