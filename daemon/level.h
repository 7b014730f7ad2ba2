/*
 * onepathd level state: what the methods reach below them, file by file from the top
 * (edit.c, changes.c) to the bottom (builds.c, cache.c, snapshot.c). Each part calls
 * only the parts listed after it.
 *
 * Invariants of a level (under its state lock, opd_level.mu):
 *  - a tile of the snapshot's range that some triangle may leave a span in
 *    (opd_snap_occupied) has an entry; so does every tile that had one since the level
 *    was made (entries are never removed: an entry outside the range, or one no triangle
 *    reaches any more, builds to "no layers", so that changes.since can report it);
 *  - a tile of the range without an entry is built, with no layers, at version 0 (no
 *    triangle ever reached it): tile.get and tile.range answer it, changes.since never
 *    lists it, and no build runs for it. So a level holds state for what geometry
 *    reaches, not for its tile range (a sliver 10 km long: a few thousand entries, not a
 *    million);
 *  - a build of snapshot version V is valid for a tile iff V >= the tile's
 *    inval_version (the last edit that could change it), so a build never holds a
 *    lock and a stale result is simply dropped (and redone if someone waits);
 *  - at most one build per tile is in flight (single flight); its waiters are woken
 *    when it lands;
 *  - pending counts dirty tiles (rebuilds owed to change tracking); changes.since
 *    answers only when it is 0.
 * Typical: 1..100 levels, 10..10^5 tiles each, 1..100 KiB per tile blob.
 */
#ifndef ONEPATHD_LEVEL_H
#define ONEPATHD_LEVEL_H

#include "daemon.h"
#include "onepath/build.h"
#include "onepath/level.h"
#include "onepath/mesh.h"
#include "onepath/rebuild.h"
#include "onepath/tile_codec.h"

/* ===== snapshot.c: the build input of one level version ===== */

/* One mesh prepared for builds under one settings' tile grid. Immutable, shared.
 * Tile keys (opd_tile_key) order tiles row-major. A triangle's tiles are those its XZ box
 * reaches (op_triangle_tiles, the selection); a triangle of at most OPD_PART_SMALL tiles
 * is listed under each of them (cells), a larger one is kept once with its tile range
 * (big) and found by a scan, so that a long sliver costs its triangle, not its range.
 * occ: the tiles some triangle may leave a span in (its box's tiles for a small one; for
 * a big one the tiles whose build grid, widened by OPD_REACH_SLACK cells, its XZ shape
 * meets). A tile outside occ has no span from this part. */
#define OPD_PART_SMALL  16
#define OPD_REACH_SLACK 2
typedef struct opd_part {
    atomic_int refs;
    char name[65];
    opd_mesh *mesh; /* referenced: areas point into it */
    size_t nv, nt;
    float *verts; /* decoded */
    int *tris;    /* indices into the part's own vertices */
    const uint8_t *areas;
    op_soup soup;    /* the three above */
    op_level *whole; /* soup checked once, with the snapshot's settings (a part belongs to
                        snapshots of the settings it was made with): its tiles' levels
                        (op_level_create_tile_of) */
    int has_box;
    float bmin[3], bmax[3];
    op_tile_range rect;   /* every tile a triangle reaches (when nt > 0) */
    size_t ncells;        /* tiles with a list of small triangles: */
    uint64_t *cell_keys;  /* ncells, increasing */
    uint32_t *cell_off;   /* ncells + 1: tile i's triangles are ids[cell_off[i] .. [i+1]) */
    uint32_t *ids;        /* in input order */
    float (*cell_box)[6]; /* ncells: the bounds of tile i's small triangles as
                             op_level_create_tile_of's scan makes them (min xyz, max xyz) */
    size_t nbig;
    uint32_t *big;           /* the big triangles, in input order, */
    op_tile_range *big_rect; /* and their tiles */
    size_t nocc;
    uint64_t *occ; /* increasing */
    size_t bytes;
} opd_part;

