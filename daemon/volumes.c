/*
 * onepathd volumes (protocol §3.5): the volume map read strictly from requests, level
 * files and journal records, and written back; a level's volume set, name-sorted and
 * shared between versions (an edit copies pointers, not volumes).
 *
 * The decoder checks in this order, so that a message names the first fault: the name,
 * the keys (unknown, repeated), mode and kind, the keys the kind does not use, the
 * required keys and their types, the point count (OP_ELIMIT before any point is read),
 * then build3d-spans.md §6.2 field by field under the protocol's key names, and last the
 * core's own check (op_volume_validate: convexity and winding of a prism).
 * Typical: 0..10^3 volumes a level, 10^4 at most in practice (OP_MAX_VOLUMES 65536).
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "onepath/limits.h"

static const char *const kind_names[3] = {"box", "cylinder", "prism"};
static const char *const mode_names[2] = {"area", "obstacle"};

/* Keys per kind (protocol §3.5), beside name, mode, area and kind. */
static const char *const shape_keys[3][3] = {
    {"bmin", "bmax", NULL}, {"center", "radius", "y"}, {"points", "y", NULL}};

opd_volume *opd_volume_ref(opd_volume *v)
{
    atomic_fetch_add(&v->refs, 1);
    return v;
}

void opd_volume_free(opd_volume *v)
{
    if (v && atomic_fetch_sub(&v->refs, 1) == 1)
        free(v);
}

/* ---- decoding ---- */

typedef struct vreader {
    const msgpack_object *o;
    const char *what;             /* where the map is ("volumes[3]"), or NULL */
    char who[OP_ERR_MSG_MAX / 2]; /* what every message starts with: "volumes[3]: volume 'door1'" */
    op_err *err;
} vreader;

