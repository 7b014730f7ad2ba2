/*
 * onepathd level methods (protocol §4): level.put, level.drop (edits, edit.c),
 * level.list, level.info and level.bake (reads of the level state).
 */
#include <stdlib.h>
#include <string.h>

#include "level.h"
#include "onepath/limits.h"

/* The optional `volumes` of level.put: a set (NULL when absent or empty). */
static op_status volumes_param(const msgpack_object *p, opd_vset **out, op_err *err)
{
    const msgpack_object *a;
    *out = NULL;
    op_status st = op_rpc_get_type(p, "volumes", MSGPACK_OBJECT_ARRAY, 1, &a, err);
    if (st != OP_OK || !a || a->via.array.size == 0)
        return st;
    uint32_t n = a->via.array.size;
    if (n > OP_MAX_VOLUMES) /* before a single volume is read */
        return op_err_set(err, OP_ELIMIT, "volumes: %u volumes, more than OP_MAX_VOLUMES (%d)", n,
                          OP_MAX_VOLUMES);
    opd_volume **v = calloc(n, sizeof *v);
    if (!v)
        return op_err_set(err, OP_ENOMEM, "level.put: out of memory for %u volumes", n);
    for (uint32_t i = 0; i < n && st == OP_OK; i++) {
        char what[32];
        snprintf(what, sizeof what, "volumes[%u]", i);
        st = opd_volume_decode(&a->via.array.ptr[i], what, &v[i], err);
    }
    if (st != OP_OK) {
        for (uint32_t i = 0; i < n; i++)
            opd_volume_free(v[i]);
        free(v);
        return st;
    }
    return opd_vset_make(v, (int)n, out, err);
}

op_status opd_m_level_put(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "settings", "meshes", "volumes", NULL};
    static const char *const mesh_keys[] = {"name", "verts", "tris", "areas", NULL};
    const msgpack_object *so, *mo;
    op_settings s;
    op_status st;
    if ((st = opd_param_keys(p, allowed, err)) != OP_OK ||
        (st = opd_param_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = op_rpc_get_type(p, "settings", MSGPACK_OBJECT_MAP, 0, &so, err)) != OP_OK ||
        (st = opd_settings_from_map(so, &s, err)) != OP_OK ||
        (st = op_rpc_get_type(p, "meshes", MSGPACK_OBJECT_ARRAY, 0, &mo, err)) != OP_OK)
        return st;
    opd_vset *vols;
    if ((st = volumes_param(p, &vols, err)) != OP_OK)
        return st;
    uint32_t n = mo->via.array.size;
    opd_mesh **m = calloc(n ? n : 1, sizeof *m);
    if (!m) {
        opd_vset_unref(vols);
        return op_err_set(err, OP_ENOMEM, "level.put: out of memory for %u meshes", n);
    }
    for (uint32_t i = 0; i < n && st == OP_OK; i++) {
        const msgpack_object *mi = &mo->via.array.ptr[i];
        if (mi->type != MSGPACK_OBJECT_MAP)
            st = op_err_set(err, OP_EPROTO, "meshes[%u] must be a map", i);
        else if ((st = opd_param_keys(mi, mesh_keys, err)) == OP_OK)
            st = opd_param_mesh(mi, "name", &m[i], err);
    }
    if (st != OP_OK) {
        for (uint32_t i = 0; i < n; i++)
            opd_mesh_free(m[i]);
        free(m);
        opd_vset_unref(vols);
        return st;
    }
    uint64_t version;
    int changed;
    /* The level state takes the array, its meshes and the volumes. */
    if ((st = opd_edit_level_put(c->d->reg, c->level, &s, m, (int)n, vols, &version, &changed,
                                 err)) != OP_OK)
        return st;
    return opd_pack_edit(pk, version, changed, "changed", err);
}

