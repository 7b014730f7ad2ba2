/*
 * onepathd metrics (docs/spec/http.md §5): the daemon's figures in Prometheus's text
 * exposition format 0.0.4, served by http.c on --metrics. Every family has its HELP and
 * TYPE lines; counters end in _total, times are seconds, sizes bytes. The figures are
 * read from stats.c, the registry, the caches and the pools at the moment of the scrape.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "level.h"

typedef struct out {
    char *buf;
    size_t len, cap;
    int failed;
} out;

static void put(out *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void put(out *o, const char *fmt, ...)
{
    for (int tries = 0; tries < 2 && !o->failed; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            o->failed = 1;
            return;
        }
        if ((size_t)n < o->cap - o->len) {
            o->len += (size_t)n;
            return;
        }
        size_t cap = (o->cap + (size_t)n + 1) * 2;
        char *b = realloc(o->buf, cap);
        if (!b) {
            o->failed = 1;
            return;
        }
        o->buf = b;
        o->cap = cap;
    }
}

static void family(out *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A float in the exposition's form (no locale, round-trippable). */
static void seconds_le(char *b, size_t n, uint64_t us)
{
    snprintf(b, n, "%.6g", (double)us / 1e6);
}

typedef struct figures {
    uint64_t requests[OPD_M_COUNT], errors[OPD_M_COUNT];
    uint64_t lat[OPD_M_COUNT][OPD_LAT_COARSE], sum_us[OPD_M_COUNT];
    uint64_t hits[2], misses[2], evictions[2], builds, build_ns; /* by opd_cache_kind */
} figures;

static void snapshot(opd_stats *s, figures *f)
{
    pthread_mutex_lock(&s->mu);
    memcpy(f->requests, s->requests, sizeof f->requests);
    memcpy(f->errors, s->errors, sizeof f->errors);
    memcpy(f->lat, s->m_lat, sizeof f->lat);
    memcpy(f->sum_us, s->m_lat_sum_us, sizeof f->sum_us);
    memcpy(f->hits, s->hits, sizeof f->hits);
    memcpy(f->misses, s->misses, sizeof f->misses);
    memcpy(f->evictions, s->evictions, sizeof f->evictions);
    f->builds = s->builds;
    f->build_ns = s->build_ns;
    pthread_mutex_unlock(&s->mu);
}

static void requests(out *o, const figures *f)
{
    family(o, "onepathd_requests_total", "counter",
           "Requests answered, by protocol method (unknown: not parsable).");
    for (int m = 0; m < OPD_M_COUNT; m++)
        put(o, "onepathd_requests_total{method=\"%s\"} %llu\n", opd_method_names[m],
            (unsigned long long)f->requests[m]);
    family(o, "onepathd_request_errors_total", "counter",
           "Requests answered with an error reply, by method.");
    for (int m = 0; m < OPD_M_COUNT; m++)
        put(o, "onepathd_request_errors_total{method=\"%s\"} %llu\n", opd_method_names[m],
            (unsigned long long)f->errors[m]);
    family(o, "onepathd_request_duration_seconds", "histogram",
           "Time from receiving a request to sending its reply, by method.");
    for (int m = 0; m < OPD_M_COUNT; m++) {
        uint64_t acc = 0;
        for (int k = 0; k < OPD_LAT_COARSE; k++) {
            acc += f->lat[m][k];
            char le[32];
            if (k == OPD_LAT_COARSE - 1)
                snprintf(le, sizeof le, "+Inf");
            else
                seconds_le(le, sizeof le, opd_lat_coarse_upper(k));
            put(o, "onepathd_request_duration_seconds_bucket{method=\"%s\",le=\"%s\"} %llu\n",
                opd_method_names[m], le, (unsigned long long)acc);
        }
        put(o, "onepathd_request_duration_seconds_sum{method=\"%s\"} %.6f\n", opd_method_names[m],
            (double)f->sum_us[m] / 1e6);
        put(o, "onepathd_request_duration_seconds_count{method=\"%s\"} %llu\n", opd_method_names[m],
            (unsigned long long)acc);
    }
}

