/*
 * onepathd snapshots: the build input of one level version, made once per edit and
 * then only read. The soup is protocol §3.2's (the meshes in name order, each mesh's
 * vertices decoded from little endian, its indices offset by the meshes before it);
 * the op_level over it holds the tile range and each tile's triangles. A snapshot is
 * shared by the level and every build that reads it (reference counted), so an edit
 * never waits for a build and a build never sees a half-made level.
 * Typical: 10^2..10^7 triangles, about 32 bytes a triangle.
 */
#include <stdlib.h>
#include <string.h>

#include "level.h"

void opd_snap_ref(opd_snap *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void opd_snap_unref(opd_snap *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    op_level_destroy(s->lvl);
    free(s->verts);
    free(s->tris);
    free(s->areas);
    free(s);
}

static float le_float(const uint8_t *p)
{
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int32_t le_int(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

/* The soup of protocol §3.2: meshes (already in name order) concatenated. */
static op_status soup_fill(opd_snap *s, opd_mesh *const *m, int n, size_t nv, size_t nt,
                           op_err *err)
{
    int any_areas = 0;
    for (int i = 0; i < n; i++)
        any_areas |= m[i]->areas != NULL;
    s->verts = malloc((nv ? nv : 1) * 3 * sizeof(float));
    s->tris = malloc((nt ? nt : 1) * 3 * sizeof(int));
    s->areas = any_areas ? malloc(nt ? nt : 1) : NULL;
    if (!s->verts || !s->tris || (any_areas && !s->areas))
        return op_err_set(err, OP_ENOMEM, "level: out of memory for %zu vertices", nv);
    size_t vb = 0, tb = 0;
    for (int i = 0; i < n; i++) {
        size_t mv = m[i]->verts_len / 12, mt = m[i]->tris_len / 12;
        for (size_t k = 0; k < 3 * mv; k++)
            s->verts[3 * vb + k] = le_float(m[i]->verts + 4 * k);
        for (size_t k = 0; k < 3 * mt; k++)
            s->tris[3 * tb + k] = le_int(m[i]->tris + 4 * k) + (int)vb;
        if (any_areas) {
            if (m[i]->areas)
                memcpy(s->areas + tb, m[i]->areas, mt);
            else
                memset(s->areas + tb, 63, mt);
        }
        vb += mv;
        tb += mt;
    }
    s->soup = (op_soup){s->verts, 3 * nv, s->tris, 3 * nt, s->areas};
    s->bytes = nv * 12 + nt * 12 + (any_areas ? nt : 0) + nt * 8;
    return OP_OK;
}

op_status opd_snap_make(const opd_config *cfg, const op_settings *st, opd_mesh *const *m, int n,
                        uint64_t version, opd_snap **out, op_err *err)
{
    *out = NULL;
    size_t nv = 0, nt = 0;
    for (int i = 0; i < n; i++) {
        nv += m[i]->verts_len / 12;
        nt += m[i]->tris_len / 12;
    }
    if (nv > cfg->max_level_verts)
        return op_err_set(err, OP_ELIMIT, "level: %zu vertices > --max-level-verts %zu", nv,
                          cfg->max_level_verts);
    if (nt > cfg->max_level_tris)
        return op_err_set(err, OP_ELIMIT, "level: %zu triangles > --max-level-tris %zu", nt,
                          cfg->max_level_tris);
    op_status rc = op_settings_validate(st, err);
    if (rc != OP_OK)
        return rc;
    opd_snap *s = calloc(1, sizeof *s);
    if (!s)
        return op_err_set(err, OP_ENOMEM, "level: out of memory");
    atomic_init(&s->refs, 1);
    s->version = version;
    if ((rc = soup_fill(s, m, n, nv, nt, err)) == OP_OK && nt > 0 &&
        (rc = op_level_create(&s->soup, st, NULL, 0, &s->lvl, err)) == OP_OK) {
        s->rect = op_level_tiles(s->lvl);
        s->has_tiles = 1;
    }
    if (rc != OP_OK) {
        opd_snap_unref(s);
        return rc;
    }
    *out = s;
    return OP_OK;
}

int opd_snap_in_rect(const opd_snap *s, int tx, int tz)
{
    return s && s->has_tiles && tx >= s->rect.tx0 && tx <= s->rect.tx1 && tz >= s->rect.tz0 &&
           tz <= s->rect.tz1;
}
