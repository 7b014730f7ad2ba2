/*
 * Recast 1.5.1 side of the side-by-side benchmark.
 *
 * Input: a triangle soup and onepath's settings. Output: stage times summed over
 * tiles, mesh counts, tile data bytes and the peak heap counted through Recast's
 * and Detour's custom allocator hooks.
 *
 * The per-tile pipeline follows RecastDemo's Sample_TileMesh::buildTileMesh (read for
 * understanding, written anew): the tile grid covers the level's bounds
 * (rcCalcGridSize, tiles of tileSize cells), each tile's box is widened by
 * borderSize = walkableRadius + 3 cells, its triangles are marked by slope and
 * rasterized with flagMergeThr = walkableClimb, then the three span filters,
 * compaction, erosion, distance field (watershed only), regions, contours, polygon
 * mesh, detail mesh and dtCreateNavMeshData. Differences from the demo, so that the
 * comparison is fair (docs/benchmarks.md):
 *  - "prepare" (once per level, timed): bounds, grid, and every tile's triangles
 *    binned by a counting sort with the demo's XZ box test against the widened tile
 *    box, as op_level_create bins them on our side (the demo's chunky tri mesh is a
 *    spatial index serving the same purpose); a tile copies its triangles out of its
 *    bin inside "spans";
 *  - freeing is not timed (onepath's arena resets are not timed either);
 *  - tile data is freed after it is measured instead of being added to a dtNavMesh.
 * Typical size: dungeon.obj, 88 grid tiles (41 with a mesh), about 24 ms single-threaded.
 */
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <DetourAlloc.h>
#include <DetourNavMesh.h>
#include <DetourNavMeshBuilder.h>
#include <Recast.h>
#include <RecastAlloc.h>

extern "C" {
#include "onepath/settings.h"
}
#include "recast_side.h"

/* ===== counting allocator (process wide: Recast's hooks are global) ===== */

namespace
{

/* Every block carries its size in a 16-byte header so that free can subtract it. */
const size_t kHeader = 16;
std::atomic<size_t> g_heap_now{0};
std::atomic<size_t> g_heap_peak{0};

void heap_add(size_t n)
{
    size_t now = g_heap_now.fetch_add(n) + n;
    size_t peak = g_heap_peak.load();
    while (now > peak && !g_heap_peak.compare_exchange_weak(peak, now)) {
    }
}

void *count_alloc(size_t size)
{
    unsigned char *p = static_cast<unsigned char *>(std::malloc(size + kHeader));
    if (!p)
        return nullptr;
    std::memcpy(p, &size, sizeof size);
    heap_add(size);
    return p + kHeader;
}

void count_free(void *ptr)
{
    if (!ptr)
        return;
    unsigned char *p = static_cast<unsigned char *>(ptr) - kHeader;
    size_t size;
    std::memcpy(&size, p, sizeof size);
    g_heap_now.fetch_sub(size);
    std::free(p);
}

void *rc_count_alloc(size_t size, rcAllocHint)
{
    return count_alloc(size);
}

void *dt_count_alloc(size_t size, dtAllocHint)
{
    return count_alloc(size);
}

/* ===== configuration ===== */

/* rcConfig as Sample_TileMesh fills it from its GUI values, here from op_settings. */
rcConfig make_config(const op_settings *s)
{
    rcConfig c;
    std::memset(&c, 0, sizeof c);
    c.cs = (float)s->cell_size;
    c.ch = (float)s->cell_height;
    c.walkableSlopeAngle = (float)s->agent_max_slope;
    c.walkableHeight = (int)std::ceil((float)s->agent_height / c.ch);
    c.walkableClimb = (int)std::floor((float)s->agent_max_climb / c.ch);
    c.walkableRadius = (int)std::ceil((float)s->agent_radius / c.cs);
    c.maxEdgeLen = (int)(s->max_edge_length / s->cell_size);
    c.maxSimplificationError = (float)s->contour_max_error;
    c.minRegionArea = s->min_region_area;
    c.mergeRegionArea = s->merge_region_area;
    c.maxVertsPerPoly = s->max_verts_per_poly;
    int tc = (int)std::ceil(s->tile_size / s->cell_size - 1e-4);
    c.tileSize = tc < 1 ? 1 : tc;
    c.borderSize = c.walkableRadius + 3;
    c.width = c.tileSize + 2 * c.borderSize;
    c.height = c.width;
    double sd_cells = s->detail_sample_distance / s->cell_size;
    c.detailSampleDist = sd_cells < 0.9 ? 0.0f : (float)s->detail_sample_distance;
    c.detailSampleMaxError = (float)s->detail_max_error;
    return c;
}

/* Keeps the last error Recast logs, for the message of a failed build. */
class BenchContext : public rcContext
{
  public:
    BenchContext() : rcContext(true)
    {
        enableTimer(false);
        last[0] = '\0';
    }
    char last[256];

