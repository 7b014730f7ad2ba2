/*
 * onepathd level registry: levels by name, each with its meshes, settings, version,
 * a prepared snapshot (op_level over the soup of protocol §3.2) and one entry per
 * tile: the hashes of its current bytes, the version at which they last changed,
 * the cached blobs (LRU across all levels under --cache-bytes), and the calls
 * waiting for it.
 *
 * Invariants (under the level's state lock):
 *  - every tile of the snapshot's range has an entry; entries outside the range are
 *    kept (their bytes are "no layers") so that changes.since can report them;
 *  - a build of snapshot version V is valid for a tile iff V >= the tile's
 *    inval_version (the last edit that could change it), so a build never holds a
 *    lock and a stale result is simply dropped (and redone if someone waits);
 *  - at most one build per tile is in flight (single flight); waiters are re-dispatched
 *    when it lands;
 *  - pending counts dirty tiles (rebuilds owed to change tracking); changes.since
 *    answers only when it is 0.
 * This file: snapshots, the tile map, the cache, builds, edits, loading. The read
 * methods are in reads.c.
 * Typical: 1..100 levels, 10..10^5 tiles each, 1..100 KiB per tile blob.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "registry_internal.h"

struct bjob {
    opd_registry *r;
    opd_level *lv;
    snap *sn;
    tent *t;
};

/* ===== snapshots ===== */

static void snap_unref(snap *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    op_level_destroy(s->lvl);
    free(s->verts);
    free(s->tris);
    free(s->areas);
    free(s);
}