static op_status fail(vreader *r, op_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static op_status fail(vreader *r, op_status code, const char *fmt, ...)
{
    char msg[OP_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return op_err_set(r->err, code, "%s: %s", r->who, msg);
}

/* Prefixes r->who to a message the rpc helpers wrote into r->err. */
static op_status prefixed(vreader *r, op_status st)
{
    char msg[OP_ERR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", r->err->msg);
    return op_err_set(r->err, st, "%s: %s", r->who, msg);
}

/* Which of names[0..n) the str value of key is. */
static op_status pick(vreader *r, const char *key, const char *const *names, int n, int *out)
{
    const char *s;
    size_t len;
    op_status st = op_rpc_get_str(r->o, key, 0, &s, &len, r->err);
    if (st != OP_OK)
        return prefixed(r, st);
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && !memcmp(names[i], s, len)) {
            *out = i;
            return OP_OK;
        }
    return fail(r, OP_EINVAL, "%s: '%.*s' is not %s%s%s%s%s", key, (int)(len > 32 ? 32 : len), s,
                names[0], n > 2 ? ", " : " or ", names[1], n > 2 ? " or " : "",
                n > 2 ? names[2] : "");
}

/* A number (int or float), finite and within +-OP_MAX_ORIGIN (build3d-spans.md §6.2). */
static op_status number(vreader *r, const msgpack_object *o, const char *key, int index,
                        double *out)
{
    char field[48];
    if (index >= 0)
        snprintf(field, sizeof field, "%s[%d]", key, index);
    else
        snprintf(field, sizeof field, "%s", key);
    if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64)
        *out = o->via.f64;
    else if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        *out = (double)o->via.u64;
    else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        *out = (double)o->via.i64;
    else
        return fail(r, OP_EPROTO, "%s must be a number", field);
    if (!isfinite(*out))
        return fail(r, OP_EINVAL, "%s = %g is not finite", field, *out);
    if (fabs(*out) > OP_MAX_ORIGIN)
        return fail(r, OP_ERANGE, "%s = %g is beyond +-%g", field, *out, OP_MAX_ORIGIN);
    return OP_OK;
}

/* The array of n numbers under key (or the array a itself when key names an element). */
static op_status numbers(vreader *r, const msgpack_object *a, const char *key, double *out, int n)
{
    if (!a)
        return fail(r, OP_EPROTO, "missing '%s'", key);
    if (a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size != (uint32_t)n)
        return fail(r, OP_EPROTO, "%s must be an array of %d numbers", key, n);
    op_status st = OP_OK;
    for (int i = 0; i < n && st == OP_OK; i++)
        st = number(r, &a->via.array.ptr[i], key, i, &out[i]);
    return st;
}

static op_status read_y(vreader *r, op_volume *v)
{
    double y[2];
    op_status st = numbers(r, op_rpc_get(r->o, "y"), "y", y, 2);
    if (st != OP_OK)
        return st;
    if (y[0] > y[1])
        return fail(r, OP_ERANGE, "y: ymin %g > ymax %g", y[0], y[1]);
    v->bmin[1] = y[0];
    v->bmax[1] = y[1];
    return OP_OK;
}

static op_status read_box(vreader *r, op_volume *v)
{
    op_status st;
    if ((st = numbers(r, op_rpc_get(r->o, "bmin"), "bmin", v->bmin, 3)) != OP_OK ||
        (st = numbers(r, op_rpc_get(r->o, "bmax"), "bmax", v->bmax, 3)) != OP_OK)
        return st;
    for (int i = 0; i < 3; i++)
        if (v->bmin[i] > v->bmax[i])
            return fail(r, OP_ERANGE, "bmin[%d] = %g > bmax[%d] = %g", i, v->bmin[i], i,
                        v->bmax[i]);
    return OP_OK;
}

static op_status read_cylinder(vreader *r, op_volume *v)
{
    double c[2];
    const msgpack_object *ro = op_rpc_get(r->o, "radius");
    op_status st;
    if ((st = numbers(r, op_rpc_get(r->o, "center"), "center", c, 2)) != OP_OK)
        return st;
    if (!ro)
        return fail(r, OP_EPROTO, "missing 'radius'");
    if ((st = number(r, ro, "radius", -1, &v->bmax[0])) != OP_OK || (st = read_y(r, v)) != OP_OK)
        return st;
    if (!(v->bmax[0] > 0))
        return fail(r, OP_ERANGE, "radius = %g is not > 0", v->bmax[0]);
    v->bmin[0] = c[0];
    v->bmin[2] = c[1];
    return OP_OK;
}

static op_status read_prism(vreader *r, op_volume *v)
{
    const msgpack_object *p = op_rpc_get(r->o, "points");
    if (!p)
        return fail(r, OP_EPROTO, "missing 'points'");
    if (p->type != MSGPACK_OBJECT_ARRAY)
        return fail(r, OP_EPROTO, "points must be an array of [x, z] points");
    uint32_t n = p->via.array.size;
    if (n > OP_MAX_PRISM_VERTS) /* before a single point is read */
        return fail(r, OP_ELIMIT, "points: %u points, more than %d", n, OP_MAX_PRISM_VERTS);
    op_status st = OP_OK;
    char key[32];
    for (uint32_t i = 0; i < n && st == OP_OK; i++) {
        snprintf(key, sizeof key, "points[%u]", i);
        st = numbers(r, &p->via.array.ptr[i], key, &v->pts[2 * i], 2);
    }
    if (st != OP_OK || (st = read_y(r, v)) != OP_OK)
        return st;
    if (n < 3)
        return fail(r, OP_ERANGE, "points: %u points, fewer than 3", n);
    v->npts = (int)n;
    return OP_OK;
}

static const char *const all_keys[] = {"name",   "mode",   "area",   "kind", "bmin", "bmax",
                                       "center", "radius", "points", "y",    NULL};

/* Keys of the map: none the kind does not use (unknown and repeated ones are already
 * refused). */
static op_status check_kind_keys(vreader *r, int kind)
{
    const char *const *all = all_keys;
    const msgpack_object_map *m = &r->o->via.map;
    for (uint32_t i = 0; i < m->size; i++) {
        const msgpack_object_str *k = &m->ptr[i].key.via.str;
        int used = 0;
        for (int j = 0; j < 4 && !used; j++)
            used = strlen(all[j]) == k->size && !memcmp(all[j], k->ptr, k->size);
        for (int j = 0; j < 3 && !used; j++)
            used = shape_keys[kind][j] && strlen(shape_keys[kind][j]) == k->size &&
                   !memcmp(shape_keys[kind][j], k->ptr, k->size);
        if (!used)
            return fail(r, OP_EPROTO, "key '%.*s' is not used by a %s", (int)k->size, k->ptr,
                        kind_names[kind]);
    }
    return OP_OK;
}

static void xz_bounds(opd_volume *dv)
{
    const op_volume *v = &dv->v;
    /* As build3d-spans.md §6.4 (and the core) compute it. */
    if (v->kind == OP_VOLUME_BOX) {
        dv->lo[0] = v->bmin[0], dv->lo[1] = v->bmin[2];
        dv->hi[0] = v->bmax[0], dv->hi[1] = v->bmax[2];
    } else if (v->kind == OP_VOLUME_CYLINDER) {
        double r = v->bmax[0];
        dv->lo[0] = v->bmin[0] - r, dv->lo[1] = v->bmin[2] - r;
        dv->hi[0] = v->bmin[0] + r, dv->hi[1] = v->bmin[2] + r;
    } else {
        dv->lo[0] = dv->hi[0] = v->pts[0];
        dv->lo[1] = dv->hi[1] = v->pts[1];
        for (int i = 1; i < v->npts; i++)
            for (int k = 0; k < 2; k++) {
                double p = v->pts[2 * i + k];
                dv->lo[k] = p < dv->lo[k] ? p : dv->lo[k];
                dv->hi[k] = p > dv->hi[k] ? p : dv->hi[k];
            }
    }
}

static op_status decode(vreader *r, op_volume *v)
{
    const char *s;
    size_t len;
    int mode = 0, kind = 0; /* set by pick on OP_OK (gcc -O3 cannot see it) */
    int64_t area = 0;
    int has_area = 0;
    op_status st = op_rpc_get_str(r->o, "name", 0, &s, &len, r->err);
    if (st == OP_OK)
        st = op_rpc_name(s, len, "volume", v->name, r->err);
    if (st != OP_OK)
        return prefixed(r, st);
    snprintf(r->who, sizeof r->who, "%s%svolume '%s'", r->what ? r->what : "", r->what ? ": " : "",
             v->name);
    if ((st = op_rpc_check_keys(r->o, all_keys, r->err)) != OP_OK)
        return prefixed(r, st);
    if ((st = pick(r, "mode", mode_names, 2, &mode)) != OP_OK ||
        (st = pick(r, "kind", kind_names, 3, &kind)) != OP_OK ||
        (st = check_kind_keys(r, kind)) != OP_OK)
        return st;
    if ((st = op_rpc_get_int(r->o, "area", 0, 63, mode == OP_VOLUME_OBSTACLE, &area, &has_area,
                             r->err)) != OP_OK)
        return prefixed(r, st);
    v->mode = (op_volume_mode)mode;
    v->kind = (op_volume_kind)kind;
    v->area = (int)area; /* an obstacle's is 0 when omitted (build3d-runtime.md §4.3) */
    st = kind == OP_VOLUME_BOX        ? read_box(r, v)
         : kind == OP_VOLUME_CYLINDER ? read_cylinder(r, v)
                                      : read_prism(r, v);
    if (st != OP_OK)
        return st;
    /* What is left of §6.2 is the prism's shape (repeated points, turns, winding). */
    op_err ve;
    if (op_volume_validate(v, &ve) != OP_OK) {
        const char *m = strstr(ve.msg, "): ");
        return fail(r, ve.status, "%s%s", kind == OP_VOLUME_PRISM ? "points: " : "",
                    m ? m + 3 : ve.msg);
    }
    return OP_OK;
}

op_status opd_volume_decode(const msgpack_object *o, const char *what, opd_volume **out,
                            op_err *err)
{
    *out = NULL;
    vreader r = {o, what, "", err};
    snprintf(r.who, sizeof r.who, "%s", what ? what : "volume");
    if (o->type != MSGPACK_OBJECT_MAP)
        return op_err_set(err, OP_EPROTO, "%s must be a map", r.who);
    opd_volume *dv = calloc(1, sizeof *dv);
    if (!dv)
        return op_err_set(err, OP_ENOMEM, "%s: out of memory", r.who);
    op_status st = decode(&r, &dv->v);
    if (st != OP_OK) {
        free(dv);
        return st;
    }
    atomic_init(&dv->refs, 1);
    xz_bounds(dv);
    *out = dv;
    return OP_OK;
}

/* ---- writing and comparing ---- */

static int pack_doubles(msgpack_packer *pk, const char *key, const double *v, int n)
{
    int rc = key ? op_rpc_pack_key(pk, key) : 0;
    rc |= msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++)
        rc |= msgpack_pack_double(pk, v[i]);
    return rc;
}

