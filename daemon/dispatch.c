/*
 * onepathd methods (docs/spec/protocol.md §4): each handler checks its params
 * strictly (unknown keys, types, ranges, names), calls the registry and packs its
 * result map. A request is parsed once; a parked call (tile being built, long poll)
 * is dispatched again from the start with the same parsed request, which is why
 * every handler is a pure function of the request and the registry state.
 * Where a request runs: reads on the nng callback that received them (they take a
 * level's lock for microseconds and never wait for a build), edits and large messages
 * on the request pool, parked tile reads on the thread that built their tile.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

typedef op_status (*handler_fn)(opd_call *c, const msgpack_object *p, msgpack_packer *pk,
                                op_err *err);

/* tile.range replies stop adding tiles past this many blob bytes unless asked. */
#define OPD_RANGE_DEFAULT_BYTES ((size_t)8 << 20)
/* Requests up to this size are decoded on nng's callback thread (reads are a few
 * dozen bytes); larger ones (mesh uploads) on a request thread. */
#define OPD_INLINE_MAX_BYTES ((size_t)64 << 10)
/* First capacity of a reply message; tile replies reserve their blobs' size. */
#define OPD_REPLY_RESERVE 512
/* changes.since: the longest long poll (protocol §4). */
#define OPD_MAX_WAIT_MS 600000

static op_status keys(const msgpack_object *p, const char *const *allowed, op_err *err)
{
    return op_rpc_check_keys(p, allowed, err);
}

/* The `key` name param, checked per protocol §3.1. */
static op_status get_name(const msgpack_object *p, const char *key, const char *what, char out[65],
                          op_err *err)
{
    const char *s;
    size_t n;
    op_status st = op_rpc_get_str(p, key, 0, &s, &n, err);
    return st != OP_OK ? st : op_rpc_name(s, n, what, out, err);
}

static op_status get_i32(const msgpack_object *p, const char *key, int *out, op_err *err)
{
    int64_t v;
    op_status st = op_rpc_get_int(p, key, INT32_MIN, INT32_MAX, 0, &v, NULL, err);
    *out = (int)v;
    return st;
}

/* A mesh map {name, verts, tris, areas?} or the mesh params of mesh.put. */
static op_status get_mesh(const msgpack_object *p, const char *name_key, opd_mesh **out,
                          op_err *err)
{
    char name[65];
    const uint8_t *v, *t, *a;
    size_t vl, tl, al;
    op_status st;
    *out = NULL;
    if ((st = get_name(p, name_key, "mesh", name, err)) != OP_OK ||
        (st = op_rpc_get_bin(p, "verts", 0, &v, &vl, err)) != OP_OK ||
        (st = op_rpc_get_bin(p, "tris", 0, &t, &tl, err)) != OP_OK ||
        (st = op_rpc_get_bin(p, "areas", 1, &a, &al, err)) != OP_OK)
        return st;
    return opd_mesh_make(name, v, vl, t, tl, a, al, out, err);
}

static int pack_edit(msgpack_packer *pk, uint64_t version, int changed, const char *flag)
{
    int rc = msgpack_pack_map(pk, 2);
    rc |= op_rpc_pack_key(pk, "version") | msgpack_pack_uint64(pk, version);
    rc |= op_rpc_pack_key(pk, flag) | (changed ? msgpack_pack_true(pk) : msgpack_pack_false(pk));
    return rc;
}

/* ---- methods ---- */

