/* Hand-made tile layers (see op_handmesh.h). */
#include "op_handmesh.h"

#include <string.h>

static int nverts_of(const int *p)
{
    int n = 0;
    while (n < HM_NVP && p[n] >= 0)
        n++;
    return n;
}

static int side_of(const float *va, const float *vb, float ts)
{
    if (va[0] == 0.0f && vb[0] == 0.0f)
        return 0;
    if (va[2] == ts && vb[2] == ts)
        return 1;
    if (va[0] == ts && vb[0] == ts)
        return 2;
    if (va[2] == 0.0f && vb[2] == 0.0f)
        return 3;
    return -1;
}

static uint16_t neighbour(const int *polys, int npolys, const float *verts, float ts, int p, int k)
{
    const int *pv = &polys[p * HM_NVP];
    int n = nverts_of(pv), a = pv[k], b = pv[(k + 1) % n];
    for (int q = 0; q < npolys; q++) {
        const int *qv = &polys[q * HM_NVP];
        int m = nverts_of(qv);
        for (int j = 0; q != p && j < m; j++)
            if (qv[j] == b && qv[(j + 1) % m] == a)
                return (uint16_t)(q + 1);
    }
    int s = side_of(&verts[3 * a], &verts[3 * b], ts);
    return s < 0 ? (uint16_t)OP_NEI_WALL : (uint16_t)(OP_NEI_PORTAL | (unsigned)s);
}

int hm_tile(op_arena *a, int tx, int tz, int layer, double ts, double oy, const float *verts,
            int nverts, const int *polys, int npolys, const int *areas, op_tile *t)
{
    memset(t, 0, sizeof *t);
    t->tx = tx;
    t->tz = tz;
    t->layer = layer;
    t->origin[0] = tx * ts;
    t->origin[1] = oy;
    t->origin[2] = tz * ts;
    t->tile_size = ts;
    t->nvp = HM_NVP;
    t->nverts = nverts;
    t->npolys = npolys;
    int ntris = 0;
    for (int p = 0; p < npolys; p++)
        ntris += nverts_of(&polys[p * HM_NVP]) - 2;
    t->verts = op_arena_alloc(a, sizeof(float) * 3 * (size_t)nverts);
    t->polys = op_arena_alloc(a, sizeof(uint16_t) * HM_NVP * (size_t)npolys);
    t->neis = op_arena_alloc(a, sizeof(uint16_t) * HM_NVP * (size_t)npolys);
    t->areas = op_arena_alloc(a, (size_t)npolys);
    t->flags = op_arena_alloc(a, sizeof(uint16_t) * (size_t)npolys);
    t->regs = op_arena_alloc(a, sizeof(uint16_t) * (size_t)npolys);
    t->dmeshes = op_arena_alloc(a, sizeof(uint32_t) * 4 * (size_t)npolys);
    t->dverts = op_arena_alloc(a, 16);
    t->dtris = op_arena_alloc(a, 4 * (size_t)ntris);
    if (!t->verts || !t->polys || !t->neis || !t->areas || !t->flags || !t->regs || !t->dmeshes ||
        !t->dtris)
        return -1;
    memcpy(t->verts, verts, sizeof(float) * 3 * (size_t)nverts);
    int tri = 0;
    for (int p = 0; p < npolys; p++) {
        const int *pv = &polys[p * HM_NVP];
        int n = nverts_of(pv);
        for (int k = 0; k < HM_NVP; k++) {
            t->polys[p * HM_NVP + k] = k < n ? (uint16_t)pv[k] : (uint16_t)OP_POLY_NULL;
            t->neis[p * HM_NVP + k] =
                k < n ? neighbour(polys, npolys, verts, (float)ts, p, k) : (uint16_t)OP_NEI_WALL;
        }
        t->areas[p] = (uint8_t)(areas ? areas[p] : 63);
        t->flags[p] = 1;
        t->regs[p] = (uint16_t)(p + 1); /* one region per hand-made polygon */
        uint32_t *d = &t->dmeshes[4 * p];
        d[0] = 0;
        d[1] = 0;
        d[2] = (uint32_t)tri;
        d[3] = (uint32_t)(n - 2);
        for (int k = 1; k + 1 < n; k++, tri++) {
            uint8_t *o = &t->dtris[4 * tri];
            o[0] = 0;
            o[1] = (uint8_t)k;
            o[2] = (uint8_t)(k + 1);
            o[3] = (uint8_t)(2u | (k == 1 ? 1u : 0u) | (k + 2 == n ? 4u : 0u));
        }
    }
    t->ndtris = ntris;
    return 0;
}

void hm_settings(op_settings *s)
{
    op_settings_default(s);
    s->tile_size = 10.0;
    s->cell_size = 0.5;
    s->cell_height = 0.25;
    s->agent_max_climb = 0.75;
    s->max_verts_per_poly = HM_NVP;
}
