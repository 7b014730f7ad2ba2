/*
 * onepathd edits (protocol §5, §6, §7): level.put, level.drop, mesh.put, mesh.drop,
 * volume.put, volume.drop, and the levels read back from the data directory at start. An
 * edit runs under its level's edit lock, in three steps:
 *   1. prepare: the new mesh list or volume set and its snapshot (only the mesh it puts
 *      is prepared, snapshot.c; a volume edit shares every part); a refused edit changes
 *      nothing;
 *   2. persist: a mesh or volume edit appends one record to the level's journal and
 *      fsyncs it; a level.put writes a new snapshot and an empty journal (store.c,
 *      journal.c); a failed write is OP_EIO and the edit is not applied;
 *   3. install: under the state lock, the content and snapshot are swapped in at the
 *      next version and the tiles the edit can change are marked (tiles.c): a mesh edit
 *      changes their geometry (their rebuild bases go), a volume edit does not.
 * An edit that would change nothing (§6) stops before step 1 and bumps no version.
 * Once a level's journal outgrows --compact-bytes and its snapshot, the background pool
 * compacts it (§7.5): the snapshot at version S is written beside the edits that go on,
 * then, under the edit lock, renamed into place and the journal cut to the records
 * after S.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "level.h"
#include "store.h"

/* The new content of an edit, prepared; installed by commit. */
typedef struct edit {
    op_settings settings;
    int new_meshes;    /* meshes is the level's new list (a volume edit keeps the old) */
    opd_mesh **meshes; /* the new list (taken by commit) */
    int nmeshes;
    opd_box boxes[2];
    int nboxes;             /* -1: everything */
    int geometry;           /* the marked tiles' triangles may change */
    opd_snap *sn;           /* the new snapshot: settings, parts and volumes */
    msgpack_sbuffer record; /* the journal record (mesh and volume edits) */
} edit;

static op_status broken_error(const opd_level *lv, op_err *err)
{
    return op_err_set(err, OP_EIO,
                      "level '%s': its files are in doubt after a failed write (see the log); "
                      "put the level again or restart onepathd",
                      lv->name);
}

/* A new epoch: random, never 0 (protocol §7.3). */
static uint64_t new_epoch(void)
{
    uint64_t e = 0;
    if (getrandom(&e, sizeof e, 0) != (ssize_t)sizeof e) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        e = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 48);
    }
    return e ? e : 1;
}

/* ===== step 2: persist ===== */

/* A mesh edit: its record appended to the journal (made first when there is none). */
static op_status persist_record(opd_level *lv, edit *e, op_err *err)
{
    opd_daemon *d = lv->d;
    op_status st;
    if (!lv->jr) {
        st =
            opd_journal_create(d->cfg.data_dir, lv->name, lv->epoch, d->cfg.no_fsync, &lv->jr, err);
        if (!lv->jr)
            return st;
    }
    return opd_journal_append(lv->jr, e->record.data, e->record.size, err);
}

/* A level.put: the snapshot, then an empty journal (protocol §7.6). */
static op_status persist_level(opd_level *lv, edit *e, uint64_t w, uint64_t epoch, op_err *err)
{
    opd_daemon *d = lv->d;
    opd_level_data ld;
    memset(&ld, 0, sizeof ld);
    snprintf(ld.name, sizeof ld.name, "%s", lv->name);
    ld.version = w;
    ld.epoch = epoch;
    ld.settings = e->settings;
    ld.meshes = e->meshes;
    ld.nmeshes = e->nmeshes;
    ld.vols = e->sn->vols;
    int renamed;
    size_t bytes;
    op_status st =
        opd_store_write(d->cfg.data_dir, &ld, NULL, d->cfg.no_fsync, &renamed, &bytes, err);
    if (st != OP_OK) {
        if (renamed) {
            lv->broken = 1; /* the new snapshot may be on disk, the level is not */
            opd_log(d, "OP-STORE-DOUBT level '%s': %s", lv->name, err->msg);
        }
        return st;
    }
    lv->snapshot_bytes = bytes;
    /* Committed. The old journal's records are all below w (skipped at load) or of another
     * epoch (stale), so a failure to replace it only costs space: logged, not refused. */
    opd_journal *jr = NULL;
    op_err je;
    op_status js = opd_journal_create(d->cfg.data_dir, lv->name, epoch, d->cfg.no_fsync, &jr, &je);
    if (js != OP_OK)
        opd_log(d, "OP-JOURNAL-RESET-FAILED level '%s': %s", lv->name, je.msg);
    if (jr || epoch != lv->epoch) {
        opd_journal_close(lv->jr);
        lv->jr = jr;
    }
    lv->epoch = epoch;
    lv->jr_gen++;
    return OP_OK;
}

