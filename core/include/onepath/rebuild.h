/*
 * Volumes of a resident level and cached tile rebuilds (docs/spec/build3d-runtime.md §4, §5).
 *
 * A game server or the daemon keeps a level (build.h) and a set of named volumes that
 * changes all the time. Every build here takes the volume set explicitly, so one op_level
 * serves every version of the set, and builds of different versions may run at once.
 *
 *   op_volumes_sort / op_volumes_check   put a set in its canonical order and check it
 *   op_level_volume_tiles                the tiles a volume (old or new shape) can change
 *   op_level_build_tile                  a build from scratch, optionally capturing the
 *                                        tile's rebuild entry (what it computed before any volume)
 *   op_level_rebuild_tile                the same result from an entry, without rasterizing
 *
 * op_level_rebuild_tile(lvl, e, V) gives the same bytes as op_level_build_tile(lvl, V) for
 * every volume set V, and op_level_build_tile(lvl, V) the same as op_level_build_stages of a
 * level created with V.
 */
#ifndef ONEPATH_REBUILD_H
#define ONEPATH_REBUILD_H

#include <stddef.h>

#include "onepath/build.h"

/* ---- volume sets (§4.1-§4.2) ---- */

/* 1 when name is a valid volume name: 1..OP_MAX_VOLUME_NAME bytes from [A-Za-z0-9._-], not
 * starting with '.', then a NUL (reads at most OP_MAX_VOLUME_NAME + 1 bytes, stopping at
 * the first byte that is not allowed). */
int op_volume_name_valid(const char *name);

/* Sorts vols[0..nvols) by name, bytewise ascending, stably (volumes of one name keep their
 * order, so op_volumes_check then names them in input order). A merge sort of indices
 * (8 bytes a volume, malloc'd and freed; OP_ENOMEM leaves vols unchanged), then each volume
 * moved once. nvols outside [0, OP_MAX_VOLUMES] is OP_ERANGE. */
op_status op_volumes_sort(op_volume *vols, int nvols, op_err *err);

/* A level's volume set: every volume valid (op_volume_validate), every name valid and the
 * names strictly ascending (bytewise). Errors name the index and the name (both for a pair
 * out of order or repeated): OP_EINVAL (nvols < 0 too), OP_ERANGE for a field's range or
 * nvols > OP_MAX_VOLUMES. */
op_status op_volumes_check(const op_volume *vols, int nvols, op_err *err);

/* The tiles volume v can change (§4.4): its XZ bounding box widened by one cell against the
 * tiles' build grids, clamped to the level's tiles. Returns 0 (and *r unspecified) when no
 * tile of the level can change or v is invalid; else 1 with the inclusive rectangle in *r.
 * The same for both modes. */
int op_level_volume_tiles(const op_level *lvl, const op_volume *v, op_tile_rect *r);

/* ---- cached rebuilds (§5) ---- */

/* What a volume-only rebuild of one tile needs: the tile's compact heightfield before any
 * volume (areas before and after erosion) and, with partition = layers, its span layers;
 * and what lets a rebuild copy work its edit provably leaves alone: the capture build's
 * regions (with the areas they were computed from), contours by region and polygons with
 * their detail (docs/spec/build3d-runtime.md §5.6-§5.10). One self-contained allocation,
 * owned by the caller. */
typedef struct op_rebuild_entry op_rebuild_entry;

/* Builds tile (tx, tz) from scratch with the volume set vols[0..nvols) (which must pass
 * op_volumes_check; the level's own volumes are not used) up to stage `last`, as
 * op_level_build_stages. When capture is not NULL, also makes *capture, the tile's rebuild
 * entry (NULL on any error; a skipped tile gets an entry too); it keeps regions (last at
 * least OP_STAGE_REGIONS, the tile not skipped), contours (last at least
 * OP_STAGE_CONTOURS; the contour stage runs once more for it) and detail (last at least
 * OP_STAGE_DETAIL) for a rebuild to reuse. st's arrays come from out and scratch as
 * op_level_build_stages; the entry from malloc, independent of both. */
op_status op_level_build_tile(const op_level *lvl, int tx, int tz, const op_volume *vols, int nvols,
                              op_stage last, int keep_raw, op_arena *out, op_arena *scratch,
                              op_tile_stages *st, op_rebuild_entry **capture, op_err *err);

/* The tile of entry e rebuilt with the volume set vols[0..nvols) (must pass op_volumes_check)
 * up to stage `last`: the same result as op_level_build_tile of that tile with these volumes,
 * skipping rasterization, filters and compaction. e only read (several rebuilds may share it).
 * st's chf cells/y/h/links and span_layer point into e: keep e alive while st is used.
 * When the regions are the entry's (st->regions_reused, build3d-runtime.md §5.9) chf.dist
 * is NULL: only the regions stage reads the distance field, and it was not run.
 * An entry whose grid, agent rows or partition do not fit lvl is OP_EINVAL; an entry of the
 * right shape but stale geometry is not detected (drop entries a mesh edit reaches). */
op_status op_level_rebuild_tile(const op_level *lvl, const op_rebuild_entry *e,
                                const op_volume *vols, int nvols, op_stage last, int keep_raw,
                                op_arena *out, op_arena *scratch, op_tile_stages *st, op_err *err);

/* Bytes the entry holds (its one allocation, header included): what a cache budget charges. */
size_t op_rebuild_entry_bytes(const op_rebuild_entry *e);
/* The entry's tile key. */
void op_rebuild_entry_tile(const op_rebuild_entry *e, int *tx, int *tz);
/* Frees an entry (NULL is fine). */
void op_rebuild_entry_free(op_rebuild_entry *e);

#endif