static float le_float(const uint8_t *p)
{
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int32_t le_int(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

/* The soup of protocol §3.2: meshes (already in name order) concatenated. */
static op_status soup_fill(snap *s, opd_mesh *const *m, int n, size_t nv, size_t nt, op_err *err)
{
    int any_areas = 0;
    for (int i = 0; i < n; i++)
        any_areas |= m[i]->areas != NULL;
    s->verts = malloc((nv ? nv : 1) * 3 * sizeof(float));
    s->tris = malloc((nt ? nt : 1) * 3 * sizeof(int));
    s->areas = any_areas ? malloc(nt ? nt : 1) : NULL;
    if (!s->verts || !s->tris || (any_areas && !s->areas))
        return op_err_set(err, OP_ENOMEM, "level: out of memory for %zu vertices", nv);
    size_t vb = 0, tb = 0;
    for (int i = 0; i < n; i++) {
        size_t mv = m[i]->verts_len / 12, mt = m[i]->tris_len / 12;
        for (size_t k = 0; k < 3 * mv; k++)
            s->verts[3 * vb + k] = le_float(m[i]->verts + 4 * k);
        for (size_t k = 0; k < 3 * mt; k++)
            s->tris[3 * tb + k] = le_int(m[i]->tris + 4 * k) + (int)vb;
        if (any_areas) {
            if (m[i]->areas)
                memcpy(s->areas + tb, m[i]->areas, mt);
            else
                memset(s->areas + tb, 63, mt);
        }
        vb += mv;
        tb += mt;
    }
    s->soup = (op_soup){s->verts, 3 * nv, s->tris, 3 * nt, s->areas};
    s->bytes = nv * 12 + nt * 12 + (any_areas ? nt : 0) + nt * 8;
    return OP_OK;
}

/* Prepares the snapshot of a level's content (CPU work, no lock held). */
static op_status snap_make(opd_registry *r, const op_settings *st, opd_mesh *const *m, int n,
                           uint64_t version, snap **out, op_err *err)
{
    *out = NULL;
    size_t nv = 0, nt = 0;
    for (int i = 0; i < n; i++) {
        nv += m[i]->verts_len / 12;
        nt += m[i]->tris_len / 12;
    }
    if (nv > r->d->cfg.max_level_verts)
        return op_err_set(err, OP_ELIMIT, "level: %zu vertices > --max-level-verts %zu", nv,
                          r->d->cfg.max_level_verts);
    if (nt > r->d->cfg.max_level_tris)
        return op_err_set(err, OP_ELIMIT, "level: %zu triangles > --max-level-tris %zu", nt,
                          r->d->cfg.max_level_tris);
    op_status rc = op_settings_validate(st, err);
    if (rc != OP_OK)
        return rc;
    snap *s = calloc(1, sizeof *s);
    if (!s)
        return op_err_set(err, OP_ENOMEM, "level: out of memory");
    atomic_init(&s->refs, 1);
    s->version = version;
    if ((rc = soup_fill(s, m, n, nv, nt, err)) == OP_OK && nt > 0 &&
        (rc = op_level_create(&s->soup, st, NULL, 0, &s->lvl, err)) == OP_OK) {
        s->rect = op_level_tiles(s->lvl);
        s->has_tiles = 1;
    }
    if (rc != OP_OK) {
        snap_unref(s);
        return rc;
    }
    *out = s;
    return OP_OK;
}

int opd_reg_in_rect(const snap *s, int tx, int tz)
{
    return s && s->has_tiles && tx >= s->rect.tx0 && tx <= s->rect.tx1 && tz >= s->rect.tz0 &&
           tz <= s->rect.tz1;
}

/* ===== tile map (open addressing, never shrinks) ===== */

static size_t tile_hash(int tx, int tz, size_t cap)
{
    uint64_t k = (uint64_t)(uint32_t)tx << 32 | (uint32_t)tz;
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

tent *opd_reg_map_get(opd_level *lv, int tx, int tz)
{
    if (!lv->map_cap)
        return NULL;
    for (size_t i = tile_hash(tx, tz, lv->map_cap);; i = (i + 1) & (lv->map_cap - 1)) {
        tent *t = lv->map[i];
        if (!t)
            return NULL;
        if (t->tx == tx && t->tz == tz)
            return t;
    }
}

static int map_put(opd_level *lv, tent *t)
{
    if (2 * (lv->map_n + 1) > lv->map_cap) {
        size_t cap = lv->map_cap ? 2 * lv->map_cap : 64;
        tent **m = calloc(cap, sizeof *m);
        if (!m)
            return -1;
        for (size_t i = 0; i < lv->map_cap; i++)
            if (lv->map[i]) {
                size_t j = tile_hash(lv->map[i]->tx, lv->map[i]->tz, cap);
                while (m[j])
                    j = (j + 1) & (cap - 1);
                m[j] = lv->map[i];
            }
        free(lv->map);
        lv->map = m;
        lv->map_cap = cap;
    }
    size_t j = tile_hash(t->tx, t->tz, lv->map_cap);
    while (lv->map[j])
        j = (j + 1) & (lv->map_cap - 1);
    lv->map[j] = t;
    lv->map_n++;
    return 0;
}

/* ===== cache ===== */

static void lru_unlink(opd_registry *r, tent *t)
{
    if (!t->in_lru)
        return;
    if (t->lru_prev)
        t->lru_prev->lru_next = t->lru_next;
    else
        r->lru_head = t->lru_next;
    if (t->lru_next)
        t->lru_next->lru_prev = t->lru_prev;
    else
        r->lru_tail = t->lru_prev;
    t->lru_prev = t->lru_next = NULL;
    t->in_lru = 0;
}

static void lru_push(opd_registry *r, tent *t)
{
    t->lru_prev = NULL;
    t->lru_next = r->lru_head;
    if (r->lru_head)
        r->lru_head->lru_prev = t;
    else
        r->lru_tail = t;
    r->lru_head = t;
    t->in_lru = 1;
}

static void free_blobs(op_bytes *b, int n)
{
    for (int i = 0; b && i < n; i++)
        op_bytes_free(&b[i]);
    free(b);
}

/* Drops a tile's cached blobs (level lock held). */
static void drop_blobs(opd_registry *r, tent *t)
{
    if (!t->blobs)
        return;
    pthread_mutex_lock(&r->cache_mu);
    lru_unlink(r, t);
    r->cache_bytes -= t->blob_bytes;
    pthread_mutex_unlock(&r->cache_mu);
    free_blobs(t->blobs, t->nl);
    t->blobs = NULL;
    t->blob_bytes = 0;
}

void opd_reg_touch(opd_registry *r, tent *t)
{
    pthread_mutex_lock(&r->cache_mu);
    if (t->in_lru) {
        lru_unlink(r, t);
        lru_push(r, t);
    }
    pthread_mutex_unlock(&r->cache_mu);
}

/* Evicts least recently used blobs over --cache-bytes (no level lock held). The most
 * recent entry is never evicted, so a tile bigger than the cache is still served. */
static void evict(opd_registry *r)
{
    typedef struct gone {
        op_bytes *b;
        int n;
    } gone;
    gone g[64];
    int ng = 0, evicted = 0;
    pthread_mutex_lock(&r->cache_mu);
    tent *t = r->lru_tail;
    while (r->cache_bytes > r->d->cfg.cache_bytes && t && t != r->lru_head && ng < 64) {
        tent *prev = t->lru_prev;
        /* Lock order is level -> cache: only try the level lock from here. */
        if (pthread_mutex_trylock(&t->lv->mu) == 0) {
            lru_unlink(r, t);
            r->cache_bytes -= t->blob_bytes;
            g[ng++] = (gone){t->blobs, t->nl};
            t->blobs = NULL;
            t->blob_bytes = 0;
            pthread_mutex_unlock(&t->lv->mu);
            evicted++;
        }
        t = prev;
    }
    pthread_mutex_unlock(&r->cache_mu);
    for (int i = 0; i < ng; i++)
        free_blobs(g[i].b, g[i].n);
    if (evicted)
        opd_stats_cache(&r->d->stats, 0, 0, evicted);
}

/* ===== levels ===== */

static void level_free(opd_level *lv)
{
    for (size_t i = 0; i < lv->map_cap; i++) {
        tent *t = lv->map[i];
        if (!t)
            continue;
        drop_blobs(lv->r, t);
        free(t->layers);
        free(t->hashes);
        free(t->err_msg);
        free(t);
    }
    free(lv->map);
    for (int i = 0; i < lv->nmeshes; i++)
        opd_mesh_free(lv->meshes[i]);
    free(lv->meshes);
    snap_unref(lv->sn);
    pthread_mutex_destroy(&lv->mu);
    pthread_mutex_destroy(&lv->edit_mu);
    free(lv);
}

void opd_level_unref(opd_level *lv)
{
    if (lv && atomic_fetch_sub(&lv->refs, 1) == 1)
        level_free(lv);
}

static opd_level *find_locked(opd_registry *r, const char *name, int *index)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->levels[i]->name, name)) {
            if (index)
                *index = i;
            return r->levels[i];
        }
    return NULL;
}

