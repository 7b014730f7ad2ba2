/*
 * onepathd internals: the pieces of the daemon and how they hand work to each other.
 *
 *   server.c    nng REP0 socket, one op_call per nng context (recv -> dispatch -> send)
 *   dispatch.c  the protocol methods (docs/spec/protocol.md §4): params in, reply out
 *   content.c   meshes and the settings map (the content of a level)
 *   registry.c  levels, tile entries, the blob cache (LRU), single-flight builds,
 *               change versions, edits (registry_internal.h: what reads.c shares)
 *   reads.c     the read methods: level list/info, tiles, bake, changes, parked polls
 *   store.c     level files in the data directory (write, fsync, rename, fsync dir)
 *   pool.c      worker threads (one pool for edits, one for tile builds)
 *   stats.c     counters and the latency histogram
 *   main.c      flags, start-up, the libuv loop (signals, deadline timer, drain)
 *
 * Threads: an nng callback parses a small request and answers a read at once (a cached
 * tile only locks its level briefly), or parks it (a tile being built, a long poll);
 * edits and large messages go to the request pool (they prepare levels and fsync).
 * A tile.get of a tile that is not cached builds it on the callback that received it
 * (no thread hand-off) when no other build runs on an nng thread; otherwise it parks and
 * a build worker builds. Whoever builds answers the calls parked on the tile. At most
 * one build at a time holds an nng thread, so the others keep answering cached reads.
 * Lock order: registry table -> level edit lock -> level state lock -> cache lock; the
 * stats and log locks are leaves. No lock is held while a tile builds.
 */
#ifndef ONEPATHD_DAEMON_H
#define ONEPATHD_DAEMON_H

#include <msgpack.h>
#include <nng/nng.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "onepath/arena.h"
#include "onepath/rpc.h"
#include "onepath/settings.h"
#include "onepath/status.h"
#include "onepath/version.h"

#define OPD_VERSION OP_VERSION_STRING

/* ---- configuration (flags and environment, main.c) ---- */

#define OPD_MAX_LISTEN 16

typedef struct opd_config {
    const char *listen[OPD_MAX_LISTEN];
    int nlisten;
    const char *data_dir;
    const char *log_path; /* NULL: stderr */
    int contexts;         /* nng contexts: requests in flight */
    int threads;          /* tile build workers (+1 build on a receiving thread) */
    int request_threads;  /* request workers: edits and large messages */
    size_t max_message;   /* bytes; larger messages drop the connection */
    int max_levels;
    size_t max_level_verts;
    size_t max_level_tris;
    size_t cache_bytes; /* tile blobs kept across all levels */
    int no_fsync;       /* tests only: skip fsync (never in production) */
} opd_config;

/* ---- worker pool (pool.c) ---- */

typedef struct opd_pool opd_pool;
/* A job; out/scratch are the worker's own arenas, reset by the pool after the job. */
typedef void (*opd_job_fn)(void *arg, op_arena *out, op_arena *scratch);

opd_pool *opd_pool_create(int threads);
/* Queues fn(arg). Returns 0, or -1 when the pool is stopping (fn is not called). */
int opd_pool_submit(opd_pool *p, opd_job_fn fn, void *arg);
/* Runs every queued job, then joins the threads and frees the pool. */
void opd_pool_destroy(opd_pool *p);
size_t opd_pool_queued(opd_pool *p);

/* ---- stats (stats.c) ---- */

typedef enum opd_method {
    OPD_M_PING,
    OPD_M_LEVEL_PUT,
    OPD_M_LEVEL_DROP,
    OPD_M_LEVEL_LIST,
    OPD_M_LEVEL_INFO,
    OPD_M_MESH_PUT,
    OPD_M_MESH_DROP,
    OPD_M_TILE_GET,
    OPD_M_TILE_RANGE,
    OPD_M_LEVEL_BAKE,
    OPD_M_CHANGES_SINCE,
    OPD_M_STATS,
    OPD_M_UNKNOWN, /* unparsable or unknown method */
    OPD_M_COUNT
} opd_method;

extern const char *const opd_method_names[OPD_M_COUNT];

#define OPD_LAT_BUCKETS 256 /* 8 per power of two: 1 µs .. about 4 hours */

typedef struct opd_stats {
    pthread_mutex_t mu;
    uint64_t requests[OPD_M_COUNT];
    uint64_t errors[OPD_M_COUNT];
    uint64_t lat[OPD_LAT_BUCKETS]; /* log-spaced microsecond buckets */
    uint64_t lat_max_us;
    uint64_t cache_hits, cache_misses, cache_evictions;
    uint64_t builds; /* tile builds run (single flight: one per tile and version) */
} opd_stats;