  protected:
    void doLog(const rcLogCategory cat, const char *msg, const int len) override
    {
        if (cat == RC_LOG_ERROR)
            std::snprintf(last, sizeof last, "%.*s", len, msg);
    }
};

/* Detour tile data kept for a quality run (bench_recast_build_navmesh). */
struct KeptTile {
    unsigned char *data = nullptr;
    int size = 0;
};

struct Level {
    const bench_level *lv;
    const op_settings *s;
    rcConfig cfg;
    float bmin[3], bmax[3];
    int tw, th;
    bench_upto upto;
    std::vector<int> bin_start; /* tw * th + 1: tile k's triangles are bin_ids[start[k]..[k+1]) */
    std::vector<int> bin_ids;
    std::vector<KeptTile> *keep; /* quality runs: tile data per tile index, else null */
};

/* One worker's state: its context, scratch for the tile's triangle list, its sums. */
struct Worker {
    BenchContext ctx;
    std::vector<int> ttris;
    bench_result r;
    int failed = 0;
    char err[512] = "";
};

/* The intermediate results of one tile; freed (untimed) when the tile is done. */
struct TileData {
    rcHeightfield *solid = nullptr;
    unsigned char *areas = nullptr;
    rcCompactHeightfield *chf = nullptr;
    rcContourSet *cset = nullptr;
    rcPolyMesh *pmesh = nullptr;
    rcPolyMeshDetail *dmesh = nullptr;
    unsigned char *nav = nullptr;
    ~TileData()
    {
        rcFreeHeightField(solid);
        rcFree(areas);
        rcFreeCompactHeightfield(chf);
        rcFreeContourSet(cset);
        rcFreePolyMesh(pmesh);
        rcFreePolyMeshDetail(dmesh);
        dtFree(nav);
    }
};

int fail(Worker &w, const char *what, int tx, int ty)
{
    std::snprintf(w.err, sizeof w.err, "recast: tile (%d, %d): %s%s%.200s", tx, ty, what,
                  w.ctx.last[0] ? ": " : "", w.ctx.last);
    w.failed = 1;
    return -1;
}

/* ===== prepare: tile grid and triangle bins ===== */

inline float min3(float a, float b, float c)
{
    float m = a < b ? a : b;
    return m < c ? m : c;
}

inline float max3(float a, float b, float c)
{
    float m = a > b ? a : b;
    return m > c ? m : c;
}

/* Tile tx's box along one axis, widened by the border (as build_tile computes it). */
inline void tile_span(const Level &L, int axis, int t, float &lo, float &hi)
{
    const rcConfig &c = L.cfg;
    float tcs = (float)c.tileSize * c.cs;
    lo = L.bmin[axis] + (float)t * tcs - (float)c.borderSize * c.cs;
    hi = L.bmin[axis] + (float)(t + 1) * tcs + (float)c.borderSize * c.cs;
}

/* The tiles whose widened box the triangle's XZ box touches (the demo's test:
 * maxx < bmin or minx > bmax excludes), along one axis. A range one tile wider
 * than the arithmetic gives is tested exactly, so rounding cannot drop a tile. */
inline void tile_range(const Level &L, int axis, float mn, float mx, int n, int &t0, int &t1)
{
    const rcConfig &c = L.cfg;
    float tcs = (float)c.tileSize * c.cs, b = (float)c.borderSize * c.cs;
    int a = (int)std::floor((mn - L.bmin[axis] - b) / tcs) - 1;
    int z = (int)std::floor((mx - L.bmin[axis] + b) / tcs) + 1;
    a = a < 0 ? 0 : a;
    z = z > n - 1 ? n - 1 : z;
    float lo, hi;
    while (a <= z && (tile_span(L, axis, a, lo, hi), mn > hi))
        a++;
    while (z >= a && (tile_span(L, axis, z, lo, hi), mx < lo))
        z--;
    t0 = a;
    t1 = z;
}

/* Counting sort of the triangles by tile, input order within a tile. */
template <typename F> void for_each_pair(const Level &L, F &&f)
{
    const float *v = L.lv->verts;
    const int *t = L.lv->tris;
    for (int i = 0; i < L.lv->ntris; i++) {
        const float *a = &v[t[3 * i] * 3], *b = &v[t[3 * i + 1] * 3], *d = &v[t[3 * i + 2] * 3];
        int x0, x1, z0, z1;
        tile_range(L, 0, min3(a[0], b[0], d[0]), max3(a[0], b[0], d[0]), L.tw, x0, x1);
        tile_range(L, 2, min3(a[2], b[2], d[2]), max3(a[2], b[2], d[2]), L.th, z0, z1);
        for (int tz = z0; tz <= z1; tz++)
            for (int tx = x0; tx <= x1; tx++)
                f(tz * L.tw + tx, i);
    }
}

void bin_triangles(Level &L)
{
    const size_t ntiles = (size_t)L.tw * (size_t)L.th;
    L.bin_start.assign(ntiles + 1, 0);
    for_each_pair(L, [&](int k, int) { L.bin_start[(size_t)k + 1]++; });
    for (size_t k = 0; k < ntiles; k++)
        L.bin_start[k + 1] += L.bin_start[k];
    L.bin_ids.assign((size_t)L.bin_start[ntiles], 0);
    std::vector<int> fill(L.bin_start.begin(), L.bin_start.end() - 1);
    for_each_pair(L, [&](int k, int i) { L.bin_ids[(size_t)fill[(size_t)k]++] = i; });
}

/* ===== the stage groups of one tile ===== */

/* Copies the tile's binned triangles into w.ttris; returns their count. */
int select_tris(const Level &L, Worker &w, int k)
{
    const int *t = L.lv->tris;
    int n = 0;
    for (int j = L.bin_start[(size_t)k]; j < L.bin_start[(size_t)k + 1]; j++, n++) {
        int i = L.bin_ids[(size_t)j];
        w.ttris[3 * (size_t)n] = t[3 * i];
        w.ttris[3 * (size_t)n + 1] = t[3 * i + 1];
        w.ttris[3 * (size_t)n + 2] = t[3 * i + 2];
    }
    return n;
}

/* Heightfield, mark, rasterize, filters, compact, erode, distance. 1 = empty tile. */
int build_spans(const Level &L, Worker &w, rcConfig &c, TileData &td, int tx, int ty)
{
    double t0 = bench_now_ms();
    int nt = select_tris(L, w, ty * L.tw + tx);
    if (nt == 0) {
        w.r.ms[BENCH_SPANS] += bench_now_ms() - t0;
        return 1;
    }
    rcContext *ctx = &w.ctx;
    td.solid = rcAllocHeightfield();
    if (!td.solid ||
        !rcCreateHeightfield(ctx, *td.solid, c.width, c.height, c.bmin, c.bmax, c.cs, c.ch))
        return fail(w, "heightfield", tx, ty);
    td.areas = static_cast<unsigned char *>(rcAlloc((size_t)nt, RC_ALLOC_TEMP));
    if (!td.areas)
        return fail(w, "out of memory (areas)", tx, ty);
    std::memset(td.areas, 0, (size_t)nt);
    rcMarkWalkableTriangles(ctx, c.walkableSlopeAngle, L.lv->verts, L.lv->nverts, w.ttris.data(),
                            nt, td.areas);
    if (!rcRasterizeTriangles(ctx, L.lv->verts, L.lv->nverts, w.ttris.data(), td.areas, nt,
                              *td.solid, c.walkableClimb))
        return fail(w, "rasterize", tx, ty);
    rcFilterLowHangingWalkableObstacles(ctx, c.walkableClimb, *td.solid);
    rcFilterLedgeSpans(ctx, c.walkableHeight, c.walkableClimb, *td.solid);
    rcFilterWalkableLowHeightSpans(ctx, c.walkableHeight, *td.solid);
    td.chf = rcAllocCompactHeightfield();
    if (!td.chf ||
        !rcBuildCompactHeightfield(ctx, c.walkableHeight, c.walkableClimb, *td.solid, *td.chf))
        return fail(w, "compact", tx, ty);
    double f0 = bench_now_ms(); /* as the demo does, free the solid field now (not timed) */
    rcFreeHeightField(td.solid);
    td.solid = nullptr;
    rcFree(td.areas);
    td.areas = nullptr;
    t0 += bench_now_ms() - f0;
    if (!rcErodeWalkableArea(ctx, c.walkableRadius, *td.chf))
        return fail(w, "erode", tx, ty);
    if (L.s->partition == OP_PARTITION_WATERSHED && !rcBuildDistanceField(ctx, *td.chf))
        return fail(w, "distance field", tx, ty);
    w.r.ms[BENCH_SPANS] += bench_now_ms() - t0;
    w.r.spans += td.chf->spanCount;
    return 0;
}

/* Distinct regions the tile's spans carry, border regions excluded (not timed). */
long count_regions(const rcCompactHeightfield &chf)
{
    std::vector<char> seen((size_t)chf.maxRegions + 1, 0);
    long n = 0;
    for (int i = 0; i < chf.spanCount; i++) {
        unsigned short r = chf.spans[i].reg;
        if (r == 0 || (r & RC_BORDER_REG) || r > chf.maxRegions || seen[r])
            continue;
        seen[r] = 1;
        n++;
    }
    return n;
}

int build_regions(const Level &L, Worker &w, const rcConfig &c, TileData &td, int tx, int ty)
{
    double t0 = bench_now_ms();
    bool ok;
    if (L.s->partition == OP_PARTITION_WATERSHED)
        ok = rcBuildRegions(&w.ctx, *td.chf, c.borderSize, c.minRegionArea, c.mergeRegionArea);
    else if (L.s->partition == OP_PARTITION_MONOTONE)
        ok = rcBuildRegionsMonotone(&w.ctx, *td.chf, c.borderSize, c.minRegionArea,
                                    c.mergeRegionArea);
    else
        ok = rcBuildLayerRegions(&w.ctx, *td.chf, c.borderSize, c.minRegionArea);
    w.r.ms[BENCH_REGIONS] += bench_now_ms() - t0;
    if (!ok)
        return fail(w, "regions", tx, ty);
    w.r.regions += count_regions(*td.chf);
    return 0;
}

/* 1 = no contours (the demo then produces no tile). */
int build_contours(Worker &w, const rcConfig &c, TileData &td, int tx, int ty)
{
    double t0 = bench_now_ms();
    td.cset = rcAllocContourSet();
    if (!td.cset ||
        !rcBuildContours(&w.ctx, *td.chf, c.maxSimplificationError, c.maxEdgeLen, *td.cset))
        return fail(w, "contours", tx, ty);
    w.r.ms[BENCH_CONTOURS] += bench_now_ms() - t0;
    w.r.contours += td.cset->nconts;
    return td.cset->nconts == 0 ? 1 : 0;
}

int build_polys(Worker &w, const rcConfig &c, TileData &td, int tx, int ty)
{
    double t0 = bench_now_ms();
    td.pmesh = rcAllocPolyMesh();
    if (!td.pmesh || !rcBuildPolyMesh(&w.ctx, *td.cset, c.maxVertsPerPoly, *td.pmesh))
        return fail(w, "polygon mesh", tx, ty);
    w.r.ms[BENCH_POLYS] += bench_now_ms() - t0;
    w.r.polys += td.pmesh->npolys;
    w.r.verts += td.pmesh->nverts;
    return 0;
}

int build_detail(Worker &w, const rcConfig &c, TileData &td, int tx, int ty)
{
    double t0 = bench_now_ms();
    td.dmesh = rcAllocPolyMeshDetail();
    if (!td.dmesh || !rcBuildPolyMeshDetail(&w.ctx, *td.pmesh, *td.chf, c.detailSampleDist,
                                            c.detailSampleMaxError, *td.dmesh))
        return fail(w, "detail mesh", tx, ty);
    w.r.ms[BENCH_DETAIL] += bench_now_ms() - t0;
    w.r.detail_tris += td.dmesh->ntris;
    return 0;
}

/* Areas/flags as onepath writes them (walkable 63 -> s->area), then Detour's tile data. */
int build_tile_data(const Level &L, Worker &w, TileData &td, int tx, int ty)
{
    double t0 = bench_now_ms();
    rcPolyMesh &pm = *td.pmesh;
    if (pm.nverts >= 0xffff)
        return fail(w, "too many vertices for Detour", tx, ty);
    for (int i = 0; i < pm.npolys; i++) {
        if (pm.areas[i] == RC_WALKABLE_AREA)
            pm.areas[i] = (unsigned char)L.s->area;
        pm.flags[i] = (unsigned short)L.s->flags;
    }
    dtNavMeshCreateParams p;
    std::memset(&p, 0, sizeof p);
    p.verts = pm.verts;
    p.vertCount = pm.nverts;
    p.polys = pm.polys;
    p.polyAreas = pm.areas;
    p.polyFlags = pm.flags;
    p.polyCount = pm.npolys;
    p.nvp = pm.nvp;
    p.detailMeshes = td.dmesh->meshes;
    p.detailVerts = td.dmesh->verts;
    p.detailVertsCount = td.dmesh->nverts;
    p.detailTris = td.dmesh->tris;
    p.detailTriCount = td.dmesh->ntris;
    p.walkableHeight = (float)L.s->agent_height;
    p.walkableRadius = (float)L.s->agent_radius;
    p.walkableClimb = (float)L.s->agent_max_climb;
    p.tileX = tx;
    p.tileY = ty;
    rcVcopy(p.bmin, pm.bmin);
    rcVcopy(p.bmax, pm.bmax);
    p.cs = L.cfg.cs;
    p.ch = L.cfg.ch;
    p.buildBvTree = true;
    int size = 0;
    if (!dtCreateNavMeshData(&p, &td.nav, &size))
        return fail(w, "dtCreateNavMeshData", tx, ty);
    w.r.ms[BENCH_TILE] += bench_now_ms() - t0;
    w.r.tile_bytes += (size_t)size;
    w.r.tile_layers++;
    if (L.keep) { /* hand the data over: each worker writes only its own tiles' slots */
        KeptTile &k = (*L.keep)[(size_t)(ty * L.tw + tx)];
        k.data = td.nav;
        k.size = size;
        td.nav = nullptr;
    }
    return 0;
}

/* One tile, the stage groups in order up to L.upto. */
int build_tile(const Level &L, Worker &w, int tx, int ty)
{
    rcConfig c = L.cfg;
    float tcs = (float)c.tileSize * c.cs;
    c.bmin[0] = L.bmin[0] + (float)tx * tcs;
    c.bmin[1] = L.bmin[1];
    c.bmin[2] = L.bmin[2] + (float)ty * tcs;
    c.bmax[0] = L.bmin[0] + (float)(tx + 1) * tcs;
    c.bmax[1] = L.bmax[1];
    c.bmax[2] = L.bmin[2] + (float)(ty + 1) * tcs;
    c.bmin[0] -= (float)c.borderSize * c.cs;
    c.bmin[2] -= (float)c.borderSize * c.cs;
    c.bmax[0] += (float)c.borderSize * c.cs;
    c.bmax[2] += (float)c.borderSize * c.cs;

    TileData td;
    int rc = build_spans(L, w, c, td, tx, ty); /* 1: no triangles, no tile */
    if (rc == 0 && L.upto > BENCH_UPTO_SPANS)
        rc = build_regions(L, w, c, td, tx, ty);
    if (rc == 0 && L.upto > BENCH_UPTO_REGIONS)
        rc = build_contours(w, c, td, tx, ty); /* 1: no contours, no tile */
    if (rc == 0 && L.upto > BENCH_UPTO_CONTOURS) {
        rc = build_polys(w, c, td, tx, ty);
        if (rc == 0)
            rc = build_detail(w, c, td, tx, ty);
        if (rc == 0)
            rc = build_tile_data(L, w, td, tx, ty);
    }
    if (rc == 0)
        w.r.tiles_built++;
    return rc < 0 ? -1 : 0;
}

void worker_run(const Level &L, Worker &w, std::atomic<int> &next)
{
    int most = 0; /* the largest bin: the tile triangle list's size */
    for (size_t k = 0; k + 1 < L.bin_start.size(); k++)
        most = std::max(most, L.bin_start[k + 1] - L.bin_start[k]);
    w.ttris.assign((size_t)most * 3, 0);
    const int n = L.tw * L.th;
    for (int i = next.fetch_add(1); i < n && !w.failed; i = next.fetch_add(1))
        build_tile(L, w, i % L.tw, i / L.tw); /* row-major, as the demo's loops */
}

void add_result(bench_result &to, const bench_result &r)
{
    for (int k = 0; k < BENCH_NSTAGES; k++)
        to.ms[k] += r.ms[k];
    to.tiles_built += r.tiles_built;
    to.spans += r.spans;
    to.regions += r.regions;
    to.contours += r.contours;
    to.polys += r.polys;
    to.verts += r.verts;
    to.detail_tris += r.detail_tris;
    to.tile_bytes += r.tile_bytes;
    to.tile_layers += r.tile_layers;
}

} // namespace

