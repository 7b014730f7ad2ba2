/*
 * onepathd read methods (protocol §4): level.list, level.info, tile.get, tile.range,
 * level.bake, changes.since, and the usage and deadline scans of the registry. Each takes
 * the level's state lock only to copy what it answers; a tile that is not built parks the
 * call on the tile (single flight) and the call is dispatched again when it lands.
 */
#include <stdlib.h>
#include <string.h>

#include "registry_internal.h"

/* Tile builds queued ahead of a tile.range reader (per thread). */
#define OPD_RANGE_PREFETCH 2

static int name_cmp(const void *a, const void *b)
{
    return strcmp(((const char(*)[65])a)[0], ((const char(*)[65])b)[0]);
}

int opd_pack_level_list(opd_registry *r, msgpack_packer *pk)
{
    typedef struct item {
        char name[65];
        uint64_t version;
    } item;
    pthread_mutex_lock(&r->mu);
    item *it = calloc((size_t)r->n + 1, sizeof *it);
    int n = 0;
    for (int i = 0; it && i < r->n; i++) {
        opd_level *lv = r->levels[i];
        pthread_mutex_lock(&lv->mu);
        if (lv->version > 0 && !lv->dropped) {
            memcpy(it[n].name, lv->name, sizeof lv->name);
            it[n++].version = lv->version;
        }
        pthread_mutex_unlock(&lv->mu);
    }
    pthread_mutex_unlock(&r->mu);
    if (!it)
        return -1;
    qsort(it, (size_t)n, sizeof *it, name_cmp);
    int rc = msgpack_pack_map(pk, 1) | op_rpc_pack_key(pk, "levels");
    rc |= msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++) {
        rc |= msgpack_pack_map(pk, 2);
        rc |= op_rpc_pack_key(pk, "level") | op_rpc_pack_key(pk, it[i].name);
        rc |= op_rpc_pack_key(pk, "version") | msgpack_pack_uint64(pk, it[i].version);
    }
    free(it);
    return rc;
}

static size_t level_memory(const opd_level *lv, int *built)
{
    size_t m =
        sizeof *lv + lv->mesh_bytes + (lv->sn ? lv->sn->bytes : 0) + lv->map_cap * sizeof(tent *);
    *built = 0;
    for (size_t i = 0; i < lv->map_cap; i++) {
        const tent *t = lv->map[i];
        if (!t)
            continue;
        m += sizeof *t + (size_t)t->nl * (sizeof(int) + sizeof(uint64_t)) + t->blob_bytes;
        *built += t->known && opd_reg_in_rect(lv->sn, t->tx, t->tz);
    }
    return m;
}

op_status opd_pack_level_info(opd_registry *r, const char *name, msgpack_packer *pk, op_err *err)
{
    opd_level *lv = opd_reg_find_live(r, name, err);
    if (!lv)
        return err->status;
    pthread_mutex_lock(&lv->mu);
    const snap *s = lv->sn;
    float bmin[3] = {0, 0, 0}, bmax[3] = {0, 0, 0};
    op_tile_rect rc = {0, 0, -1, -1};
    int total = 0, built = 0;
    if (s->has_tiles) {
        op_level_bounds(s->lvl, bmin, bmax);
        rc = s->rect;
        total = op_level_tile_count(s->lvl);
    }
    size_t mem = level_memory(lv, &built);
    int p = msgpack_pack_map(pk, 8);
    p |= op_rpc_pack_key(pk, "version") | msgpack_pack_uint64(pk, lv->version);
    p |= op_rpc_pack_key(pk, "bounds") | msgpack_pack_array(pk, 6);
    for (int i = 0; i < 6; i++)
        p |= msgpack_pack_double(pk, (double)(i < 3 ? bmin[i] : bmax[i - 3]));
    p |= op_rpc_pack_key(pk, "tiles") | msgpack_pack_array(pk, 4);
    p |= msgpack_pack_int(pk, rc.tx0) | msgpack_pack_int(pk, rc.tz0) |
         msgpack_pack_int(pk, rc.tx1) | msgpack_pack_int(pk, rc.tz1);
    p |= op_rpc_pack_key(pk, "grid_origin") | msgpack_pack_array(pk, 2);
    p |= msgpack_pack_double(pk, lv->settings.grid_origin_x) |
         msgpack_pack_double(pk, lv->settings.grid_origin_z);
    p |= op_rpc_pack_key(pk, "tiles_total") | msgpack_pack_int(pk, total);
    p |= op_rpc_pack_key(pk, "tiles_built") | msgpack_pack_int(pk, built);
    p |= op_rpc_pack_key(pk, "memory") | msgpack_pack_uint64(pk, mem);
    p |= op_rpc_pack_key(pk, "bake") | msgpack_pack_map(pk, 3);
    p |= op_rpc_pack_key(pk, "running");
    p |= (lv->building > 0) ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    p |= op_rpc_pack_key(pk, "done") | msgpack_pack_int(pk, built);
    p |= op_rpc_pack_key(pk, "total") | msgpack_pack_int(pk, total);
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    return p ? op_err_set(err, OP_ENOMEM, "level.info: out of memory") : OP_OK;
}

