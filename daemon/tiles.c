/*
 * onepathd tile entries: what each tile of a level is (built for the current version
 * or not, its layer hashes, the version its bytes last changed at, its cached blobs,
 * the calls waiting for it) and how it gets rebuilt: a single build per tile, from
 * the snapshot current when it starts; the result is installed only if no edit made
 * it stale meanwhile, and the build's thread then wakes the calls waiting (HERE).
 * An edit marks the tiles it can change dirty (protocol §5.2) and starts their builds;
 * when the last dirty tile lands, the level's parked change polls are woken.
 * A tile may also keep its rebuild base (protocol §5.2a) in the rebuild cache: a build
 * that finds one rebuilds from it (no rasterization); one that does not builds from
 * scratch and captures it. A base belongs to the tile's geometry: an edit that can change
 * the tile's triangles drops it (geo_version), and a base captured from a snapshot older
 * than that is not kept. Builds hold a reference, so an eviction never frees a base in use.
 * Everything here runs under the level's state lock unless it says otherwise.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "level.h"

/* A rebuild base as the rebuild cache holds it: referenced by the cache entry and by
 * every build that reads it. */
typedef struct opd_base {
    atomic_int refs;
    op_rebuild_entry *e;
} opd_base;

static opd_base *base_ref(opd_base *b)
{
    atomic_fetch_add(&b->refs, 1);
    return b;
}

static void base_unref(opd_base *b)
{
    if (b && atomic_fetch_sub(&b->refs, 1) == 1) {
        op_rebuild_entry_free(b->e);
        free(b);
    }
}

void opd_tile_base_free_data(void *data, int n)
{
    (void)n;
    base_unref(data);
}

/* Keeps e as t's base (taken). */
static void install_base(opd_level *lv, opd_tile *t, op_rebuild_entry *e)
{
    opd_cache *rc = lv->d->rebuild;
    opd_cache_drop(rc, &t->base);
    opd_base *b = malloc(sizeof *b);
    if (!b) {
        op_rebuild_entry_free(e); /* the next build captures it again */
        return;
    }
    atomic_init(&b->refs, 1);
    b->e = e;
    opd_cache_put(rc, &t->base, b, 1, sizeof *b + op_rebuild_entry_bytes(e));
}

static void drop_base(opd_level *lv, opd_tile *t, uint64_t w)
{
    t->geo_version = w;
    opd_cache_drop(lv->d->rebuild, &t->base);
}

/* One tile build: the level and the snapshot it builds from (both referenced), the
 * tile, the base it rebuilds from (referenced; NULL: from scratch, capturing the base
 * when the rebuild cache is on), and what it woke (answered once no lock is held). */
struct opd_tile_job {
    opd_level *lv;
    opd_snap *sn;
    opd_tile *t;
    opd_base *base;
    int capture;
    opd_waiter *ready, *polls;
};

int opd_tile_ready(const opd_tile *t)
{
    return t->known && (t->blobs.data || t->nl == 0 || t->err_status != OP_OK);
}

/* A job for t's single build (NULL when out of memory). */
static opd_tile_job *job_new(opd_level *lv, opd_tile *t)
{
    opd_tile_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->lv = lv;
    j->sn = lv->sn;
    j->t = t;
    opd_cache *rc = lv->d->rebuild;
    if (t->base.data) {
        j->base = base_ref(t->base.data);
        opd_cache_touch(rc, &t->base);
    } else {
        j->capture = opd_cache_budget(rc) > 0;
    }
    opd_level_ref(lv);
    opd_snap_ref(lv->sn);
    t->building = 1;
    lv->building++;
    return j;
}

/* Releases the job's hold on its tile without building (level lock held). */
static void job_cancel(opd_tile_job *j)
{
    j->t->building = 0;
    j->lv->building--;
    atomic_fetch_sub(&j->lv->refs, 1); /* the table still holds one */
    opd_snap_unref(j->sn);
    base_unref(j->base);
    free(j);
}