opd_level *opd_level_find(opd_registry *r, const char *name)
{
    pthread_mutex_lock(&r->mu);
    opd_level *lv = find_locked(r, name, NULL);
    if (lv)
        atomic_fetch_add(&lv->refs, 1);
    pthread_mutex_unlock(&r->mu);
    return lv;
}

/* A level that exists (version > 0), or NULL. */
opd_level *opd_reg_find_live(opd_registry *r, const char *name, op_err *err)
{
    opd_level *lv = opd_level_find(r, name);
    if (lv) {
        pthread_mutex_lock(&lv->mu);
        int live = lv->version > 0 && !lv->dropped;
        pthread_mutex_unlock(&lv->mu);
        if (live)
            return lv;
        opd_level_unref(lv);
    }
    op_err_set(err, OP_ENOTFOUND, "no level '%s'", name);
    return NULL;
}

static opd_level *level_new(opd_registry *r, const char *name)
{
    opd_level *lv = calloc(1, sizeof *lv);
    if (!lv)
        return NULL;
    atomic_init(&lv->refs, 1);
    lv->r = r;
    snprintf(lv->name, sizeof lv->name, "%s", name);
    pthread_mutex_init(&lv->mu, NULL);
    pthread_mutex_init(&lv->edit_mu, NULL);
    return lv;
}

/* Finds or creates (version 0) a level; a reference. */
static op_status find_or_create(opd_registry *r, const char *name, opd_level **out, op_err *err)
{
    pthread_mutex_lock(&r->mu);
    opd_level *lv = find_locked(r, name, NULL);
    op_status st = OP_OK;
    if (!lv) {
        if (r->n >= r->d->cfg.max_levels)
            st = op_err_set(err, OP_ELIMIT, "level '%s': %d levels = --max-levels", name, r->n);
        else if (r->n == r->cap) {
            int cap = r->cap ? 2 * r->cap : 16;
            opd_level **l = realloc(r->levels, (size_t)cap * sizeof *l);
            if (!l)
                st = op_err_set(err, OP_ENOMEM, "registry: out of memory");
            else {
                r->levels = l;
                r->cap = cap;
            }
        }
        if (st == OP_OK && !(lv = level_new(r, name)))
            st = op_err_set(err, OP_ENOMEM, "registry: out of memory");
        if (st == OP_OK)
            r->levels[r->n++] = lv;
    }
    if (lv)
        atomic_fetch_add(&lv->refs, 1);
    pthread_mutex_unlock(&r->mu);
    *out = lv;
    return st;
}

/* Removes lv from the table (if it is there) and drops the table's reference. */
static void table_remove(opd_registry *r, opd_level *lv)
{
    int idx = -1;
    pthread_mutex_lock(&r->mu);
    if (find_locked(r, lv->name, &idx) == lv) {
        r->levels[idx] = r->levels[--r->n];
    } else {
        idx = -1;
    }
    pthread_mutex_unlock(&r->mu);
    if (idx >= 0)
        opd_level_unref(lv);
}

/* ===== builds ===== */

static void wake_list(opd_call **list)
{
    opd_call *c = *list;
    *list = NULL;
    while (c) {
        opd_call *next = c->next_wait;
        c->next_wait = NULL;
        opd_call_redispatch(c);
        c = next;
    }
}

/* Detaches a wait list (level lock held) to be answered by answer_list after unlock. */
static void take_list(opd_call **list, opd_call **out)
{
    *out = *list;
    *list = NULL;
}

/* Answers detached calls on this thread (no lock held): the build worker that built a
 * tile replies to its waiters itself instead of waking a request thread. */
static void answer_list(opd_call *c)
{
    while (c) {
        opd_call *next = c->next_wait;
        c->next_wait = NULL;
        c->woken = 1; /* should its tile be gone again, no nested build on this stack */
        opd_dispatch(c);
        c = next;
    }
}

