/*
 * libonepath-client: a C client of onepathd (docs/spec/protocol.md). One function per
 * method, each with a timeout in milliseconds (> 0). Every function returns an
 * op_status and fills err: transport failures are OP_ETIMEDOUT / OP_EIO, a daemon's
 * error reply carries the daemon's code and message (OP_ENOTFOUND, OP_ERANGE, ...).
 *
 * A client is safe to share between threads: each call in flight has its own nng context, so
 * calls from several threads are in flight at once. Results are plain structs; the
 * ones holding arrays are freed with the matching op_client_*_free function (which
 * also accepts a zeroed or already freed struct). On failure a result is zeroed.
 */
#ifndef ONEPATH_CLIENT_H
#define ONEPATH_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "onepath/status.h"

typedef struct op_client op_client;

/* Dials url (tcp://host:port or ipc:///path). The dial retries in the background, so a
 * daemon may start after its client. Free with op_client_close. */
op_status op_client_open(const char *url, op_client **out, op_err *err);
/* Returns within about a second: a close that nng 1.5.2 wedges is left to a detached thread,
 * with its socket (protocol.md §1.7). No call on c may be in flight. */
void op_client_close(op_client *c);

/* Every later request of c carries this token (protocol.md §2.7): a daemon started with
 * --token-file refuses requests without its token (OP_EPERM). token: len bytes, 16..256
 * printable ASCII other than space (else OP_EINVAL). Set it before the first call (not
 * while calls are in flight); a daemon without a token ignores it. */
op_status op_client_set_token(op_client *c, const char *token, size_t len, op_err *err);
/* The same, the token read from path: a regular file of mode 0600 or stricter (else
 * OP_EPERM naming it), the token less one trailing newline. */
op_status op_client_set_token_file(op_client *c, const char *path, op_err *err);

/* Sends one raw request message and returns the raw reply bytes (malloc'd: free with
 * free()). Exposed for tools and tests that speak msgpack themselves (the token of
 * op_client_set_token is not added: such a request carries its own). */
op_status op_client_call_raw(op_client *c, const void *req, size_t len, int timeout_ms,
                             uint8_t **reply, size_t *reply_len, op_err *err);

/* ---- ping ---- */

typedef struct op_client_ping_result {
    char version[32];
    int protocol;
    uint64_t max_message, max_levels, max_level_verts, max_level_tris, cache_bytes;
} op_client_ping_result;

op_status op_client_ping(op_client *c, int timeout_ms, op_client_ping_result *out, op_err *err);

/* ---- levels and meshes ---- */

/* One setting as `onepath --set key=value` takes it: a value that reads fully as an
 * integer or a number is sent as one, anything else as a string. */
typedef struct op_client_setting {
    const char *key;
    const char *value;
} op_client_setting;

/* A mesh: nverts vertices (3 floats each), ntris triangles (3 indices each), areas
 * NULL or one per triangle. Sent as little-endian bin arrays (protocol §2.4). */
typedef struct op_client_mesh {
    const char *name;
    const float *verts;
    size_t nverts;
    const int32_t *tris;
    size_t ntris;
    const uint8_t *areas;
} op_client_mesh;

op_status op_client_level_put(op_client *c, const char *level, const op_client_setting *settings,
                              int nsettings, const op_client_mesh *meshes, int nmeshes,
                              int timeout_ms, uint64_t *version, int *changed, op_err *err);
op_status op_client_level_drop(op_client *c, const char *level, int timeout_ms, int *dropped,
                               op_err *err);
op_status op_client_mesh_put(op_client *c, const char *level, const op_client_mesh *mesh,
                             int timeout_ms, uint64_t *version, int *changed, op_err *err);
op_status op_client_mesh_drop(op_client *c, const char *level, const char *mesh, int timeout_ms,
                              uint64_t *version, int *changed, op_err *err);

typedef struct op_client_level_entry {
    char level[65];
    uint64_t version;
} op_client_level_entry;

typedef struct op_client_level_list {
    int n;
    op_client_level_entry *levels; /* sorted by name */
} op_client_level_list;