static op_status range_error(const opd_level *lv, int tx, int tz, op_err *err)
{
    const snap *s = lv->sn;
    if (!s->has_tiles)
        return op_err_set(err, OP_ERANGE, "tile (%d, %d): level '%s' has no tiles", tx, tz,
                          lv->name);
    return op_err_set(err, OP_ERANGE, "tile (%d, %d) is outside level '%s' tiles %d..%d x %d..%d",
                      tx, tz, lv->name, s->rect.tx0, s->rect.tx1, s->rect.tz0, s->rect.tz1);
}

/* Packs one tile.get result map from a ready tile (level lock held). */
static int pack_tile(msgpack_packer *pk, const opd_level *lv, const tent *t)
{
    /* The blobs are copied once, into the reply message: make room for them first. */
    int p = opd_reply_reserve(pk, t->blob_bytes + 64 + 48 * (size_t)t->nl);
    p |= msgpack_pack_map(pk, 4);
    p |= op_rpc_pack_key(pk, "version") | msgpack_pack_uint64(pk, lv->version);
    p |= op_rpc_pack_key(pk, "tx") | msgpack_pack_int(pk, t->tx);
    p |= op_rpc_pack_key(pk, "tz") | msgpack_pack_int(pk, t->tz);
    p |= op_rpc_pack_key(pk, "layers") | msgpack_pack_array(pk, (size_t)t->nl);
    for (int k = 0; k < t->nl; k++) {
        p |= msgpack_pack_map(pk, 3);
        p |= op_rpc_pack_key(pk, "layer") | msgpack_pack_int(pk, t->layers[k]);
        p |= op_rpc_pack_key(pk, "hash") | msgpack_pack_uint64(pk, t->hashes[k]);
        p |= op_rpc_pack_key(pk, "blob") |
             msgpack_pack_bin_with_body(pk, t->blobs[k].data, t->blobs[k].len);
    }
    return p;
}

/* Built for the current version, with its blobs cached (a tile with no layers or a
 * failed build has nothing to cache). */
static int tile_ready(const tent *t)
{
    return t->known && (t->blobs || t->nl == 0 || t->err_status != OP_OK);
}

/* Parks c on t and makes sure t builds (level lock held). here: the build may run on
 * this thread (the claimed job is returned, to run once the lock is released). */
static bjob *park_on(opd_level *lv, tent *t, opd_call *c, int here)
{
    c->next_wait = t->waiters;
    t->waiters = c;
    bjob *j = here ? opd_reg_claim_here(lv, t) : NULL;
    if (!j)
        opd_reg_start_build(lv, t);
    return j;
}