int opd_volume_pack(msgpack_packer *pk, const op_volume *v)
{
    int kind = v->kind;
    int rc = msgpack_pack_map(pk, kind == OP_VOLUME_CYLINDER ? 7 : 6);
    rc |= op_rpc_pack_key(pk, "name") | op_rpc_pack_key(pk, v->name);
    rc |= op_rpc_pack_key(pk, "mode") | op_rpc_pack_key(pk, mode_names[v->mode]);
    rc |= op_rpc_pack_key(pk, "area") | msgpack_pack_int(pk, v->area);
    rc |= op_rpc_pack_key(pk, "kind") | op_rpc_pack_key(pk, kind_names[kind]);
    double y[2] = {v->bmin[1], v->bmax[1]};
    if (kind == OP_VOLUME_BOX) {
        rc |= pack_doubles(pk, "bmin", v->bmin, 3) | pack_doubles(pk, "bmax", v->bmax, 3);
    } else if (kind == OP_VOLUME_CYLINDER) {
        double c[2] = {v->bmin[0], v->bmin[2]};
        rc |= pack_doubles(pk, "center", c, 2);
        rc |= op_rpc_pack_key(pk, "radius") | msgpack_pack_double(pk, v->bmax[0]);
        rc |= pack_doubles(pk, "y", y, 2);
    } else {
        rc |= op_rpc_pack_key(pk, "points") | msgpack_pack_array(pk, (size_t)v->npts);
        for (int i = 0; i < v->npts; i++)
            rc |= pack_doubles(pk, NULL, &v->pts[2 * i], 2);
        rc |= pack_doubles(pk, "y", y, 2);
    }
    return rc;
}

