/*
 * onepathd level content: named meshes (the uploaded bytes, immutable, reference
 * counted so that versions, snapshots and compaction share them), the mesh map of the
 * level files and journal records, the name-ordered mesh list, and the settings map of
 * protocol §3.3. Used by the level state (equality, lists), the store (files) and the
 * methods (params). Meshes: up to --max-level-verts vertices each, typically 10^2..10^6.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "onepath/limits.h"

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float le_float(const uint8_t *p)
{
    uint32_t u = le32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint8_t *dup_bytes(const uint8_t *p, size_t n)
{
    uint8_t *d = malloc(n ? n : 1);
    if (d && n)
        memcpy(d, p, n);
    return d;
}

/* Bounds of the vertices the triangles use (their indices checked by check_mesh);
 * coordinates are checked when the mesh's part is made (snapshot.c). The first vertex
 * seeds the box: no test of the first one in the loop. */
static void mesh_box(opd_mesh *m)
{
    size_t n = m->tris_len / 4; /* vertex uses */
    m->has_box = n > 0;
    if (!n)
        return;
    float lo[3], hi[3];
    const uint8_t *v0 = m->verts + 12 * (size_t)le32(m->tris);
    for (int a = 0; a < 3; a++)
        lo[a] = hi[a] = le_float(v0 + 4 * a);
    for (size_t i = 1; i < n; i++) {
        const uint8_t *v = m->verts + 12 * (size_t)le32(m->tris + 4 * i);
        float x = le_float(v), y = le_float(v + 4), z = le_float(v + 8);
        lo[0] = x < lo[0] ? x : lo[0];
        hi[0] = x > hi[0] ? x : hi[0];
        lo[1] = y < lo[1] ? y : lo[1];
        hi[1] = y > hi[1] ? y : hi[1];
        lo[2] = z < lo[2] ? z : lo[2];
        hi[2] = z > hi[2] ? z : hi[2];
    }
    memcpy(m->bmin, lo, sizeof lo);
    memcpy(m->bmax, hi, sizeof hi);
}

static op_status check_mesh(const char *name, size_t verts_len, const uint8_t *tris,
                            size_t tris_len, const uint8_t *areas, size_t areas_len, op_err *err)
{
    if (verts_len % 12)
        return op_err_set(err, OP_EINVAL, "mesh '%s': verts has %zu bytes, not a multiple of 12",
                          name, verts_len);
    if (tris_len % 12)
        return op_err_set(err, OP_EINVAL, "mesh '%s': tris has %zu bytes, not a multiple of 12",
                          name, tris_len);
    if (areas && areas_len != tris_len / 12)
        return op_err_set(err, OP_EINVAL, "mesh '%s': areas has %zu bytes for %zu triangles", name,
                          areas_len, tris_len / 12);
    size_t nverts = verts_len / 12;
    for (size_t i = 0; i < tris_len / 4; i++) {
        int32_t v = (int32_t)le32(tris + 4 * i);
        if (v < 0 || (size_t)v >= nverts)
            return op_err_set(err, OP_ERANGE,
                              "mesh '%s': triangle %zu index %d is outside 0..%zu vertices", name,
                              i / 3, v, nverts);
    }
    for (size_t i = 0; areas && i < areas_len; i++)
        if (areas[i] > OP_MAX_AREA)
            return op_err_set(err, OP_ERANGE, "mesh '%s': triangle %zu area %u > %d", name, i,
                              areas[i], OP_MAX_AREA);
    return OP_OK;
}

op_status opd_mesh_make(const char *name, const uint8_t *verts, size_t verts_len,
                        const uint8_t *tris, size_t tris_len, const uint8_t *areas,
                        size_t areas_len, opd_mesh **out, op_err *err)
{
    *out = NULL;
    op_status st = check_mesh(name, verts_len, tris, tris_len, areas, areas_len, err);
    if (st != OP_OK)
        return st;
    opd_mesh *m = calloc(1, sizeof *m);
    if (!m)
        return op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory", name);
    atomic_init(&m->refs, 1);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->verts = dup_bytes(verts, verts_len);
    m->tris = dup_bytes(tris, tris_len);
    m->areas = areas ? dup_bytes(areas, areas_len) : NULL;
    m->verts_len = verts_len;
    m->tris_len = tris_len;
    m->areas_len = areas ? areas_len : 0;
    if (!m->verts || !m->tris || (areas && !m->areas)) {
        opd_mesh_free(m);
        return op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory for %zu bytes", name,
                          verts_len + tris_len + areas_len);
    }
    mesh_box(m);
    *out = m;
    return OP_OK;
}

opd_mesh *opd_mesh_ref(opd_mesh *m)
{
    atomic_fetch_add(&m->refs, 1);
    return m;
}

void opd_mesh_free(opd_mesh *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    free(m->verts);
    free(m->tris);
    free(m->areas);
    free(m);
}