namespace
{

/* Worker threads kept across builds (bench_workers_new_fn): threads 1..n-1 sleep
 * until run() hands them a job, the caller works as thread 0, and run() returns when
 * all are back: the same scheme as onepath's op_pool, so that kept threads are
 * compared with kept threads. */
class KeptThreads
{
  public:
    explicit KeptThreads(int n)
    {
        try {
            for (int i = 1; i < n; i++)
                threads_.emplace_back([this] { loop(); });
        } catch (...) {
            stop(); /* the threads already started, before the error reaches the caller */
            throw;
        }
    }
    ~KeptThreads()
    {
        stop();
    }
    int size() const
    {
        return (int)threads_.size() + 1;
    }

  private:
    void stop()
    {
        {
            std::lock_guard<std::mutex> lk(m_);
            quit_ = true;
        }
        wake_.notify_all();
        for (std::thread &t : threads_)
            t.join();
        threads_.clear();
    }

  public:
    void run(const std::function<void(int)> &job)
    {
        {
            std::lock_guard<std::mutex> lk(m_);
            job_ = &job;
            running_ = (int)threads_.size();
            gen_++;
        }
        wake_.notify_all();
        job(0);
        std::unique_lock<std::mutex> lk(m_);
        back_.wait(lk, [this] { return running_ == 0; });
        job_ = nullptr;
    }