op_status opd_tile_get(opd_registry *r, opd_call *c, const char *level, int tx, int tz,
                       msgpack_packer *pk, op_err *err)
{
    opd_level *lv = opd_reg_find_live(r, level, err);
    if (!lv)
        return err->status;
    op_status st = OP_OK;
    bjob *here = NULL;
    pthread_mutex_lock(&lv->mu);
    tent *t = opd_reg_in_rect(lv->sn, tx, tz) ? opd_reg_map_get(lv, tx, tz) : NULL;
    if (!t) {
        st = range_error(lv, tx, tz, err);
    } else if (!tile_ready(t)) {
        opd_stats_cache(&r->d->stats, 0, 1, 0);
        here = park_on(lv, t, c, !c->woken);
        st = OPD_PARKED;
    } else if (t->err_status != OP_OK) {
        st = op_err_set(err, t->err_status, "%s", t->err_msg ? t->err_msg : "build failed");
    } else {
        opd_stats_cache(&r->d->stats, 1, 0, 0);
        if (pack_tile(pk, lv, t))
            st = op_err_set(err, OP_ENOMEM, "tile.get: out of memory");
        opd_reg_touch(r, t);
    }
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    /* The build answers c (and whoever else waits): c is not ours after this. */
    if (here)
        opd_reg_build_here(here);
    return st;
}

/* Row-major successor of (tx, tz) inside rc; 0 when none. */
static int next_tile(const int rc[4], int *tx, int *tz)
{
    if (*tx < rc[2]) {
        (*tx)++;
        return 1;
    }
    if (*tz < rc[3]) {
        *tx = rc[0];
        (*tz)++;
        return 1;
    }
    return 0;
}

/* The asked rectangle clipped to the level's range; 0 when nothing is left. */
static int clip_rect(const snap *s, const int req[4], int rc[4])
{
    if (!s->has_tiles)
        return 0;
    rc[0] = req[0] > s->rect.tx0 ? req[0] : s->rect.tx0;
    rc[1] = req[1] > s->rect.tz0 ? req[1] : s->rect.tz0;
    rc[2] = req[2] < s->rect.tx1 ? req[2] : s->rect.tx1;
    rc[3] = req[3] < s->rect.tz1 ? req[3] : s->rect.tz1;
    return rc[0] <= rc[2] && rc[1] <= rc[3];
}

/* The first tile to return: the rectangle's first, or the row-major successor of after
 * inside it; 0 when none is left. */
static int range_start(const int rc[4], const int *after, int *tx, int *tz)
{
    *tx = rc[0];
    *tz = rc[1];
    if (!after || after[1] < rc[1])
        return 1;
    if (after[1] > rc[3])
        return 0;
    *tz = after[1];
    if (after[0] < rc[0])
        return 1;
    if (after[0] >= rc[2]) {
        *tz = after[1] + 1;
        return after[1] < rc[3];
    }
    *tx = after[0] + 1;
    return 1;
}

/* Queues builds of the next tiles from (tx, tz) so that the next page finds them ready. */
static void prefetch(opd_level *lv, const int rc[4], int tx, int tz)
{
    for (int k = 0; k < OPD_RANGE_PREFETCH * lv->r->d->cfg.threads; k++) {
        tent *u = opd_reg_map_get(lv, tx, tz);
        if (u && !tile_ready(u))
            opd_reg_start_build(lv, u);
        if (!next_tile(rc, &tx, &tz))
            break;
    }
}

typedef struct page {
    int tx, tz; /* first tile */
    int n;      /* tiles in the page */
    int more;   /* tiles remain after it */
    int lastx, lastz;
} page;

/* Counts the ready prefix from (pg->tx, pg->tz) within max_bytes (at least one tile),
 * parking c on the first tile when it is not ready. */
