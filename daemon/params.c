/*
 * onepathd params: the readers every method uses to check its params strictly (unknown
 * keys, types, ranges, names: protocol §2.5, §3.1) and the small result maps of edits.
 */
#include <stdlib.h>

#include "daemon.h"

op_status opd_param_keys(const msgpack_object *p, const char *const *allowed, op_err *err)
{
    return op_rpc_check_keys(p, allowed, err);
}

op_status opd_param_name(const msgpack_object *p, const char *key, const char *what, char out[65],
                         op_err *err)
{
    const char *s;
    size_t n;
    op_status st = op_rpc_get_str(p, key, 0, &s, &n, err);
    return st != OP_OK ? st : op_rpc_name(s, n, what, out, err);
}

op_status opd_param_i32(const msgpack_object *p, const char *key, int *out, op_err *err)
{
    int64_t v;
    op_status st = op_rpc_get_int(p, key, INT32_MIN, INT32_MAX, 0, &v, NULL, err);
    *out = (int)v;
    return st;
}

op_status opd_param_pair(const msgpack_object *p, const char *key, int out[2], int *present,
                         op_err *err)
{
    const msgpack_object *o = op_rpc_get(p, key);
    *present = o != NULL && o->type != MSGPACK_OBJECT_NIL;
    if (!*present)
        return OP_OK;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 2)
        return op_err_set(err, OP_EPROTO, "'%s' must be an array [tx, tz]", key);
    for (int i = 0; i < 2; i++) {
        const msgpack_object *v = &o->via.array.ptr[i];
        int64_t x;
        if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 <= INT32_MAX)
            x = (int64_t)v->via.u64;
        else if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER && v->via.i64 >= INT32_MIN)
            x = v->via.i64;
        else
            return op_err_set(err, OP_EPROTO, "'%s'[%d] must be an int32", key, i);
        out[i] = (int)x;
    }
    return OP_OK;
}

op_status opd_param_mesh(const msgpack_object *p, const char *name_key, opd_mesh **out, op_err *err)
{
    char name[65];
    const uint8_t *v, *t, *a;
    size_t vl, tl, al;
    op_status st;
    *out = NULL;
    if ((st = opd_param_name(p, name_key, "mesh", name, err)) != OP_OK ||
        (st = op_rpc_get_bin(p, "verts", 0, &v, &vl, err)) != OP_OK ||
        (st = op_rpc_get_bin(p, "tris", 0, &t, &tl, err)) != OP_OK ||
        (st = op_rpc_get_bin(p, "areas", 1, &a, &al, err)) != OP_OK)
        return st;
    return opd_mesh_make(name, v, vl, t, tl, a, al, out, err);
}

op_status opd_pack_edit(msgpack_packer *pk, uint64_t version, int changed, const char *flag,
                        op_err *err)
{
    int rc = msgpack_pack_map(pk, 2);
    rc |= op_rpc_pack_key(pk, "version") | msgpack_pack_uint64(pk, version);
    rc |= op_rpc_pack_key(pk, flag) | (changed ? msgpack_pack_true(pk) : msgpack_pack_false(pk));
    return rc ? op_err_set(err, OP_ENOMEM, "oom") : OP_OK;
}

op_status opd_pack_flag(msgpack_packer *pk, const char *flag, int value, op_err *err)
{
    int rc = msgpack_pack_map(pk, 1) | op_rpc_pack_key(pk, flag);
    rc |= value ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    return rc ? op_err_set(err, OP_ENOMEM, "%s: out of memory", flag) : OP_OK;
}