static op_status m_ping(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {NULL};
    op_status st = keys(p, allowed, err);
    if (st != OP_OK)
        return st;
    const opd_config *cfg = &c->d->cfg;
    int rc = msgpack_pack_map(pk, 3);
    rc |= op_rpc_pack_key(pk, "version") | op_rpc_pack_key(pk, OPD_VERSION);
    rc |= op_rpc_pack_key(pk, "protocol") | msgpack_pack_int(pk, OP_PROTOCOL_VERSION);
    rc |= op_rpc_pack_key(pk, "limits") | msgpack_pack_map(pk, 5);
    rc |= op_rpc_pack_key(pk, "max_message") | msgpack_pack_uint64(pk, cfg->max_message);
    rc |= op_rpc_pack_key(pk, "max_levels") | msgpack_pack_int(pk, cfg->max_levels);
    rc |= op_rpc_pack_key(pk, "max_level_verts") | msgpack_pack_uint64(pk, cfg->max_level_verts);
    rc |= op_rpc_pack_key(pk, "max_level_tris") | msgpack_pack_uint64(pk, cfg->max_level_tris);
    rc |= op_rpc_pack_key(pk, "cache_bytes") | msgpack_pack_uint64(pk, cfg->cache_bytes);
    return rc ? op_err_set(err, OP_ENOMEM, "ping: out of memory") : OP_OK;
}

static op_status m_level_put(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "settings", "meshes", NULL};
    static const char *const mesh_keys[] = {"name", "verts", "tris", "areas", NULL};
    const msgpack_object *so, *mo;
    op_settings s;
    op_status st;
    if ((st = keys(p, allowed, err)) != OP_OK ||
        (st = get_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = op_rpc_get_type(p, "settings", MSGPACK_OBJECT_MAP, 0, &so, err)) != OP_OK ||
        (st = opd_settings_from_map(so, &s, err)) != OP_OK ||
        (st = op_rpc_get_type(p, "meshes", MSGPACK_OBJECT_ARRAY, 0, &mo, err)) != OP_OK)
        return st;
    uint32_t n = mo->via.array.size;
    opd_mesh **m = calloc(n ? n : 1, sizeof *m);
    if (!m)
        return op_err_set(err, OP_ENOMEM, "level.put: out of memory for %u meshes", n);
    for (uint32_t i = 0; i < n && st == OP_OK; i++) {
        const msgpack_object *mi = &mo->via.array.ptr[i];
        if (mi->type != MSGPACK_OBJECT_MAP)
            st = op_err_set(err, OP_EPROTO, "meshes[%u] must be a map", i);
        else if ((st = keys(mi, mesh_keys, err)) == OP_OK)
            st = get_mesh(mi, "name", &m[i], err);
    }
    if (st != OP_OK) {
        for (uint32_t i = 0; i < n; i++)
            opd_mesh_free(m[i]);
        free(m);
        return st;
    }
    uint64_t version;
    int changed;
    /* The registry takes the array and its meshes. */
    if ((st = opd_level_put(c->d->reg, c->level, &s, m, (int)n, &version, &changed, err)) != OP_OK)
        return st;
    return pack_edit(pk, version, changed, "changed") ? op_err_set(err, OP_ENOMEM, "oom") : OP_OK;
}

static op_status m_level_drop(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", NULL};
    op_status st;
    int dropped;
    if ((st = keys(p, allowed, err)) != OP_OK ||
        (st = get_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = opd_level_drop(c->d->reg, c->level, &dropped, err)) != OP_OK)
        return st;
    int rc = msgpack_pack_map(pk, 1) | op_rpc_pack_key(pk, "dropped");
    rc |= dropped ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    return rc ? op_err_set(err, OP_ENOMEM, "level.drop: out of memory") : OP_OK;
}

static op_status m_level_list(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {NULL};
    op_status st = keys(p, allowed, err);
    if (st != OP_OK)
        return st;
    return opd_pack_level_list(c->d->reg, pk) ? op_err_set(err, OP_ENOMEM, "level.list: oom")
                                              : OP_OK;
}

static op_status m_level_info(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", NULL};
    op_status st;
    if ((st = keys(p, allowed, err)) != OP_OK ||
        (st = get_name(p, "level", "level", c->level, err)) != OP_OK)
        return st;
    return opd_pack_level_info(c->d->reg, c->level, pk, err);
}

static op_status m_mesh_put(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "name", "verts", "tris", "areas", NULL};
    opd_mesh *m;
    uint64_t version;
    int changed;
    op_status st;
    if ((st = keys(p, allowed, err)) != OP_OK ||
        (st = get_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = get_mesh(p, "name", &m, err)) != OP_OK ||
        (st = opd_mesh_put(c->d->reg, c->level, m, &version, &changed, err)) != OP_OK)
        return st;
    return pack_edit(pk, version, changed, "changed") ? op_err_set(err, OP_ENOMEM, "oom") : OP_OK;
}

