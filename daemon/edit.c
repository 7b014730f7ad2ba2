/*
 * onepathd edits (protocol §5, §6, §7): level.put, level.drop, mesh.put, mesh.drop, and
 * the levels read back from the data directory at start. An edit runs under its
 * level's edit lock, in three steps:
 *   1. prepare: the new mesh list and its snapshot (validated, the tiles computed), no
 *      lock held but the edit lock; a refused edit changes nothing;
 *   2. persist: the level's file written and fsynced (store.c); a failed write is
 *      OP_EIO and the edit is not applied;
 *   3. install: under the state lock, the content and snapshot are swapped in at the
 *      next version and the tiles the edit can change are marked (tiles.c).
 * An edit that would change nothing (§6) stops before step 1 and bumps no version.
 */
#include <stdlib.h>
#include <string.h>

#include "level.h"

static void free_meshes(opd_mesh **m, int n)
{
    for (int i = 0; i < n; i++)
        opd_mesh_free(m[i]);
    free(m);
}

/* The new content of an edit, prepared and persisted; installed by commit. */
typedef struct edit {
    op_settings settings;
    opd_mesh **meshes; /* the new list (owned once committed) */
    int nmeshes;
    opd_mesh **gone; /* meshes of the old list to free after commit */
    int ngone;
    opd_box boxes[2];
    int nboxes; /* -1: everything */
    opd_snap *sn;
} edit;

static op_status persist(opd_daemon *d, opd_level *lv, const edit *e, uint64_t w, op_err *err)
{
    if (!d->cfg.data_dir)
        return OP_OK;
    opd_level_data ld;
    memset(&ld, 0, sizeof ld);
    snprintf(ld.name, sizeof ld.name, "%s", lv->name);
    ld.version = w;
    ld.settings = e->settings;
    ld.meshes = e->meshes;
    ld.nmeshes = e->nmeshes;
    return opd_store_write(d->cfg.data_dir, &ld, d->cfg.no_fsync, err);
}

/* Prepares and persists e for lv (edit lock held), then installs it. */
static op_status commit(opd_level *lv, edit *e, uint64_t *version, op_err *err)
{
    opd_daemon *d = lv->d;
    uint64_t w = lv->version + 1;
    op_status st = opd_snap_make(&d->cfg, &e->settings, e->meshes, e->nmeshes, w, &e->sn, err);
    if (st != OP_OK)
        return st;
    if ((st = persist(d, lv, e, w, err)) != OP_OK) {
        opd_snap_unref(e->sn);
        e->sn = NULL;
        return st;
    }
    pthread_mutex_lock(&lv->mu);
    opd_mesh **old = opd_level_set_meshes(lv, e->meshes, e->nmeshes);
    opd_snap *old_sn = lv->sn;
    lv->settings = e->settings;
    lv->version = w;
    lv->sn = e->sn;
    opd_tiles_invalidate(lv, e->boxes, e->nboxes, 1);
    opd_waiter *polls = lv->pending == 0 ? opd_waiters_take(&lv->pollers) : NULL;
    opd_waiters_wake(polls, OPD_WAKE_QUEUE);
    pthread_mutex_unlock(&lv->mu);
    /* For level.put e->gone is the old list itself: free its meshes before the array. */
    for (int i = 0; i < e->ngone; i++)
        opd_mesh_free(e->gone[i]);
    free(old);
    opd_snap_unref(old_sn);
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

op_status opd_edit_level_put(opd_registry *r, const char *name, const op_settings *s,
                             opd_mesh **meshes, int nmeshes, uint64_t *version, int *changed,
                             op_err *err)
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
    op_status st = opd_registry_find_or_create(r, name, &lv, err);
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
        st = commit(lv, &e, version, err);
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
    const opd_mesh *old = opd_level_mesh(lv, m ? m->name : drop);
    op_status st = OP_OK;
    if ((m && old && opd_mesh_equal(old, m)) || (!m && !old)) {
        *version = lv->version; /* protocol §6: nothing to change */
        opd_mesh_free(m);
    } else {
        edit e;
        memset(&e, 0, sizeof e);
        if ((st = edit_list(lv, m, drop, &e, err)) == OP_OK)
            st = commit(lv, &e, version, err);
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

op_status opd_edit_mesh_put(opd_registry *r, const char *level, opd_mesh *mesh, uint64_t *version,
                            int *changed, op_err *err)
{
    return mesh_edit(r, level, mesh, NULL, version, changed, err);
}

op_status opd_edit_mesh_drop(opd_registry *r, const char *level, const char *mesh,
                             uint64_t *version, int *changed, op_err *err)
{
    return mesh_edit(r, level, NULL, mesh, version, changed, err);
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
    if (d->cfg.data_dir)
        st = opd_store_remove(d->cfg.data_dir, name, d->cfg.no_fsync, err);
    if (st == OP_OK) {
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
    return st;
}

/* ===== loading (start-up) ===== */

static void load_log(void *ctx, const char *msg)
{
    opd_log(ctx, "%s", msg);
}

/* A level read from its file: tiles are rebuilt in the background, their earlier
 * bytes unknown (so a tile with layers reports the loaded version as its change). */
static void load_level(void *ctx, opd_level_data *ld)
{
    opd_daemon *d = ctx;
    op_err e;
    op_err_clear(&e);
    opd_snap *s = NULL;
    opd_level *lv = NULL;
    op_status st =
        opd_snap_make(&d->cfg, &ld->settings, ld->meshes, ld->nmeshes, ld->version, &s, &e);
    if (st == OP_OK)
        st = opd_registry_find_or_create(d->reg, ld->name, &lv, &e);
    if (st != OP_OK) {
        opd_log(d, "OP-STORE-SKIP level '%s': %s", ld->name, e.msg);
        opd_snap_unref(s);
        opd_level_unref(lv);
        opd_level_data_fini(ld);
        return;
    }
    pthread_mutex_lock(&lv->mu);
    lv->settings = ld->settings;
    free(opd_level_set_meshes(lv, ld->meshes, ld->nmeshes));
    lv->version = ld->version;
    lv->sn = s;
    opd_tiles_invalidate(lv, NULL, -1, 0);
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    opd_log(d, "OP-STORE-LOAD level '%s' version %llu, %d meshes", ld->name,
            (unsigned long long)ld->version, ld->nmeshes);
}

void opd_edit_load_all(opd_daemon *d)
{
    if (d->cfg.data_dir)
        opd_store_load_all(d->cfg.data_dir, load_level, load_log, d);
}
