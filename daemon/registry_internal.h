/*
 * onepathd registry internals shared by registry.c (levels, snapshots, tile map, cache,
 * builds, edits) and reads.c (the read methods). Locks and invariants: registry.c.
 */
#ifndef ONEPATHD_REGISTRY_INTERNAL_H
#define ONEPATHD_REGISTRY_INTERNAL_H

#include "daemon.h"
#include "onepath/build.h"
#include "onepath/tile_codec.h"

typedef struct snap {
    atomic_int refs;
    uint64_t version;
    float *verts;
    int *tris;
    uint8_t *areas;
    op_soup soup;
    op_level *lvl; /* NULL when the level has no triangles */
    op_tile_rect rect;
    int has_tiles;
    size_t bytes;
} snap;

typedef struct tent {
    int tx, tz;
    opd_level *lv;
    uint64_t change_version; /* the version at which the bytes last changed */
    uint64_t inval_version;  /* the last edit that could change them */
    int known;               /* hashes describe the current bytes */
    int defined;             /* hashes describe some earlier bytes (for comparison) */
    int nl;
    int *layers;
    uint64_t *hashes;
    op_status err_status; /* the build failed: tile.get answers this */
    char *err_msg;
    op_bytes *blobs; /* cached (nl blobs) or NULL */
    size_t blob_bytes;
    int dirty;
    int building;
    opd_call *waiters;
    struct tent *lru_prev, *lru_next;
    int in_lru;
} tent;

struct opd_level {
    atomic_int refs;
    opd_registry *r;
    char name[65];
    pthread_mutex_t edit_mu; /* serialises edits (prepare, persist, install) */
    pthread_mutex_t mu;      /* everything below */
    int dropped;
    uint64_t version; /* 0: being created */
    op_settings settings;
    opd_mesh **meshes;
    int nmeshes;
    size_t mesh_bytes;
    snap *sn;
    tent **map;
    size_t map_cap, map_n;
    int pending;  /* dirty tiles */
    int building; /* builds in flight */
    opd_call *pollers;
};

struct opd_registry {
    opd_daemon *d;
    pthread_mutex_t mu;
    opd_level **levels;
    int n, cap;
    pthread_mutex_t cache_mu;
    tent *lru_head, *lru_tail;
    size_t cache_bytes;
    /* The one build at a time that runs on the thread that received its tile.get (so
     * the request crosses no thread hand-off), with its arenas; NULL arenas: none. */
    atomic_int here_busy;
    op_arena *here_out, *here_scratch;
};

/* One tile build: the level, the snapshot it builds from, the tile. */
typedef struct bjob bjob;

/* A live level (version > 0, not dropped) by name, a reference; else NULL and
 * OP_ENOTFOUND in err. */
opd_level *opd_reg_find_live(opd_registry *r, const char *name, op_err *err);
/* Whether (tx, tz) is inside the snapshot's tile range. */
int opd_reg_in_rect(const snap *s, int tx, int tz);
/* The entry of tile (tx, tz), or NULL (level lock held). */
tent *opd_reg_map_get(opd_level *lv, int tx, int tz);
/* Starts the single build of t from the current snapshot (level lock held). */
void opd_reg_start_build(opd_level *lv, tent *t);
/* Claims t's single build to run on this thread (level lock held): the job, or NULL
 * when t is already building or another build runs on a receiving thread (then the
 * caller starts it on the build pool as usual). At most one build at a time runs
 * outside the build pool, so nng's other callback threads always answer cached reads. */
bjob *opd_reg_claim_here(opd_level *lv, tent *t);
/* Runs a claimed build on this thread and answers its waiters (no lock held). */
void opd_reg_build_here(bjob *j);
/* Marks t most recently used (level lock held). */
void opd_reg_touch(opd_registry *r, tent *t);

#endif