/* ===== step 3: install ===== */

/* What lv will hold once e is installed: its geometry, the new snapshot, and its tile
 * entries: those it has (kept) and those the snapshot adds (level.h: one for each tile
 * some triangle may leave a span in, not for every tile of the range). Level lock held. */
static size_t projected_memory(const opd_level *lv, const edit *e)
{
    size_t meshes = lv->mesh_bytes;
    if (e->new_meshes) {
        meshes = 0;
        for (int i = 0; i < e->nmeshes; i++)
            meshes += sizeof *e->meshes[i] + e->meshes[i]->verts_len + e->meshes[i]->tris_len +
                      e->meshes[i]->areas_len;
    }
    size_t live = lv->version > 0 && !lv->dropped;
    size_t tiles = (live ? lv->map_n : 0) + opd_tiles_to_add(lv, e->sn);
    /* A tile's entry, its layers and its hashes are three allocations (each with malloc's
     * header and at least 32 bytes); the map keeps up to two slots a tile. Measured
     * (test_daemon_limits): a million entries hold about 350 MB. */
    size_t per_tile = sizeof(opd_tile) + 3 * OPD_ALLOC_OVERHEAD + 2 * 32 + 2 * sizeof(opd_tile *);
    return sizeof *lv + meshes + e->sn->bytes + tiles * per_tile;
}

/* The memory --max-memory bounds that no eviction can free: the levels less what the
 * caches hold of them, and the path meshes. */
static size_t fixed_memory(opd_daemon *d)
{
    size_t levels;
    int n;
    opd_registry_usage(d->reg, &levels, &n);
    size_t cached = opd_cache_bytes(d->cache) + opd_cache_bytes(d->rebuild);
    return (levels > cached ? levels - cached : 0) + opd_navmeshes_bytes(d->navmeshes);
}

/* --max-memory's rest after the fixed memory goes to the two caches in proportion to
 * their budgets, so caches give way to edits instead of refusing them (protocol §9.1).
 * Called after every edit, drop and the start-up load; eviction follows at once. */
static void fit_caches(opd_daemon *d)
{
    size_t fixed = fixed_memory(d), max = d->cfg.max_memory;
    size_t rest = max > fixed ? max - fixed : 0;
    double b = (double)opd_cache_budget(d->cache), r = (double)opd_cache_budget(d->rebuild);
    size_t room_b = b + r > 0 ? (size_t)((double)rest * (b / (b + r))) : 0;
    opd_cache_set_room(d->cache, room_b);
    opd_cache_set_room(d->rebuild, rest - (room_b < rest ? room_b : rest));
    opd_cache_evict(d->cache);
    opd_cache_evict(d->rebuild);
}

/* --max-memory: the daemon's levels and path meshes after the edit (edit lock held, level
 * lock not); the caches are not counted, they shrink to what is left (fit_caches).
 * OP_ELIMIT naming the flag, before anything is persisted. */
