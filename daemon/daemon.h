/*
 * onepathd internals: the pieces of the daemon and how they hand work to each other.
 *
 * A request flows one way, each file calling only files below it:
 *
 *   main.c           flags, start-up, the libuv loop (signals, long-poll deadlines, drain)
 *   transport.c      nng REP0 socket and contexts: receive a message, hand it to route
 *   http.c           --http: nng's HTTP server; the viewer's files (http_files.c) and
 *                    POST /rpc, a request of the same protocol handed to route
 *                    (docs/spec/http.md); metrics.c: --metrics, Prometheus text
 *   route.c          decode, admit (drain), pick the method, run it here or on the request
 *                    pool, reply; the wake-up of parked calls (the one completion path)
 *   methods_*.c      the protocol methods (docs/spec/protocol.md §4): params in, result out
 *                    (admin: ping, stats; level; mesh; volume; tile; changes; path)
 *   params.c         param readers and result packers the methods share
 *   call.c           a call's reply: packed into an nng message, sent, logged, counted
 *   ---- level state (level.h) ----
 *   edit.c           edits: prepare, persist, install, invalidate; compaction; loading
 *   changes.c        changes.since: the tiles that changed, parked long polls, deadlines
 *   navmesh.c        the stitched mesh of a level version, from its tiles (path queries)
 *   registry.c       the table of levels by name
 *   level.c          one level: lifetime, references, its tile map, memory
 *   tiles.c          tile entries: ready or not, single-flight builds, results, dirty marks
 *   snapshot.c       the build input of one level version: one prepared part per mesh
 *   cache.c          the blob cache: LRU under --cache-bytes across levels
 *   builds.c         where a tile builds (build pool or the receiving thread) and how
 *   ---- persistence (store.h) ----
 *   store.c          level snapshots (L.oplevel) and loading a level with its journal
 *   record.c         the journal's edit records (msgpack payloads)
 *   journal.c        the journal file (L.opjournal): framed, checksummed, fdatasynced
 *   files.c          O_NOFOLLOW opens, O_EXCL 0600 temporaries, rename, directory fsync
 *   ---- leaves ----
 *   content.c        meshes and the settings map (the content of a level)
 *   volumes.c        volumes (protocol §3.5): the volume map, a level's volume set
 *   pool.c           worker threads (one pool for requests, one for tile builds)
 *   stats.c          counters and the latency histogram
 *   daemon.c         clock, log, loop wake-up
 *
 * Completion goes back up one way only: a lower layer that finishes what a call waits
 * for wakes the call's opd_waiter (below), whose callback route.c set. No file names a
 * function of a file above it.
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
#include "onepath/spans.h"
#include "onepath/status.h"
#include "onepath/token.h"
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
    size_t max_unpacked;  /* bytes msgpack-c may hold for one request (mpscan.h) */
    size_t max_memory;    /* levels + caches + meshes an edit may bring the daemon to */
    int max_levels;
    size_t max_level_verts;
    size_t max_level_tris;
    size_t cache_bytes;         /* tile blobs kept across all levels */
    size_t rebuild_cache_bytes; /* tiles' rebuild bases kept across all levels (0: none) */
    size_t compact_bytes;       /* a journal is compacted past this and its snapshot's size */
    int no_fsync;               /* tests only: skip fsync (never in production) */
    const char *http;           /* --http HOST:PORT (NULL: off) */
    int http_remote;            /* --http-remote: a non-loopback --http address is allowed */
    int http_edit;              /* --http-edit: the page may put and drop volumes */
    const char *http_root;      /* the viewer's files (NULL: beside the binary) */
    const char *http_three;     /* three.js (libjs-three) */
    const char *metrics;        /* --metrics HOST:PORT (NULL: off) */
    int log_json;               /* --log-format json */
    int socket_mode;            /* --socket-mode: ipc:// sockets' permission bits */
    int listen_check_ms;        /* --listen-check-ms: listener watchdog period (0: off) */
    const char *token_file;     /* --token-file (NULL: no token is asked for) */
    size_t token_len;           /* 0: no token; else every request must carry token */
    char token[OP_TOKEN_MAX + 1];
} opd_config;

