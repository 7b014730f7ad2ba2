/*
 * onepathd path (protocol §4.4): the queries of docs/queries.md on the stitched mesh of
 * the level's current version (navmesh.c): both points snapped to their nearest polygon
 * (§2), the corridor (§4), the straight path (§5), as `onepath path` computes them.
 */
#include <math.h>

#include "onepath/limits.h"

#include "level.h"
#include "onepath/query.h"

/* An array of three finite numbers. */
static op_status point_param(const msgpack_object *p, const char *key, int optional, double out[3],
                             int *present, op_err *err)
{
    const msgpack_object *o = op_rpc_get(p, key);
    if (present)
        *present = o != NULL;
    if (!o) {
        if (optional)
            return OP_OK;
        return op_err_set(err, OP_EPROTO, "missing '%s' ([x, y, z])", key);
    }
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3)
        return op_err_set(err, OP_EPROTO, "'%s' must be an array of 3 numbers", key);
    for (int i = 0; i < 3; i++) {
        const msgpack_object *v = &o->via.array.ptr[i];
        if (v->type == MSGPACK_OBJECT_FLOAT32 || v->type == MSGPACK_OBJECT_FLOAT64)
            out[i] = v->via.f64;
        else if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
            out[i] = (double)v->via.u64;
        else if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
            out[i] = (double)v->via.i64;
        else
            return op_err_set(err, OP_EPROTO, "'%s'[%d] must be a number", key, i);
        if (!isfinite(out[i]) || fabs(out[i]) > OP_MAX_COORD)
            return op_err_set(err, OP_ERANGE, "'%s'[%d] must be finite and within ±%g", key, i,
                              OP_MAX_COORD);
    }
    return OP_OK;
}

static int pack_point(msgpack_packer *pk, const double q[3])
{
    int p = msgpack_pack_array(pk, 3);
    for (int i = 0; i < 3; i++)
        p |= msgpack_pack_double(pk, q[i]);
    return p;
}

/* {tx, tz, layer, poly, area, flags} of a polygon. */
static int pack_poly(msgpack_packer *pk, const op_mesh *m, op_polyref r)
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    int p = msgpack_pack_map(pk, 6);
    p |= op_rpc_pack_key(pk, "tx") | msgpack_pack_int(pk, t->tx);
    p |= op_rpc_pack_key(pk, "tz") | msgpack_pack_int(pk, t->tz);
    p |= op_rpc_pack_key(pk, "layer") | msgpack_pack_int(pk, t->layer);
    p |= op_rpc_pack_key(pk, "poly") | msgpack_pack_int(pk, r.poly);
    p |= op_rpc_pack_key(pk, "area") | msgpack_pack_int(pk, t->areas[r.poly]);
    p |= op_rpc_pack_key(pk, "flags") | msgpack_pack_int(pk, t->flags[r.poly]);
    return p;
}

static int pack_result(msgpack_packer *pk, uint64_t version, const op_mesh *m, const double s[3],
                       const double g[3], const op_path *path, const op_straight_path *sp)
{
    double length = 0;
    for (int i = 1; i < sp->npoints; i++) {
        const double *a = sp->points[i - 1].pos, *b = sp->points[i].pos;
        double dx = b[0] - a[0], dy = b[1] - a[1], dz = b[2] - a[2];
        length += sqrt(dx * dx + dy * dy + dz * dz);
    }
    int p = msgpack_pack_map(pk, 8);
    p |= op_rpc_pack_key(pk, "version") | msgpack_pack_uint64(pk, version);
    p |= op_rpc_pack_key(pk, "from") | pack_point(pk, s);
    p |= op_rpc_pack_key(pk, "to") | pack_point(pk, g);
    p |= op_rpc_pack_key(pk, "partial");
    p |= path->partial ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    p |= op_rpc_pack_key(pk, "cost") | msgpack_pack_double(pk, path->cost);
    p |= op_rpc_pack_key(pk, "length") | msgpack_pack_double(pk, length);
    p |= op_rpc_pack_key(pk, "corridor") | msgpack_pack_array(pk, (size_t)path->npolys);
    for (int i = 0; i < path->npolys; i++)
        p |= pack_poly(pk, m, path->polys[i]);
    p |= op_rpc_pack_key(pk, "straight") | msgpack_pack_array(pk, (size_t)sp->npoints);
    for (int i = 0; i < sp->npoints; i++) {
        const op_straight_point *q = &sp->points[i];
        const op_tile *t = op_mesh_tile(m, q->poly.tile);
        p |= msgpack_pack_map(pk, 6);
        p |= op_rpc_pack_key(pk, "pos") | pack_point(pk, q->pos);
        p |= op_rpc_pack_key(pk, "flags") | msgpack_pack_unsigned_int(pk, q->flags);
        p |= op_rpc_pack_key(pk, "tx") | msgpack_pack_int(pk, t->tx);
        p |= op_rpc_pack_key(pk, "tz") | msgpack_pack_int(pk, t->tz);
        p |= op_rpc_pack_key(pk, "layer") | msgpack_pack_int(pk, t->layer);
        p |= op_rpc_pack_key(pk, "poly") | msgpack_pack_int(pk, q->poly.poly);
    }
    return p;
}

static op_status query(const op_mesh *m, uint64_t version, const double from[3], const double to[3],
                       const double half[3], msgpack_packer *pk, op_err *err)
{
    op_polyref rs, re;
    double s[3], g[3];
    if (op_query_nearest(m, from, half, NULL, &rs, s, err) != OP_OK)
        return op_err_set(err, OP_ENOTFOUND, "from (%g, %g, %g): no polygon within extents",
                          from[0], from[1], from[2]);
    if (op_query_nearest(m, to, half, NULL, &re, g, err) != OP_OK)
        return op_err_set(err, OP_ENOTFOUND, "to (%g, %g, %g): no polygon within extents", to[0],
                          to[1], to[2]);
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_path path;
    op_straight_path sp;
    op_status st = out && scratch ? OP_OK : op_err_set(err, OP_ENOMEM, "path: out of memory");
    if (st == OP_OK)
        st = op_query_path(m, NULL, rs, s, re, g, out, scratch, &path, err);
    if (st == OP_OK)
        st = op_query_straight(m, path.polys, path.npolys, s, g, out, scratch, &sp, err);
    if (st == OP_OK && pack_result(pk, version, m, s, g, &path, &sp))
        st = op_err_set(err, OP_ENOMEM, "path: out of memory");
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    return st;
}

op_status opd_m_path(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "from", "to", "extents", NULL};
    double from[3], to[3], half[3] = {2.0, 4.0, 2.0}; /* `onepath path`'s default */
    int has_half;
    op_status st;
    if ((st = opd_param_keys(p, allowed, err)) != OP_OK ||
        (st = opd_param_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = point_param(p, "from", 0, from, NULL, err)) != OP_OK ||
        (st = point_param(p, "to", 0, to, NULL, err)) != OP_OK ||
        (st = point_param(p, "extents", 1, half, &has_half, err)) != OP_OK)
        return st;
    for (int i = 0; i < 3; i++)
        if (!(half[i] >= 0))
            return op_err_set(err, OP_ERANGE, "'extents'[%d] must be >= 0", i);
    opd_navmesh *nm;
    st = opd_navmesh_get(c->d, c->level, &c->wait, &nm, err);
    if (st != OP_OK)
        return st;
    st = query(nm->mesh, nm->version, from, to, half, pk, err);
    opd_navmesh_unref(nm);
    return st;
}