static op_status m_mesh_drop(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "name", NULL};
    char name[65];
    uint64_t version;
    int changed;
    op_status st;
    if ((st = keys(p, allowed, err)) != OP_OK ||
        (st = get_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = get_name(p, "name", "mesh", name, err)) != OP_OK ||
        (st = opd_mesh_drop(c->d->reg, c->level, name, &version, &changed, err)) != OP_OK)
        return st;
    return pack_edit(pk, version, changed, "changed") ? op_err_set(err, OP_ENOMEM, "oom") : OP_OK;
}

static op_status m_tile_get(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "tx", "tz", NULL};
    int tx, tz;
    op_status st;
    if ((st = keys(p, allowed, err)) != OP_OK ||
        (st = get_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = get_i32(p, "tx", &tx, err)) != OP_OK || (st = get_i32(p, "tz", &tz, err)) != OP_OK)
        return st;
    return opd_tile_get(c->d->reg, c, c->level, tx, tz, pk, err);
}

/* An optional [tx, tz] pair. */
static op_status get_pair(const msgpack_object *p, const char *key, int out[2], int *present,
                          op_err *err)
{
    const msgpack_object *o = op_rpc_get(p, key);
    *present = o != NULL && o->type != MSGPACK_OBJECT_NIL;
    if (!*present)
        return OP_OK;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 2)
        return op_err_set(err, OP_EPROTO, "'%s' must be an array [tx, tz]", key);
    for (int i = 0; i < 2; i++) {
        const msgpack_object *v = &o->via.array.ptr[i];
        int64_t x;
        if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 <= INT32_MAX)
            x = (int64_t)v->via.u64;
        else if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER && v->via.i64 >= INT32_MIN)
            x = v->via.i64;
        else
            return op_err_set(err, OP_EPROTO, "'%s'[%d] must be an int32", key, i);
        out[i] = (int)x;
    }
    return OP_OK;
}

static op_status m_tile_range(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "tx0",   "tz0",       "tx1",
                                          "tz1",   "after", "max_bytes", NULL};
    int rc[4], after[2], has_after, has_max;
    int64_t max_bytes = (int64_t)OPD_RANGE_DEFAULT_BYTES;
    op_status st;
    if ((st = keys(p, allowed, err)) != OP_OK ||
        (st = get_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = get_i32(p, "tx0", &rc[0], err)) != OP_OK ||
        (st = get_i32(p, "tz0", &rc[1], err)) != OP_OK ||
        (st = get_i32(p, "tx1", &rc[2], err)) != OP_OK ||
        (st = get_i32(p, "tz1", &rc[3], err)) != OP_OK ||
        (st = get_pair(p, "after", after, &has_after, err)) != OP_OK ||
        (st = op_rpc_get_int(p, "max_bytes", 1, INT64_MAX, 1, &max_bytes, &has_max, err)) != OP_OK)
        return st;
    if (!has_max)
        max_bytes = (int64_t)OPD_RANGE_DEFAULT_BYTES;
    if (rc[0] > rc[2] || rc[1] > rc[3])
        return op_err_set(err, OP_ERANGE, "tile.range: empty rectangle %d..%d x %d..%d", rc[0],
                          rc[2], rc[1], rc[3]);
    return opd_tile_range(c->d->reg, c, c->level, rc, has_after ? after : NULL, (size_t)max_bytes,
                          pk, err);
}

static op_status m_level_bake(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", NULL};
    int started;
    op_status st;
    if ((st = keys(p, allowed, err)) != OP_OK ||
        (st = get_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = opd_level_bake(c->d->reg, c->level, &started, err)) != OP_OK)
        return st;
    int rc = msgpack_pack_map(pk, 1) | op_rpc_pack_key(pk, "started");
    rc |= started ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    return rc ? op_err_set(err, OP_ENOMEM, "level.bake: out of memory") : OP_OK;
}