/* ---- completion (the one way back up) ----
 *
 * A call that must wait (a tile being built, a long poll) parks its waiter in a list
 * of the level state. Whoever ends the wait detaches the list and wakes each waiter:
 *   OPD_WAKE_QUEUE  the waker may hold locks: the callback only queues the call to be
 *                   run again on the request pool;
 *   OPD_WAKE_HERE   the waker holds no lock: the callback may run the call right here
 *                   (the build worker that built a tile answers the calls waiting for it).
 * A waiter is in at most one list at a time. */

typedef enum opd_wake_how { OPD_WAKE_QUEUE, OPD_WAKE_HERE } opd_wake_how;

typedef struct opd_waiter opd_waiter;
typedef void (*opd_wake_fn)(opd_waiter *w, opd_wake_how how);

struct opd_waiter {
    opd_wake_fn wake;
    opd_waiter *next;
    int64_t deadline_ns; /* a long poll ends at this time (0: none) */
};

static inline void opd_waiter_push(opd_waiter **list, opd_waiter *w)
{
    w->next = *list;
    *list = w;
}

/* Detaches the whole list (under the lock that guards it). */
static inline opd_waiter *opd_waiters_take(opd_waiter **list)
{
    opd_waiter *w = *list;
    *list = NULL;
    return w;
}

/* Wakes every waiter of a detached list. */
static inline void opd_waiters_wake(opd_waiter *w, opd_wake_how how)
{
    while (w) {
        opd_waiter *next = w->next;
        w->next = NULL;
        w->wake(w, how);
        w = next;
    }
}

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
    OPD_M_PATH,
    OPD_M_VOLUME_PUT,
    OPD_M_VOLUME_DROP,
    OPD_M_UNKNOWN, /* unparsable or unknown method */
    OPD_M_COUNT
} opd_method;

extern const char *const opd_method_names[OPD_M_COUNT];

#define OPD_LAT_BUCKETS 256 /* 8 per power of two: 1 µs .. about 4 hours */
#define OPD_LAT_COARSE  24  /* per method: 2^(k+3) µs, 8 µs .. 34 s, then +Inf */

typedef struct opd_stats {
    pthread_mutex_t mu;
    uint64_t requests[OPD_M_COUNT];
    uint64_t errors[OPD_M_COUNT];
    uint64_t lat[OPD_LAT_BUCKETS]; /* log-spaced microsecond buckets */
    uint64_t lat_max_us;
    /* per cache (opd_cache_kind): tile.get hits and misses of the blob cache; builds
     * from a cached rebuild base and builds that found none, of the rebuild cache */
    uint64_t hits[2], misses[2], evictions[2];
    uint64_t builds;   /* tile builds run (single flight: one per tile and version) */
    uint64_t build_ns; /* their time, summed */
    uint64_t m_lat[OPD_M_COUNT][OPD_LAT_COARSE]; /* per method: opd_lat_coarse_upper */
    uint64_t m_lat_sum_us[OPD_M_COUNT];
} opd_stats;

/* The two caches (level.h, cache.c). */
typedef enum opd_cache_kind { OPD_CACHE_BLOBS = 0, OPD_CACHE_BASES = 1 } opd_cache_kind;

void opd_stats_init(opd_stats *s);
void opd_stats_fini(opd_stats *s);
void opd_stats_request(opd_stats *s, opd_method m, int ok, uint64_t us);
void opd_stats_cache(opd_stats *s, opd_cache_kind k, int hits, int misses, int evictions);
void opd_stats_build(opd_stats *s, uint64_t ns);
/* Latency at quantile q (0..1) in microseconds: the upper edge of its bucket. */
uint64_t opd_stats_quantile(opd_stats *s, double q);
/* Histogram bucket of a latency, and the bucket's upper edge (exposed for tests). */
int opd_lat_bucket(uint64_t us);
uint64_t opd_lat_bucket_upper(int b);
/* Upper edge of coarse bucket k in µs (UINT64_MAX for the last). */
uint64_t opd_lat_coarse_upper(int k);

