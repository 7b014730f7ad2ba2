/*
 * DetourTileCache side of the rebuild benchmark (tilecache_side.h): preprocessing of every
 * tile into compressed layers and navmesh tiles, then obstacle edits through the cache.
 */
#include "tilecache_side.h"

#include <DetourCommon.h>
#include <DetourNavMesh.h>
#include <DetourNavMeshBuilder.h>
#include <DetourTileCache.h>
#include <DetourTileCacheBuilder.h>
#include <Recast.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

extern "C" double bench_now_ms(void);

namespace
{

/* The demo's linear allocator: every tile build takes its scratch from one buffer, reset
 * between builds (no malloc on the rebuild path). */
struct LinearAlloc : public dtTileCacheAlloc {
    std::vector<unsigned char> buf;
    size_t top = 0;
    explicit LinearAlloc(size_t cap) : buf(cap)
    {
    }
    void reset() override
    {
        top = 0;
    }
    void *alloc(const size_t size) override
    {
        size_t n = (size + 15) & ~(size_t)15;
        if (top + n > buf.size())
            return nullptr;
        void *p = &buf[top];
        top += n;
        return p;
    }
    void free(void *) override
    {
    }
};

/* Stores layers as they are (see the header), counting what zlib level 1 would store. */
struct CopyCompressor : public dtTileCacheCompressor {
    size_t zlib_bytes = 0;
    int maxCompressedSize(const int n) override
    {
        return n;
    }
    dtStatus compress(const unsigned char *in, const int n, unsigned char *out, const int cap,
                      int *outn) override
    {
        if (n > cap)
            return DT_FAILURE;
        std::memcpy(out, in, (size_t)n);
        *outn = n;
        uLongf zn = compressBound((uLong)n);
        std::vector<unsigned char> z(zn);
        if (compress2(z.data(), &zn, in, (uLong)n, 1) == Z_OK)
            zlib_bytes += zn;
        return DT_SUCCESS;
    }
    dtStatus decompress(const unsigned char *in, const int n, unsigned char *out, const int cap,
                        int *outn) override
    {
        if (n > cap)
            return DT_FAILURE;
        std::memcpy(out, in, (size_t)n);
        *outn = n;
        return DT_SUCCESS;
    }
};

/* Every polygon gets flag 1 (walkable), as the demo's flags for its ground area. */
struct MeshProcess : public dtTileCacheMeshProcess {
    void process(dtNavMeshCreateParams *p, unsigned char *, unsigned short *flags) override
    {
        for (int i = 0; i < p->polyCount; i++)
            flags[i] = 1;
    }
};

unsigned next_pow2(unsigned v)
{
    unsigned p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

unsigned ilog2(unsigned v)
{
    unsigned r = 0;
    while (v >>= 1)
        r++;
    return r;
}

} // namespace

struct tc_side {
    LinearAlloc talloc{32u << 20};
    CopyCompressor comp;
    MeshProcess proc;
    dtTileCache *tc = nullptr;
    dtNavMesh *nav = nullptr;
    ~tc_side()
    {
        dtFreeTileCache(tc);
        dtFreeNavMesh(nav);
    }
};

namespace
{

/* The layers of one tile (the demo's rasterizeTileLayers): rasterize, filter, compact,
 * erode, partition into layers, one compressed layer each, appended to out. */
int tile_layers(const op_soup *soup, const rcConfig &base, const float *tile_min,
                const uint32_t *ids, uint32_t n, int x, int y, rcContext &ctx,
                std::vector<std::pair<unsigned char *, int>> &out, CopyCompressor &comp)
{
    rcConfig c = base;
    c.bmin[0] = tile_min[0] - (float)c.borderSize * c.cs;
    c.bmin[2] = tile_min[2] - (float)c.borderSize * c.cs;
    c.bmax[0] = tile_min[0] + (float)(c.tileSize + c.borderSize) * c.cs;
    c.bmax[2] = tile_min[2] + (float)(c.tileSize + c.borderSize) * c.cs;
    std::vector<int> tris(3 * (size_t)n);
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            tris[3 * i + k] = soup->tris[3 * (size_t)ids[i] + k];
    std::vector<unsigned char> areas(n, 0);
    int nv = (int)(soup->verts_len / 3);
    rcHeightfield *hf = rcAllocHeightfield();
    rcCompactHeightfield *chf = rcAllocCompactHeightfield();
    rcHeightfieldLayerSet *lset = rcAllocHeightfieldLayerSet();
    int ok = hf && chf && lset &&
             rcCreateHeightfield(&ctx, *hf, c.width, c.height, c.bmin, c.bmax, c.cs, c.ch);
    if (ok) {
        rcMarkWalkableTriangles(&ctx, c.walkableSlopeAngle, soup->verts, nv, tris.data(), (int)n,
                                areas.data());
        ok = rcRasterizeTriangles(&ctx, soup->verts, nv, tris.data(), areas.data(), (int)n, *hf,
                                  c.walkableClimb);
    }
    if (ok) {
        rcFilterLowHangingWalkableObstacles(&ctx, c.walkableClimb, *hf);
        rcFilterLedgeSpans(&ctx, c.walkableHeight, c.walkableClimb, *hf);
        rcFilterWalkableLowHeightSpans(&ctx, c.walkableHeight, *hf);
        ok = rcBuildCompactHeightfield(&ctx, c.walkableHeight, c.walkableClimb, *hf, *chf) &&
             rcErodeWalkableArea(&ctx, c.walkableRadius, *chf) &&
             rcBuildHeightfieldLayers(&ctx, *chf, c.borderSize, c.walkableHeight, *lset);
    }
    for (int i = 0; ok && i < lset->nlayers; i++) {
        const rcHeightfieldLayer &l = lset->layers[i];
        dtTileCacheLayerHeader h;
        std::memset(&h, 0, sizeof h);
        h.magic = DT_TILECACHE_MAGIC;
        h.version = DT_TILECACHE_VERSION;
        h.tx = x;
        h.ty = y;
        h.tlayer = i;
        dtVcopy(h.bmin, l.bmin);
        dtVcopy(h.bmax, l.bmax);
        h.width = (unsigned char)l.width;
        h.height = (unsigned char)l.height;
        h.minx = (unsigned char)l.minx;
        h.maxx = (unsigned char)l.maxx;
        h.miny = (unsigned char)l.miny;
        h.maxy = (unsigned char)l.maxy;
        h.hmin = (unsigned short)l.hmin;
        h.hmax = (unsigned short)l.hmax;
        unsigned char *data = nullptr;
        int size = 0;
        ok = dtStatusSucceed(
            dtBuildTileCacheLayer(&comp, &h, l.heights, l.areas, l.cons, &data, &size));
        if (ok)
            out.push_back({data, size});
    }
    rcFreeHeightField(hf);
    rcFreeCompactHeightfield(chf);
    rcFreeHeightfieldLayerSet(lset);
    return ok ? 0 : -1;
}

} // namespace

extern "C" tc_side *tc_side_create(const op_soup *soup, const op_settings *s, op_tile_range r,
                                   const uint32_t *offsets, const uint32_t *ids, tc_sizes *sizes,
                                   char *err, size_t errlen)
{
    double t0 = bench_now_ms();
    std::memset(sizes, 0, sizeof *sizes);
    op_tile_grid g;
    op_tile_grid_derive(s, &g);
    rcConfig c;
    std::memset(&c, 0, sizeof c);
    c.cs = (float)g.cs;
    c.ch = (float)s->cell_height;
    c.walkableSlopeAngle = (float)s->agent_max_slope;
    c.walkableHeight = (int)std::ceil((float)s->agent_height / c.ch);
    c.walkableClimb = (int)std::floor((float)s->agent_max_climb / c.ch);
    c.walkableRadius = (int)std::ceil((float)s->agent_radius / c.cs);
    c.maxSimplificationError = (float)s->contour_max_error;
    c.maxVertsPerPoly = s->max_verts_per_poly;
    c.tileSize = g.tile_cells;
    c.borderSize = c.walkableRadius + 3;
    c.width = c.height = c.tileSize + 2 * c.borderSize;
    float ymin = soup->verts[1], ymax = soup->verts[1];
    for (size_t i = 1; 3 * i < soup->verts_len; i++) {
        ymin = soup->verts[3 * i + 1] < ymin ? soup->verts[3 * i + 1] : ymin;
        ymax = soup->verts[3 * i + 1] > ymax ? soup->verts[3 * i + 1] : ymax;
    }
    c.bmin[1] = ymin;
    c.bmax[1] = ymax;
    int tw = r.tx1 - r.tx0 + 1, th = r.tz1 - r.tz0 + 1;
    float orig[3] = {(float)(r.tx0 * s->tile_size), ymin, (float)(r.tz0 * s->tile_size)};

    tc_side *t = new tc_side();
    rcContext ctx(false);
    std::vector<std::pair<unsigned char *, int>> layers;
    int max_layers = 1;
    for (int i = 0; i < tw * th; i++) {
        size_t before = layers.size();
        float tile_min[3] = {(float)((r.tx0 + i % tw) * s->tile_size), 0.0f,
                             (float)((r.tz0 + i / tw) * s->tile_size)};
        if (tile_layers(soup, c, tile_min, &ids[offsets[i]], offsets[i + 1] - offsets[i], i % tw,
                        i / tw, ctx, layers, t->comp)) {
            std::snprintf(err, errlen, "tilecache: tile %d: rasterization failed", i);
            delete t;
            return nullptr;
        }
        int nl = (int)(layers.size() - before);
        sizes->tiles += nl > 0;
        max_layers = nl > max_layers ? nl : max_layers;
    }

    dtTileCacheParams tp;
    std::memset(&tp, 0, sizeof tp);
    dtVcopy(tp.orig, orig);
    tp.cs = c.cs;
    tp.ch = c.ch;
    tp.width = c.tileSize;
    tp.height = c.tileSize;
    tp.walkableHeight = (float)s->agent_height;
    tp.walkableRadius = (float)s->agent_radius;
    tp.walkableClimb = (float)s->agent_max_climb;
    tp.maxSimplificationError = c.maxSimplificationError;
    tp.maxTiles = tw * th * max_layers;
    tp.maxObstacles = 128;
    t->tc = dtAllocTileCache();
    t->nav = dtAllocNavMesh();
    unsigned tile_bits = ilog2(next_pow2((unsigned)(tw * th * max_layers)));
    tile_bits = tile_bits > 14 ? 14 : tile_bits;
    dtNavMeshParams np;
    std::memset(&np, 0, sizeof np);
    dtVcopy(np.orig, orig);
    np.tileWidth = np.tileHeight = (float)s->tile_size;
    np.maxTiles = 1 << tile_bits;
    np.maxPolys = 1 << (22 - tile_bits);
    if (!t->tc || !t->nav || dtStatusFailed(t->tc->init(&tp, &t->talloc, &t->comp, &t->proc)) ||
        dtStatusFailed(t->nav->init(&np))) {
        std::snprintf(err, errlen, "tilecache: init failed");
        delete t;
        return nullptr;
    }
    for (auto &l : layers) {
        sizes->layers++;
        sizes->raw_bytes += (size_t)l.second;
        if (dtStatusFailed(t->tc->addTile(l.first, l.second, DT_COMPRESSEDTILE_FREE_DATA, 0))) {
            std::snprintf(err, errlen, "tilecache: addTile failed");
            delete t;
            return nullptr;
        }
    }
    /* The zlib count covered the payload; the header is stored as it is. */
    sizes->zlib_bytes =
        t->comp.zlib_bytes + layers.size() * dtAlign4(sizeof(dtTileCacheLayerHeader));
    for (int y = 0; y < th; y++)
        for (int x = 0; x < tw; x++)
            if (dtStatusFailed(t->tc->buildNavMeshTilesAt(x, y, t->nav))) {
                std::snprintf(err, errlen, "tilecache: building tile (%d, %d) failed", x, y);
                delete t;
                return nullptr;
            }
    sizes->prepare_ms = bench_now_ms() - t0;
    return t;
}

/* update() until the cache says it is up to date (one tile a call). */
static void settle(tc_side *t)
{
    bool done = false;
    while (!done)
        t->tc->update(0.0f, t->nav, &done);
}

extern "C" double tc_side_add(tc_side *t, const float pos[3], float radius, float height,
                              unsigned *ref, int *touched, int *layers)
{
    double t0 = bench_now_ms();
    dtObstacleRef r = 0;
    t->tc->addObstacle(pos, radius, height, &r);
    settle(t);
    double ms = bench_now_ms() - t0;
    const dtTileCacheObstacle *ob = t->tc->getObstacleByRef(r);
    /* The obstacle's touched list holds one compressed tile a layer: count the tile columns
     * apart, as ours counts tiles (each with all its layers). */
    int n = ob ? ob->ntouched : 0, cols = 0;
    for (int i = 0; i < n; i++) {
        const dtCompressedTile *ti = t->tc->getTileByRef(ob->touched[i]);
        int seen = 0;
        for (int j = 0; j < i && ti; j++) {
            const dtCompressedTile *tj = t->tc->getTileByRef(ob->touched[j]);
            seen |= tj && tj->header->tx == ti->header->tx && tj->header->ty == ti->header->ty;
        }
        cols += ti && !seen;
    }
    *touched = cols;
    *layers = n;
    *ref = r;
    return ms;
}

extern "C" double tc_side_remove(tc_side *t, unsigned ref)
{
    double t0 = bench_now_ms();
    t->tc->removeObstacle(ref);
    settle(t);
    return bench_now_ms() - t0;
}

/* Not through tc_side_add: callgrind's --toggle-collect=tc_side_add must count the timed
 * adds only. */
extern "C" size_t tc_side_add_footprint(tc_side *t, const float pos[3], float radius, float height)
{
    /* settle's loop, reading the allocator after each update(): a call builds one tile at
     * most, from a reset allocator that nothing frees, so its top is that build's high
     * water. The timed path's allocator stays as it was (no bookkeeping in alloc). */
    dtObstacleRef r = 0;
    size_t h = 0;
    bool done = false;
    t->tc->addObstacle(pos, radius, height, &r);
    while (!done) {
        t->talloc.top = 0;
        t->tc->update(0.0f, t->nav, &done);
        h = t->talloc.top > h ? t->talloc.top : h;
    }
    t->tc->removeObstacle(r);
    settle(t);
    return h;
}

extern "C" void tc_side_free(tc_side *t)
{
    delete t;
}
