/*
 * onepathd change tracking (protocol §4.3, build3d-runtime.md §3): changes.since lists
 * the tiles whose version (the last edit that changed their bytes, tiles.c) is above
 * the asked one, once every rebuild owed to the edits so far has landed. A call that
 * must wait (a rebuild running, or a long poll with nothing to list yet) parks in its
 * level's pollers; it is woken when the level's last dirty tile lands (tiles.c), an
 * edit changes nothing to rebuild (edit.c), the level is dropped, or its deadline
 * passes (opd_changes_expire, from the loop's timer).
 */
#include <stdlib.h>
#include <string.h>

#include "level.h"

static int tile_order(const void *a, const void *b)
{
    const opd_tile *x = *(const opd_tile *const *)a, *y = *(const opd_tile *const *)b;
    if (x->tz != y->tz)
        return x->tz < y->tz ? -1 : 1;
    return (x->tx > y->tx) - (x->tx < y->tx);
}

/* Copies the listed tiles (level lock held). */
static op_status collect(const opd_level *lv, uint64_t since, size_t n, opd_changes *out,
                         op_err *err)
{
    opd_tile **list = calloc(n ? n : 1, sizeof *list);
    out->tiles = calloc(n ? n : 1, sizeof *out->tiles);
    if (!list || !out->tiles) {
        free(list);
        return op_err_set(err, OP_ENOMEM, "changes.since: out of memory for %zu tiles", n);
    }
    size_t k = 0;
    for (size_t i = 0; i < lv->map_cap; i++)
        if (lv->map[i] && lv->map[i]->change_version > since)
            list[k++] = lv->map[i];
    qsort(list, n, sizeof *list, tile_order);
    out->version = lv->version;
    for (size_t i = 0; i < n; i++) {
        opd_change *c = &out->tiles[i];
        c->tx = list[i]->tx;
        c->tz = list[i]->tz;
        c->nl = list[i]->nl;
        if (c->nl > 0 && !(c->hashes = malloc((size_t)c->nl * sizeof *c->hashes))) {
            free(list);
            out->n = i;
            return op_err_set(err, OP_ENOMEM, "changes.since: out of memory");
        }
        if (c->nl > 0)
            memcpy(c->hashes, list[i]->hashes, (size_t)c->nl * sizeof *c->hashes);
    }
    out->n = n;
    free(list);
    return OP_OK;
}

op_status opd_changes_since(opd_registry *r, const char *level, uint64_t since, opd_waiter *w,
                            opd_changes *out, op_err *err)
{
    memset(out, 0, sizeof *out);
    opd_level *lv = opd_registry_find_live(r, level, err);
    if (!lv)
        return err->status;
    op_status st = OP_OK;
    opd_daemon *d = lv->d;
    int stopping = atomic_load(&d->stopping);
    int64_t deadline = w->deadline_ns; /* once parked, w may be woken and reused */
    pthread_mutex_lock(&lv->mu);
    size_t n = 0;
    for (size_t i = 0; i < lv->map_cap; i++)
        n += lv->map[i] && lv->map[i]->change_version > since;
    if (since > lv->version) {
        st = op_err_set(err, OP_ERANGE, "level '%s': version %llu is newer than %llu", lv->name,
                        (unsigned long long)since, (unsigned long long)lv->version);
    } else if (lv->pending > 0 && stopping) {
        st = op_err_set(err, OP_EBUSY, "shutting down while level '%s' rebuilds", lv->name);
    } else if (!stopping &&
               (lv->pending > 0 || (n == 0 && deadline > 0 && (int64_t)opd_now_ns() < deadline))) {
        /* Rebuilding, or a long poll with nothing yet: park until woken or the deadline. */
        opd_waiter_push(&lv->pollers, w);
        st = OPD_PARKED;
    } else {
        st = collect(lv, since, n, out, err);
    }
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    if (st == OPD_PARKED && deadline > 0)
        opd_daemon_wake(d); /* the loop re-arms its deadline timer */
    if (st != OP_OK && st != OPD_PARKED)
        opd_changes_free(out);
    return st;
}

void opd_changes_free(opd_changes *ch)
{
    for (size_t i = 0; ch->tiles && i < ch->n; i++)
        free(ch->tiles[i].hashes);
    free(ch->tiles);
    memset(ch, 0, sizeof *ch);
}

typedef struct expire_scan {
    int64_t now, next;
    int stopping;
} expire_scan;

static void expire_level(opd_level *lv, void *ctx)
{
    expire_scan *x = ctx;
    pthread_mutex_lock(&lv->mu);
    opd_waiter **pp = &lv->pollers;
    while (*pp) {
        opd_waiter *w = *pp;
        if (x->stopping || (w->deadline_ns > 0 && w->deadline_ns <= x->now && lv->pending == 0)) {
            *pp = w->next;
            w->next = NULL;
            w->wake(w, OPD_WAKE_QUEUE);
            continue;
        }
        if (w->deadline_ns > 0 && (x->next == 0 || w->deadline_ns < x->next))
            x->next = w->deadline_ns;
        pp = &w->next;
    }
    pthread_mutex_unlock(&lv->mu);
}

int64_t opd_changes_expire(opd_daemon *d, int64_t now_ns)
{
    expire_scan x = {now_ns, 0, atomic_load(&d->stopping)};
    opd_registry_each(d->reg, expire_level, &x);
    return x.next;
}