/* The key of tile (tx, tz): keys compare as the tiles do in row-major order. */
static inline uint64_t opd_tile_key(int tx, int tz)
{
    return (uint64_t)((uint32_t)tz ^ 0x80000000u) << 32 | ((uint32_t)tx ^ 0x80000000u);
}
static inline int opd_key_tx(uint64_t k)
{
    return (int)(int32_t)((uint32_t)k ^ 0x80000000u);
}
static inline int opd_key_tz(uint64_t k)
{
    return (int)(int32_t)((uint32_t)(k >> 32) ^ 0x80000000u);
}

op_status opd_part_make(const opd_mesh *m, const op_settings *s, opd_part **out, op_err *err);
void opd_part_ref(opd_part *p);
void opd_part_unref(opd_part *p);
/* The part's triangles of tile (tx, tz) in input order, written to out (when not NULL);
 * returns their count. */
size_t opd_part_tile(const opd_part *p, int tx, int tz, uint32_t *out);
/* The bounds op_level_create_tile_of gives the level of tile (tx, tz) over the part's
 * triangles of it (opd_part_tile), from the part's per-tile bounds and its big triangles
 * (no scan of the list): 1. 0: the tile has none of the part's triangles. -1: a big
 * triangle's value ties the kept one with other bits (-0, +0), whose order the kept
 * bounds do not know: scan. */
int opd_part_tile_box(const opd_part *p, int tx, int tz, float bmin[3], float bmax[3]);

/* A level version: settings, parts and volumes in name order. Immutable; shared by the
 * level and the builds that read it. */
typedef struct opd_snap {
    atomic_int refs;
    uint64_t version;
    op_settings settings;
    opd_part **parts;
    int nparts;
    opd_vset *vols; /* NULL: none */
    size_t nv, nt;
    int any_areas;          /* some mesh has areas (the others' triangles get 63) */
    float bmin[3], bmax[3]; /* of the soup's triangles (when has_tiles) */
    op_tile_rect rect;
    int has_tiles;
    /* Some tile's selection may pass OP_MAX_ROWS (the level's height bounds every
     * tile's): an empty tile can then fail to build, so every tile of the range has an
     * entry (tiles.c). */
    int tall;
    size_t bytes;
} opd_snap;

/* A snapshot of the given parts (the array and one reference to each are taken, either
 * way) and volumes (a reference taken): the totals checked against --max-level-verts /
 * --max-level-tris (OP_ELIMIT naming the flag), the tile range computed (OP_ERANGE past
 * OP_MAX_TILES). */
op_status opd_snap_make(const opd_config *cfg, const op_settings *st, opd_part **parts, int n,
                        opd_vset *vols, uint64_t version, opd_snap **out, op_err *err);
/* Every mesh prepared (level.put, loading); vols borrowed (the snapshot takes its own
 * reference). */
op_status opd_snap_from_meshes(const opd_config *cfg, const op_settings *st, opd_mesh *const *m,
                               int n, opd_vset *vols, uint64_t version, opd_snap **out,
                               op_err *err);
/* old with mesh m put (only it is prepared) or, m NULL, the mesh `drop` taken out; the
 * same volumes. */
op_status opd_snap_edit(const opd_config *cfg, const opd_snap *old, const opd_mesh *m,
                        const char *drop, uint64_t version, opd_snap **out, op_err *err);
/* old with the volume set vols (borrowed) instead of its own: the same parts. */
op_status opd_snap_volumes(const opd_config *cfg, const opd_snap *old, opd_vset *vols,
                           uint64_t version, opd_snap **out, op_err *err);
void opd_snap_ref(opd_snap *s);
void opd_snap_unref(opd_snap *s);
/* Whether (tx, tz) is inside the snapshot's tile range; the range's tile count. */
int opd_snap_in_rect(const opd_snap *s, int tx, int tz);
int opd_snap_tiles(const opd_snap *s);
/* Whether tile (tx, tz) of the range needs an entry: some part's triangle may leave a
 * span in it (opd_part occ), or the snapshot is tall. Any other tile builds to no layers. */
int opd_snap_occupied(const opd_snap *s, int tx, int tz);

/* ===== cache.c: what tiles keep under a byte budget, least recently used first out =====
 * Two caches: the tile blobs (--cache-bytes) and the tiles' rebuild bases
 * (--rebuild-cache-bytes). */