op_status op_client_level_list_get(op_client *c, int timeout_ms, op_client_level_list *out,
                                   op_err *err);
void op_client_level_list_free(op_client_level_list *l);

typedef struct op_client_level_info {
    uint64_t version;
    double bounds[6];      /* min x, y, z, max x, y, z */
    int tiles[4];          /* tx0, tz0, tx1, tz1 inclusive (tx0 > tx1: no tiles) */
    double grid_origin[2]; /* settings grid_origin_x, grid_origin_z: where tile (0, 0) starts */
    int64_t tiles_total, tiles_built;
    uint64_t memory;
    int bake_running;
    int64_t bake_done, bake_total;
    double tile_size; /* settings tile_size, world units (0: a daemon that does not say) */
} op_client_level_info;

op_status op_client_level_info_get(op_client *c, const char *level, int timeout_ms,
                                   op_client_level_info *out, op_err *err);
op_status op_client_level_bake(op_client *c, const char *level, int timeout_ms, int *started,
                               op_err *err);

/* ---- tiles ---- */

typedef struct op_client_layer {
    int layer;
    uint64_t hash;
    uint8_t *blob; /* the tile blob (docs/spec/navmesh-format.md) */
    size_t len;
} op_client_layer;

typedef struct op_client_tile {
    uint64_t version;
    int tx, tz;
    int nlayers;
    op_client_layer *layers;
} op_client_tile;

op_status op_client_tile_get(op_client *c, const char *level, int tx, int tz, int timeout_ms,
                             op_client_tile *out, op_err *err);
void op_client_tile_free(op_client_tile *t);

typedef struct op_client_tile_range {
    int ntiles;
    op_client_tile *tiles; /* row-major */
    int has_next;
    int next[2]; /* pass as `after` to continue */
} op_client_tile_range;

/* Tiles of tx0..tx1 x tz0..tz1 (clipped to the level's range), after (NULL: from the
 * start), at most max_bytes of blobs (0: the daemon's default; at least one tile). */
op_status op_client_tile_range_get(op_client *c, const char *level, const int rect[4],
                                   const int *after, size_t max_bytes, int timeout_ms,
                                   op_client_tile_range *out, op_err *err);
/* The same as a waiting page (protocol §4 rule 2a): wait_ms > 0 lets the daemon wait for
 * the builds of the page's tiles until that long after the request arrived, so one call
 * returns many tiles of a level not built yet (keep it well under timeout_ms; 0: the
 * plain page). A daemon that does not know wait_ms is asked again without it. */
op_status op_client_tile_range_wait(op_client *c, const char *level, const int rect[4],
                                    const int *after, size_t max_bytes, int wait_ms, int timeout_ms,
                                    op_client_tile_range *out, op_err *err);
/* The wait_ms a fetch of many pages passes with timeout_ms per call: half of it, at most
 * 10000 ms. */
int op_client_range_wait_for(int timeout_ms);
void op_client_tile_range_free(op_client_tile_range *r);

/* A tile cell in Detour form (protocol §4.2b, docs/spec/detour-export.md §3): the bytes
 * dtNavMesh::addTile loads, byte for byte the cell's file of `onepath export
 * --detour-tiles`. */
typedef struct op_client_detour_tile {
    uint64_t version;
    int tx, tz;
    int nhashes;
    uint64_t *hashes; /* of the native layers it was made from, by layer */
    uint8_t *data;    /* NULL when the cell has no layers (then len 0) */
    size_t len;
} op_client_detour_tile;

op_status op_client_tile_get_detour(op_client *c, const char *level, int tx, int tz, int timeout_ms,
                                    op_client_detour_tile *out, op_err *err);
void op_client_detour_tile_free(op_client_detour_tile *t);

typedef struct op_client_detour_range {
    int ntiles;
    op_client_detour_tile *tiles; /* row-major */
    int has_next;
    int next[2];
} op_client_detour_range;

/* tile.range in Detour form: as op_client_tile_range_get, max_bytes counting Detour bytes. */
op_status op_client_tile_range_get_detour(op_client *c, const char *level, const int rect[4],
                                          const int *after, size_t max_bytes, int timeout_ms,
                                          op_client_detour_range *out, op_err *err);
