/*
 * onepathd mesh methods (protocol §4, §5): mesh.put and mesh.drop, edits of one mesh of a
 * level (edit.c), idempotent (§6).
 */
#include "level.h"

op_status opd_m_mesh_put(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "name", "verts", "tris", "areas", NULL};
    opd_mesh *m;
    uint64_t version;
    int changed;
    op_status st;
    if ((st = opd_param_keys(p, allowed, err)) != OP_OK ||
        (st = opd_param_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = opd_param_mesh(p, "name", &m, err)) != OP_OK ||
        (st = opd_edit_mesh_put(c->d->reg, c->level, m, &version, &changed, err)) != OP_OK)
        return st;
    return opd_pack_edit(pk, version, changed, "changed", err);
}

op_status opd_m_drop_named(opd_call *c, const msgpack_object *p, msgpack_packer *pk,
                           const char *what, opd_edit_drop_fn drop, op_err *err)
{
    static const char *const allowed[] = {"level", "name", NULL};
    char name[65];
    uint64_t version;
    int changed;
    op_status st;
    if ((st = opd_param_keys(p, allowed, err)) != OP_OK ||
        (st = opd_param_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = opd_param_name(p, "name", what, name, err)) != OP_OK ||
        (st = drop(c->d->reg, c->level, name, &version, &changed, err)) != OP_OK)
        return st;
    return opd_pack_edit(pk, version, changed, "changed", err);
}

op_status opd_m_mesh_drop(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    return opd_m_drop_named(c, p, pk, "mesh", opd_edit_mesh_drop, err);
}