static void build_job(void *arg, op_arena *out, op_arena *scratch);
static bjob *job_new(opd_level *lv, tent *t);

/* Starts the single build of t from the current snapshot (level lock held). */
void opd_reg_start_build(opd_level *lv, tent *t)
{
    if (t->building || !opd_reg_in_rect(lv->sn, t->tx, t->tz))
        return;
    bjob *j = job_new(lv, t);
    if (!j)
        return;
    if (opd_pool_submit(lv->r->d->builds, build_job, j) != 0) {
        t->building = 0;
        lv->building--;
        atomic_fetch_sub(&lv->refs, 1); /* the table still holds one */
        snap_unref(j->sn);
        free(j);
    }
}

typedef struct bresult {
    op_status st;
    char msg[OP_ERR_MSG_MAX];
    int nl;
    int *layers;
    uint64_t *hashes;
    op_bytes *blobs;
    size_t bytes;
} bresult;

static void bresult_free(bresult *b)
{
    free(b->layers);
    free(b->hashes);
    free_blobs(b->blobs, b->nl);
}

/* The same two calls per tile as `onepath bake`: the blobs are byte-identical. */
static void build_tile(const snap *sn, int tx, int tz, op_arena *out, op_arena *scratch, bresult *b)
{
    op_err e;
    op_err_clear(&e);
    op_tile_stages st;
    memset(b, 0, sizeof *b);
    if (!out || !scratch)
        b->st = op_err_set(&e, OP_ENOMEM, "tile (%d, %d): no arena", tx, tz);
    else
        b->st = op_level_build_stages(sn->lvl, tx, tz, OP_STAGE_TILE, 0, out, scratch, &st, &e);
    int n = b->st == OP_OK ? st.ntiles : 0;
    if (b->st == OP_OK && n > 0) {
        b->layers = calloc((size_t)n, sizeof *b->layers);
        b->hashes = calloc((size_t)n, sizeof *b->hashes);
        b->blobs = calloc((size_t)n, sizeof *b->blobs);
        if (!b->layers || !b->hashes || !b->blobs)
            b->st = op_err_set(&e, OP_ENOMEM, "tile (%d, %d): out of memory", tx, tz);
    }
    for (int k = 0; b->st == OP_OK && k < n; k++) {
        b->st = op_tile_encode(&st.tiles[k], &b->blobs[k], &b->hashes[k], &e);
        b->layers[k] = st.tiles[k].layer;
        b->bytes += b->blobs[k].len;
        b->nl = k + 1;
    }
    if (b->st != OP_OK) {
        bresult_free(b);
        memset(b, 0, sizeof *b);
        b->st = e.status ? e.status : OP_EINTERNAL;
        snprintf(b->msg, sizeof b->msg, "%s", e.msg);
    }
}

static int same_content(const tent *t, const bresult *b)
{
    if (t->nl != b->nl || (t->err_status != OP_OK) != (b->st != OP_OK))
        return 0;
    for (int k = 0; k < b->nl; k++)
        if (t->layers[k] != b->layers[k] || t->hashes[k] != b->hashes[k])
            return 0;
    return 1;
}

/* Installs a valid result (level lock held); takes b's arrays. */
static void install(opd_registry *r, opd_level *lv, tent *t, bresult *b)
{
    int changed = t->defined ? !same_content(t, b) : (b->nl > 0 || b->st != OP_OK);
    if (changed)
        t->change_version = t->inval_version;
    drop_blobs(r, t);
    free(t->layers);
    free(t->hashes);
    free(t->err_msg);
    t->layers = b->layers;
    t->hashes = b->hashes;
    t->nl = b->nl;
    t->err_status = b->st;
    t->err_msg = b->st != OP_OK ? strdup(b->msg) : NULL;
    t->known = t->defined = 1;
    if (b->nl > 0) {
        t->blobs = b->blobs;
        t->blob_bytes = b->bytes;
        pthread_mutex_lock(&r->cache_mu);
        lru_push(r, t);
        r->cache_bytes += b->bytes;
        pthread_mutex_unlock(&r->cache_mu);
    }
    if (t->dirty) {
        t->dirty = 0;
        lv->pending--;
    }
}

/* Builds j's tile and installs the result; the calls to answer come back in ready and
 * polls (answered by the caller once it holds no lock). */
