/*
 * onepathd journal records (protocol §7.4): the payload of one edit, a msgpack map
 *
 *   {"v": V, "op": "mesh.put", "mesh": {name, verts, tris, areas}}
 *   {"v": V, "op": "mesh.drop", "name": N}
 *   {"v": V, "op": "volume.put", "volume": {...}}   (the volume map, protocol §3.5)
 *   {"v": V, "op": "volume.drop", "name": N}
 *
 * written by edit.c before the edit's reply, applied in order at load. Applying trusts
 * nothing: the bounded pre-scan, strict keys and fields, and the edit must follow the
 * level's version and change it, as it did when it was written; anything else is a
 * record the journal ends before.
 */
#include <stdlib.h>
#include <string.h>

#include "onepath/mpscan.h"
#include "store.h"

static int pack_head(msgpack_packer *pk, int n, uint64_t v, const char *op)
{
    int rc = msgpack_pack_map(pk, (size_t)n);
    rc |= op_rpc_pack_key(pk, "v") | msgpack_pack_uint64(pk, v);
    rc |= op_rpc_pack_key(pk, "op") | op_rpc_pack_key(pk, op);
    return rc;
}

op_status opd_record_mesh_put(msgpack_sbuffer *sb, uint64_t v, const opd_mesh *m, op_err *err)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    int rc = pack_head(&pk, 3, v, "mesh.put");
    rc |= op_rpc_pack_key(&pk, "mesh") | opd_mesh_pack(&pk, m);
    return rc ? op_err_set(err, OP_ENOMEM, "journal: out of memory for mesh '%s'", m->name) : OP_OK;
}

op_status opd_record_mesh_drop(msgpack_sbuffer *sb, uint64_t v, const char *name, op_err *err)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    int rc = pack_head(&pk, 3, v, "mesh.drop");
    rc |= op_rpc_pack_key(&pk, "name") | op_rpc_pack_key(&pk, name);
    return rc ? op_err_set(err, OP_ENOMEM, "journal: out of memory") : OP_OK;
}

op_status opd_record_volume_put(msgpack_sbuffer *sb, uint64_t v, const op_volume *vol, op_err *err)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    int rc = pack_head(&pk, 3, v, "volume.put");
    rc |= op_rpc_pack_key(&pk, "volume") | opd_volume_pack(&pk, vol);
    return rc ? op_err_set(err, OP_ENOMEM, "journal: out of memory for volume '%s'", vol->name)
              : OP_OK;
}

op_status opd_record_volume_drop(msgpack_sbuffer *sb, uint64_t v, const char *name, op_err *err)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    int rc = pack_head(&pk, 3, v, "volume.drop");
    rc |= op_rpc_pack_key(&pk, "name") | op_rpc_pack_key(&pk, name);
    return rc ? op_err_set(err, OP_ENOMEM, "journal: out of memory") : OP_OK;
}

/* ld's volumes with vol put or `drop` dropped (vol taken). */
static op_status apply_volume(opd_level_data *ld, opd_volume *vol, const char *drop, op_err *err)
{
    int at = opd_vset_find(ld->vols, vol ? vol->v.name : drop);
    op_status st = OP_OK;
    if (!vol && at < 0)
        st = op_err_set(err, OP_EPROTO, "journal: volume.drop of '%s', which is not there", drop);
    else if (vol && at >= 0 && opd_volume_equal(&ld->vols->v[at]->v, &vol->v))
        st = op_err_set(err, OP_EPROTO, "journal: volume.put of '%s' changes nothing", vol->v.name);
    opd_vset *s = NULL;
    if (st == OP_OK)
        st = opd_vset_edit(ld->vols, vol, drop, &s, err);
    opd_volume_free(vol);
    if (st != OP_OK)
        return st;
    opd_vset_unref(ld->vols);
    ld->vols = s;
    return OP_OK;
}

/* ld's meshes with m put or `drop` dropped (m taken). */
static op_status apply_mesh(opd_level_data *ld, opd_mesh *m, const char *drop, op_err *err)
{
    int at = opd_mesh_list_find(ld->meshes, ld->nmeshes, m ? m->name : drop);
    op_status st = OP_OK;
    if (!m && at < 0)
        st = op_err_set(err, OP_EPROTO, "journal: mesh.drop of '%s', which is not there", drop);
    else if (m && at >= 0 && opd_mesh_equal(ld->meshes[at], m))
        st = op_err_set(err, OP_EPROTO, "journal: mesh.put of '%s' changes nothing", m->name);
    opd_mesh **l = NULL;
    int n = 0;
    if (st == OP_OK)
        st = opd_mesh_list_edit(ld->meshes, ld->nmeshes, m, drop, &l, &n, err);
    opd_mesh_free(m);
    if (st != OP_OK)
        return st;
    opd_mesh_list_free(ld->meshes, ld->nmeshes);
    ld->meshes = l;
    ld->nmeshes = n;
    return OP_OK;
}