static op_status check_memory(opd_level *lv, const edit *e, op_err *err)
{
    opd_daemon *d = lv->d;
    int built;
    size_t fixed = fixed_memory(d), now = 0, cached = 0;
    pthread_mutex_lock(&lv->mu);
    if (lv->version > 0 && !lv->dropped)
        now = opd_level_memory_parts(lv, &built, &cached);
    size_t after = projected_memory(lv, e);
    pthread_mutex_unlock(&lv->mu);
    now -= cached; /* the level's own part of fixed */
    size_t total = (fixed > now ? fixed - now : 0) + after;
    if (total > d->cfg.max_memory)
        return op_err_set(err, OP_ELIMIT,
                          "level '%s': the edit would bring the daemon to %zu bytes (the level "
                          "%zu: %d tiles) > --max-memory %zu",
                          lv->name, total, after, opd_snap_tiles(e->sn), d->cfg.max_memory);
    return OP_OK;
}

/* Persists e for lv (edit lock held; e->sn prepared), then installs it. */
static op_status commit(opd_level *lv, edit *e, uint64_t *version, op_err *err)
{
    opd_daemon *d = lv->d;
    uint64_t w = lv->version + 1;
    op_status st = check_memory(lv, e, err);
    if (st != OP_OK)
        return st;
    if (d->cfg.data_dir)
        st = e->nboxes < 0 ? persist_level(lv, e, w, lv->version ? lv->epoch : new_epoch(), err)
                           : persist_record(lv, e, err);
    if (st != OP_OK)
        return st;
    pthread_mutex_lock(&lv->mu);
    int nold = 0;
    opd_mesh **old = NULL;
    if (e->new_meshes)
        old = opd_level_set_meshes(lv, e->meshes, e->nmeshes, &nold);
    opd_snap *old_sn = lv->sn;
    int detour =
        e->nboxes < 0 && lv->version > 0 && opd_settings_detour_differ(&lv->settings, &e->settings);
    lv->settings = e->settings;
    lv->version = w;
    lv->sn = e->sn;
    opd_tiles_invalidate(lv, e->boxes, e->nboxes, e->geometry, 1);
    if (detour)
        opd_tiles_detour_changed(lv);
    opd_waiter *polls = lv->pending == 0 ? opd_waiters_take(&lv->pollers) : NULL;
    opd_waiters_wake(polls, OPD_WAKE_QUEUE);
    pthread_mutex_unlock(&lv->mu);
    opd_mesh_list_free(old, nold);
    opd_snap_unref(old_sn);
    e->meshes = NULL;
    e->sn = NULL;
    *version = w;
    fit_caches(d);
    return OP_OK;
}

static void edit_fini(edit *e)
{
    opd_mesh_list_free(e->meshes, e->nmeshes);
    opd_snap_unref(e->sn);
    msgpack_sbuffer_destroy(&e->record);
}

/* ===== compaction (protocol §7.5) ===== */

typedef struct compaction {
    opd_level *lv;
    opd_level_data ld; /* the content at version S (mesh references) */
    uint64_t from;     /* journal offset where the records after S begin */
    uint64_t gen;
} compaction;

