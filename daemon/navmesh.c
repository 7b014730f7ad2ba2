/*
 * onepathd navmeshes: the stitched mesh (core/include/onepath/mesh.h) of a level's current
 * version, for path queries. It is made from the level's own tile blobs, the bytes
 * tile.get serves, decoded and stitched as `onepath path --tiles` does, so a query on it
 * answers what `onepath path` answers on the same level. A mesh needs every tile of the
 * version built: the first call that finds one missing starts the level's builds and
 * parks on that tile, and runs again when it lands.
 *
 * The last OPD_NAVMESHES meshes are kept (least recently used first out), each holding a
 * reference to its level so that (level, version) names one life of one level.
 */
#include <stdlib.h>
#include <string.h>

#include "level.h"
#include "onepath/tile_codec.h"

#define OPD_NAVMESHES 4

struct opd_navmeshes {
    pthread_mutex_t mu; /* a leaf */
    opd_navmesh *e[OPD_NAVMESHES];
    uint64_t tick;
};

opd_navmeshes *opd_navmeshes_create(void)
{
    opd_navmeshes *n = calloc(1, sizeof *n);
    if (n)
        pthread_mutex_init(&n->mu, NULL);
    return n;
}

void opd_navmesh_unref(opd_navmesh *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    op_mesh_destroy(m->mesh);
    opd_level_unref(m->lv);
    free(m);
}

void opd_navmeshes_destroy(opd_navmeshes *n)
{
    if (!n)
        return;
    for (int i = 0; i < OPD_NAVMESHES; i++)
        opd_navmesh_unref(n->e[i]);
    pthread_mutex_destroy(&n->mu);
    free(n);
}

size_t opd_navmeshes_bytes(opd_navmeshes *n)
{
    size_t b = 0;
    if (!n)
        return 0;
    pthread_mutex_lock(&n->mu);
    for (int i = 0; i < OPD_NAVMESHES; i++)
        b += n->e[i] ? n->e[i]->bytes : 0;
    pthread_mutex_unlock(&n->mu);
    return b;
}

/* A kept mesh of (lv, version), a reference; NULL when none. */
static opd_navmesh *find(opd_navmeshes *n, const opd_level *lv, uint64_t version)
{
    opd_navmesh *m = NULL;
    pthread_mutex_lock(&n->mu);
    for (int i = 0; i < OPD_NAVMESHES && !m; i++)
        if (n->e[i] && n->e[i]->lv == lv && n->e[i]->version == version) {
            m = n->e[i];
            m->used = ++n->tick;
            atomic_fetch_add(&m->refs, 1);
        }
    pthread_mutex_unlock(&n->mu);
    return m;
}

/* Keeps m (one reference given to the table) in a free slot or the least recently used
 * one; a mesh of the same (level, version) kept meanwhile wins and m is returned to free. */
static opd_navmesh *keep(opd_navmeshes *n, opd_navmesh *m)
{
    pthread_mutex_lock(&n->mu);
    int slot = -1;
    for (int i = 0; i < OPD_NAVMESHES; i++) {
        opd_navmesh *e = n->e[i];
        if (e && e->lv == m->lv && e->version == m->version) {
            pthread_mutex_unlock(&n->mu);
            return m; /* the caller drops its copy and looks again */
        }
        if (!e) {
            if (slot < 0 || n->e[slot])
                slot = i;
        } else if (slot < 0 || (n->e[slot] && e->used < n->e[slot]->used)) {
            slot = i;
        }
    }
    opd_navmesh *old = n->e[slot];
    m->used = ++n->tick;
    n->e[slot] = m;
    pthread_mutex_unlock(&n->mu);
    return old;
}

/* The blobs of one version, copied under the level lock. */
typedef struct blob_copy {
    size_t n, cap, bytes;
    op_bytes *b;
} blob_copy;

static void copies_free(blob_copy *bc)
{
    for (size_t i = 0; i < bc->n; i++)
        free(bc->b[i].data);
    free(bc->b);
}

static int copy_tile(blob_copy *bc, const opd_tile *t)
{
    for (int k = 0; k < t->nl; k++) {
        if (bc->n == bc->cap) {
            size_t cap = bc->cap ? bc->cap * 2 : 64;
            op_bytes *g = realloc(bc->b, cap * sizeof *g);
            if (!g)
                return -1;
            bc->b = g;
            bc->cap = cap;
        }
        const op_bytes *src = &((const op_bytes *)t->blobs.data)[k];
        uint8_t *d = malloc(src->len ? src->len : 1);
        if (!d)
            return -1;
        memcpy(d, src->data, src->len);
        bc->b[bc->n].data = d;
        bc->b[bc->n].len = src->len;
        bc->n++;
        bc->bytes += src->len;
    }
    return 0;
}