static void build_run(bjob *j, op_arena *out, op_arena *scratch, opd_call **ready, opd_call **polls)
{
    opd_registry *r = j->r;
    opd_level *lv = j->lv;
    tent *t = j->t;
    bresult b;
    memset(&b, 0, sizeof b);
    *ready = *polls = NULL;
    pthread_mutex_lock(&lv->mu);
    /* Shutting down: only builds that someone waits for still run. */
    int skip = lv->dropped || j->sn->version < t->inval_version ||
               (atomic_load(&r->d->stopping) && !t->waiters);
    pthread_mutex_unlock(&lv->mu);
    if (!skip) {
        build_tile(j->sn, t->tx, t->tz, out, scratch, &b);
        opd_stats_build(&r->d->stats);
    }
    pthread_mutex_lock(&lv->mu);
    t->building = 0;
    lv->building--;
    int valid = !skip && !lv->dropped && j->sn->version >= t->inval_version;
    if (valid) {
        install(r, lv, t, &b);
        take_list(&t->waiters, ready);
        if (lv->pending == 0)
            take_list(&lv->pollers, polls);
    } else {
        bresult_free(&b);
        if (lv->dropped || !opd_reg_in_rect(lv->sn, t->tx, t->tz))
            take_list(&t->waiters, ready); /* they answer ENOTFOUND / ERANGE */
        else if ((t->dirty && !atomic_load(&r->d->stopping)) || t->waiters)
            opd_reg_start_build(lv, t);
    }
    pthread_mutex_unlock(&lv->mu);
}

/* Answers what a build woke (before evict: a tile is answered while it is the newest
 * entry of the cache) and releases the job. */
static void build_finish(bjob *j, opd_call *ready, opd_call *polls)
{
    opd_registry *r = j->r;
    answer_list(ready);
    answer_list(polls);
    snap_unref(j->sn);
    opd_level_unref(j->lv);
    free(j);
    evict(r);
}

static void build_job(void *arg, op_arena *out, op_arena *scratch)
{
    opd_call *ready, *polls;
    build_run(arg, out, scratch, &ready, &polls);
    build_finish(arg, ready, polls);
}

/* A job for t's single build, holding references to the level and the snapshot (level
 * lock held); NULL when out of memory. */
static bjob *job_new(opd_level *lv, tent *t)
{
    bjob *j = malloc(sizeof *j);
    if (!j)
        return NULL;
    *j = (bjob){lv->r, lv, lv->sn, t};
    atomic_fetch_add(&lv->refs, 1);
    atomic_fetch_add(&lv->sn->refs, 1);
    t->building = 1;
    lv->building++;
    return j;
}

bjob *opd_reg_claim_here(opd_level *lv, tent *t)
{
    opd_registry *r = lv->r;
    if (t->building || !opd_reg_in_rect(lv->sn, t->tx, t->tz) || !r->here_out ||
        atomic_exchange(&r->here_busy, 1))
        return NULL;
    bjob *j = job_new(lv, t);
    if (!j)
        atomic_store(&r->here_busy, 0);
    return j;
}

void opd_reg_build_here(bjob *j)
{
    opd_registry *r = j->r;
    opd_call *ready, *polls;
    build_run(j, r->here_out, r->here_scratch, &ready, &polls);
    op_arena_reset(r->here_out);
    op_arena_reset(r->here_scratch);
    atomic_store(&r->here_busy, 0);
    build_finish(j, ready, polls);
}

/* ===== edits ===== */

/* A box of an edit in XZ (protocol §5.2). */
typedef struct box {
    float bmin[3], bmax[3];
} box;

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* Whether tile t's build grid (the tile expanded by the border) touches the box. One
 * extra cell on each side absorbs the rounding of cell indices, so the test never
 * misses a tile the build selection would reach (an extra tile is rebuilt and found
 * unchanged). */
static int box_touches(const op_tile_grid *g, const box *b, int tx, int tz)
{
    int t[2] = {tx, tz};
    for (int i = 0; i < 2; i++) {
        int ax = i ? 2 : 0;
        double o = i ? g->origin_z : g->origin_x; /* the grid origin (settings) */
        int64_t c0 = (int64_t)floor(((double)b->bmin[ax] - o) / g->cs) - 1 - g->border;
        int64_t c1 = (int64_t)floor(((double)b->bmax[ax] - o) / g->cs) + 1 + g->border;
        if (t[i] < floor_div(c0, g->tile_cells) || t[i] > floor_div(c1, g->tile_cells))
            return 0;
    }
    return 1;
}