static void compact_job(void *arg, op_arena *out, op_arena *scratch)
{
    (void)out;
    (void)scratch;
    compaction *c = arg;
    opd_level *lv = c->lv;
    opd_daemon *d = lv->d;
    op_err e;
    op_err_clear(&e);
    opd_temp t;
    size_t bytes = 0;
    int renamed = 0;
    op_status st = atomic_load(&d->stopping)
                       ? OP_EBUSY
                       : opd_store_write_temp(d->cfg.data_dir, &c->ld, ".compact", d->cfg.no_fsync,
                                              &t, &bytes, &e);
    pthread_mutex_lock(&lv->edit_mu);
    int moot = lv->dropped || lv->jr_gen != c->gen || !lv->jr;
    if (st == OP_OK && moot) {
        opd_file_temp_abandon(&t);
    } else if (st == OP_OK &&
               (st = opd_store_commit_temp(&t, d->cfg.data_dir, lv->name, d->cfg.no_fsync, &renamed,
                                           &e)) == OP_OK) {
        lv->snapshot_bytes = bytes;
        uint64_t before = opd_journal_size(lv->jr);
        st = opd_journal_rewrite(lv->jr, c->from, &e);
        if (st == OP_OK)
            opd_log(d,
                    "OP-COMPACT level '%s' version %llu: snapshot %zu bytes, journal %llu -> "
                    "%llu bytes",
                    lv->name, (unsigned long long)c->ld.version, bytes, (unsigned long long)before,
                    (unsigned long long)opd_journal_size(lv->jr));
    }
    /* A snapshot renamed whose directory fsync failed is still a snapshot of the level
     * (the journal's records after it are unchanged): only logged. */
    if (st != OP_OK && st != OP_EBUSY)
        opd_log(d, "OP-COMPACT-FAILED level '%s' version %llu: %s", lv->name,
                (unsigned long long)c->ld.version, e.msg);
    lv->compacting = 0;
    pthread_mutex_unlock(&lv->edit_mu);
    opd_level_data_fini(&c->ld);
    opd_level_unref(lv);
    free(c);
}

/* Starts a compaction when the journal has outgrown its bounds (edit lock held). */
static void maybe_compact(opd_level *lv)
{
    opd_daemon *d = lv->d;
    if (!lv->jr || lv->compacting || lv->broken || atomic_load(&d->stopping))
        return;
    uint64_t size = opd_journal_size(lv->jr) - OPD_JOURNAL_HEADER;
    if (size <= d->cfg.compact_bytes || size <= lv->snapshot_bytes)
        return;
    compaction *c = calloc(1, sizeof *c);
    opd_mesh **list = calloc((size_t)lv->nmeshes + 1, sizeof *list);
    if (!c || !list) {
        free(c);
        free(list);
        return; /* the next edit tries again */
    }
    for (int i = 0; i < lv->nmeshes; i++)
        list[i] = opd_mesh_ref(lv->meshes[i]);
    c->lv = lv;
    snprintf(c->ld.name, sizeof c->ld.name, "%s", lv->name);
    c->ld.version = lv->version;
    c->ld.epoch = lv->epoch;
    c->ld.settings = lv->settings;
    c->ld.meshes = list;
    c->ld.nmeshes = lv->nmeshes;
    c->ld.vols = opd_vset_ref(lv->sn->vols);
    c->from = opd_journal_size(lv->jr);
    c->gen = lv->jr_gen;
    opd_level_ref(lv);
    lv->compacting = 1;
    if (opd_pool_submit(d->background, compact_job, c) != 0) {
        lv->compacting = 0;
        opd_level_data_fini(&c->ld);
        opd_level_unref(lv);
        free(c);
    }
}

/* ===== the edits ===== */

static int mesh_cmp(const void *a, const void *b)
{
    return strcmp((*(opd_mesh *const *)a)->name, (*(opd_mesh *const *)b)->name);
}

static int level_same(const opd_level *lv, const op_settings *s, opd_mesh **m, int n,
                      const opd_vset *vols)
{
    if (lv->version == 0 || lv->nmeshes != n || !opd_settings_equal(&lv->settings, s) ||
        !opd_vset_equal(lv->sn->vols, vols))
        return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(lv->meshes[i]->name, m[i]->name) || !opd_mesh_equal(lv->meshes[i], m[i]))
            return 0;
    return 1;
}