static op_status apply_top(opd_level_data *ld, const msgpack_object *top, uint64_t *version,
                           int *skipped, op_err *err)
{
    static const char *const put_keys[] = {"v", "op", "mesh", NULL};
    static const char *const vput_keys[] = {"v", "op", "volume", NULL};
    static const char *const drop_keys[] = {"v", "op", "name", NULL};
    const char *op;
    size_t oplen;
    int64_t v;
    op_status st;
    if (top->type != MSGPACK_OBJECT_MAP)
        return op_err_set(err, OP_EPROTO, "journal: a record is not a map");
    if ((st = op_rpc_get_int(top, "v", 1, INT64_MAX, 0, &v, NULL, err)) != OP_OK ||
        (st = op_rpc_get_str(top, "op", 0, &op, &oplen, err)) != OP_OK)
        return st;
    int put = oplen == 8 && !memcmp(op, "mesh.put", 8);
    int drop = oplen == 9 && !memcmp(op, "mesh.drop", 9);
    int vput = oplen == 10 && !memcmp(op, "volume.put", 10);
    int vdrop = oplen == 11 && !memcmp(op, "volume.drop", 11);
    if (!put && !drop && !vput && !vdrop)
        return op_err_set(err, OP_EPROTO, "journal: unknown record op '%.*s'",
                          (int)(oplen > 32 ? 32 : oplen), op);
    if ((st = op_rpc_check_keys(top, put ? put_keys : vput ? vput_keys : drop_keys, err)) != OP_OK)
        return st;
    *version = (uint64_t)v;
    if ((uint64_t)v > ld->version + 1)
        return op_err_set(err, OP_EPROTO, "journal: record of version %lld after version %llu",
                          (long long)v, (unsigned long long)ld->version);
    opd_mesh *m = NULL;
    opd_volume *vol = NULL;
    char name[65];
    const char *s;
    size_t n;
    if (put) {
        const msgpack_object *mo = op_rpc_get(top, "mesh");
        st = mo ? opd_mesh_decode(mo, &m, err)
                : op_err_set(err, OP_EPROTO, "journal: mesh.put without 'mesh'");
    } else if (vput) {
        const msgpack_object *vo = op_rpc_get(top, "volume");
        st = vo ? opd_volume_decode(vo, "journal", &vol, err)
                : op_err_set(err, OP_EPROTO, "journal: volume.put without 'volume'");
    } else if ((st = op_rpc_get_str(top, "name", 0, &s, &n, err)) == OP_OK) {
        st = op_rpc_name(s, n, drop ? "mesh" : "volume", name, err);
    }
    if (st != OP_OK)
        return st;
    *skipped = (uint64_t)v <= ld->version;
    if (*skipped) { /* already in the snapshot */
        opd_mesh_free(m);
        opd_volume_free(vol);
        return OP_OK;
    }
    if (put || drop)
        st = apply_mesh(ld, m, put ? NULL : name, err);
    else
        st = apply_volume(ld, vol, vput ? NULL : name, err);
    if (st == OP_OK)
        ld->version = (uint64_t)v;
    return st;
}

op_status opd_record_apply(opd_level_data *ld, const uint8_t *payload, size_t len,
                           uint64_t *version, int *skipped, op_err *err)
{
    *skipped = 0;
    *version = 0;
    op_mp_limits lim;
    op_mp_limits_default(&lim);
    lim.max_bytes = len;
    op_status st = op_mp_scan(payload, len, &lim, err);
    if (st != OP_OK)
        return st;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    if (msgpack_unpack_next(&u, (const char *)payload, len, &off) != MSGPACK_UNPACK_SUCCESS ||
        off != len)
        st = op_err_set(err, OP_EPROTO, "journal: a record is not one msgpack value");
    else
        st = apply_top(ld, &u.data, version, skipped, err);
    msgpack_unpacked_destroy(&u);
    return st;
}