static int same_bits(const double *a, const double *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}

int opd_volume_equal(const op_volume *a, const op_volume *b)
{
    if (a->kind != b->kind || a->mode != b->mode || a->area != b->area ||
        !same_bits(&a->bmin[1], &b->bmin[1], 1) || !same_bits(&a->bmax[1], &b->bmax[1], 1))
        return 0;
    if (a->kind == OP_VOLUME_BOX)
        return same_bits(a->bmin, b->bmin, 3) && same_bits(a->bmax, b->bmax, 3);
    if (a->kind == OP_VOLUME_CYLINDER)
        return same_bits(&a->bmin[0], &b->bmin[0], 1) && same_bits(&a->bmin[2], &b->bmin[2], 1) &&
               same_bits(&a->bmax[0], &b->bmax[0], 1);
    return a->npts == b->npts && same_bits(a->pts, b->pts, 2 * (size_t)a->npts);
}

/* ---- volume sets ---- */

opd_vset *opd_vset_ref(opd_vset *s)
{
    if (s)
        atomic_fetch_add(&s->refs, 1);
    return s;
}

void opd_vset_unref(opd_vset *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    for (int i = 0; i < s->n; i++)
        opd_volume_free(s->v[i]);
    free(s->v);
    free(s);
}

int opd_vset_count(const opd_vset *s)
{
    return s ? s->n : 0;
}

/* A set over v[0..n) (taken). */
static op_status vset_new(opd_volume **v, int n, opd_vset **out, op_err *err)
{
    opd_vset *s = calloc(1, sizeof *s);
    if (!s) {
        for (int i = 0; i < n; i++)
            opd_volume_free(v[i]);
        free(v);
        return op_err_set(err, OP_ENOMEM, "volumes: out of memory");
    }
    atomic_init(&s->refs, 1);
    s->n = n;
    s->v = v;
    s->bytes = sizeof *s + (size_t)n * (sizeof *v + sizeof(opd_volume));
    *out = s;
    return OP_OK;
}

