/*
 * onepathd admin methods (protocol §4): ping (version and limits) and stats (counters,
 * cache figures and the latency quantiles of stats.c).
 */
#include <string.h>

#include "level.h"

op_status opd_m_ping(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {NULL};
    op_status st = opd_param_keys(p, allowed, err);
    if (st != OP_OK)
        return st;
    const opd_config *cfg = &c->d->cfg;
    int rc = msgpack_pack_map(pk, 3);
    rc |= op_rpc_pack_key(pk, "version") | op_rpc_pack_key(pk, OPD_VERSION);
    rc |= op_rpc_pack_key(pk, "protocol") | msgpack_pack_int(pk, OP_PROTOCOL_VERSION);
    rc |= op_rpc_pack_key(pk, "limits") | msgpack_pack_map(pk, 7);
    rc |= op_rpc_pack_key(pk, "max_message") | msgpack_pack_uint64(pk, cfg->max_message);
    rc |= op_rpc_pack_key(pk, "max_unpacked") | msgpack_pack_uint64(pk, cfg->max_unpacked);
    rc |= op_rpc_pack_key(pk, "max_levels") | msgpack_pack_int(pk, cfg->max_levels);
    rc |= op_rpc_pack_key(pk, "max_level_verts") | msgpack_pack_uint64(pk, cfg->max_level_verts);
    rc |= op_rpc_pack_key(pk, "max_level_tris") | msgpack_pack_uint64(pk, cfg->max_level_tris);
    rc |= op_rpc_pack_key(pk, "cache_bytes") | msgpack_pack_uint64(pk, cfg->cache_bytes);
    rc |= op_rpc_pack_key(pk, "rebuild_cache_bytes") |
          msgpack_pack_uint64(pk, cfg->rebuild_cache_bytes);
    return rc ? op_err_set(err, OP_ENOMEM, "ping: out of memory") : OP_OK;
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

op_status opd_m_stats(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {NULL};
    op_status st = opd_param_keys(p, allowed, err);
    if (st != OP_OK)
        return st;
    opd_daemon *d = c->d;
    size_t memory, bytes[2];
    int levels;
    opd_registry_usage(d->reg, &memory, &levels);
    bytes[OPD_CACHE_BLOBS] = opd_cache_bytes(d->cache);
    bytes[OPD_CACHE_BASES] = opd_cache_bytes(d->rebuild);
    uint64_t q[4] = {opd_stats_quantile(&d->stats, 0.5), opd_stats_quantile(&d->stats, 0.9),
                     opd_stats_quantile(&d->stats, 0.99), 0};
    opd_stats snap;
    pthread_mutex_lock(&d->stats.mu);
    memcpy(snap.requests, d->stats.requests, sizeof snap.requests);
    memcpy(snap.errors, d->stats.errors, sizeof snap.errors);
    q[3] = d->stats.lat_max_us;
    memcpy(snap.hits, d->stats.hits, sizeof snap.hits);
    memcpy(snap.misses, d->stats.misses, sizeof snap.misses);
    memcpy(snap.evictions, d->stats.evictions, sizeof snap.evictions);
    uint64_t builds = d->stats.builds;
    pthread_mutex_unlock(&d->stats.mu);
    int rc = msgpack_pack_map(pk, 9);
    rc |= op_rpc_pack_key(pk, "uptime_ms") |
          msgpack_pack_uint64(pk, (opd_now_ns() - d->start_ns) / 1000000);
    rc |= op_rpc_pack_key(pk, "levels") | msgpack_pack_int(pk, levels);
    rc |= op_rpc_pack_key(pk, "memory") | msgpack_pack_uint64(pk, memory);
    static const char *const cn[2] = {"cache", "rebuild_cache"};
    for (int k = 0; k < 2; k++) {
        rc |= op_rpc_pack_key(pk, cn[k]) | msgpack_pack_map(pk, 4);
        rc |= op_rpc_pack_key(pk, "hits") | msgpack_pack_uint64(pk, snap.hits[k]);
        rc |= op_rpc_pack_key(pk, "misses") | msgpack_pack_uint64(pk, snap.misses[k]);
        rc |= op_rpc_pack_key(pk, "evictions") | msgpack_pack_uint64(pk, snap.evictions[k]);
        rc |= op_rpc_pack_key(pk, "bytes") | msgpack_pack_uint64(pk, bytes[k]);
    }
    rc |= op_rpc_pack_key(pk, "builds") | msgpack_pack_uint64(pk, builds);
    rc |= op_rpc_pack_key(pk, "requests") | pack_counts(pk, snap.requests);
    rc |= op_rpc_pack_key(pk, "errors") | pack_counts(pk, snap.errors);
    rc |= op_rpc_pack_key(pk, "latency_us") | msgpack_pack_map(pk, 4);
    static const char *const qn[4] = {"p50", "p90", "p99", "max"};
    for (int i = 0; i < 4; i++)
        rc |= op_rpc_pack_key(pk, qn[i]) | msgpack_pack_uint64(pk, q[i]);
    return rc ? op_err_set(err, OP_ENOMEM, "stats: out of memory") : OP_OK;
}