static void caches(out *o, opd_daemon *d, const figures *f)
{
    /* label, cache, budget flag: the tile blobs and the tiles' rebuild bases */
    const char *name[2] = {"tiles", "rebuild"};
    opd_cache *c[2] = {d->cache, d->rebuild};
    size_t budget[2] = {d->cfg.cache_bytes, d->cfg.rebuild_cache_bytes};
    family(o, "onepathd_cache_bytes", "gauge",
           "Bytes held by a cache (tiles: tile blobs; rebuild: the tiles' rebuild bases).");
    for (int k = 0; k < 2; k++)
        put(o, "onepathd_cache_bytes{cache=\"%s\"} %zu\n", name[k], opd_cache_bytes(c[k]));
    family(o, "onepathd_cache_budget_bytes", "gauge",
           "A cache's budget (--cache-bytes, --rebuild-cache-bytes).");
    for (int k = 0; k < 2; k++)
        put(o, "onepathd_cache_budget_bytes{cache=\"%s\"} %zu\n", name[k], budget[k]);
    family(o, "onepathd_cache_hits_total", "counter",
           "Reads answered from a cache (rebuild: builds that started from a cached base).");
    for (int k = 0; k < 2; k++)
        put(o, "onepathd_cache_hits_total{cache=\"%s\"} %llu\n", name[k],
            (unsigned long long)f->hits[k]);
    family(o, "onepathd_cache_misses_total", "counter",
           "Reads a cache could not answer (rebuild: builds that found no base).");
    for (int k = 0; k < 2; k++)
        put(o, "onepathd_cache_misses_total{cache=\"%s\"} %llu\n", name[k],
            (unsigned long long)f->misses[k]);
    family(o, "onepathd_cache_evictions_total", "counter", "Entries evicted from a cache.");
    for (int k = 0; k < 2; k++)
        put(o, "onepathd_cache_evictions_total{cache=\"%s\"} %llu\n", name[k],
            (unsigned long long)f->evictions[k]);
    family(o, "onepathd_navmesh_bytes", "gauge",
           "Tile bytes of the stitched meshes kept for path queries.");
    put(o, "onepathd_navmesh_bytes %zu\n", opd_navmeshes_bytes(d->navmeshes));
}

static void builds(out *o, const figures *f)
{
    family(o, "onepathd_tile_builds_total", "counter",
           "Tile builds run (single flight: one per tile and version).");
    put(o, "onepathd_tile_builds_total %llu\n", (unsigned long long)f->builds);
    family(o, "onepathd_tile_build_seconds_total", "counter", "Time spent building tiles.");
    put(o, "onepathd_tile_build_seconds_total %.6f\n", (double)f->build_ns / 1e9);
}

static void levels(out *o, opd_daemon *d)
{
    size_t memory;
    int n;
    opd_registry_usage(d->reg, &memory, &n);
    family(o, "onepathd_levels", "gauge", "Levels held.");
    put(o, "onepathd_levels %d\n", n);
    family(o, "onepathd_level_memory_bytes", "gauge", "Memory held by the levels together.");
    put(o, "onepathd_level_memory_bytes %zu\n", memory);
    opd_level_entry *it;
    int k = opd_registry_list(d->reg, &it);
    family(o, "onepathd_level_version", "gauge", "A level's version (protocol.md §4.3).");
    for (int i = 0; i < k; i++)
        put(o, "onepathd_level_version{level=\"%s\"} %llu\n", it[i].name,
            (unsigned long long)it[i].version);
    if (k >= 0)
        free(it);
    else
        o->failed = 1;
}

static void queues(out *o, opd_daemon *d)
{
    family(o, "onepathd_queue_depth", "gauge",
           "Jobs queued and not yet running (requests: edits and large messages; builds: "
           "tile builds; background: compactions).");
    put(o, "onepathd_queue_depth{queue=\"requests\"} %zu\n", opd_pool_queued(d->requests));
    put(o, "onepathd_queue_depth{queue=\"builds\"} %zu\n", opd_builder_queued(d->builder));
    put(o, "onepathd_queue_depth{queue=\"background\"} %zu\n", opd_pool_queued(d->background));
    family(o, "onepathd_inflight_requests", "gauge",
           "Requests received and not yet answered (parked long polls and builds included).");
    put(o, "onepathd_inflight_requests %d\n", atomic_load(&d->inflight));
}

char *opd_metrics_text(opd_daemon *d, size_t *len)
{
    out o = {malloc(1 << 16), 0, 1 << 16, 0};
    if (!o.buf)
        return NULL;
    figures f;
    snapshot(&d->stats, &f);
    family(&o, "onepathd_info", "gauge", "The daemon's version, as a label; always 1.");
    put(&o, "onepathd_info{version=\"%s\",protocol=\"%d\"} 1\n", OPD_VERSION, OP_PROTOCOL_VERSION);
    family(&o, "onepathd_uptime_seconds", "gauge", "Time since the daemon started.");
    put(&o, "onepathd_uptime_seconds %.3f\n", (double)(opd_now_ns() - d->start_ns) / 1e9);
    requests(&o, &f);
    caches(&o, d, &f);
    builds(&o, &f);
    levels(&o, d);
    queues(&o, d);
    if (o.failed) {
        free(o.buf);
        return NULL;
    }
    *len = o.len;
    return o.buf;
}