static tent *tent_new(opd_level *lv, int tx, int tz, int defined)
{
    tent *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->tx = tx;
    t->tz = tz;
    t->lv = lv;
    t->defined = defined; /* a new level's tiles had no layers; a loaded one's are unknown */
    if (map_put(lv, t) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

static void mark_dirty(opd_level *lv, tent *t, uint64_t w)
{
    t->inval_version = w;
    t->known = 0;
    drop_blobs(lv->r, t);
    if (!t->dirty) {
        t->dirty = 1;
        lv->pending++;
    }
    if (!atomic_load(&lv->r->d->stopping))
        opd_reg_start_build(lv, t);
}

/* A tile that left the range: its bytes are now "no layers". */
static void mark_gone(opd_level *lv, tent *t, uint64_t w)
{
    if (!t->defined || t->nl > 0 || t->err_status != OP_OK)
        t->change_version = w;
    t->inval_version = w;
    drop_blobs(lv->r, t);
    t->nl = 0;
    t->err_status = OP_OK;
    t->known = t->defined = 1;
    if (t->dirty) {
        t->dirty = 0;
        lv->pending--;
    }
}

/* Installs a new snapshot at version w and invalidates what it can change: all
 * tiles (boxes NULL) or those whose grid touches a box (level lock held). */
static void invalidate(opd_level *lv, const box *boxes, int nboxes, int defined)
{
    snap *s = lv->sn;
    uint64_t w = s->version;
    op_tile_grid g;
    op_tile_grid_derive(&lv->settings, &g);
    for (size_t i = 0; i < lv->map_cap; i++) {
        tent *t = lv->map[i];
        if (!t)
            continue;
        if (!opd_reg_in_rect(s, t->tx, t->tz)) {
            mark_gone(lv, t, w);
            continue;
        }
        int hit = !boxes;
        for (int k = 0; k < nboxes && !hit; k++)
            hit = box_touches(&g, &boxes[k], t->tx, t->tz);
        if (hit)
            mark_dirty(lv, t, w);
    }
    if (!s->has_tiles)
        return;
    for (int tz = s->rect.tz0; tz <= s->rect.tz1; tz++)
        for (int tx = s->rect.tx0; tx <= s->rect.tx1; tx++)
            if (!opd_reg_map_get(lv, tx, tz)) {
                tent *t = tent_new(lv, tx, tz, defined);
                if (t)
                    mark_dirty(lv, t, w);
            }
}

static void free_meshes(opd_mesh **m, int n)
{
    for (int i = 0; i < n; i++)
        opd_mesh_free(m[i]);
    free(m);
}

static size_t mesh_bytes(opd_mesh *const *m, int n)
{
    size_t b = 0;
    for (int i = 0; i < n; i++)
        b += sizeof *m[i] + m[i]->verts_len + m[i]->tris_len + m[i]->areas_len;
    return b;
}

/* The new content of an edit, prepared and persisted; installed by commit. */
typedef struct edit {
    op_settings settings;
    opd_mesh **meshes; /* the new list (owned once committed) */
    int nmeshes;
    opd_mesh **gone; /* meshes of the old list to free after commit */
    int ngone;
    box boxes[2];
    int nboxes; /* -1: everything */
    snap *sn;
} edit;

/* Prepares and persists e for lv (edit lock held), then installs it. */
static op_status commit(opd_registry *r, opd_level *lv, edit *e, uint64_t *version, op_err *err)
{
    uint64_t w = lv->version + 1;
    op_status st = snap_make(r, &e->settings, e->meshes, e->nmeshes, w, &e->sn, err);
    if (st != OP_OK)
        return st;
    opd_level_data ld;
    memset(&ld, 0, sizeof ld);
    snprintf(ld.name, sizeof ld.name, "%s", lv->name);
    ld.version = w;
    ld.settings = e->settings;
    ld.meshes = e->meshes;
    ld.nmeshes = e->nmeshes;
    if (r->d->cfg.data_dir &&
        (st = opd_store_write(r->d->cfg.data_dir, &ld, r->d->cfg.no_fsync, err)) != OP_OK) {
        snap_unref(e->sn);
        e->sn = NULL;
        return st;
    }
    pthread_mutex_lock(&lv->mu);
    opd_mesh **old = lv->meshes;
    snap *old_sn = lv->sn;
    lv->meshes = e->meshes;
    lv->nmeshes = e->nmeshes;
    lv->mesh_bytes = mesh_bytes(e->meshes, e->nmeshes);
    lv->settings = e->settings;
    lv->version = w;
    lv->sn = e->sn;
    invalidate(lv, e->nboxes < 0 ? NULL : e->boxes, e->nboxes < 0 ? 0 : e->nboxes, 1);
    if (lv->pending == 0)
        wake_list(&lv->pollers);
    pthread_mutex_unlock(&lv->mu);
    /* For level.put e->gone is the old list itself: free its meshes before the array. */
    for (int i = 0; i < e->ngone; i++)
        opd_mesh_free(e->gone[i]);
    free(old);
    snap_unref(old_sn);
    *version = w;
    return OP_OK;
}

static int mesh_cmp(const void *a, const void *b)
{
    return strcmp((*(opd_mesh *const *)a)->name, (*(opd_mesh *const *)b)->name);
}

static int level_same(const opd_level *lv, const op_settings *s, opd_mesh **m, int n)
{
    if (lv->version == 0 || lv->nmeshes != n || !opd_settings_equal(&lv->settings, s))
        return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(lv->meshes[i]->name, m[i]->name) || !opd_mesh_equal(lv->meshes[i], m[i]))
            return 0;
    return 1;
}

op_status opd_level_put(opd_registry *r, const char *name, const op_settings *s, opd_mesh **meshes,
                        int nmeshes, uint64_t *version, int *changed, op_err *err)
{
    *changed = 0;
    *version = 0;
    qsort(meshes, (size_t)nmeshes, sizeof *meshes, mesh_cmp);
    for (int i = 1; i < nmeshes; i++)
        if (!strcmp(meshes[i - 1]->name, meshes[i]->name)) {
            op_err_set(err, OP_EINVAL, "level.put: mesh name '%s' appears twice", meshes[i]->name);
            free_meshes(meshes, nmeshes);
            return OP_EINVAL;
        }
    opd_level *lv;
    op_status st = find_or_create(r, name, &lv, err);
    if (st != OP_OK) {
        free_meshes(meshes, nmeshes);
        return st;
    }
    pthread_mutex_lock(&lv->edit_mu);
    if (lv->dropped) {
        st = op_err_set(err, OP_EBUSY, "level '%s' was dropped meanwhile: retry", name);
    } else if (level_same(lv, s, meshes, nmeshes)) {
        *version = lv->version;
    } else {
        edit e = {.settings = *s, .meshes = meshes, .nmeshes = nmeshes, .nboxes = -1};
        e.gone = lv->meshes; /* freed by commit, the list itself too */
        e.ngone = lv->nmeshes;
        st = commit(r, lv, &e, version, err);
        if (st == OP_OK) {
            *changed = 1;
            meshes = NULL;
        }
    }
    int orphan = st != OP_OK && lv->version == 0;
    if (orphan) {
        pthread_mutex_lock(&lv->mu);
        lv->dropped = 1; /* an edit waiting behind this one must not revive it */
        pthread_mutex_unlock(&lv->mu);
    }
    pthread_mutex_unlock(&lv->edit_mu);
    if (meshes)
        free_meshes(meshes, nmeshes);
    if (orphan)
        table_remove(r, lv);
    opd_level_unref(lv);
    return st;
}

/* The level for an edit, edit lock held; NULL (and err) when it does not exist. */
static opd_level *edit_begin(opd_registry *r, const char *name, op_err *err)
{
    opd_level *lv = opd_reg_find_live(r, name, err);
    if (!lv)
        return NULL;
    pthread_mutex_lock(&lv->edit_mu);
    if (lv->dropped || lv->version == 0) {
        pthread_mutex_unlock(&lv->edit_mu);
        opd_level_unref(lv);
        op_err_set(err, OP_ENOTFOUND, "no level '%s'", name);
        return NULL;
    }
    return lv;
}

static void edit_end(opd_level *lv)
{
    pthread_mutex_unlock(&lv->edit_mu);
    opd_level_unref(lv);
}

static void add_box(edit *e, const opd_mesh *m)
{
    if (!m->has_box)
        return;
    memcpy(e->boxes[e->nboxes].bmin, m->bmin, sizeof m->bmin);
    memcpy(e->boxes[e->nboxes].bmax, m->bmax, sizeof m->bmax);
    e->nboxes++;
}

/* The level's mesh list with `m` put (replacing its namesake) or, m NULL, with the
 * mesh `drop` removed. */
static op_status edit_list(opd_level *lv, opd_mesh *m, const char *drop, edit *e, op_err *err)
{
    const char *name = m ? m->name : drop;
    int n = lv->nmeshes, at = -1;
    for (int i = 0; i < n && at < 0; i++)
        if (!strcmp(lv->meshes[i]->name, name))
            at = i;
    e->meshes = calloc((size_t)n + 1, sizeof *e->meshes);
    e->gone = calloc(1, sizeof *e->gone);
    if (!e->meshes || !e->gone)
        return op_err_set(err, OP_ENOMEM, "edit: out of memory");
    int k = 0, placed = 0;
    for (int i = 0; i < n; i++) {
        if (i == at) {
            e->gone[e->ngone++] = lv->meshes[i];
            add_box(e, lv->meshes[i]);
            continue;
        }
        if (m && !placed && strcmp(m->name, lv->meshes[i]->name) < 0) {
            e->meshes[k++] = m;
            placed = 1;
        }
        e->meshes[k++] = lv->meshes[i];
    }
    if (m && !placed)
        e->meshes[k++] = m;
    if (m)
        add_box(e, m);
    e->nmeshes = k;
    e->settings = lv->settings;
    return OP_OK;
}

static const opd_mesh *mesh_named(const opd_level *lv, const char *name)
{
    for (int i = 0; i < lv->nmeshes; i++)
        if (!strcmp(lv->meshes[i]->name, name))
            return lv->meshes[i];
    return NULL;
}

/* Runs a mesh edit: m put (taken) or `drop` dropped. */
static op_status mesh_edit(opd_registry *r, const char *level, opd_mesh *m, const char *drop,
                           uint64_t *version, int *changed, op_err *err)
{
    *changed = 0;
    *version = 0;
    opd_level *lv = edit_begin(r, level, err);
    if (!lv) {
        opd_mesh_free(m);
        return err->status;
    }
    const opd_mesh *old = mesh_named(lv, m ? m->name : drop);
    op_status st = OP_OK;
    if ((m && old && opd_mesh_equal(old, m)) || (!m && !old)) {
        *version = lv->version; /* protocol §6: nothing to change */
        opd_mesh_free(m);
    } else {
        edit e;
        memset(&e, 0, sizeof e);
        if ((st = edit_list(lv, m, drop, &e, err)) == OP_OK)
            st = commit(r, lv, &e, version, err);
        if (st == OP_OK)
            *changed = 1;
        else {
            free(e.meshes);
            opd_mesh_free(m);
        }
        free(e.gone);
    }
    edit_end(lv);
    return st;
}

op_status opd_mesh_put(opd_registry *r, const char *level, opd_mesh *mesh, uint64_t *version,
                       int *changed, op_err *err)
{
    return mesh_edit(r, level, mesh, NULL, version, changed, err);
}

op_status opd_mesh_drop(opd_registry *r, const char *level, const char *mesh, uint64_t *version,
                        int *changed, op_err *err)
{
    return mesh_edit(r, level, NULL, mesh, version, changed, err);
}

op_status opd_level_drop(opd_registry *r, const char *name, int *dropped, op_err *err)
{
    *dropped = 0;
    op_err e2;
    opd_level *lv = edit_begin(r, name, &e2);
    if (!lv)
        return OP_OK; /* protocol §6: dropping what is not there changes nothing */
    op_status st = OP_OK;
    if (r->d->cfg.data_dir)
        st = opd_store_remove(r->d->cfg.data_dir, name, r->d->cfg.no_fsync, err);
    if (st == OP_OK) {
        pthread_mutex_lock(&lv->mu);
        lv->dropped = 1;
        for (size_t i = 0; i < lv->map_cap; i++)
            if (lv->map[i]) {
                drop_blobs(r, lv->map[i]);
                wake_list(&lv->map[i]->waiters);
            }
        wake_list(&lv->pollers);
        pthread_mutex_unlock(&lv->mu);
        table_remove(r, lv);
        *dropped = 1;
    }
    edit_end(lv);
    return st;
}

/* ===== lifetime ===== */

opd_registry *opd_registry_create(opd_daemon *d)
{
    opd_registry *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->d = d;
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->cache_mu, NULL);
    atomic_init(&r->here_busy, 0);
    r->here_out = op_arena_create(0);
    r->here_scratch = op_arena_create(0);
    if (!r->here_out || !r->here_scratch) { /* no builds on the receiving thread */
        op_arena_destroy(r->here_out);
        op_arena_destroy(r->here_scratch);
        r->here_out = r->here_scratch = NULL;
    }
    return r;
}