static int same_content(const opd_tile *t, const opd_build_result *b)
{
    if (t->nl != b->nl || (t->err_status != OP_OK) != (b->st != OP_OK))
        return 0;
    for (int k = 0; k < b->nl; k++)
        if (t->layers[k] != b->layers[k] || t->hashes[k] != b->hashes[k])
            return 0;
    return 1;
}

/* Installs a valid result; takes b's arrays. */
static void install(opd_level *lv, opd_tile *t, opd_build_result *b)
{
    int changed = t->defined ? !same_content(t, b) : (b->nl > 0 || b->st != OP_OK);
    /* Same native bytes, other Detour bytes: listed so that Detour clients refetch. */
    changed |= t->detour_changed && (t->nl > 0 || b->nl > 0);
    t->detour_changed = 0;
    if (changed)
        t->change_version = t->inval_version;
    opd_cache_drop(lv->d->cache, &t->blobs);
    free(t->layers);
    free(t->hashes);
    free(t->err_msg);
    t->layers = b->layers;
    t->hashes = b->hashes;
    t->nl = b->nl;
    t->err_status = b->st;
    t->err_msg = b->st != OP_OK ? strdup(b->msg) : NULL;
    t->known = t->defined = 1;
    if (b->nl > 0)
        opd_cache_put(lv->d->cache, &t->blobs, b->blobs, b->nl, b->bytes);
    else
        opd_blobs_free(b->blobs, 0);
    if (t->dirty) {
        t->dirty = 0;
        lv->pending--;
    }
}

/* Builds j's tile (no lock held on entry) and installs the result; the waiters to wake
 * go to j->ready and j->polls. */
static void job_build(void *arg, op_arena *out, op_arena *scratch)
{
    opd_tile_job *j = arg;
    opd_level *lv = j->lv;
    opd_tile *t = j->t;
    opd_daemon *d = lv->d;
    opd_build_result b;
    memset(&b, 0, sizeof b);
    pthread_mutex_lock(&lv->mu);
    /* Shutting down: only builds that someone waits for still run. */
    int skip = lv->dropped || j->sn->version < t->inval_version ||
               (atomic_load(&d->stopping) && !t->waiters);
    pthread_mutex_unlock(&lv->mu);
    if (!skip) {
        uint64_t t0 = opd_now_ns();
        opd_build_tile(j->sn, t->tx, t->tz, j->base ? j->base->e : NULL, j->capture, out, scratch,
                       &b);
        opd_stats_build(&d->stats, opd_now_ns() - t0);
        if (j->base || j->capture)
            opd_stats_cache(&d->stats, OPD_CACHE_BASES, b.from_base, !b.from_base, 0);
    }
    pthread_mutex_lock(&lv->mu);
    t->building = 0;
    lv->building--;
    /* The base describes the snapshot's geometry: kept while the tile's is the same, even
     * when a volume edit made the result itself stale. */
    if (b.captured && !lv->dropped && j->sn->version >= t->geo_version)
        install_base(lv, t, b.captured);
    else
        op_rebuild_entry_free(b.captured);
    b.captured = NULL;
    int valid = !skip && !lv->dropped && j->sn->version >= t->inval_version;
    if (valid) {
        install(lv, t, &b);
        j->ready = opd_waiters_take(&t->waiters);
        if (lv->pending == 0)
            j->polls = opd_waiters_take(&lv->pollers);
    } else {
        opd_build_result_free(&b);
        if (lv->dropped || !opd_snap_in_rect(lv->sn, t->tx, t->tz))
            j->ready = opd_waiters_take(&t->waiters); /* they answer ENOTFOUND / ERANGE */
        else if ((t->dirty && !atomic_load(&d->stopping)) || t->waiters)
            opd_tile_start_build(lv, t);
    }
    pthread_mutex_unlock(&lv->mu);
}

/* Wakes what the build woke, on this thread (before the eviction: a tile is answered
 * while it is the newest entry of the cache), and releases the job. */