/* A cache entry lives inside its owner (a tile entry); owner_mu is the owner's lock,
 * held by every caller of put/drop/touch. */
typedef struct opd_cache_entry {
    pthread_mutex_t *owner_mu;
    void *data; /* NULL: nothing cached; blobs: op_bytes[n]; bases: an opd_base */
    int n;
    size_t bytes;
    struct opd_cache_entry *prev, *next;
    int in_lru;
} opd_cache_entry;

/* free_fn(data, n) frees an entry's content (dropped or evicted); evictions are counted
 * in stats under kind. */
opd_cache *opd_cache_create(size_t budget, void (*free_fn)(void *data, int n), opd_stats *stats,
                            opd_cache_kind kind);
void opd_cache_destroy(opd_cache *c);
/* Takes data (n items of `bytes` total) as e's content (e holds none) and makes it the
 * newest. */
void opd_cache_put(opd_cache *c, opd_cache_entry *e, void *data, int n, size_t bytes);
/* Replaces e's content (it holds some) by data, n items, `more` bytes larger: the blob
 * cache keeps a cell's Detour data after its blobs, in the same entry (protocol §4.2b). */
void opd_cache_grow(opd_cache *c, opd_cache_entry *e, void *data, int n, size_t more);
/* Frees e's content (if any). */
void opd_cache_drop(opd_cache *c, opd_cache_entry *e);
/* Makes e the newest. */
void opd_cache_touch(opd_cache *c, opd_cache_entry *e);
/* Evicts the oldest entries while over budget (no owner lock held: it tries each
 * owner's lock, as the lock order is owner -> cache). The newest entry stays, so an
 * entry bigger than the budget is still served. */
void opd_cache_evict(opd_cache *c);
size_t opd_cache_bytes(opd_cache *c);
size_t opd_cache_budget(const opd_cache *c);
/* Bounds c to min(budget, room) from its next eviction on (--max-memory's share). */
void opd_cache_set_room(opd_cache *c, size_t room);
void opd_blobs_free(op_bytes *b, int n);
/* The blob cache's free_fn. */
void opd_blobs_free_data(void *data, int n);

/* ===== builds.c: where and how a tile builds ===== */

/* What one tile build gave: its layers' blobs and hashes, or the error. */
typedef struct opd_build_result {
    op_status st;
    char msg[OP_ERR_MSG_MAX];
    int nl;
    int *layers;
    uint64_t *hashes;
    op_bytes *blobs;
    size_t bytes;
    int from_base;              /* rebuilt from the base given (else from scratch) */
    op_rebuild_entry *captured; /* the tile's base, when asked and built from scratch */
} opd_build_result;

/* An XZ box and the cells of slack its tiles get (protocol §5.2: 1 for a mesh's box, 2
 * for a volume's reach). */
typedef struct opd_box {
    double lo[2], hi[2];
    int slack;
} opd_box;

/* Whether tile (tx, tz)'s build grid (the tile expanded by the border) meets the cells
 * of the box widened by its slack. */
int opd_box_touches(const op_tile_grid *g, const opd_box *b, int tx, int tz);
/* The box of a volume's reach (build3d-runtime.md §4.4, widened by one more cell). */
opd_box opd_volume_box(const opd_volume *v);

/* Builds tile (tx, tz) of the snapshot with the volumes that reach it (build3d-runtime.md
 * §4.5): from base (a rebuild entry of the tile's current geometry) when not NULL, else
 * from the tile's soup (its triangles from every part, in level order), capturing the
 * tile's base into b->captured when capture is set. Then op_tile_encode per layer, as
 * `onepath bake`: the blobs are byte-identical to the same tile of the level's whole soup
 * baked with the level's volumes. */
void opd_build_tile(const opd_snap *sn, int tx, int tz, const op_rebuild_entry *base, int capture,
                    op_arena *out, op_arena *scratch, opd_build_result *b);
void opd_build_result_free(opd_build_result *b);