  private:
    void loop()
    {
        unsigned seen = 0;
        int me = 0;
        std::unique_lock<std::mutex> lk(m_);
        me = ++started_;
        for (;;) {
            wake_.wait(lk, [&] { return gen_ != seen || quit_; });
            if (quit_)
                return;
            seen = gen_;
            const std::function<void(int)> *job = job_;
            lk.unlock();
            (*job)(me);
            lk.lock();
            if (--running_ == 0)
                back_.notify_one();
        }
    }
    std::mutex m_;
    std::condition_variable wake_, back_;
    std::vector<std::thread> threads_;
    const std::function<void(int)> *job_ = nullptr;
    unsigned gen_ = 0;
    int running_ = 0, started_ = 0;
    bool quit_ = false;
};

int run_build(const bench_level *lv, const op_settings *s, bench_upto upto, int threads,
              KeptThreads *kept, bench_result *res, Level &L, std::vector<KeptTile> *keep,
              char *err, size_t errlen)
{
    std::memset(res, 0, sizeof *res);
    if (lv->nverts <= 0 || lv->ntris <= 0) {
        std::snprintf(err, errlen, "recast: %s has no triangles", lv->name);
        return -1;
    }
    rcAllocSetCustom(rc_count_alloc, count_free);
    dtAllocSetCustom(dt_count_alloc, count_free);
    g_heap_peak.store(g_heap_now.load());
    const size_t base = g_heap_now.load();

    L.keep = keep;
    L.lv = lv;
    L.s = s;
    L.cfg = make_config(s);
    L.upto = upto;
    double p0 = bench_now_ms();
    rcCalcBounds(lv->verts, lv->nverts, L.bmin, L.bmax);
    int gw = 0, gh = 0;
    rcCalcGridSize(L.bmin, L.bmax, L.cfg.cs, &gw, &gh);
    L.tw = (gw + L.cfg.tileSize - 1) / L.cfg.tileSize;
    L.th = (gh + L.cfg.tileSize - 1) / L.cfg.tileSize;
    L.tw = L.tw < 1 ? 1 : L.tw;
    L.th = L.th < 1 ? 1 : L.th;
    bin_triangles(L);
    res->ms[BENCH_PREPARE] = bench_now_ms() - p0;
    res->tiles_total = L.tw * L.th;
    if (keep)
        keep->assign((size_t)(L.tw * L.th), KeptTile());

    if (threads < 1)
        threads = 1;
    std::vector<Worker> workers((size_t)threads);
    std::atomic<int> next{0};
    double t0 = bench_now_ms();
    if (threads == 1) {
        worker_run(L, workers[0], next);
    } else if (kept && kept->size() == threads) {
        kept->run([&](int i) { worker_run(L, workers[(size_t)i], next); });
    } else {
        std::vector<std::thread> pool;
        for (int i = 0; i < threads; i++)
            pool.emplace_back(worker_run, std::cref(L), std::ref(workers[(size_t)i]),
                              std::ref(next));
        for (auto &t : pool)
            t.join();
    }
    res->wall_ms = bench_now_ms() - t0 + res->ms[BENCH_PREPARE];
    for (const Worker &w : workers) {
        if (w.failed) {
            std::snprintf(err, errlen, "%s", w.err);
            return -1;
        }
        add_result(*res, w.r);
    }
    res->heap_peak = g_heap_peak.load() - base;
    return 0;
}

} // namespace