op_status opd_edit_level_put(opd_registry *r, const char *name, const op_settings *s,
                             opd_mesh **meshes, int nmeshes, opd_vset *vols, uint64_t *version,
                             int *changed, op_err *err)
{
    *changed = 0;
    *version = 0;
    qsort(meshes, (size_t)nmeshes, sizeof *meshes, mesh_cmp);
    for (int i = 1; i < nmeshes; i++)
        if (!strcmp(meshes[i - 1]->name, meshes[i]->name)) {
            op_err_set(err, OP_EINVAL, "level.put: mesh name '%s' appears twice", meshes[i]->name);
            opd_mesh_list_free(meshes, nmeshes);
            opd_vset_unref(vols);
            return OP_EINVAL;
        }
    opd_level *lv;
    op_status st = opd_registry_find_or_create(r, name, &lv, err);
    if (st != OP_OK) {
        opd_mesh_list_free(meshes, nmeshes);
        opd_vset_unref(vols);
        return st;
    }
    pthread_mutex_lock(&lv->edit_mu);
    edit e = {.settings = *s,
              .new_meshes = 1,
              .meshes = meshes,
              .nmeshes = nmeshes,
              .nboxes = -1,
              .geometry = 1};
    msgpack_sbuffer_init(&e.record);
    if (lv->dropped) {
        st = op_err_set(err, OP_EBUSY, "level '%s' was dropped meanwhile: retry", name);
    } else if (level_same(lv, s, meshes, nmeshes, vols)) {
        *version = lv->version;
    } else if ((st = opd_snap_from_meshes(&lv->d->cfg, s, meshes, nmeshes, vols, lv->version + 1,
                                          &e.sn, err)) == OP_OK &&
               (st = commit(lv, &e, version, err)) == OP_OK) {
        /* A level.put repairs a level whose files were in doubt: they are new now. */
        lv->broken = 0;
        *changed = 1;
    }
    int orphan = st != OP_OK && lv->version == 0;
    if (orphan) {
        pthread_mutex_lock(&lv->mu);
        lv->dropped = 1; /* an edit waiting behind this one must not revive it */
        pthread_mutex_unlock(&lv->mu);
    }
    pthread_mutex_unlock(&lv->edit_mu);
    edit_fini(&e);
    opd_vset_unref(vols); /* the snapshot holds its own reference */
    if (orphan)
        opd_registry_remove(r, lv);
    opd_level_unref(lv);
    return st;
}

/* The level for an edit, edit lock held; NULL (and err) when it does not exist. */
static opd_level *edit_begin(opd_registry *r, const char *name, op_err *err)
{
    opd_level *lv = opd_registry_find_live(r, name, err);
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
    if (!m || !m->has_box)
        return;
    /* The XZ box of the triangles, one cell of slack (protocol §5.2). */
    opd_box *b = &e->boxes[e->nboxes++];
    *b = (opd_box){{m->bmin[0], m->bmin[2]}, {m->bmax[0], m->bmax[2]}, 1};
}

/* Prepares a mesh edit of lv: m put or `drop` dropped (edit lock held). */
static op_status mesh_prepare(opd_level *lv, const opd_mesh *old, opd_mesh *m, const char *drop,
                              edit *e, op_err *err)
{
    uint64_t w = lv->version + 1;
    e->settings = lv->settings;
    e->new_meshes = 1;
    e->geometry = 1;
    add_box(e, old);
    add_box(e, m);
    op_status st =
        opd_mesh_list_edit(lv->meshes, lv->nmeshes, m, drop, &e->meshes, &e->nmeshes, err);
    if (st == OP_OK)
        st = opd_snap_edit(&lv->d->cfg, lv->sn, m, drop, w, &e->sn, err);
    if (st == OP_OK && lv->d->cfg.data_dir)
        st = m ? opd_record_mesh_put(&e->record, w, m, err)
               : opd_record_mesh_drop(&e->record, w, drop, err);
    return st;
}

/* Prepares a volume edit of lv: v put or `drop` dropped (edit lock held). The tiles of
 * the old and the new volume's reach are marked; their geometry stays. */