static void job_finish(opd_tile_job *j)
{
    opd_cache *cache = j->lv->d->cache, *rc = j->lv->d->rebuild;
    opd_waiters_wake(j->ready, OPD_WAKE_HERE);
    opd_waiters_wake(j->polls, OPD_WAKE_HERE);
    opd_snap_unref(j->sn);
    base_unref(j->base);
    opd_level_unref(j->lv);
    free(j);
    opd_cache_evict(cache);
    opd_cache_evict(rc);
}

static void job_main(void *arg, op_arena *out, op_arena *scratch)
{
    job_build(arg, out, scratch);
    job_finish(arg);
}

void opd_tile_start_build(opd_level *lv, opd_tile *t)
{
    if (t->building || !opd_snap_in_rect(lv->sn, t->tx, t->tz))
        return;
    opd_tile_job *j = job_new(lv, t);
    if (j && opd_builder_submit(lv->d->builder, job_main, j) != 0)
        job_cancel(j);
}

opd_tile_job *opd_tile_park(opd_level *lv, opd_tile *t, opd_waiter *w, int here)
{
    opd_waiter_push(&t->waiters, w);
    opd_tile_job *j = NULL;
    if (here && !t->building && opd_snap_in_rect(lv->sn, t->tx, t->tz) &&
        opd_builder_claim_here(lv->d->builder)) {
        /* At most one build at a time runs outside the build pool, so nng's other
         * callback threads always answer cached reads. */
        if (!(j = job_new(lv, t)))
            opd_builder_unclaim_here(lv->d->builder);
    }
    if (!j)
        opd_tile_start_build(lv, t);
    return j;
}

void opd_tile_build_here(opd_tile_job *j)
{
    opd_builder_run_here(j->lv->d->builder, job_build, j);
    job_finish(j);
}

/* ===== invalidation ===== */

static void mark_dirty(opd_level *lv, opd_tile *t, uint64_t w, int geometry)
{
    if (geometry)
        drop_base(lv, t, w);
    t->inval_version = w;
    t->known = 0;
    opd_cache_drop(lv->d->cache, &t->blobs);
    if (!t->dirty) {
        t->dirty = 1;
        lv->pending++;
    }
    if (!atomic_load(&lv->d->stopping))
        opd_tile_start_build(lv, t);
}

/* A tile that left the range: its bytes are now "no layers". */
static void mark_gone(opd_level *lv, opd_tile *t, uint64_t w)
{
    if (!t->defined || t->nl > 0 || t->err_status != OP_OK)
        t->change_version = w;
    t->inval_version = w;
    opd_cache_drop(lv->d->cache, &t->blobs);
    drop_base(lv, t, w);
    t->nl = 0;
    t->err_status = OP_OK;
    t->known = t->defined = 1;
    if (t->dirty) {
        t->dirty = 0;
        lv->pending--;
    }
}

/* A new entry for (tx, tz) when it has none, dirty and rebuilding. */
static void add_tile(opd_level *lv, int tx, int tz, uint64_t w, int defined)
{
    if (opd_level_tile(lv, tx, tz))
        return;
    opd_tile *t = opd_level_tile_new(lv, tx, tz, defined);
    if (t)
        mark_dirty(lv, t, w, 1);
}

