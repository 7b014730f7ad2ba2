/*
 * onepathd volume methods (protocol §3.5, §4, §5): volume.put (add or replace: a move is
 * one call) and volume.drop, edits of one volume of a level (edit.c), idempotent (§6).
 */
#include "level.h"

op_status opd_m_volume_put(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "volume", NULL};
    const msgpack_object *vo;
    opd_volume *v;
    uint64_t version;
    int changed;
    op_status st;
    if ((st = opd_param_keys(p, allowed, err)) != OP_OK ||
        (st = opd_param_name(p, "level", "level", c->level, err)) != OP_OK)
        return st;
    if (!(vo = op_rpc_get(p, "volume")))
        return op_err_set(err, OP_EPROTO, "missing 'volume'");
    if ((st = opd_volume_decode(vo, NULL, &v, err)) != OP_OK ||
        (st = opd_edit_volume_put(c->d->reg, c->level, v, &version, &changed, err)) != OP_OK)
        return st;
    return opd_pack_edit(pk, version, changed, "changed", err);
}

op_status opd_m_volume_drop(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    return opd_m_drop_named(c, p, pk, "volume", opd_edit_volume_drop, err);
}