void opd_stats_init(opd_stats *s);
void opd_stats_fini(opd_stats *s);
void opd_stats_request(opd_stats *s, opd_method m, int ok, uint64_t us);
void opd_stats_cache(opd_stats *s, int hits, int misses, int evictions);
void opd_stats_build(opd_stats *s);
/* Latency at quantile q (0..1) in microseconds: the upper edge of its bucket. */
uint64_t opd_stats_quantile(opd_stats *s, double q);
/* Histogram bucket of a latency, and the bucket's upper edge (exposed for tests). */
int opd_lat_bucket(uint64_t us);
uint64_t opd_lat_bucket_upper(int b);

/* ---- level content (registry.c, store.c) ---- */

/* One named mesh: the bytes exactly as uploaded (little-endian float32 x 3 vertices,
 * int32 x 3 triangles, optional uint8 areas). Immutable once made. */
typedef struct opd_mesh {
    char name[65];
    uint8_t *verts;
    size_t verts_len; /* bytes */
    uint8_t *tris;
    size_t tris_len; /* bytes */
    uint8_t *areas;  /* NULL: none */
    size_t areas_len;
    int has_box;            /* the mesh has triangles */
    float bmin[3], bmax[3]; /* of the vertices its triangles use */
} opd_mesh;

/* Makes a mesh from borrowed bytes: checks the lengths (multiples of 12, 12, one area
 * per triangle), that indices are inside the mesh's vertices, and computes the box.
 * OP_EINVAL / OP_ERANGE naming the mesh and the index. */
op_status opd_mesh_make(const char *name, const uint8_t *verts, size_t verts_len,
                        const uint8_t *tris, size_t tris_len, const uint8_t *areas,
                        size_t areas_len, opd_mesh **out, op_err *err);
void opd_mesh_free(opd_mesh *m);
/* Same bytes (verts, tris and areas, an absent areas array differs from a present one). */
int opd_mesh_equal(const opd_mesh *a, const opd_mesh *b);

/* Settings map (protocol §3.3) <-> op_settings. */
op_status opd_settings_from_map(const msgpack_object *map, op_settings *s, op_err *err);
int opd_settings_pack(msgpack_packer *pk, const op_settings *s);
int opd_settings_equal(const op_settings *a, const op_settings *b);

/* ---- persistence (store.c) ---- */

/* What a level file holds. meshes sorted by name. */
typedef struct opd_level_data {
    char name[65];
    uint64_t version;
    op_settings settings;
    opd_mesh **meshes;
    int nmeshes;
} opd_level_data;

/* Writes the level's file atomically and durably (temp, fsync, rename, fsync dir).
 * OP_EIO naming the file and errno. */
op_status opd_store_write(const char *dir, const opd_level_data *ld, int no_fsync, op_err *err);
/* Removes the level's file (and fsyncs the directory); a missing file is OP_OK. */
op_status opd_store_remove(const char *dir, const char *name, int no_fsync, op_err *err);
/* Encodes / decodes the file bytes (exposed for tests). decode: OP_EPROTO on corruption;
 * on success the caller owns ld->meshes (opd_level_data_fini). */
op_status opd_store_encode(const opd_level_data *ld, msgpack_sbuffer *sb, op_err *err);
op_status opd_store_decode(const uint8_t *buf, size_t len, opd_level_data *ld, op_err *err);
void opd_level_data_fini(opd_level_data *ld);
/* Calls fn for every level file of dir that loads; logs and skips the corrupt ones.
 * fn takes ownership of the data. */
typedef void (*opd_store_load_fn)(void *ctx, opd_level_data *ld);
typedef void (*opd_store_log_fn)(void *ctx, const char *msg);
int opd_store_load_all(const char *dir, opd_store_load_fn fn, opd_store_log_fn log, void *ctx);

/* ---- calls (server.c) ---- */

typedef struct opd_daemon opd_daemon;
typedef struct opd_level opd_level;

/* One request in flight: an nng context and its state. A call is parked in at most one
 * wait list at a time (a tile's waiters or a level's long polls). */
typedef struct opd_call {
    opd_daemon *d;
    nng_ctx ctx;
    nng_aio *aio;
    int state;
    nng_msg *in; /* the request message while it is handled */
    op_rpc_request req;
    int parsed;
    opd_method method;
    char level[65];
    uint64_t t0_ns;
    int64_t deadline_ns; /* long poll: answer empty at this time */
    struct opd_call *next_wait;
    opd_level *wait_level; /* the level a parked call holds a reference to */
    int woken;             /* answered by the thread of a build: it builds nothing more there */
} opd_call;

/* Replies are packed straight into the nng message that is sent: no copy of a blob.
 * opd_reply_begin makes an empty message with room for `reserve` bytes and points pk
 * at it (NULL: out of memory; pk then fails every write); opd_reply_reserve makes room
 * for `more` bytes after what is packed (0, or -1 when out of memory). */