int opd_mesh_equal(const opd_mesh *a, const opd_mesh *b)
{
    return a->verts_len == b->verts_len && a->tris_len == b->tris_len &&
           (a->areas != NULL) == (b->areas != NULL) && a->areas_len == b->areas_len &&
           memcmp(a->verts, b->verts, a->verts_len) == 0 &&
           memcmp(a->tris, b->tris, a->tris_len) == 0 &&
           (!a->areas || memcmp(a->areas, b->areas, a->areas_len) == 0);
}

/* ---- the mesh map of level files and journal records (protocol §7.3) ---- */

int opd_mesh_pack(msgpack_packer *pk, const opd_mesh *m)
{
    int rc = msgpack_pack_map(pk, 4);
    rc |= op_rpc_pack_key(pk, "name") | op_rpc_pack_key(pk, m->name);
    rc |= op_rpc_pack_key(pk, "verts") | msgpack_pack_bin_with_body(pk, m->verts, m->verts_len);
    rc |= op_rpc_pack_key(pk, "tris") | msgpack_pack_bin_with_body(pk, m->tris, m->tris_len);
    rc |= op_rpc_pack_key(pk, "areas");
    rc |= m->areas ? msgpack_pack_bin_with_body(pk, m->areas, m->areas_len) : msgpack_pack_nil(pk);
    return rc;
}

op_status opd_mesh_decode(const msgpack_object *o, opd_mesh **out, op_err *err)
{
    static const char *const keys[] = {"name", "verts", "tris", "areas", NULL};
    const char *name;
    size_t nlen, vlen, tlen, alen = 0;
    const uint8_t *v, *t, *a = NULL;
    char nm[65];
    op_status st;
    *out = NULL;
    if (o->type != MSGPACK_OBJECT_MAP)
        return op_err_set(err, OP_EPROTO, "store: a mesh is not a map");
    if ((st = op_rpc_check_keys(o, keys, err)) != OP_OK ||
        (st = op_rpc_get_str(o, "name", 0, &name, &nlen, err)) != OP_OK ||
        (st = op_rpc_name(name, nlen, "mesh", nm, err)) != OP_OK ||
        (st = op_rpc_get_bin(o, "verts", 0, &v, &vlen, err)) != OP_OK ||
        (st = op_rpc_get_bin(o, "tris", 0, &t, &tlen, err)) != OP_OK)
        return st;
    const msgpack_object *ao = op_rpc_get(o, "areas");
    if (ao && ao->type == MSGPACK_OBJECT_BIN) {
        a = (const uint8_t *)ao->via.bin.ptr;
        alen = ao->via.bin.size;
    } else if (!ao || ao->type != MSGPACK_OBJECT_NIL) {
        return op_err_set(err, OP_EPROTO, "store: mesh '%s' areas is not bin or nil", nm);
    }
    return opd_mesh_make(nm, v, vlen, t, tlen, a, alen, out, err);
}

/* ---- the mesh list of a level (protocol §3.2: by name) ---- */

int opd_mesh_list_find(opd_mesh *const *list, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(list[i]->name, name))
            return i;
    return -1;
}

op_status opd_mesh_list_edit(opd_mesh *const *list, int n, opd_mesh *m, const char *drop,
                             opd_mesh ***out, int *nout, op_err *err)
{
    int at = opd_mesh_list_find(list, n, m ? m->name : drop);
    opd_mesh **l = calloc((size_t)n + 1, sizeof *l);
    if (!l)
        return op_err_set(err, OP_ENOMEM, "edit: out of memory for %d meshes", n + 1);
    int k = 0, placed = 0;
    for (int i = 0; i < n; i++) {
        if (i == at)
            continue;
        if (m && !placed && strcmp(m->name, list[i]->name) < 0) {
            l[k++] = opd_mesh_ref(m);
            placed = 1;
        }
        l[k++] = opd_mesh_ref(list[i]);
    }
    if (m && !placed)
        l[k++] = opd_mesh_ref(m);
    *out = l;
    *nout = k;
    return OP_OK;
}

void opd_mesh_list_free(opd_mesh **list, int n)
{
    for (int i = 0; list && i < n; i++)
        opd_mesh_free(list[i]);
    free(list);
}

/* ---- settings ---- */

typedef enum { S_DOUBLE, S_INT, S_BOOL, S_PARTITION } skind;

typedef struct sfield {
    const char *name;
    skind kind;
    size_t offset;
} sfield;

#define SD(n)                                                                                      \
    {                                                                                              \
#n, S_DOUBLE, offsetof(op_settings, n)                                                     \
    }
#define SI(n)                                                                                      \
    {                                                                                              \
#n, S_INT, offsetof(op_settings, n)                                                        \
    }

/* The op_settings fields in declaration order: the order settings are written in. */
static const sfield sfields[] = {
    SD(cell_size),
    SD(cell_height),
    SD(tile_size),
    SD(agent_height),
    SD(agent_radius),
    SD(agent_max_climb),
    SD(agent_max_slope),
    {"partition", S_PARTITION, offsetof(op_settings, partition)},
    SI(min_region_area),
    SI(merge_region_area),
    SD(contour_max_error),
    SD(max_edge_length),
    {"straight_region_borders", S_BOOL, offsetof(op_settings, straight_region_borders)},
    SI(max_verts_per_poly),
    SD(detail_sample_distance),
    SD(detail_max_error),
    SI(area),
    SI(flags),
    SD(max_local_extent),
    SD(grid_origin_x),
    SD(grid_origin_z),
};

