/*
 * libonepath-client volumes (protocol §3.5): the volume map packed for volume.put and
 * level.put and read back from level.info, and the two volume methods. Only the keys of
 * a volume's kind are sent; numbers go as float64, so the daemon reads the very doubles.
 */
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

static const char *const kinds[3] = {"box", "cylinder", "prism"};
static const char *const modes[2] = {"area", "obstacle"};

static void pack_str(msgpack_packer *pk, const char *k, const char *v)
{
    op_rpc_pack_key(pk, k);
    op_rpc_pack_key(pk, v);
}

/* [v0, ...] under key k (NULL: the array alone). */
static void pack_doubles(msgpack_packer *pk, const char *k, const double *v, int n)
{
    if (k)
        op_rpc_pack_key(pk, k);
    msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++)
        msgpack_pack_double(pk, v[i]);
}

void op_cpack_volume(msgpack_packer *pk, const op_client_volume *v)
{
    int kind = v->kind >= 0 && v->kind <= 2 ? (int)v->kind : 0;
    int shape = kind == OP_CLIENT_VOLUME_BOX ? 2 : kind == OP_CLIENT_VOLUME_CYLINDER ? 3 : 2;
    msgpack_pack_map(pk, (size_t)(3 + (v->area >= 0) + shape));
    pack_str(pk, "name", v->name);
    pack_str(pk, "mode", v->mode == OP_CLIENT_VOLUME_OBSTACLE ? "obstacle" : "area");
    if (v->area >= 0) {
        op_rpc_pack_key(pk, "area");
        msgpack_pack_int(pk, v->area);
    }
    pack_str(pk, "kind", kinds[kind]);
    if (kind == OP_CLIENT_VOLUME_BOX) {
        pack_doubles(pk, "bmin", v->bmin, 3);
        pack_doubles(pk, "bmax", v->bmax, 3);
    } else if (kind == OP_CLIENT_VOLUME_CYLINDER) {
        pack_doubles(pk, "center", v->center, 2);
        op_rpc_pack_key(pk, "radius");
        msgpack_pack_double(pk, v->radius);
        pack_doubles(pk, "y", v->y, 2);
    } else {
        int n = v->npoints < 0 ? 0 : v->npoints;
        op_rpc_pack_key(pk, "points");
        msgpack_pack_array(pk, (size_t)n);
        for (int i = 0; i < n && i < OP_CLIENT_MAX_PRISM_POINTS; i++)
            pack_doubles(pk, NULL, v->points[i], 2);
        pack_doubles(pk, "y", v->y, 2);
    }
}

static op_status number(const msgpack_object *o, double *out, const char *what, op_err *err)
{
    if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64)
        *out = o->via.f64;
    else if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        *out = (double)o->via.u64;
    else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        *out = (double)o->via.i64;
    else
        return op_err_set(err, OP_EPROTO, "client: volume %s is not a number", what);
    return OP_OK;
}

static op_status numbers(const msgpack_object *m, const char *k, double *out, int n, op_err *err)
{
    const msgpack_object *a = op_rpc_get(m, k);
    if (!a || a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size != (uint32_t)n)
        return op_err_set(err, OP_EPROTO, "client: volume '%s' is not an array of %d", k, n);
    op_status st = OP_OK;
    for (int i = 0; i < n && st == OP_OK; i++)
        st = number(&a->via.array.ptr[i], &out[i], k, err);
    return st;
}

/* Which of names[0..n) the str value of key k is (-1 and OP_EPROTO when none). */
static int pick(const msgpack_object *m, const char *k, const char *const *names, int n,
                op_err *err)
{
    const char *s;
    size_t len;
    if (op_rpc_get_str(m, k, 0, &s, &len, err) != OP_OK)
        return -1;
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && !memcmp(names[i], s, len))
            return i;
    op_err_set(err, OP_EPROTO, "client: volume %s '%.*s' unknown", k, (int)(len > 32 ? 32 : len),
               s);
    return -1;
}