nng_msg *opd_reply_begin(msgpack_packer *pk, size_t reserve);
int opd_reply_reserve(msgpack_packer *pk, size_t more);
/* Sends msg (taken; NULL: no memory for a reply, the client's request times out and
 * is resent) and logs the request; ok says whether it is an ok reply, err_name the
 * error name otherwise. The call returns to receiving. */
void opd_call_reply(opd_call *c, nng_msg *msg, int ok, const char *err_name);
/* Packs and sends an error reply. */
void opd_call_error(opd_call *c, op_status code, const char *msg);
/* Hands a parked call back to the request pool to be dispatched again. */
void opd_call_redispatch(opd_call *c);

/* Opens the socket, listens on every URL and starts the contexts (OP_EIO naming the
 * URL). Stop closes the socket and frees the contexts: only once no call is in flight. */
int opd_server_start(opd_daemon *d, op_err *err);
void opd_server_stop(opd_daemon *d);

/* ---- dispatch (dispatch.c) ---- */

/* A request just received (on nng's callback thread): small read requests are parsed
 * and answered (or parked) right here; edits and large messages go to the request pool. */
void opd_dispatch_received(opd_call *c);
/* Handles c's request on the calling thread: replies, or parks the call (it will be
 * dispatched again). */
void opd_dispatch(opd_call *c);

/* ---- registry (registry.c) ---- */

typedef struct opd_registry opd_registry;

/* The daemon: everything is reached from here; no globals. */
struct opd_daemon {
    opd_config cfg;
    opd_registry *reg;
    opd_pool *requests;
    opd_pool *builds;
    opd_stats stats;
    op_mp_limits limits;
    uint64_t start_ns;
    atomic_int stopping;
    atomic_int inflight; /* calls between receive and the end of their send, and threads
                          * still inside a reply or a re-arm (the drain waits for 0) */
    pthread_mutex_t log_mu;
    FILE *log;
    void *loop; /* uv_loop_t */
    void *wake; /* uv_async_t: re-arm the deadline timer, check the drain */
    nng_socket sock;
    opd_call *calls;
    int ncalls;
};

uint64_t opd_now_ns(void);
/* Wakes the loop thread: re-arms the deadline timer, checks the drain (any thread). */
void opd_daemon_wake(opd_daemon *d);
/* Writes one log line (a time stamp is prepended). */
void opd_log(opd_daemon *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

opd_registry *opd_registry_create(opd_daemon *d);
void opd_registry_destroy(opd_registry *r);
/* Loads every level file of the data directory (start-up). */
void opd_registry_load(opd_registry *r);

/* Levels by name: a reference (release with opd_level_unref), or NULL. */
opd_level *opd_level_find(opd_registry *r, const char *name);
void opd_level_unref(opd_level *lv);

/* Edits (protocol §5, §6, §7): persisted before they return OP_OK. meshes (the array
 * and each mesh, malloc'd) and mesh are taken: owned by the registry either way. */
op_status opd_level_put(opd_registry *r, const char *name, const op_settings *s, opd_mesh **meshes,
                        int nmeshes, uint64_t *version, int *changed, op_err *err);
op_status opd_level_drop(opd_registry *r, const char *name, int *dropped, op_err *err);
op_status opd_mesh_put(opd_registry *r, const char *level, opd_mesh *mesh, uint64_t *version,
                       int *changed, op_err *err);
op_status opd_mesh_drop(opd_registry *r, const char *level, const char *mesh, uint64_t *version,
                        int *changed, op_err *err);

/* Not a protocol status: the call was parked and will be dispatched again. */
#define OPD_PARKED ((op_status)1000)

/* Reads: each packs its result map into pk, or returns an error, or OPD_PARKED
 * (nothing packed). */
int opd_pack_level_list(opd_registry *r, msgpack_packer *pk);
op_status opd_pack_level_info(opd_registry *r, const char *name, msgpack_packer *pk, op_err *err);
op_status opd_tile_get(opd_registry *r, opd_call *c, const char *level, int tx, int tz,
                       msgpack_packer *pk, op_err *err);
op_status opd_tile_range(opd_registry *r, opd_call *c, const char *level, const int rect[4],
                         const int *after, size_t max_bytes, msgpack_packer *pk, op_err *err);
op_status opd_level_bake(opd_registry *r, const char *level, int *started, op_err *err);
op_status opd_changes_since(opd_registry *r, opd_call *c, const char *level, uint64_t since,
                            msgpack_packer *pk, op_err *err);
/* Memory held by levels (bytes) and the cache's bytes; level count. */
void opd_registry_usage(opd_registry *r, size_t *memory, size_t *cache_bytes, int *levels);

/* Deadlines: answers parked long polls whose deadline passed (or all of them when the
 * daemon stops); returns the earliest remaining deadline (0: none). */
int64_t opd_registry_expire(opd_registry *r, int64_t now_ns);

#endif