/* Under the level lock: copies every blob of the current version, or parks w on the
 * first tile that is not built (after starting the level's builds). */
static op_status collect(opd_level *lv, opd_waiter *w, blob_copy *bc, op_settings *s,
                         uint64_t *version, op_err *err)
{
    const opd_snap *sn = lv->sn;
    if (!sn->has_tiles)
        return op_err_set(err, OP_ENOTFOUND, "level '%s' has no tiles", lv->name);
    for (int tz = sn->rect.tz0; tz <= sn->rect.tz1; tz++)
        for (int tx = sn->rect.tx0; tx <= sn->rect.tx1; tx++) {
            opd_tile *t = opd_level_tile(lv, tx, tz);
            if (!t) /* no layers (level.h) */
                continue;
            if (!opd_tile_ready(t)) {
                opd_tiles_bake(lv);
                opd_tile_park(lv, t, w, 0);
                return OPD_PARKED;
            }
            if (t->err_status != OP_OK)
                return op_err_set(err, t->err_status, "tile (%d, %d): %s", tx, tz,
                                  t->err_msg ? t->err_msg : "build failed");
            if (copy_tile(bc, t))
                return op_err_set(err, OP_ENOMEM, "path: out of memory copying tiles");
        }
    *s = lv->settings;
    *version = lv->version;
    return OP_OK;
}

/* Decodes, adds and stitches the copied blobs. */
static op_status make_mesh(const op_settings *s, const blob_copy *bc, op_mesh **out, op_err *err)
{
    op_mesh *m = NULL;
    op_arena *a = op_arena_create(0);
    op_status st = a ? op_mesh_create(s, &m, err) : op_err_set(err, OP_ENOMEM, "out of memory");
    for (size_t i = 0; st == OP_OK && i < bc->n; i++) {
        op_tile t;
        uint64_t h;
        op_arena_reset(a);
        st = op_tile_decode(bc->b[i].data, bc->b[i].len, a, &t, &h, err);
        if (st == OP_OK)
            st = op_mesh_add_tile(m, &t, err);
    }
    if (st == OP_OK)
        st = op_mesh_stitch(m, err);
    op_arena_destroy(a);
    if (st != OP_OK) {
        op_mesh_destroy(m);
        m = NULL;
    }
    *out = m;
    return st;
}

op_status opd_navmesh_get(opd_daemon *d, const char *level, opd_waiter *w, opd_navmesh **out,
                          op_err *err)
{
    *out = NULL;
    opd_level *lv = opd_registry_find_live(d->reg, level, err);
    if (!lv)
        return err->status;
    pthread_mutex_lock(&lv->mu);
    uint64_t version = lv->version;
    pthread_mutex_unlock(&lv->mu);
    opd_navmesh *m = find(d->navmeshes, lv, version);
    if (m) {
        opd_level_unref(lv);
        *out = m;
        return OP_OK;
    }
    blob_copy bc = {0};
    op_settings s;
    pthread_mutex_lock(&lv->mu);
    op_status st = collect(lv, w, &bc, &s, &version, err);
    pthread_mutex_unlock(&lv->mu);
    op_mesh *mesh = NULL;
    if (st == OP_OK)
        st = make_mesh(&s, &bc, &mesh, err);
    size_t bytes = bc.bytes;
    copies_free(&bc);
    if (st != OP_OK) {
        opd_level_unref(lv);
        return st;
    }
    m = calloc(1, sizeof *m);
    if (!m) {
        op_mesh_destroy(mesh);
        opd_level_unref(lv);
        return op_err_set(err, OP_ENOMEM, "path: out of memory");
    }
    atomic_init(&m->refs, 2); /* the table's and the caller's */
    m->lv = lv;               /* the reference found_live gave */
    m->version = version;
    m->mesh = mesh;
    m->bytes = bytes;
    opd_navmesh *old = keep(d->navmeshes, m);
    if (old == m) { /* another call kept the same mesh first: use that one */
        opd_level_ref(lv);
        atomic_store(&m->refs, 1);
        opd_navmesh_unref(m);
        m = find(d->navmeshes, lv, version);
        opd_level_unref(lv);
        if (!m)
            return op_err_set(err, OP_EBUSY, "path: level '%s' changed, retry", level);
    } else {
        opd_navmesh_unref(old);
    }
    *out = m;
    return OP_OK;
}