static op_status range_page(opd_registry *r, opd_level *lv, opd_call *c, const int rc[4],
                            size_t max_bytes, page *pg, op_err *err)
{
    int ex = pg->tx, ez = pg->tz;
    size_t bytes = 0;
    while (pg->more) {
        tent *t = opd_reg_map_get(lv, ex, ez);
        if (!t || !tile_ready(t)) {
            prefetch(lv, rc, ex, ez);
            if (pg->n > 0 || !t)
                return OP_OK;
            opd_stats_cache(&r->d->stats, 0, 1, 0);
            park_on(lv, t, c, 0);
            return OPD_PARKED;
        }
        if (t->err_status != OP_OK)
            return pg->n ? OP_OK
                         : op_err_set(err, t->err_status, "%s",
                                      t->err_msg ? t->err_msg : "build failed");
        if (pg->n > 0 && bytes + t->blob_bytes > max_bytes)
            return OP_OK;
        bytes += t->blob_bytes;
        pg->n++;
        pg->lastx = ex;
        pg->lastz = ez;
        pg->more = next_tile(rc, &ex, &ez);
    }
    return OP_OK;
}

static int pack_page(opd_registry *r, opd_level *lv, const int rc[4], const page *pg,
                     msgpack_packer *pk)
{
    int p = msgpack_pack_map(pk, 2) | op_rpc_pack_key(pk, "tiles");
    p |= msgpack_pack_array(pk, (size_t)pg->n);
    int tx = pg->tx, tz = pg->tz;
    for (int i = 0; i < pg->n; i++) {
        tent *t = opd_reg_map_get(lv, tx, tz);
        p |= pack_tile(pk, lv, t);
        opd_reg_touch(r, t);
        next_tile(rc, &tx, &tz);
    }
    if (pg->n)
        opd_stats_cache(&r->d->stats, pg->n, 0, 0);
    p |= op_rpc_pack_key(pk, "next");
    if (pg->n > 0 && pg->more)
        p |= msgpack_pack_array(pk, 2) | msgpack_pack_int(pk, pg->lastx) |
             msgpack_pack_int(pk, pg->lastz);
    else
        p |= msgpack_pack_nil(pk);
    return p;
}

op_status opd_tile_range(opd_registry *r, opd_call *c, const char *level, const int req[4],
                         const int *after, size_t max_bytes, msgpack_packer *pk, op_err *err)
{
    opd_level *lv = opd_reg_find_live(r, level, err);
    if (!lv)
        return err->status;
    pthread_mutex_lock(&lv->mu);
    int rc[4];
    page pg = {0};
    pg.more = clip_rect(lv->sn, req, rc) && range_start(rc, after, &pg.tx, &pg.tz);
    op_status st = range_page(r, lv, c, rc, max_bytes, &pg, err);
    if (st == OP_OK && pack_page(r, lv, rc, &pg, pk))
        st = op_err_set(err, OP_ENOMEM, "tile.range: out of memory");
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    return st;
}

op_status opd_level_bake(opd_registry *r, const char *level, int *started, op_err *err)
{
    *started = 0;
    opd_level *lv = opd_reg_find_live(r, level, err);
    if (!lv)
        return err->status;
    pthread_mutex_lock(&lv->mu);
    const snap *s = lv->sn;
    for (int tz = s->rect.tz0; s->has_tiles && tz <= s->rect.tz1; tz++)
        for (int tx = s->rect.tx0; tx <= s->rect.tx1; tx++) {
            tent *t = opd_reg_map_get(lv, tx, tz);
            if (t && !tile_ready(t) && !t->building) {
                opd_reg_start_build(lv, t);
                *started = 1;
            }
        }
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    return OP_OK;
}

static int tile_order(const void *a, const void *b)
{
    const tent *x = *(const tent *const *)a, *y = *(const tent *const *)b;
    if (x->tz != y->tz)
        return x->tz < y->tz ? -1 : 1;
    return (x->tx > y->tx) - (x->tx < y->tx);
}

static int pack_changes(msgpack_packer *pk, const opd_level *lv, tent **list, size_t n)
{
    int p = msgpack_pack_map(pk, 2);
    p |= op_rpc_pack_key(pk, "version") | msgpack_pack_uint64(pk, lv->version);
    p |= op_rpc_pack_key(pk, "tiles") | msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++) {
        const tent *t = list[i];
        p |= msgpack_pack_map(pk, 3);
        p |= op_rpc_pack_key(pk, "tx") | msgpack_pack_int(pk, t->tx);
        p |= op_rpc_pack_key(pk, "tz") | msgpack_pack_int(pk, t->tz);
        p |= op_rpc_pack_key(pk, "hashes") | msgpack_pack_array(pk, (size_t)t->nl);
        for (int k = 0; k < t->nl; k++)
            p |= msgpack_pack_uint64(pk, t->hashes[k]);
    }
    return p;
}