#define NSFIELDS (sizeof sfields / sizeof sfields[0])

/* The value as the text op_settings_set reads ("%.17g" round-trips a double). */
static op_status value_text(const msgpack_object_kv *kv, char *buf, size_t cap, op_err *err)
{
    const msgpack_object *v = &kv->val;
    const msgpack_object *k = &kv->key;
    switch (v->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        snprintf(buf, cap, "%llu", (unsigned long long)v->via.u64);
        return OP_OK;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        snprintf(buf, cap, "%lld", (long long)v->via.i64);
        return OP_OK;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (!isfinite(v->via.f64))
            return op_err_set(err, OP_EINVAL, "settings: '%.*s' is not finite",
                              (int)(k->via.str.size > 64 ? 64 : k->via.str.size), k->via.str.ptr);
        snprintf(buf, cap, "%.17g", v->via.f64);
        return OP_OK;
    case MSGPACK_OBJECT_BOOLEAN:
        snprintf(buf, cap, "%d", v->via.boolean ? 1 : 0);
        return OP_OK;
    case MSGPACK_OBJECT_STR:
        if (v->via.str.size >= cap ||
            (v->via.str.size && memchr(v->via.str.ptr, '\0', v->via.str.size)))
            return op_err_set(err, OP_EINVAL, "settings: '%.*s' has a bad string value",
                              (int)(k->via.str.size > 64 ? 64 : k->via.str.size), k->via.str.ptr);
        if (v->via.str.size)
            memcpy(buf, v->via.str.ptr, v->via.str.size);
        buf[v->via.str.size] = '\0';
        return OP_OK;
    default:
        return op_err_set(err, OP_EINVAL, "settings: '%.*s' must be a number",
                          (int)(k->via.str.size > 64 ? 64 : k->via.str.size), k->via.str.ptr);
    }
}

op_status opd_settings_from_map(const msgpack_object *map, op_settings *s, op_err *err)
{
    op_settings_default(s);
    if (map->type != MSGPACK_OBJECT_MAP)
        return op_err_set(err, OP_EPROTO, "'settings' must be a map");
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object_kv *kv = &map->via.map.ptr[i];
        /* An empty str has a NULL ptr in msgpack-c: memchr may not see it. */
        if (kv->key.type != MSGPACK_OBJECT_STR || kv->key.via.str.size == 0 ||
            kv->key.via.str.size >= 64 || memchr(kv->key.via.str.ptr, '\0', kv->key.via.str.size))
            return op_err_set(err, OP_EINVAL, "settings: key %u is not a setting name", i);
        for (uint32_t j = 0; j < i; j++)
            if (map->via.map.ptr[j].key.via.str.size == kv->key.via.str.size &&
                !memcmp(map->via.map.ptr[j].key.via.str.ptr, kv->key.via.str.ptr,
                        kv->key.via.str.size))
                return op_err_set(err, OP_EPROTO, "settings: duplicate key '%.*s'",
                                  (int)kv->key.via.str.size, kv->key.via.str.ptr);
        char key[64], text[64];
        memcpy(key, kv->key.via.str.ptr, kv->key.via.str.size);
        key[kv->key.via.str.size] = '\0';
        op_status st = value_text(kv, text, sizeof text, err);
        if (st == OP_OK)
            st = op_settings_set(s, key, text, err);
        if (st != OP_OK)
            return st;
    }
    return op_settings_validate(s, err);
}

int opd_settings_pack(msgpack_packer *pk, const op_settings *s)
{
    int rc = msgpack_pack_map(pk, NSFIELDS);
    for (size_t i = 0; i < NSFIELDS; i++) {
        const sfield *f = &sfields[i];
        const char *p = (const char *)s + f->offset;
        rc |= op_rpc_pack_key(pk, f->name);
        if (f->kind == S_DOUBLE) {
            double v;
            memcpy(&v, p, sizeof v);
            rc |= msgpack_pack_double(pk, v);
        } else if (f->kind == S_PARTITION) {
            op_partition v;
            memcpy(&v, p, sizeof v);
            rc |= op_rpc_pack_key(pk, op_partition_name(v));
        } else {
            int v;
            memcpy(&v, p, sizeof v);
            rc |= msgpack_pack_int(pk, v);
        }
    }
    return rc;
}

int opd_settings_equal(const op_settings *a, const op_settings *b)
{
    for (size_t i = 0; i < NSFIELDS; i++) {
        const sfield *f = &sfields[i];
        const char *pa = (const char *)a + f->offset, *pb = (const char *)b + f->offset;
        /* Bytewise per field: -0.0 and 0.0 differ, as they may in a build. */
        size_t n = f->kind == S_DOUBLE      ? sizeof(double)
                   : f->kind == S_PARTITION ? sizeof(op_partition)
                                            : sizeof(int);
        if (memcmp(pa, pb, n) != 0)
            return 0;
    }
    return 1;
}