static op_status volume_prepare(opd_level *lv, const opd_volume *old, opd_volume *v,
                                const char *drop, edit *e, op_err *err)
{
    uint64_t w = lv->version + 1;
    e->settings = lv->settings;
    if (old)
        e->boxes[e->nboxes++] = opd_volume_box(old);
    if (v)
        e->boxes[e->nboxes++] = opd_volume_box(v);
    opd_vset *vs = NULL;
    op_status st = opd_vset_edit(lv->sn->vols, v, drop, &vs, err);
    if (st == OP_OK)
        st = opd_snap_volumes(&lv->d->cfg, lv->sn, vs, w, &e->sn, err);
    opd_vset_unref(vs);
    if (st == OP_OK && lv->d->cfg.data_dir)
        st = v ? opd_record_volume_put(&e->record, w, &v->v, err)
               : opd_record_volume_drop(&e->record, w, drop, err);
    return st;
}

/* One mesh or volume edit: m or v put (taken), or (both NULL) the mesh or volume `drop`
 * dropped. Nothing changes when the level holds the same already (protocol §6). */
typedef struct item {
    int volume; /* a volume edit (else a mesh edit) */
    opd_mesh *m;
    opd_volume *v;
    const char *drop;
} item;

static op_status item_edit(opd_registry *r, const char *level, item *it, uint64_t *version,
                           int *changed, op_err *err)
{
    *changed = 0;
    *version = 0;
    opd_level *lv = edit_begin(r, level, err);
    op_status st = lv ? OP_OK : err->status;
    edit e;
    memset(&e, 0, sizeof e);
    msgpack_sbuffer_init(&e.record);
    int same = 0;
    const opd_mesh *old_m = NULL;
    const opd_volume *old_v = NULL;
    if (lv && it->volume) {
        int at = opd_vset_find(lv->sn->vols, it->v ? it->v->v.name : it->drop);
        old_v = at >= 0 ? lv->sn->vols->v[at] : NULL;
        same = it->v ? old_v && opd_volume_equal(&old_v->v, &it->v->v) : !old_v;
    } else if (lv) {
        int at = opd_mesh_list_find(lv->meshes, lv->nmeshes, it->m ? it->m->name : it->drop);
        old_m = at >= 0 ? lv->meshes[at] : NULL;
        same = it->m ? old_m && opd_mesh_equal(old_m, it->m) : !old_m;
    }
    if (!lv) {
        /* err is set */
    } else if (same) {
        *version = lv->version;
    } else if (lv->broken) {
        st = broken_error(lv, err);
    } else if ((st = it->volume ? volume_prepare(lv, old_v, it->v, it->drop, &e, err)
                                : mesh_prepare(lv, old_m, it->m, it->drop, &e, err)) == OP_OK &&
               (st = commit(lv, &e, version, err)) == OP_OK) {
        *changed = 1;
        maybe_compact(lv);
    }
    edit_fini(&e);
    /* The new list or set and the snapshot hold their own references. */
    opd_mesh_free(it->m);
    opd_volume_free(it->v);
    if (lv)
        edit_end(lv);
    return st;
}

op_status opd_edit_mesh_put(opd_registry *r, const char *level, opd_mesh *mesh, uint64_t *version,
                            int *changed, op_err *err)
{
    item it = {0, mesh, NULL, NULL};
    return item_edit(r, level, &it, version, changed, err);
}

op_status opd_edit_mesh_drop(opd_registry *r, const char *level, const char *mesh,
                             uint64_t *version, int *changed, op_err *err)
{
    item it = {0, NULL, NULL, mesh};
    return item_edit(r, level, &it, version, changed, err);
}

op_status opd_edit_volume_put(opd_registry *r, const char *level, opd_volume *vol,
                              uint64_t *version, int *changed, op_err *err)
{
    item it = {1, NULL, vol, NULL};
    return item_edit(r, level, &it, version, changed, err);
}

op_status opd_edit_volume_drop(opd_registry *r, const char *level, const char *name,
                               uint64_t *version, int *changed, op_err *err)
{
    item it = {1, NULL, NULL, name};
    return item_edit(r, level, &it, version, changed, err);
}