op_status opd_changes_since(opd_registry *r, opd_call *c, const char *level, uint64_t since,
                            msgpack_packer *pk, op_err *err)
{
    opd_level *lv = opd_reg_find_live(r, level, err);
    if (!lv)
        return err->status;
    op_status st = OP_OK;
    int stopping = atomic_load(&r->d->stopping);
    int64_t deadline = c->deadline_ns; /* once parked, c may be answered and reused */
    pthread_mutex_lock(&lv->mu);
    size_t n = 0;
    for (size_t i = 0; i < lv->map_cap; i++)
        n += lv->map[i] && lv->map[i]->change_version > since;
    if (since > lv->version) {
        st = op_err_set(err, OP_ERANGE, "level '%s': version %llu is newer than %llu", lv->name,
                        (unsigned long long)since, (unsigned long long)lv->version);
    } else if (lv->pending > 0 && stopping) {
        st = op_err_set(err, OP_EBUSY, "shutting down while level '%s' rebuilds", lv->name);
    } else if (!stopping && (lv->pending > 0 || (n == 0 && c->deadline_ns > 0 &&
                                                 (int64_t)opd_now_ns() < c->deadline_ns))) {
        /* Rebuilding, or a long poll with nothing yet: park until woken or the deadline. */
        c->next_wait = lv->pollers;
        lv->pollers = c;
        st = OPD_PARKED;
    } else {
        tent **list = calloc(n ? n : 1, sizeof *list);
        if (!list) {
            st = op_err_set(err, OP_ENOMEM, "changes.since: out of memory for %zu tiles", n);
        } else {
            size_t k = 0;
            for (size_t i = 0; i < lv->map_cap; i++)
                if (lv->map[i] && lv->map[i]->change_version > since)
                    list[k++] = lv->map[i];
            qsort(list, n, sizeof *list, tile_order);
            if (pack_changes(pk, lv, list, n))
                st = op_err_set(err, OP_ENOMEM, "changes.since: out of memory");
            free(list);
        }
    }
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    if (st == OPD_PARKED && deadline > 0)
        opd_daemon_wake(r->d); /* the loop re-arms its deadline timer */
    return st;
}

void opd_registry_usage(opd_registry *r, size_t *memory, size_t *cache_bytes, int *levels)
{
    size_t m = 0;
    int n = 0, built;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++) {
        opd_level *lv = r->levels[i];
        pthread_mutex_lock(&lv->mu);
        if (lv->version > 0 && !lv->dropped) {
            m += level_memory(lv, &built);
            n++;
        }
        pthread_mutex_unlock(&lv->mu);
    }
    pthread_mutex_unlock(&r->mu);
    pthread_mutex_lock(&r->cache_mu);
    *cache_bytes = r->cache_bytes;
    pthread_mutex_unlock(&r->cache_mu);
    *memory = m;
    *levels = n;
}

int64_t opd_registry_expire(opd_registry *r, int64_t now_ns)
{
    int stopping = atomic_load(&r->d->stopping);
    int64_t next = 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++) {
        opd_level *lv = r->levels[i];
        pthread_mutex_lock(&lv->mu);
        opd_call **pp = &lv->pollers;
        while (*pp) {
            opd_call *c = *pp;
            if (stopping || (c->deadline_ns > 0 && c->deadline_ns <= now_ns && lv->pending == 0)) {
                *pp = c->next_wait;
                c->next_wait = NULL;
                opd_call_redispatch(c);
                continue;
            }
            if (c->deadline_ns > 0 && (next == 0 || c->deadline_ns < next))
                next = c->deadline_ns;
            pp = &c->next_wait;
        }
        pthread_mutex_unlock(&lv->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return next;
}
