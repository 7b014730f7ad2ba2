/*
 * onepathd registry: the table of levels by name (up to --max-levels). The table lock
 * guards only the table; a level found here is returned with a reference, so it stays
 * valid after a concurrent drop removes it from the table. A level being created has
 * version 0 and is not live (level.list, level.info and reads do not see it).
 * Typical: 1..256 levels; lookups are a linear scan of names.
 */
#include <stdlib.h>
#include <string.h>

#include "level.h"

struct opd_registry {
    opd_daemon *d;
    pthread_mutex_t mu;
    opd_level **levels;
    int n, cap;
};

opd_registry *opd_registry_create(opd_daemon *d)
{
    opd_registry *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->d = d;
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

void opd_registry_destroy(opd_registry *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++)
        opd_level_unref(r->levels[i]);
    free(r->levels);
    pthread_mutex_destroy(&r->mu);
    free(r);
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

opd_level *opd_registry_find(opd_registry *r, const char *name)
{
    pthread_mutex_lock(&r->mu);
    opd_level *lv = find_locked(r, name, NULL);
    if (lv)
        opd_level_ref(lv);
    pthread_mutex_unlock(&r->mu);
    return lv;
}

opd_level *opd_registry_find_live(opd_registry *r, const char *name, op_err *err)
{
    opd_level *lv = opd_registry_find(r, name);
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

op_status opd_registry_find_or_create(opd_registry *r, const char *name, opd_level **out,
                                      op_err *err)
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
        if (st == OP_OK && !(lv = opd_level_new(r->d, name)))
            st = op_err_set(err, OP_ENOMEM, "registry: out of memory");
        if (st == OP_OK)
            r->levels[r->n++] = lv;
    }
    if (lv)
        opd_level_ref(lv);
    pthread_mutex_unlock(&r->mu);
    *out = lv;
    return st;
}

void opd_registry_remove(opd_registry *r, opd_level *lv)
{
    int idx = -1;
    pthread_mutex_lock(&r->mu);
    if (find_locked(r, lv->name, &idx) == lv)
        r->levels[idx] = r->levels[--r->n];
    else
        idx = -1;
    pthread_mutex_unlock(&r->mu);
    if (idx >= 0)
        opd_level_unref(lv);
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const opd_level_entry *)a)->name, ((const opd_level_entry *)b)->name);
}

int opd_registry_list(opd_registry *r, opd_level_entry **out)
{
    pthread_mutex_lock(&r->mu);
    opd_level_entry *it = calloc((size_t)r->n + 1, sizeof *it);
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
    *out = it;
    if (!it)
        return -1;
    qsort(it, (size_t)n, sizeof *it, entry_cmp);
    return n;
}

void opd_registry_usage(opd_registry *r, size_t *memory, int *levels)
{
    size_t m = 0;
    int n = 0, built;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++) {
        opd_level *lv = r->levels[i];
        pthread_mutex_lock(&lv->mu);
        if (lv->version > 0 && !lv->dropped) {
            m += opd_level_memory(lv, &built);
            n++;
        }
        pthread_mutex_unlock(&lv->mu);
    }
    pthread_mutex_unlock(&r->mu);
    *memory = m;
    *levels = n;
}

void opd_registry_each(opd_registry *r, void (*fn)(opd_level *lv, void *ctx), void *ctx)
{
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n; i++)
        fn(r->levels[i], ctx);
    pthread_mutex_unlock(&r->mu);
}
