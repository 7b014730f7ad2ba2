/*
 * Detour side of the quality benchmark (quality_detour.h): the dtNavMesh built by
 * bench_recast_build_navmesh, measured and queried with Detour's own dtNavMeshQuery
 * and the default dtQueryFilter (every area cost 1, include 0xffff), as RecastDemo's
 * pathfinding tool does.
 */
#include <cmath>
#include <cstring>
#include <vector>

#include <DetourNavMesh.h>
#include <DetourNavMeshQuery.h>

#include "quality_detour.h"

namespace
{

/* Longest corridor asked of findPath; longer ones report a full buffer (never seen). */
const int kMaxPath = 16384;

struct Query {
    dtNavMeshQuery *q = nullptr;
    dtQueryFilter filter;
    std::vector<dtPolyRef> path;
};

void to_float(const double in[3], float out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = (float)in[i];
}

} // namespace

extern "C" void qd_counts(const void *navmesh, long *polys, long *verts, double *coverage)
{
    const dtNavMesh *nav = static_cast<const dtNavMesh *>(navmesh);
    *polys = 0;
    *verts = 0;
    *coverage = 0.0;
    for (int i = 0; i < nav->getMaxTiles(); i++) {
        const dtMeshTile *t = nav->getTile(i);
        if (!t || !t->header)
            continue;
        *verts += t->header->vertCount;
        for (int p = 0; p < t->header->polyCount; p++) {
            const dtPoly &poly = t->polys[p];
            if (poly.getType() != DT_POLYTYPE_GROUND)
                continue;
            (*polys)++;
            double a = 0.0;
            for (int k = 0; k < poly.vertCount; k++) {
                const float *u = &t->verts[poly.verts[k] * 3];
                const float *v = &t->verts[poly.verts[(k + 1) % poly.vertCount] * 3];
                a += (double)u[0] * v[2] - (double)v[0] * u[2];
            }
            *coverage += std::fabs(a) * 0.5;
        }
    }
}

extern "C" void *qd_query_create(const void *navmesh, int max_nodes)
{
    Query *q = new Query();
    q->q = dtAllocNavMeshQuery();
    q->path.resize(kMaxPath);
    if (!q->q || dtStatusFailed(q->q->init(static_cast<const dtNavMesh *>(navmesh), max_nodes))) {
        qd_query_free(q);
        return nullptr;
    }
    return q;
}

extern "C" void qd_query_free(void *qp)
{
    Query *q = static_cast<Query *>(qp);
    if (!q)
        return;
    dtFreeNavMeshQuery(q->q);
    delete q;
}

extern "C" int qd_nearest(void *qp, const double pos[3], const double half[3],
                          unsigned long long *ref, double nearest[3])
{
    Query *q = static_cast<Query *>(qp);
    float p[3], h[3], n[3] = {0, 0, 0};
    to_float(pos, p);
    to_float(half, h);
    dtPolyRef r = 0;
    if (dtStatusFailed(q->q->findNearestPoly(p, h, &q->filter, &r, n)) || r == 0)
        return 0;
    *ref = r;
    for (int i = 0; i < 3; i++)
        nearest[i] = n[i];
    return 1;
}

extern "C" int qd_path_complete(void *qp, unsigned long long a, const double pa[3],
                                unsigned long long b, const double pb[3], int *out_of_nodes)
{
    Query *q = static_cast<Query *>(qp);
    float s[3], e[3];
    to_float(pa, s);
    to_float(pb, e);
    int n = 0;
    dtStatus st =
        q->q->findPath((dtPolyRef)a, (dtPolyRef)b, s, e, &q->filter, q->path.data(), &n, kMaxPath);
    *out_of_nodes = (st & DT_OUT_OF_NODES) != 0;
    if (dtStatusFailed(st) || n == 0 || (st & DT_PARTIAL_RESULT))
        return 0;
    return q->path[(size_t)n - 1] == (dtPolyRef)b;
}

extern "C" int qd_path_tail(void *qp, unsigned long long a, const double pa[3],
                            unsigned long long b, const double pb[3], int k, double *out)
{
    Query *q = static_cast<Query *>(qp);
    float s[3], e[3];
    to_float(pa, s);
    to_float(pb, e);
    int n = 0;
    if (dtStatusFailed(q->q->findPath((dtPolyRef)a, (dtPolyRef)b, s, e, &q->filter, q->path.data(),
                                      &n, kMaxPath)))
        return 0;
    const dtNavMesh *nav = q->q->getAttachedNavMesh();
    int m = n < k ? n : k;
    for (int i = 0; i < m; i++) {
        const dtMeshTile *t = nullptr;
        const dtPoly *p = nullptr;
        double *o = &out[6 * i];
        if (dtStatusFailed(nav->getTileAndPolyByRef(q->path[(size_t)(n - m + i)], &t, &p)))
            return 0;
        o[0] = t->header->x;
        o[1] = t->header->y;
        o[2] = o[3] = o[5] = 0.0;
        o[4] = 1e30;
        for (int j = 0; j < p->vertCount; j++) {
            const float *v = &t->verts[p->verts[j] * 3];
            o[2] += v[0] / p->vertCount;
            o[3] += v[2] / p->vertCount;
            o[4] = v[1] < o[4] ? v[1] : o[4];
            o[5] = v[1] > o[5] ? v[1] : o[5];
        }
    }
    return m;
}

extern "C" void qd_tile_coverage(const void *navmesh, int w, int h, double *grid)
{
    const dtNavMesh *nav = static_cast<const dtNavMesh *>(navmesh);
    for (int i = 0; i < nav->getMaxTiles(); i++) {
        const dtMeshTile *t = nav->getTile(i);
        if (!t || !t->header || t->header->x < 0 || t->header->y < 0 || t->header->x >= w ||
            t->header->y >= h)
            continue;
        for (int p = 0; p < t->header->polyCount; p++) {
            const dtPoly &poly = t->polys[p];
            if (poly.getType() != DT_POLYTYPE_GROUND)
                continue;
            double a = 0.0;
            for (int k = 0; k < poly.vertCount; k++) {
                const float *u = &t->verts[poly.verts[k] * 3];
                const float *v = &t->verts[poly.verts[(k + 1) % poly.vertCount] * 3];
                a += (double)u[0] * v[2] - (double)v[0] * u[2];
            }
            grid[t->header->y * w + t->header->x] += std::fabs(a) * 0.5;
        }
    }
}

extern "C" void qd_each_poly(const void *navmesh, void (*fn)(void *ctx, const double *xz, int n),
                             void *ctx)
{
    const dtNavMesh *nav = static_cast<const dtNavMesh *>(navmesh);
    for (int i = 0; i < nav->getMaxTiles(); i++) {
        const dtMeshTile *t = nav->getTile(i);
        if (!t || !t->header)
            continue;
        for (int p = 0; p < t->header->polyCount; p++) {
            const dtPoly &poly = t->polys[p];
            if (poly.getType() != DT_POLYTYPE_GROUND)
                continue;
            double xz[2 * DT_VERTS_PER_POLYGON];
            for (int k = 0; k < poly.vertCount; k++) {
                xz[2 * k] = t->verts[poly.verts[k] * 3];
                xz[2 * k + 1] = t->verts[poly.verts[k] * 3 + 2];
            }
            fn(ctx, xz, poly.vertCount);
        }
    }
}