op_status op_cread_volume(const msgpack_object *m, op_client_volume *v, op_err *err)
{
    memset(v, 0, sizeof *v);
    if (m->type != MSGPACK_OBJECT_MAP)
        return op_err_set(err, OP_EPROTO, "client: a volume is not a map");
    const char *s;
    size_t len;
    op_status st = op_rpc_get_str(m, "name", 0, &s, &len, err);
    if (st != OP_OK)
        return st;
    snprintf(v->name, sizeof v->name, "%.*s", (int)(len > 64 ? 64 : len), s);
    int mode = pick(m, "mode", modes, 2, err), kind = pick(m, "kind", kinds, 3, err);
    if (mode < 0 || kind < 0)
        return err->status;
    v->mode = (op_client_volume_mode)mode;
    v->kind = (op_client_volume_kind)kind;
    int64_t area;
    if ((st = op_rpc_get_int(m, "area", 0, 63, 0, &area, NULL, err)) != OP_OK)
        return st;
    v->area = (int)area;
    if (kind == OP_CLIENT_VOLUME_BOX) {
        if ((st = numbers(m, "bmin", v->bmin, 3, err)) == OP_OK)
            st = numbers(m, "bmax", v->bmax, 3, err);
        return st;
    }
    if ((st = numbers(m, "y", v->y, 2, err)) != OP_OK)
        return st;
    if (kind == OP_CLIENT_VOLUME_CYLINDER) {
        const msgpack_object *r = op_rpc_get(m, "radius");
        if ((st = numbers(m, "center", v->center, 2, err)) == OP_OK)
            st = r ? number(r, &v->radius, "radius", err)
                   : op_err_set(err, OP_EPROTO, "client: volume without 'radius'");
        return st;
    }
    const msgpack_object *p = op_rpc_get(m, "points");
    if (!p || p->type != MSGPACK_OBJECT_ARRAY || p->via.array.size > OP_CLIENT_MAX_PRISM_POINTS)
        return op_err_set(err, OP_EPROTO, "client: volume 'points' is not an array of <= %d",
                          OP_CLIENT_MAX_PRISM_POINTS);
    v->npoints = (int)p->via.array.size;
    for (int i = 0; i < v->npoints && st == OP_OK; i++) {
        const msgpack_object *q = &p->via.array.ptr[i];
        if (q->type != MSGPACK_OBJECT_ARRAY || q->via.array.size != 2)
            return op_err_set(err, OP_EPROTO, "client: volume point %d is not [x, z]", i);
        if ((st = number(&q->via.array.ptr[0], &v->points[i][0], "point", err)) == OP_OK)
            st = number(&q->via.array.ptr[1], &v->points[i][1], "point", err);
    }
    return st;
}

op_status op_client_volume_put(op_client *c, const char *level, const op_client_volume *v,
                               int timeout_ms, uint64_t *version, int *changed, op_err *err)
{
    op_creq q;
    op_creq_begin(c, &q, "volume.put", 2);
    op_rpc_pack_key(&q.pk, "level");
    op_rpc_pack_key(&q.pk, level);
    op_rpc_pack_key(&q.pk, "volume");
    op_cpack_volume(&q.pk, v);
    return op_cedit_call(c, &q, timeout_ms, version, changed, err);
}

op_status op_client_volume_drop(op_client *c, const char *level, const char *name, int timeout_ms,
                                uint64_t *version, int *changed, op_err *err)
{
    op_creq q;
    op_creq_begin(c, &q, "volume.drop", 2);
    op_rpc_pack_key(&q.pk, "level");
    op_rpc_pack_key(&q.pk, level);
    op_rpc_pack_key(&q.pk, "name");
    op_rpc_pack_key(&q.pk, name);
    return op_cedit_call(c, &q, timeout_ms, version, changed, err);
}

op_status op_client_volumes_get(op_client *c, const char *level, int timeout_ms,
                                op_client_volumes *out, op_err *err)
{
    memset(out, 0, sizeof *out);
    op_creq q;
    op_creply r;
    op_creq_begin(c, &q, "level.info", 1);
    op_rpc_pack_key(&q.pk, "level");
    op_rpc_pack_key(&q.pk, level);
    op_status st = op_client_call(c, &q, timeout_ms, &r, err);
    if (st != OP_OK)
        return st;
    const msgpack_object *a;
    if ((st = op_cget_u64(r.result, "version", &out->version, err)) == OP_OK &&
        (st = op_rpc_get_type(r.result, "volumes", MSGPACK_OBJECT_ARRAY, 0, &a, err)) == OP_OK) {
        uint32_t n = a->via.array.size;
        out->v = calloc(n ? n : 1, sizeof *out->v);
        if (!out->v)
            st = op_err_set(err, OP_ENOMEM, "client: out of memory for %u volumes", n);
        for (uint32_t i = 0; st == OP_OK && i < n; i++)
            if ((st = op_cread_volume(&a->via.array.ptr[i], &out->v[i], err)) == OP_OK)
                out->n = (int)i + 1;
    }
    op_creply_fini(&r);
    if (st != OP_OK)
        op_client_volumes_free(out);
    return op_client_named(c, st, err);
}

void op_client_volumes_free(op_client_volumes *v)
{
    free(v->v);
    v->v = NULL;
    v->n = 0;
}