op_status op_client_tile_range_wait_detour(op_client *c, const char *level, const int rect[4],
                                           const int *after, size_t max_bytes, int wait_ms,
                                           int timeout_ms, op_client_detour_range *out,
                                           op_err *err);
void op_client_detour_range_free(op_client_detour_range *r);

/* ---- changes ---- */

typedef struct op_client_change {
    int tx, tz;
    int nhashes; /* 0: the tile has no layers now */
    uint64_t *hashes;
} op_client_change;

typedef struct op_client_changes {
    uint64_t version;
    int ntiles;
    op_client_change *tiles; /* row-major */
} op_client_changes;

/* Tiles whose bytes changed after `version`; wait_ms > 0 long-polls (the timeout must
 * exceed it). */
op_status op_client_changes_since(op_client *c, const char *level, uint64_t version, int wait_ms,
                                  int timeout_ms, op_client_changes *out, op_err *err);
void op_client_changes_free(op_client_changes *ch);

/* ---- volumes (protocol §3.5) ---- */

typedef enum op_client_volume_kind {
    OP_CLIENT_VOLUME_BOX = 0,
    OP_CLIENT_VOLUME_CYLINDER = 1,
    OP_CLIENT_VOLUME_PRISM = 2,
} op_client_volume_kind;

typedef enum op_client_volume_mode {
    OP_CLIENT_VOLUME_AREA = 0,     /* marks the walkable spans in it, after erosion */
    OP_CLIENT_VOLUME_OBSTACLE = 1, /* takes the spans under it, before erosion */
} op_client_volume_mode;

#define OP_CLIENT_MAX_PRISM_POINTS 64

/* A named volume as the protocol carries it: the fields of its kind only are sent. */
typedef struct op_client_volume {
    char name[65];
    op_client_volume_mode mode;
    int area; /* 0..63; -1: not sent (an obstacle's is then 0) */
    op_client_volume_kind kind;
    double bmin[3], bmax[3];  /* box */
    double center[2], radius; /* cylinder: centre (x, z) */
    double y[2];              /* cylinder and prism: [ymin, ymax] */
    int npoints;              /* prism: 3..64 points (x, z), counter-clockwise */
    double points[OP_CLIENT_MAX_PRISM_POINTS][2];
} op_client_volume;

/* volume.put: adds v to the level or replaces the volume of its name (a move is one call). */
op_status op_client_volume_put(op_client *c, const char *level, const op_client_volume *v,
                               int timeout_ms, uint64_t *version, int *changed, op_err *err);
/* volume.drop: removes the volume `name` (changed 0 when there was none). */
op_status op_client_volume_drop(op_client *c, const char *level, const char *name, int timeout_ms,
                                uint64_t *version, int *changed, op_err *err);
/* level.put with volumes (op_client_level_put puts none). */
op_status op_client_level_put_volumes(op_client *c, const char *level,
                                      const op_client_setting *settings, int nsettings,
                                      const op_client_mesh *meshes, int nmeshes,
                                      const op_client_volume *volumes, int nvolumes, int timeout_ms,
                                      uint64_t *version, int *changed, op_err *err);

typedef struct op_client_volumes {
    uint64_t version;
    int n;
    op_client_volume *v; /* in name order */
} op_client_volumes;

/* The level's volumes (the `volumes` of level.info). */
op_status op_client_volumes_get(op_client *c, const char *level, int timeout_ms,
                                op_client_volumes *out, op_err *err);
void op_client_volumes_free(op_client_volumes *v);

/* ---- stats ---- */

typedef struct op_client_stats {
    uint64_t uptime_ms;
    int64_t levels;
    uint64_t memory;
    uint64_t cache_hits, cache_misses, cache_evictions, cache_bytes;
    uint64_t builds;           /* tile builds the daemon ran */
    uint64_t requests, errors; /* totals over methods */
    uint64_t p50_us, p90_us, p99_us, max_us;
} op_client_stats;

op_status op_client_stats_get(op_client *c, int timeout_ms, op_client_stats *out, op_err *err);

#endif