/* The build pool plus one build at a time on the thread that received its tile.get. */
opd_builder *opd_builder_create(int threads);
/* Runs every queued build, then frees the builder. */
void opd_builder_destroy(opd_builder *b);
/* Queues fn on the build pool: 0, or -1 when the pool is stopping (fn is not called). */
int opd_builder_submit(opd_builder *b, opd_job_fn fn, void *arg);
/* Builds queued, not yet running (metrics). */
size_t opd_builder_queued(opd_builder *b);
/* Claims the one build that may run outside the pool: 1 when this thread has it. */
int opd_builder_claim_here(opd_builder *b);
/* Gives an unused claim back. */
void opd_builder_unclaim_here(opd_builder *b);
/* Runs fn with the claimed arenas on this thread, then resets them and gives the claim
 * back (so fn's caller may wake others, who may claim it again). */
void opd_builder_run_here(opd_builder *b, opd_job_fn fn, void *arg);

/* ===== level.c: one level ===== */

/* One tile cell of a level. */
typedef struct opd_tile {
    int tx, tz;
    struct opd_level *lv;
    uint64_t change_version; /* the version at which the bytes last changed */
    uint64_t inval_version;  /* the last edit that could change them */
    uint64_t geo_version;    /* the last edit that could change its triangles */
    int known;               /* hashes describe the current bytes */
    int detour_changed;      /* a level.put changed what only its Detour form carries
                                (protocol §4.2b): its next install counts as a change */
    int defined;             /* hashes describe some earlier bytes (for comparison) */
    int nl;
    int *layers;
    uint64_t *hashes;
    op_status err_status; /* the build failed: tile.get answers this */
    char *err_msg;
    opd_cache_entry blobs; /* the cached blobs (nl of them, then the cell's Detour data
                              when it was asked for: n = nl + 1) or none */
    opd_cache_entry base;  /* the rebuild base (an opd_base) of its geometry now, or none */
    int dirty;
    int building;
    opd_waiter *waiters;
} opd_tile;

typedef struct opd_journal opd_journal;

typedef struct opd_level {
    atomic_int refs;
    opd_daemon *d;
    char name[65];
    pthread_mutex_t edit_mu; /* serialises edits (prepare, persist, install); guards: */
    uint64_t epoch;          /* this life of the level (protocol §7.3) */
    opd_journal *jr;         /* NULL: none yet (the next edit makes it) */
    uint64_t jr_gen;         /* bumped when the journal is replaced or the level dropped */
    uint64_t snapshot_bytes; /* of the last snapshot written */
    int compacting;
    int broken;         /* a write failed after a rename: the files are in doubt, no more edits */
    pthread_mutex_t mu; /* everything below */
    int dropped;
    uint64_t version; /* 0: being created */
    op_settings settings;
    opd_mesh **meshes;
    int nmeshes;
    size_t mesh_bytes;
    opd_snap *sn;
    opd_tile **map; /* open addressing by (tx, tz); never shrinks */
    size_t map_cap, map_n;
    int pending;  /* dirty tiles */
    int building; /* builds in flight */
    opd_waiter *pollers;
} opd_level;

/* A new level (version 0, one reference). */
opd_level *opd_level_new(opd_daemon *d, const char *name);
void opd_level_ref(opd_level *lv);
void opd_level_unref(opd_level *lv);
/* The entry of tile (tx, tz), or NULL; a new entry (NULL when out of memory). Level
 * lock held. */
opd_tile *opd_level_tile(opd_level *lv, int tx, int tz);
opd_tile *opd_level_tile_new(opd_level *lv, int tx, int tz, int defined);
/* What one heap allocation costs beyond its bytes (malloc's header and rounding). */
#define OPD_ALLOC_OVERHEAD 16
/* Memory held by the level, and its tiles built for the current version. Lock held. */
size_t opd_level_memory(const opd_level *lv, int *built);
/* The same, and into *cached the part of it the two caches hold (their tiles' blobs and
 * rebuild bases, which eviction can free). */
size_t opd_level_memory_parts(const opd_level *lv, int *built, size_t *cached);
/* Replaces the level's meshes (the list is taken; the old one, *nold meshes, is returned
 * to free with opd_mesh_list_free). */