extern "C" int bench_recast_build(const bench_level *lv, const op_settings *s, bench_upto upto,
                                  int threads, void *workers, bench_result *res, char *err,
                                  size_t errlen)
{
    Level L;
    return run_build(lv, s, upto, threads, static_cast<KeptThreads *>(workers), res, L, nullptr,
                     err, errlen);
}

extern "C" void *bench_recast_workers_new(int threads)
{
    try {
        return new KeptThreads(threads);
    } catch (...) {
        return nullptr;
    }
}

extern "C" void bench_recast_workers_free(void *workers)
{
    delete static_cast<KeptThreads *>(workers);
}

/* ===== quality runs: the tiles in one dtNavMesh ===== */

namespace
{

int ilog2_ceil(unsigned v)
{
    int r = 0;
    while ((1u << r) < v)
        r++;
    return r;
}

void free_kept(std::vector<KeptTile> &keep)
{
    for (KeptTile &k : keep)
        dtFree(k.data);
    keep.clear();
}

} // namespace

extern "C" int bench_recast_build_navmesh(const bench_level *lv, const op_settings *s, int threads,
                                          bench_result *res, void **navmesh, char *err,
                                          size_t errlen)
{
    *navmesh = nullptr;
    Level L;
    std::vector<KeptTile> keep;
    if (run_build(lv, s, BENCH_UPTO_ALL, threads, nullptr, res, L, &keep, err, errlen) != 0) {
        free_kept(keep);
        return -1;
    }
    /* Tile and polygon id bits as Sample_TileMesh chooses them (22 bits in all). */
    int tile_bits = ilog2_ceil((unsigned)(L.tw * L.th));
    tile_bits = tile_bits > 14 ? 14 : tile_bits;
    dtNavMeshParams p;
    std::memset(&p, 0, sizeof p);
    rcVcopy(p.orig, L.bmin);
    p.tileWidth = p.tileHeight = (float)L.cfg.tileSize * L.cfg.cs;
    p.maxTiles = 1 << tile_bits;
    p.maxPolys = 1 << (22 - tile_bits);
    dtNavMesh *nav = dtAllocNavMesh();
    if (!nav || dtStatusFailed(nav->init(&p))) {
        dtFreeNavMesh(nav);
        free_kept(keep);
        std::snprintf(err, errlen, "recast: dtNavMesh init failed (%d tiles)", L.tw * L.th);
        return -1;
    }
    for (size_t i = 0; i < keep.size(); i++) { /* row-major, as built */
        if (!keep[i].data)
            continue;
        if (dtStatusFailed(
                nav->addTile(keep[i].data, keep[i].size, DT_TILE_FREE_DATA, 0, nullptr))) {
            std::snprintf(err, errlen, "recast: addTile failed for tile %zu", i);
            free_kept(keep);
            dtFreeNavMesh(nav);
            return -1;
        }
        keep[i].data = nullptr; /* the navmesh owns it now */
    }
    *navmesh = nav;
    return 0;
}

extern "C" void bench_recast_navmesh_free(void *navmesh)
{
    dtFreeNavMesh(static_cast<dtNavMesh *>(navmesh));
}