static int key_order(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

void opd_tiles_invalidate(opd_level *lv, const opd_box *boxes, int nboxes, int geometry,
                          int defined)
{
    opd_snap *s = lv->sn;
    uint64_t w = s->version;
    op_tile_grid g;
    op_tile_grid_derive(&lv->settings, &g);
    for (size_t i = 0; i < lv->map_cap; i++) {
        opd_tile *t = lv->map[i];
        if (!t)
            continue;
        if (!opd_snap_in_rect(s, t->tx, t->tz)) {
            mark_gone(lv, t, w);
            continue;
        }
        int hit = nboxes < 0;
        for (int k = 0; k < nboxes && !hit; k++)
            hit = opd_box_touches(&g, &boxes[k], t->tx, t->tz);
        if (hit)
            mark_dirty(lv, t, w, geometry);
    }
    if (!s->has_tiles)
        return;
    /* New entries only where a span may be: any other tile of the range builds to no
     * layers, which a tile without an entry answers (level.h). */
    if (s->tall) {
        for (int tz = s->rect.tz0; tz <= s->rect.tz1; tz++)
            for (int tx = s->rect.tx0; tx <= s->rect.tx1; tx++)
                add_tile(lv, tx, tz, w, defined);
        return;
    }
    for (int i = 0; i < s->nparts; i++) {
        const opd_part *p = s->parts[i];
        for (size_t k = 0; k < p->nocc; k++) {
            int tx = opd_key_tx(p->occ[k]), tz = opd_key_tz(p->occ[k]);
            if (opd_snap_in_rect(s, tx, tz))
                add_tile(lv, tx, tz, w, defined);
        }
    }
}

size_t opd_tiles_to_add(const opd_level *lv, const opd_snap *s)
{
    if (!s->has_tiles)
        return 0;
    if (s->tall)
        return (size_t)opd_snap_tiles(s);
    /* The tiles without an entry, each once: few next to the level's (the edited mesh's
     * new tiles, those a grown range takes in). */
    uint64_t *k = NULL;
    size_t n = 0, cap = 0, upper = 0;
    for (int i = 0; i < s->nparts; i++) {
        const opd_part *p = s->parts[i];
        for (size_t j = 0; j < p->nocc; j++) {
            int tx = opd_key_tx(p->occ[j]), tz = opd_key_tz(p->occ[j]);
            if (!opd_snap_in_rect(s, tx, tz) || opd_level_tile((opd_level *)lv, tx, tz))
                continue;
            upper++;
            if (n == cap) {
                size_t c = cap ? 2 * cap : 256;
                uint64_t *g = realloc(k, c * sizeof *g);
                if (!g) {
                    free(k);
                    return upper + (size_t)opd_snap_tiles(s); /* no better bound */
                }
                k = g;
                cap = c;
            }
            k[n++] = p->occ[j];
        }
    }
    if (n > 0)
        qsort(k, n, sizeof *k, key_order);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += i == 0 || k[i] != k[i - 1];
    free(k);
    return m;
}

int opd_settings_detour_differ(const op_settings *a, const op_settings *b)
{
    return a->agent_height != b->agent_height || a->agent_radius != b->agent_radius ||
           a->agent_max_climb != b->agent_max_climb || a->cell_height != b->cell_height ||
           a->cell_size != b->cell_size;
}

void opd_tiles_detour_changed(opd_level *lv)
{
    for (size_t i = 0; i < lv->map_cap; i++)
        if (lv->map[i] && opd_snap_in_rect(lv->sn, lv->map[i]->tx, lv->map[i]->tz))
            lv->map[i]->detour_changed = 1;
}

opd_waiter *opd_tiles_drop(opd_level *lv)
{
    opd_waiter *all = NULL;
    for (size_t i = 0; i < lv->map_cap; i++) {
        opd_tile *t = lv->map[i];
        if (!t)
            continue;
        opd_cache_drop(lv->d->cache, &t->blobs);
        opd_cache_drop(lv->d->rebuild, &t->base);
        opd_waiter *w = opd_waiters_take(&t->waiters);
        while (w) {
            opd_waiter *next = w->next;
            opd_waiter_push(&all, w);
            w = next;
        }
    }
    return all;
}

int opd_tiles_bake(opd_level *lv)
{
    const opd_snap *s = lv->sn;
    int started = 0;
    /* Only entries can need a build: a tile without one has no layers (level.h). */
    for (size_t i = 0; i < lv->map_cap; i++) {
        opd_tile *t = lv->map[i];
        if (t && opd_snap_in_rect(s, t->tx, t->tz) && !opd_tile_ready(t) && !t->building) {
            opd_tile_start_build(lv, t);
            started = 1;
        }
    }
    return started;
}