static op_status m_changes_since(opd_call *c, const msgpack_object *p, msgpack_packer *pk,
                                 op_err *err)
{
    static const char *const allowed[] = {"level", "version", "wait_ms", NULL};
    int64_t version, wait_ms = 0;
    op_status st;
    if ((st = keys(p, allowed, err)) != OP_OK ||
        (st = get_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = op_rpc_get_int(p, "version", 0, INT64_MAX, 0, &version, NULL, err)) != OP_OK ||
        (st = op_rpc_get_int(p, "wait_ms", 0, OPD_MAX_WAIT_MS, 1, &wait_ms, NULL, err)) != OP_OK)
        return st;
    if (wait_ms > 0 && c->deadline_ns == 0)
        c->deadline_ns = (int64_t)c->t0_ns + wait_ms * 1000000;
    return opd_changes_since(c->d->reg, c, c->level, (uint64_t)version, pk, err);
}

static int pack_counts(msgpack_packer *pk, const uint64_t *counts)
{
    int n = 0;
    for (int m = 0; m < OPD_M_COUNT; m++)
        n += counts[m] > 0;
    int rc = msgpack_pack_map(pk, (size_t)n);
    for (int m = 0; m < OPD_M_COUNT; m++)
        if (counts[m] > 0)
            rc |= op_rpc_pack_key(pk, opd_method_names[m]) | msgpack_pack_uint64(pk, counts[m]);
    return rc;
}

static op_status m_stats(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {NULL};
    op_status st = keys(p, allowed, err);
    if (st != OP_OK)
        return st;
    opd_daemon *d = c->d;
    size_t memory, cache_bytes;
    int levels;
    opd_registry_usage(d->reg, &memory, &cache_bytes, &levels);
    uint64_t q[4] = {opd_stats_quantile(&d->stats, 0.5), opd_stats_quantile(&d->stats, 0.9),
                     opd_stats_quantile(&d->stats, 0.99), 0};
    opd_stats snap;
    pthread_mutex_lock(&d->stats.mu);
    memcpy(snap.requests, d->stats.requests, sizeof snap.requests);
    memcpy(snap.errors, d->stats.errors, sizeof snap.errors);
    q[3] = d->stats.lat_max_us;
    uint64_t hits = d->stats.cache_hits, misses = d->stats.cache_misses,
             ev = d->stats.cache_evictions, builds = d->stats.builds;
    pthread_mutex_unlock(&d->stats.mu);
    int rc = msgpack_pack_map(pk, 8);
    rc |= op_rpc_pack_key(pk, "uptime_ms") |
          msgpack_pack_uint64(pk, (opd_now_ns() - d->start_ns) / 1000000);
    rc |= op_rpc_pack_key(pk, "levels") | msgpack_pack_int(pk, levels);
    rc |= op_rpc_pack_key(pk, "memory") | msgpack_pack_uint64(pk, memory);
    rc |= op_rpc_pack_key(pk, "cache") | msgpack_pack_map(pk, 4);
    rc |= op_rpc_pack_key(pk, "hits") | msgpack_pack_uint64(pk, hits);
    rc |= op_rpc_pack_key(pk, "misses") | msgpack_pack_uint64(pk, misses);
    rc |= op_rpc_pack_key(pk, "evictions") | msgpack_pack_uint64(pk, ev);
    rc |= op_rpc_pack_key(pk, "bytes") | msgpack_pack_uint64(pk, cache_bytes);
    rc |= op_rpc_pack_key(pk, "builds") | msgpack_pack_uint64(pk, builds);
    rc |= op_rpc_pack_key(pk, "requests") | pack_counts(pk, snap.requests);
    rc |= op_rpc_pack_key(pk, "errors") | pack_counts(pk, snap.errors);
    rc |= op_rpc_pack_key(pk, "latency_us") | msgpack_pack_map(pk, 4);
    static const char *const qn[4] = {"p50", "p90", "p99", "max"};
    for (int i = 0; i < 4; i++)
        rc |= op_rpc_pack_key(pk, qn[i]) | msgpack_pack_uint64(pk, q[i]);
    return rc ? op_err_set(err, OP_ENOMEM, "stats: out of memory") : OP_OK;
}

