/*
 * onepathd level: one resident level's state (level.h opd_level): its content (settings,
 * meshes, version), the snapshot builds read, and its tile map (open addressing by
 * (tx, tz), never shrinks): an entry for each tile geometry may leave a span in, or that
 * had one since the level was made, none for the rest of the range (level.h). Reference counted:
 * the registry's table holds one reference, every request, build and compaction that uses the level
 * holds one; the last release frees the tiles, their cached blobs, the snapshot and the journal.
 */
#include <stdlib.h>
#include <string.h>

#include "level.h"
#include "store.h"

opd_level *opd_level_new(opd_daemon *d, const char *name)
{
    opd_level *lv = calloc(1, sizeof *lv);
    if (!lv)
        return NULL;
    atomic_init(&lv->refs, 1);
    lv->d = d;
    snprintf(lv->name, sizeof lv->name, "%s", name);
    pthread_mutex_init(&lv->mu, NULL);
    pthread_mutex_init(&lv->edit_mu, NULL);
    return lv;
}

static void level_free(opd_level *lv)
{
    for (size_t i = 0; i < lv->map_cap; i++) {
        opd_tile *t = lv->map[i];
        if (!t)
            continue;
        opd_cache_drop(lv->d->cache, &t->blobs);
        opd_cache_drop(lv->d->rebuild, &t->base);
        free(t->layers);
        free(t->hashes);
        free(t->err_msg);
        free(t);
    }
    free(lv->map);
    opd_mesh_list_free(lv->meshes, lv->nmeshes);
    opd_snap_unref(lv->sn);
    opd_journal_close(lv->jr);
    pthread_mutex_destroy(&lv->mu);
    pthread_mutex_destroy(&lv->edit_mu);
    free(lv);
}

void opd_level_ref(opd_level *lv)
{
    atomic_fetch_add(&lv->refs, 1);
}

void opd_level_unref(opd_level *lv)
{
    if (lv && atomic_fetch_sub(&lv->refs, 1) == 1)
        level_free(lv);
}

/* ===== tile map ===== */

static size_t tile_hash(int tx, int tz, size_t cap)
{
    uint64_t k = (uint64_t)(uint32_t)tx << 32 | (uint32_t)tz;
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

opd_tile *opd_level_tile(opd_level *lv, int tx, int tz)
{
    if (!lv->map_cap)
        return NULL;
    for (size_t i = tile_hash(tx, tz, lv->map_cap);; i = (i + 1) & (lv->map_cap - 1)) {
        opd_tile *t = lv->map[i];
        if (!t)
            return NULL;
        if (t->tx == tx && t->tz == tz)
            return t;
    }
}

static int map_put(opd_level *lv, opd_tile *t)
{
    if (2 * (lv->map_n + 1) > lv->map_cap) {
        size_t cap = lv->map_cap ? 2 * lv->map_cap : 64;
        opd_tile **m = calloc(cap, sizeof *m);
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

opd_tile *opd_level_tile_new(opd_level *lv, int tx, int tz, int defined)
{
    opd_tile *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->tx = tx;
    t->tz = tz;
    t->lv = lv;
    t->blobs.owner_mu = &lv->mu;
    t->base.owner_mu = &lv->mu;
    t->defined = defined;
    if (map_put(lv, t) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

/* ===== content ===== */

static size_t mesh_bytes(opd_mesh *const *m, int n)
{
    size_t b = 0;
    for (int i = 0; i < n; i++)
        b += sizeof *m[i] + m[i]->verts_len + m[i]->tris_len + m[i]->areas_len;
    return b;
}

opd_mesh **opd_level_set_meshes(opd_level *lv, opd_mesh **meshes, int n, int *nold)
{
    opd_mesh **old = lv->meshes;
    *nold = lv->nmeshes;
    lv->meshes = meshes;
    lv->nmeshes = n;
    lv->mesh_bytes = mesh_bytes(meshes, n);
    return old;
}

const opd_mesh *opd_level_mesh(const opd_level *lv, const char *name)
{
    for (int i = 0; i < lv->nmeshes; i++)
        if (!strcmp(lv->meshes[i]->name, name))
            return lv->meshes[i];
    return NULL;
}

size_t opd_level_memory(const opd_level *lv, int *built)
{
    size_t cached;
    return opd_level_memory_parts(lv, built, &cached);
}

size_t opd_level_memory_parts(const opd_level *lv, int *built, size_t *cached)
{
    size_t c = 0;
    size_t m = sizeof *lv + lv->mesh_bytes + (lv->sn ? lv->sn->bytes : 0) +
               lv->map_cap * sizeof(opd_tile *);
    /* A tile of the range without an entry is built (no layers): the range's count less
     * the entries of the range not built. */
    int unbuilt = 0;
    for (size_t i = 0; i < lv->map_cap; i++) {
        const opd_tile *t = lv->map[i];
        if (!t)
            continue;
        m += sizeof *t + 3 * OPD_ALLOC_OVERHEAD + (size_t)t->nl * (sizeof(int) + sizeof(uint64_t)) +
             t->blobs.bytes + t->base.bytes;
        c += t->blobs.bytes + t->base.bytes;
        unbuilt += !t->known && opd_snap_in_rect(lv->sn, t->tx, t->tz);
    }
    *built = (lv->sn ? opd_snap_tiles(lv->sn) : 0) - unbuilt;
    *cached = c;
    return m;
}