op_status opd_m_level_drop(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", NULL};
    op_status st;
    int dropped;
    if ((st = opd_param_keys(p, allowed, err)) != OP_OK ||
        (st = opd_param_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = opd_edit_level_drop(c->d->reg, c->level, &dropped, err)) != OP_OK)
        return st;
    return opd_pack_flag(pk, "dropped", dropped, err);
}

op_status opd_m_level_list(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {NULL};
    op_status st = opd_param_keys(p, allowed, err);
    if (st != OP_OK)
        return st;
    opd_level_entry *it;
    int n = opd_registry_list(c->d->reg, &it);
    if (n < 0)
        return op_err_set(err, OP_ENOMEM, "level.list: oom");
    int rc = msgpack_pack_map(pk, 1) | op_rpc_pack_key(pk, "levels");
    rc |= msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++) {
        rc |= msgpack_pack_map(pk, 2);
        rc |= op_rpc_pack_key(pk, "level") | op_rpc_pack_key(pk, it[i].name);
        rc |= op_rpc_pack_key(pk, "version") | msgpack_pack_uint64(pk, it[i].version);
    }
    free(it);
    return rc ? op_err_set(err, OP_ENOMEM, "level.list: oom") : OP_OK;
}

/* The level.info map (level lock held). */
static int pack_info(msgpack_packer *pk, const opd_level *lv)
{
    const opd_snap *s = lv->sn;
    float bmin[3] = {0, 0, 0}, bmax[3] = {0, 0, 0};
    op_tile_rect rc = {0, 0, -1, -1};
    int total = 0, built = 0;
    if (s->has_tiles) {
        memcpy(bmin, s->bmin, sizeof bmin);
        memcpy(bmax, s->bmax, sizeof bmax);
        rc = s->rect;
        total = opd_snap_tiles(s);
    }
    size_t mem = opd_level_memory(lv, &built);
    int p = msgpack_pack_map(pk, 10);
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
    /* With grid_origin, what a Detour client needs for dtNavMeshParams (§4.2b). */
    p |= op_rpc_pack_key(pk, "tile_size") | msgpack_pack_double(pk, lv->settings.tile_size);
    p |= op_rpc_pack_key(pk, "tiles_total") | msgpack_pack_int(pk, total);
    p |= op_rpc_pack_key(pk, "tiles_built") | msgpack_pack_int(pk, built);
    p |= op_rpc_pack_key(pk, "memory") | msgpack_pack_uint64(pk, mem);
    p |= op_rpc_pack_key(pk, "bake") | msgpack_pack_map(pk, 3);
    p |= op_rpc_pack_key(pk, "running");
    p |= (lv->building > 0) ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    p |= op_rpc_pack_key(pk, "done") | msgpack_pack_int(pk, built);
    p |= op_rpc_pack_key(pk, "total") | msgpack_pack_int(pk, total);
    p |= op_rpc_pack_key(pk, "volumes") | opd_vset_pack(pk, s->vols);
    return p;
}

/* The live level named by the only param, `level` (a reference); NULL and err else. */
static opd_level *level_param(opd_call *c, const msgpack_object *p, op_err *err)
{
    static const char *const allowed[] = {"level", NULL};
    if (opd_param_keys(p, allowed, err) != OP_OK ||
        opd_param_name(p, "level", "level", c->level, err) != OP_OK)
        return NULL;
    return opd_registry_find_live(c->d->reg, c->level, err);
}

op_status opd_m_level_info(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    opd_level *lv = level_param(c, p, err);
    if (!lv)
        return err->status;
    pthread_mutex_lock(&lv->mu);
    int rc = pack_info(pk, lv);
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    return rc ? op_err_set(err, OP_ENOMEM, "level.info: out of memory") : OP_OK;
}

op_status opd_m_level_bake(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    opd_level *lv = level_param(c, p, err);
    if (!lv)
        return err->status;
    pthread_mutex_lock(&lv->mu);
    int started = opd_tiles_bake(lv);
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    return opd_pack_flag(pk, "started", started, err);
}