/* ---- level content (content.c) ---- */

/* One named mesh: the bytes exactly as uploaded (little-endian float32 x 3 vertices,
 * int32 x 3 triangles, optional uint8 areas). Immutable once made; reference counted
 * (opd_mesh_make gives the first reference, opd_mesh_free releases one). */
typedef struct opd_mesh {
    atomic_int refs;
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
opd_mesh *opd_mesh_ref(opd_mesh *m);
void opd_mesh_free(opd_mesh *m);
/* Same bytes (verts, tris and areas, an absent areas array differs from a present one). */
int opd_mesh_equal(const opd_mesh *a, const opd_mesh *b);
/* The mesh map {name, verts, tris, areas (bin or nil)} of level files and journal
 * records (protocol §7.3); decode checks it strictly (OP_EPROTO / the mesh's errors). */
int opd_mesh_pack(msgpack_packer *pk, const opd_mesh *m);
op_status opd_mesh_decode(const msgpack_object *o, opd_mesh **out, op_err *err);

/* A mesh list: name-sorted, holding one reference per mesh. */
int opd_mesh_list_find(opd_mesh *const *list, int n, const char *name);
/* The list with m put (replacing its namesake) or, m NULL, with the mesh `drop` taken out:
 * a new array (*out, *nout) with a reference to every mesh it holds. */
op_status opd_mesh_list_edit(opd_mesh *const *list, int n, opd_mesh *m, const char *drop,
                             opd_mesh ***out, int *nout, op_err *err);
void opd_mesh_list_free(opd_mesh **list, int n);

/* Settings map (protocol §3.3) <-> op_settings. */
op_status opd_settings_from_map(const msgpack_object *map, op_settings *s, op_err *err);
int opd_settings_pack(msgpack_packer *pk, const op_settings *s);
int opd_settings_equal(const op_settings *a, const op_settings *b);

/* ---- volumes (volumes.c) ---- */

/* One named volume (protocol §3.5, build3d-spans.md §6): valid, immutable once made,
 * reference counted (decode gives the first reference). */
typedef struct opd_volume {
    atomic_int refs;
    op_volume v;         /* name valid; unused fields zero */
    double lo[2], hi[2]; /* its XZ bounding box (x, z; build3d-spans.md §6.4) */
} opd_volume;

/* Reads a volume map strictly (protocol §3.5): keys, types, mode, kind, the point count
 * (OP_ELIMIT before reading them), then every rule of build3d-spans.md §6.2; messages
 * start with `what` (NULL: none) and, once read, the volume's name and name the key. */
op_status opd_volume_decode(const msgpack_object *o, const char *what, opd_volume **out,
                            op_err *err);
/* The volume map as replies, snapshots and journal records write it: every key of its
 * kind, area always, numbers as float64. */
int opd_volume_pack(msgpack_packer *pk, const op_volume *v);
/* Same mode, kind, area and every coordinate the kind uses, bit for bit (protocol §6.1). */
int opd_volume_equal(const op_volume *a, const op_volume *b);
opd_volume *opd_volume_ref(opd_volume *v);
void opd_volume_free(opd_volume *v);

/* A level's volume set: distinct names in bytewise ascending order (build3d-runtime.md
 * §4.2), one reference per volume. Immutable and shared (a mesh edit keeps the set, a
 * volume edit makes a new one of pointers to the same volumes). NULL is the empty set. */
typedef struct opd_vset {
    atomic_int refs;
    int n;
    opd_volume **v;
    size_t bytes; /* memory of the set and its volumes */
} opd_vset;

/* A set of v[0..n) (the array and its references taken, either way; n > 0): sorted by
 * name; two volumes of one name are OP_EINVAL naming both indices of the input; more than
 * OP_MAX_VOLUMES is OP_ELIMIT. */
op_status opd_vset_make(opd_volume **v, int n, opd_vset **out, op_err *err);
/* The index of the volume called name, or -1. */
int opd_vset_find(const opd_vset *s, const char *name);
/* s with v put (replacing its namesake; v not taken) or, v NULL, the volume `drop` taken
 * out: a new set (NULL when empty); OP_ELIMIT past OP_MAX_VOLUMES. */
op_status opd_vset_edit(const opd_vset *s, opd_volume *v, const char *drop, opd_vset **out,
                        op_err *err);
int opd_vset_equal(const opd_vset *a, const opd_vset *b);
int opd_vset_count(const opd_vset *s);
/* The array of volume maps, in name order. */
int opd_vset_pack(msgpack_packer *pk, const opd_vset *s);
opd_vset *opd_vset_ref(opd_vset *s); /* NULL stays NULL */
void opd_vset_unref(opd_vset *s);

/* ---- persistence (store.c; the rest of it in store.h) ---- */

/* What a level snapshot holds. meshes and volumes sorted by name. */
typedef struct opd_level_data {
    char name[65];
    uint64_t version;
    uint64_t epoch; /* this life of the level (protocol §7.3); 0 in OPLEVEL1 files */
    op_settings settings;
    opd_mesh **meshes;
    int nmeshes;
    opd_vset *vols; /* NULL: none */
} opd_level_data;

/* Encodes / decodes the snapshot bytes (exposed for tests). decode: OP_EPROTO on
 * corruption; on success the caller owns ld->meshes (opd_level_data_fini). */
op_status opd_store_encode(const opd_level_data *ld, msgpack_sbuffer *sb, op_err *err);
op_status opd_store_decode(const uint8_t *buf, size_t len, opd_level_data *ld, op_err *err);
void opd_level_data_fini(opd_level_data *ld);

/* ---- the daemon ---- */

typedef struct opd_registry opd_registry;
typedef struct opd_builder opd_builder;
typedef struct opd_cache opd_cache;

/* Everything is reached from here; no globals. */
typedef struct opd_daemon {
    opd_config cfg;
    opd_registry *reg;
    opd_pool *requests;
    opd_pool *background; /* compactions, one at a time */
    opd_builder *builder;
    opd_cache *cache;   /* tile blobs */
    opd_cache *rebuild; /* tiles' rebuild bases */
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
    struct opd_http *http;           /* --http (http.c) */
    struct opd_http *metrics;        /* --metrics (metrics.c) */
    struct opd_navmeshes *navmeshes; /* path queries' meshes (navmesh.c) */
    /* The REP socket's calls (transport.c): every one allocated, and the idle ones. At
     * most --contexts are receiving or working; a parked call is not counted (it holds
     * its context only to send its reply), and a fresh call takes its place. */
    pthread_mutex_t calls_mu;
    struct opd_call **calls;
    int ncalls, calls_cap;
    struct opd_call *idle; /* linked by next_idle */
    atomic_int armed;      /* calls receiving, working or sending (parked ones not) */
    /* The listeners (one per --listen URL) and the pipes each has handed to the socket,
     * counted by a pipe-event callback: the watchdog (transport.c) sees a listener that
     * negotiated a test connection without handing its pipe on as deaf, and restarts it. */
    atomic_uint listener_id[OPD_MAX_LISTEN];
    atomic_uint_fast64_t pipes_added[OPD_MAX_LISTEN];
    struct opd_watchdog *watchdog;
} opd_daemon;

/* ---- leaf services (daemon.c) ---- */

uint64_t opd_now_ns(void);
/* Wakes the loop thread: re-arms the deadline timer, checks the drain (any thread). */
void opd_daemon_wake(opd_daemon *d);
/* Writes one log line (a time stamp is prepended; with --log-format json, one JSON
 * object: time, and the line's OP- id as event with the rest as message). */
void opd_log(opd_daemon *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The log line of one request: method, level (or -), ms and ok or the error name (the
 * same fields as text or as JSON); via names a transport other than the REP socket. */
void opd_log_request(opd_daemon *d, const char *method, const char *level, double ms,
                     const char *status, const char *via);

/* ---- calls (call.c; transport.c receives them) ---- */

/* Where a call's nng aio is: waiting for a request, working on one, sending its reply. */
enum { OPD_CALL_RECV, OPD_CALL_WORK, OPD_CALL_SEND };

/* How a call that did not come from the REP socket (transport.c) is answered: http.c's.
 * reply sends msg (taken; NULL: no memory) and releases the call. */
typedef struct opd_call_ops {
    void (*reply)(struct opd_call *c, nng_msg *msg, int ok, const char *err_name);
} opd_call_ops;

/* One request in flight: an nng context and its state. */
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
    opd_waiter wait; /* parked: in a tile's waiters or a level's long polls */
    int woken;       /* run again by the thread of a build: it builds nothing more there */
    int parked;      /* parked and not yet answered (route.c): parking again after a
                        wake-up (a waiting tile.range page) arms no other context */
    /* Parked: its reply message, holding the reply's head (route.c): the run after the
     * wake-up packs its result after it instead of making and packing them again. */
    nng_msg *held;
    size_t held_len; /* the head's bytes: what a method packed before it parked is dropped */
    const opd_call_ops *ops;    /* NULL: the REP socket's context */
    uint32_t allow;             /* methods it may call (bit per opd_method); 0: every one */
    struct opd_call *next_idle; /* transport.c: in d->idle */
} opd_call;

/* Replies are packed straight into the nng message that is sent: no copy of a blob.
 * Writes of fewer than OPD_REPLY_GATHER bytes (keys, integers, headers: a tile.get reply
 * makes about 45) are gathered in the opd_reply and appended to the message together,
 * not one nng_msg_append each; larger writes (blobs) go straight to the message.
 * opd_reply_begin makes an empty message with room for `reserve` bytes and points r->pk
 * at it (NULL: out of memory; the packer then fails every write); opd_reply_reserve makes
 * room for `more` bytes after what is packed (0, or -1 when out of memory);
 * opd_reply_clear drops what is packed; opd_reply_end appends what is gathered and
 * returns the message (NULL, the message freed, when that append failed). */
#define OPD_REPLY_GATHER 256
typedef struct opd_reply {
    msgpack_packer pk; /* first: pk->data points at the opd_reply */
    nng_msg *m;
    size_t n; /* bytes gathered in buf, not yet in m */
    int failed;
    char buf[OPD_REPLY_GATHER];
} opd_reply;
nng_msg *opd_reply_begin(opd_reply *r, size_t reserve);
/* Packs on after what m holds (a parked call's reply head: route.c). */
void opd_reply_resume(opd_reply *r, nng_msg *m);
int opd_reply_reserve(msgpack_packer *pk, size_t more);
void opd_reply_clear(opd_reply *r);
/* Appends what is gathered to the message: 0, or -1 (r failed; nothing more is written). */
int opd_reply_flush(opd_reply *r);
nng_msg *opd_reply_end(opd_reply *r);
/* Sends msg (taken; NULL: no memory for a reply, the client's request times out and
 * is resent) and logs the request; ok says whether it is an ok reply, err_name the
 * error name otherwise. The call returns to receiving. */
void opd_call_reply(opd_call *c, nng_msg *msg, int ok, const char *err_name);
/* Packs and sends an error reply. */
void opd_call_error(opd_call *c, op_status code, const char *msg);

/* ---- transport (transport.c) ---- */

/* Opens the socket, listens on every URL and starts the contexts (OP_EIO naming the
 * URL). Stop closes the socket and frees the contexts: only once no call is in flight. */
int opd_transport_start(opd_daemon *d, op_err *err);
/* Closes the socket and frees the calls; -1: the close did not end in time (nothing freed). */
int opd_transport_stop(opd_daemon *d);
/* A REP call parked (its method waits for a tile or a change): another call starts
 * receiving in its place, so parked calls never take the --contexts that serve
 * requests (protocol §1.6). Unparked: it works again (its reply returns it to idle
 * when more than --contexts are then armed). No-ops for other transports' calls. */
void opd_transport_parked(opd_daemon *d);
void opd_transport_unparked(opd_call *c);

/* ---- HTTP (http.c, http_files.c, metrics.c; docs/spec/http.md) ---- */

/* Starts --http and --metrics (when set): OP_EINVAL / OP_EIO naming the address. Stop
 * closes both servers (connections included) and frees them. */
int opd_http_start(opd_daemon *d, op_err *err);
void opd_http_stop(opd_daemon *d);
int opd_metrics_start(opd_daemon *d, op_err *err);
void opd_metrics_stop(opd_daemon *d);
/* The Prometheus text exposition of the daemon's figures (malloc'd, *len bytes). */
char *opd_metrics_text(opd_daemon *d, size_t *len);
/* "HOST:PORT" -> "http://HOST:PORT" in url (n bytes) with whether HOST is a loopback
 * address (127.0.0.0/8, ::1, localhost). -1 when it is not HOST:PORT. */
int opd_http_addr(const char *hostport, char *url, size_t n, int *loopback);

/* The file a GET path names under the viewer's folder or three.js's (http_files.c):
 * 0 and the file's path in out (n bytes), or the HTTP status to answer (400 malformed:
 * '%', '..', a dot segment, a character outside [A-Za-z0-9._-/]; 404 no such file). */
int opd_http_file_path(const char *root, const char *three, const char *path, char *out, size_t n);
/* Reads a regular file (not a link, at most max bytes): 0, or the HTTP status. */
int opd_http_file_read(const char *path, size_t max, void **data, size_t *len);
/* Content-Type by extension. */
const char *opd_http_mime(const char *path);

/* ---- route (route.c) ---- */

/* A request just received (on nng's callback thread): small read requests are parsed
 * and answered (or parked) right here; edits and large messages go to the request pool. */
void opd_route_received(opd_call *c);

/* ---- methods (methods_*.c) ---- */

/* The largest wait_ms of changes.since and tile.range (protocol §4). */
#define OPD_MAX_WAIT_MS 600000

/* Not a protocol status: the call was parked and will be run again when woken. */
#define OPD_PARKED ((op_status)1000)

/* A method: checks params p, packs its result map into pk, or returns an error, or
 * OPD_PARKED (nothing packed). A parked call is run again from the start with the same
 * parsed request, so a method is a pure function of the request and the level state. */
typedef op_status (*opd_method_fn)(opd_call *c, const msgpack_object *p, msgpack_packer *pk,
                                   op_err *err);

op_status opd_m_ping(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);
op_status opd_m_stats(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);
op_status opd_m_level_put(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);
op_status opd_m_level_drop(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);
op_status opd_m_level_list(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);
op_status opd_m_level_info(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);
op_status opd_m_level_bake(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);
op_status opd_m_mesh_put(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);
op_status opd_m_mesh_drop(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);
op_status opd_m_tile_get(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);
op_status opd_m_tile_range(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);
op_status opd_m_changes_since(opd_call *c, const msgpack_object *p, msgpack_packer *pk,
                              op_err *err);
op_status opd_m_path(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);
op_status opd_m_volume_put(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);
op_status opd_m_volume_drop(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err);

/* ---- params (params.c) ---- */

/* Unknown keys of p (not in the NULL-ended allowed) are OP_EPROTO naming the key. */
op_status opd_param_keys(const msgpack_object *p, const char *const *allowed, op_err *err);
/* The `key` name param, checked per protocol §3.1 (what: "level", "mesh"). */
op_status opd_param_name(const msgpack_object *p, const char *key, const char *what, char out[65],
                         op_err *err);
op_status opd_param_i32(const msgpack_object *p, const char *key, int *out, op_err *err);
/* An optional [tx, tz] pair (absent or nil: *present 0). */
op_status opd_param_pair(const msgpack_object *p, const char *key, int out[2], int *present,
                         op_err *err);
/* A mesh map {name, verts, tris, areas?} or the mesh params of mesh.put. */
op_status opd_param_mesh(const msgpack_object *p, const char *name_key, opd_mesh **out,
                         op_err *err);
/* {version, <flag>} of an edit; {<flag>} alone. OP_ENOMEM when the packer fails. */
op_status opd_pack_edit(msgpack_packer *pk, uint64_t version, int changed, const char *flag,
                        op_err *err);
op_status opd_pack_flag(msgpack_packer *pk, const char *flag, int value, op_err *err);

#endif