opd_mesh **opd_level_set_meshes(opd_level *lv, opd_mesh **meshes, int n, int *nold);
const opd_mesh *opd_level_mesh(const opd_level *lv, const char *name);

/* ===== tiles.c: tile entries (level lock held unless said) ===== */

/* Built for the current version, with its blobs cached (a tile with no layers or a
 * failed build has nothing to cache). */
int opd_tile_ready(const opd_tile *t);
/* Starts t's single build from the current snapshot on the build pool. */
void opd_tile_start_build(opd_level *lv, opd_tile *t);
/* A build claimed to run on this thread, once the lock is released (opd_tile_build_here). */
typedef struct opd_tile_job opd_tile_job;
/* Parks w on t and makes sure t builds; here: the build may run on this thread (the
 * claimed job is returned, to run with no lock held; NULL otherwise). */
opd_tile_job *opd_tile_park(opd_level *lv, opd_tile *t, opd_waiter *w, int here);
/* Runs a claimed build on this thread and wakes its waiters here (no lock held). */
void opd_tile_build_here(opd_tile_job *j);
/* Marks the level's snapshot installed at its version: every tile (nboxes < 0) or the
 * tiles whose build grid touches a box (protocol §5.2) dirty and rebuilding, the tiles
 * that left the range "no layers", new tiles of the range created (defined: a new
 * level's tiles had no layers before; a loaded one's earlier bytes are unknown).
 * geometry: the edit may change the marked tiles' triangles, so their rebuild bases are
 * dropped (a volume edit keeps them: protocol §5.2a). */
void opd_tiles_invalidate(opd_level *lv, const opd_box *boxes, int nboxes, int geometry,
                          int defined);
/* How many entries opd_tiles_invalidate would add for snapshot s (the tiles of s that
 * need one and have none; level lock held): what an edit's memory check counts. */
size_t opd_tiles_to_add(const opd_level *lv, const opd_snap *s);
/* Whether settings a and b differ in what a tile's Detour form holds but its native blobs
 * do not (protocol §4.2b): agent height, radius and climb, cell height and size. */
int opd_settings_detour_differ(const op_settings *a, const op_settings *b);
/* After a level.put whose settings differ so: every tile of the range counts as changed
 * at its rebuild if it had or has layers (level lock held). */
void opd_tiles_detour_changed(opd_level *lv);
/* The rebuild cache's free_fn. */
void opd_tile_base_free_data(void *data, int n);
/* A dropped level: frees every cached blob, detaches every waiter (to wake once the
 * lock is released). */
opd_waiter *opd_tiles_drop(opd_level *lv);
/* Starts the builds of the tiles of the range that are not ready: 1 when any started. */
int opd_tiles_bake(opd_level *lv);

/* ===== registry.c: levels by name ===== */

opd_registry *opd_registry_create(opd_daemon *d);
void opd_registry_destroy(opd_registry *r);
/* A reference to the level named so (any state), or NULL. */
opd_level *opd_registry_find(opd_registry *r, const char *name);
/* A live level (version > 0, not dropped) by name, a reference; else NULL and
 * OP_ENOTFOUND in err. */
opd_level *opd_registry_find_live(opd_registry *r, const char *name, op_err *err);
/* Finds or creates (version 0) a level: a reference; OP_ELIMIT at --max-levels. */
op_status opd_registry_find_or_create(opd_registry *r, const char *name, opd_level **out,
                                      op_err *err);
/* Removes lv from the table (if it is there) and drops the table's reference. */
void opd_registry_remove(opd_registry *r, opd_level *lv);
/* The live levels and their versions, sorted by name (malloc'd; -1 when out of memory). */
typedef struct opd_level_entry {
    char name[65];
    uint64_t version;
} opd_level_entry;
int opd_registry_list(opd_registry *r, opd_level_entry **out);
/* Memory held by live levels (bytes) and their count. */
void opd_registry_usage(opd_registry *r, size_t *memory, int *levels);
/* Calls fn on every level in the table, with the table locked (fn may lock the level). */
void opd_registry_each(opd_registry *r, void (*fn)(opd_level *lv, void *ctx), void *ctx);