static const handler_fn handlers[OPD_M_COUNT] = {
    [OPD_M_PING] = m_ping,
    [OPD_M_LEVEL_PUT] = m_level_put,
    [OPD_M_LEVEL_DROP] = m_level_drop,
    [OPD_M_LEVEL_LIST] = m_level_list,
    [OPD_M_LEVEL_INFO] = m_level_info,
    [OPD_M_MESH_PUT] = m_mesh_put,
    [OPD_M_MESH_DROP] = m_mesh_drop,
    [OPD_M_TILE_GET] = m_tile_get,
    [OPD_M_TILE_RANGE] = m_tile_range,
    [OPD_M_LEVEL_BAKE] = m_level_bake,
    [OPD_M_CHANGES_SINCE] = m_changes_since,
    [OPD_M_STATS] = m_stats,
};

static op_status parse(opd_call *c, op_err *err)
{
    size_t len = nng_msg_len(c->in);
    op_status st = op_rpc_request_parse(nng_msg_body(c->in), len, &c->d->limits, &c->req, err);
    c->parsed = 1;
    c->method = OPD_M_UNKNOWN;
    if (st != OP_OK)
        return st;
    for (int m = 0; m < OPD_M_UNKNOWN; m++)
        if (!strcmp(c->req.method, opd_method_names[m]))
            c->method = (opd_method)m;
    if (c->method == OPD_M_UNKNOWN)
        return op_err_set(err, OP_EPROTO, "unknown method '%s'", c->req.method);
    return OP_OK;
}

/* Runs the handler of a parsed request (st: the parse result) and replies, unless the
 * call parks. The reply is packed into the message that is sent. */
static void answer(opd_call *c, op_status st, op_err *err)
{
    msgpack_packer pk;
    nng_msg *msg = opd_reply_begin(&pk, OPD_REPLY_RESERVE);
    if (st == OP_OK) {
        int rc = op_rpc_reply_ok(&pk, &c->req);
        st = rc ? op_err_set(err, OP_ENOMEM, "reply: out of memory")
                : handlers[c->method](c, c->req.params, &pk, err);
    }
    if (st == OPD_PARKED) {
        if (msg)
            nng_msg_free(msg);
        return; /* dispatched again when its tile lands or its poll ends */
    }
    if (st != OP_OK && msg) {
        nng_msg_clear(msg);
        if (op_rpc_reply_error(&pk, c->parsed ? &c->req : NULL, st, err->msg) != 0) {
            nng_msg_free(msg);
            msg = NULL;
        }
    }
    opd_call_reply(c, msg, st == OP_OK, st == OP_OK ? NULL : op_status_name(st));
}

/* A new request: parsed, and refused while the daemon drains. */
static op_status admit(opd_call *c, op_err *err)
{
    op_status st = parse(c, err);
    if (st == OP_OK && atomic_load(&c->d->stopping))
        st = op_err_set(err, OP_EBUSY, "onepathd is shutting down");
    return st;
}

void opd_dispatch(opd_call *c)
{
    op_err err;
    op_err_clear(&err);
    /* A parked call, or one admitted on nng's thread, is already parsed (a parked one
     * was accepted before the drain began). */
    op_status st = c->parsed ? OP_OK : admit(c, &err);
    answer(c, st, &err);
}

/* Edits prepare a level (CPU) and persist it (fsync): never on an nng thread. */
static int answers_inline(opd_method m)
{
    return m != OPD_M_LEVEL_PUT && m != OPD_M_LEVEL_DROP && m != OPD_M_MESH_PUT &&
           m != OPD_M_MESH_DROP;
}

void opd_dispatch_received(opd_call *c)
{
    op_err err;
    op_err_clear(&err);
    op_status st = OP_OK;
    if (nng_msg_len(c->in) <= OPD_INLINE_MAX_BYTES) {
        st = admit(c, &err);
        if (st != OP_OK || answers_inline(c->method)) {
            answer(c, st, &err);
            return;
        }
    }
    opd_call_redispatch(c);
}