typedef struct indexed {
    opd_volume *v;
    int index;
} indexed;

static int indexed_cmp(const void *a, const void *b)
{
    const indexed *x = a, *y = b;
    int c = strcmp(x->v->v.name, y->v->v.name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

op_status opd_vset_make(opd_volume **v, int n, opd_vset **out, op_err *err)
{
    *out = NULL;
    op_status st = OP_OK;
    indexed *ix = n > OP_MAX_VOLUMES ? NULL : malloc(((size_t)n + 1) * sizeof *ix);
    if (n > OP_MAX_VOLUMES)
        st = op_err_set(err, OP_ELIMIT, "volumes: %d volumes, more than OP_MAX_VOLUMES (%d)", n,
                        OP_MAX_VOLUMES);
    else if (!ix)
        st = op_err_set(err, OP_ENOMEM, "volumes: out of memory for %d volumes", n);
    for (int i = 0; st == OP_OK && i < n; i++)
        ix[i] = (indexed){v[i], i};
    if (st == OP_OK)
        qsort(ix, (size_t)n, sizeof *ix, indexed_cmp);
    for (int i = 1; st == OP_OK && i < n; i++)
        if (!strcmp(ix[i - 1].v->v.name, ix[i].v->v.name))
            st = op_err_set(err, OP_EINVAL, "volumes[%d] and volumes[%d] are both named '%s'",
                            ix[i - 1].index, ix[i].index, ix[i].v->v.name);
    if (st != OP_OK) {
        for (int i = 0; i < n; i++)
            opd_volume_free(v[i]);
        free(v);
        free(ix);
        return st;
    }
    for (int i = 0; i < n; i++)
        v[i] = ix[i].v;
    free(ix);
    return vset_new(v, n, out, err);
}

/* The index of name in s, or -(insertion point) - 1. */
static int search(const opd_vset *s, const char *name)
{
    int lo = 0, hi = s ? s->n : 0;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(s->v[mid]->v.name, name);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -lo - 1;
}

int opd_vset_find(const opd_vset *s, const char *name)
{
    int i = search(s, name);
    return i >= 0 ? i : -1;
}

op_status opd_vset_edit(const opd_vset *s, opd_volume *v, const char *drop, opd_vset **out,
                        op_err *err)
{
    *out = NULL;
    int n = opd_vset_count(s);
    int at = search(s, v ? v->v.name : drop);
    int found = at >= 0, pos = found ? at : -at - 1;
    int m = n + (v && !found) - (!v && found);
    if (m > OP_MAX_VOLUMES)
        return op_err_set(err, OP_ELIMIT,
                          "volume '%s': the level has %d volumes, OP_MAX_VOLUMES (%d)", v->v.name,
                          n, OP_MAX_VOLUMES);
    if (m == 0)
        return OP_OK;
    opd_volume **l = malloc((size_t)m * sizeof *l);
    if (!l)
        return op_err_set(err, OP_ENOMEM, "volumes: out of memory for %d volumes", m);
    int k = 0;
    for (int i = 0; i < pos; i++)
        l[k++] = opd_volume_ref(s->v[i]);
    if (v)
        l[k++] = opd_volume_ref(v);
    for (int i = pos + found; i < n; i++)
        l[k++] = opd_volume_ref(s->v[i]);
    return vset_new(l, k, out, err);
}

int opd_vset_equal(const opd_vset *a, const opd_vset *b)
{
    if (opd_vset_count(a) != opd_vset_count(b))
        return 0;
    for (int i = 0; i < opd_vset_count(a); i++)
        if (strcmp(a->v[i]->v.name, b->v[i]->v.name) || !opd_volume_equal(&a->v[i]->v, &b->v[i]->v))
            return 0;
    return 1;
}

int opd_vset_pack(msgpack_packer *pk, const opd_vset *s)
{
    int n = opd_vset_count(s);
    int rc = msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++)
        rc |= opd_volume_pack(pk, &s->v[i]->v);
    return rc;
}