/* ===== edit.c: edits (protocol §5, §6, §7) ===== */

/* Persisted before they return OP_OK. meshes (the array and each mesh, malloc'd), mesh and
 * vols (a reference; NULL: none) are taken: owned by the level state either way. */
op_status opd_edit_level_put(opd_registry *r, const char *name, const op_settings *s,
                             opd_mesh **meshes, int nmeshes, opd_vset *vols, uint64_t *version,
                             int *changed, op_err *err);
op_status opd_edit_level_drop(opd_registry *r, const char *name, int *dropped, op_err *err);
op_status opd_edit_mesh_put(opd_registry *r, const char *level, opd_mesh *mesh, uint64_t *version,
                            int *changed, op_err *err);
op_status opd_edit_mesh_drop(opd_registry *r, const char *level, const char *mesh,
                             uint64_t *version, int *changed, op_err *err);
/* vol is taken. */
op_status opd_edit_volume_put(opd_registry *r, const char *level, opd_volume *vol,
                              uint64_t *version, int *changed, op_err *err);
op_status opd_edit_volume_drop(opd_registry *r, const char *level, const char *name,
                               uint64_t *version, int *changed, op_err *err);
/* opd_edit_mesh_drop or opd_edit_volume_drop. */
typedef op_status (*opd_edit_drop_fn)(opd_registry *r, const char *level, const char *name,
                                      uint64_t *version, int *changed, op_err *err);
/* The method body of mesh.drop and volume.drop: params {level, name}, where `what` names
 * the name's role in errors ("mesh", "volume"); methods_mesh.c. */
op_status opd_m_drop_named(opd_call *c, const msgpack_object *p, msgpack_packer *pk,
                           const char *what, opd_edit_drop_fn drop, op_err *err);
/* Loads every level file of the data directory (start-up). */
void opd_edit_load_all(opd_daemon *d);

/* ===== changes.c: change tracking (protocol §4.3) ===== */

/* One listed tile: its layer hashes now (none: no layers). */
typedef struct opd_change {
    int tx, tz;
    int nl;
    uint64_t *hashes;
} opd_change;

typedef struct opd_changes {
    uint64_t version;
    size_t n;
    opd_change *tiles; /* row-major */
} opd_changes;

/* The tiles of `level` whose bytes changed after `since`, once no rebuild is owed; or
 * OPD_PARKED with w in the level's long polls (woken when the rebuild ends or
 * something changes; w->deadline_ns > 0 makes it a long poll). */
op_status opd_changes_since(opd_registry *r, const char *level, uint64_t since, opd_waiter *w,
                            opd_changes *out, op_err *err);
void opd_changes_free(opd_changes *ch);
/* Wakes the parked long polls whose deadline passed (every one when the daemon stops);
 * returns the earliest remaining deadline (0: none). */
int64_t opd_changes_expire(opd_daemon *d, int64_t now_ns);

/* ===== navmesh.c: the stitched mesh of a level version (path queries) ===== */

typedef struct opd_navmesh {
    atomic_int refs;
    struct opd_level *lv; /* referenced: (lv, version) is one version of one life */
    uint64_t version;
    op_mesh *mesh; /* stitched; read-only, any number of queries at once */
    size_t bytes;  /* of the tile blobs it was made from */
    uint64_t used;
} opd_navmesh;

typedef struct opd_navmeshes opd_navmeshes;
opd_navmeshes *opd_navmeshes_create(void);
void opd_navmeshes_destroy(opd_navmeshes *n);
size_t opd_navmeshes_bytes(opd_navmeshes *n);
/* The mesh of the level's current version (a reference, opd_navmesh_unref), made from
 * its tiles; OPD_PARKED with w parked on a tile not built yet (the level's builds
 * started); OP_ENOTFOUND for no such level or a level without tiles; a tile's build
 * error. No lock held. */
op_status opd_navmesh_get(opd_daemon *d, const char *level, opd_waiter *w, opd_navmesh **out,
                          op_err *err);
void opd_navmesh_unref(opd_navmesh *m);

#endif