void opd_registry_destroy(opd_registry *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++)
        opd_level_unref(r->levels[i]);
    free(r->levels);
    op_arena_destroy(r->here_out);
    op_arena_destroy(r->here_scratch);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->cache_mu);
    free(r);
}

static void load_log(void *ctx, const char *msg)
{
    opd_registry *r = ctx;
    opd_log(r->d, "%s", msg);
}

/* A level read from its file: tiles are rebuilt in the background, their earlier
 * bytes unknown (so a tile with layers reports the loaded version as its change). */
static void load_level(void *ctx, opd_level_data *ld)
{
    opd_registry *r = ctx;
    op_err e;
    op_err_clear(&e);
    snap *s = NULL;
    opd_level *lv = NULL;
    op_status st = snap_make(r, &ld->settings, ld->meshes, ld->nmeshes, ld->version, &s, &e);
    if (st == OP_OK)
        st = find_or_create(r, ld->name, &lv, &e);
    if (st != OP_OK) {
        opd_log(r->d, "OP-STORE-SKIP level '%s': %s", ld->name, e.msg);
        snap_unref(s);
        opd_level_unref(lv);
        opd_level_data_fini(ld);
        return;
    }
    pthread_mutex_lock(&lv->mu);
    lv->settings = ld->settings;
    lv->meshes = ld->meshes;
    lv->nmeshes = ld->nmeshes;
    lv->mesh_bytes = mesh_bytes(ld->meshes, ld->nmeshes);
    lv->version = ld->version;
    lv->sn = s;
    invalidate(lv, NULL, 0, 0);
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    opd_log(r->d, "OP-STORE-LOAD level '%s' version %llu, %d meshes", ld->name,
            (unsigned long long)ld->version, ld->nmeshes);
}

void opd_registry_load(opd_registry *r)
{
    if (r->d->cfg.data_dir)
        opd_store_load_all(r->d->cfg.data_dir, load_level, load_log, r);
}