op_status opd_edit_level_drop(opd_registry *r, const char *name, int *dropped, op_err *err)
{
    *dropped = 0;
    op_err e2;
    opd_level *lv = edit_begin(r, name, &e2);
    if (!lv)
        return OP_OK; /* protocol §6: dropping what is not there changes nothing */
    opd_daemon *d = lv->d;
    op_status st = OP_OK;
    int removed = 1;
    if (d->cfg.data_dir)
        st = opd_store_remove(d->cfg.data_dir, name, d->cfg.no_fsync, &removed, err);
    /* Once the snapshot is gone from the directory the level is dropped, whatever failed
     * after (the error is still reported). */
    if (st == OP_OK || removed) {
        opd_journal_close(lv->jr);
        lv->jr = NULL;
        lv->jr_gen++;
        pthread_mutex_lock(&lv->mu);
        lv->dropped = 1;
        opd_waiter *waiters = opd_tiles_drop(lv);
        opd_waiter *polls = opd_waiters_take(&lv->pollers);
        pthread_mutex_unlock(&lv->mu);
        /* They run again and answer that the level is gone. */
        opd_waiters_wake(waiters, OPD_WAKE_QUEUE);
        opd_waiters_wake(polls, OPD_WAKE_QUEUE);
        opd_registry_remove(r, lv);
        *dropped = 1;
    }
    edit_end(lv);
    fit_caches(d);
    return st;
}

/* ===== loading (start-up) ===== */

static void load_log(void *ctx, const char *msg)
{
    opd_log(ctx, "%s", msg);
}

/* A level read from its files: tiles are rebuilt in the background, their earlier
 * bytes unknown (so a tile with layers reports the loaded version as its change). */
static void load_level(void *ctx, opd_loaded *l)
{
    opd_daemon *d = ctx;
    opd_level_data *ld = &l->ld;
    op_err e;
    op_err_clear(&e);
    opd_snap *s = NULL;
    opd_level *lv = NULL;
    op_status st = opd_snap_from_meshes(&d->cfg, &ld->settings, ld->meshes, ld->nmeshes, ld->vols,
                                        ld->version, &s, &e);
    if (st == OP_OK)
        st = opd_registry_find_or_create(d->reg, ld->name, &lv, &e);
    if (st != OP_OK) {
        opd_log(d, "OP-STORE-SKIP level '%s': %s", ld->name, e.msg);
        opd_snap_unref(s);
        opd_level_unref(lv);
        opd_loaded_fini(l);
        return;
    }
    pthread_mutex_lock(&lv->edit_mu);
    lv->epoch = l->epoch;
    lv->jr = l->journal;
    lv->snapshot_bytes = l->snapshot_bytes;
    l->journal = NULL;
    pthread_mutex_lock(&lv->mu);
    lv->settings = ld->settings;
    int nold;
    opd_mesh_list_free(opd_level_set_meshes(lv, ld->meshes, ld->nmeshes, &nold), nold);
    ld->meshes = NULL;
    ld->nmeshes = 0;
    lv->version = ld->version;
    lv->sn = s;
    opd_tiles_invalidate(lv, NULL, -1, 1, 0);
    pthread_mutex_unlock(&lv->mu);
    pthread_mutex_unlock(&lv->edit_mu);
    opd_level_unref(lv);
    opd_log(d,
            "OP-STORE-LOAD level '%s' version %llu, %d meshes, %d volumes, journal: %d records "
            "applied, %d skipped",
            ld->name, (unsigned long long)ld->version, lv->nmeshes, opd_vset_count(ld->vols),
            l->applied, l->skipped);
    opd_loaded_fini(l);
}

void opd_edit_load_all(opd_daemon *d)
{
    if (d->cfg.data_dir)
        opd_store_load_all(d->cfg.data_dir, d->cfg.no_fsync, load_level, load_log, d);
    fit_caches(d);
}
