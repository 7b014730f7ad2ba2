/*
 * onepathd counters: requests and errors per method, cache hits / misses / evictions,
 * and a fixed latency histogram. Buckets are log-spaced, 8 per power of two
 * (1 µs each below 8 µs) (bucket b covers latencies up to opd_lat_bucket_upper(b)), so a quantile
 * is exact to within 9 % and the histogram never grows. One mutex: every update is a few additions.
 */
#include <string.h>

#include "daemon.h"

const char *const opd_method_names[OPD_M_COUNT] = {
    "ping",      "level.put",  "level.drop",  "level.list", "level.info",    "mesh.put",
    "mesh.drop", "tile.get",   "tile.range",  "level.bake", "changes.since", "stats",
    "path",      "volume.put", "volume.drop", "unknown",
};

#define SUB 8 /* buckets per power of two */

uint64_t opd_lat_bucket_upper(int b)
{
    /* 1..8 µs one bucket each, then (9..16) << e: at most 1/8 wider than the last edge. */
    if (b >= OPD_LAT_BUCKETS - 1)
        return UINT64_MAX;
    if (b < SUB)
        return (uint64_t)b + 1;
    int k = b - SUB;
    return (uint64_t)(SUB + 1 + k % SUB) << (k / SUB);
}

uint64_t opd_lat_coarse_upper(int k)
{
    return k >= OPD_LAT_COARSE - 1 ? UINT64_MAX : (uint64_t)8 << k;
}

/* The coarse bucket of a latency: the first whose upper edge is >= us. */
static int lat_coarse(uint64_t us)
{
    int k = 0;
    while (k < OPD_LAT_COARSE - 1 && us > opd_lat_coarse_upper(k))
        k++;
    return k;
}

/* The first bucket whose upper edge is >= us, worked out rather than searched (every
 * request counts one before its reply leaves; a search of a few hundred microseconds
 * read about 50 edges): a us above 8 lies in group e, (8 << e, 16 << e], whose edges
 * are (9 + j) << e for j = 0..7, and j is the first with ceil(us / 2^e) <= 9 + j. */
int opd_lat_bucket(uint64_t us)
{
    if (us <= SUB)
        return us ? (int)us - 1 : 0;
    uint64_t q = (us - 1) >> 3; /* in [2^e, 2^(e+1)) */
    int e = 63 - __builtin_clzll(q);
    uint64_t j = ((us - 1) >> e) + 1 - (SUB + 1);
    uint64_t b = SUB + (uint64_t)SUB * (uint64_t)e + j;
    return b < OPD_LAT_BUCKETS - 1 ? (int)b : OPD_LAT_BUCKETS - 1;
}

void opd_stats_init(opd_stats *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
}

void opd_stats_fini(opd_stats *s)
{
    pthread_mutex_destroy(&s->mu);
}

void opd_stats_request(opd_stats *s, opd_method m, int ok, uint64_t us)
{
    int b = opd_lat_bucket(us);
    pthread_mutex_lock(&s->mu);
    s->requests[m]++;
    s->errors[m] += !ok;
    s->lat[b]++;
    s->m_lat[m][lat_coarse(us)]++;
    s->m_lat_sum_us[m] += us;
    if (us > s->lat_max_us)
        s->lat_max_us = us;
    pthread_mutex_unlock(&s->mu);
}

void opd_stats_cache(opd_stats *s, opd_cache_kind k, int hits, int misses, int evictions)
{
    pthread_mutex_lock(&s->mu);
    s->hits[k] += (uint64_t)hits;
    s->misses[k] += (uint64_t)misses;
    s->evictions[k] += (uint64_t)evictions;
    pthread_mutex_unlock(&s->mu);
}

void opd_stats_build(opd_stats *s, uint64_t ns)
{
    pthread_mutex_lock(&s->mu);
    s->builds++;
    s->build_ns += ns;
    pthread_mutex_unlock(&s->mu);
}

uint64_t opd_stats_quantile(opd_stats *s, double q)
{
    pthread_mutex_lock(&s->mu);
    uint64_t total = 0, acc = 0, res = 0;
    for (int b = 0; b < OPD_LAT_BUCKETS; b++)
        total += s->lat[b];
    /* The smallest bucket whose cumulative count reaches ceil(q * total). */
    uint64_t want = (uint64_t)(q * (double)total);
    if ((double)want < q * (double)total)
        want++;
    if (want == 0)
        want = 1;
    for (int b = 0; b < OPD_LAT_BUCKETS && total; b++) {
        acc += s->lat[b];
        if (acc >= want) {
            res = opd_lat_bucket_upper(b);
            break;
        }
    }
    if (res > s->lat_max_us)
        res = s->lat_max_us;
    pthread_mutex_unlock(&s->mu);
    return res;
}
