/*
 * The Detour export (docs/spec/detour-export.md) loaded by Detour itself: Debian's
 * librecast (1.5.1, 32-bit references) reads the navmesh set exactly as RecastDemo's
 * loader does (dtNavMesh::init with the set's params, addTile with each tile's ref),
 * every call checked. Then, per level and settings variant:
 *  - the structure Detour sees equals onepath's mesh: per polygon its vertices (in
 *    Detour's winding), flags, area, in-tile links, and its links across tiles compared
 *    with onepath's stitched links;
 *  - 2000 seeded points snapped by findNearestPoly and op_query_nearest, their 1999
 *    consecutive pairs joined by findPath / findStraightPath and op_query_path /
 *    op_query_straight: the pairs each side connects must agree, and straight-path
 *    lengths must agree within 1 %; every exception must be one of the kinds
 *    docs/quality.md ("Detour export") explains, each checked here by its cause;
 *  - per pair snapped to the same polygons on both sides, the two A* searches' node pools
 *    (dtNodePool against op_query_path's, docs/queries.md §4) must be identical bit for
 *    bit, unless a search expanded a polygon whose links differ between the two meshes.
 * The figures per level are printed (run the binary to see them).
 * Last, tiles served by onepathd in Detour form (protocol §4.2b): a tile added with
 * dtNavMesh::addTile among its neighbours (all from the daemon) links to each of them, and
 * findPath crosses every such border; after an obstacle edit the tile fetched again
 * replaces it (removeTile, addTile) and links and paths the same way.
 */
#define _Static_assert static_assert /* the core's headers are C11 */
extern "C" {
#include "onepath/build.h"
#include "onepath/client.h"
#include "onepath/detour.h"
#include "onepath/hash.h"
#include "onepath/levelgen.h"
#include "onepath/limits.h"
#include "onepath/mesh.h"
#include "onepath/obj.h"
#include "onepath/query.h"
#include "op_test.h"
#include "../core/src/query_internal.h"
}
#undef _Static_assert

#include <DetourAlloc.h>
#include <DetourNavMesh.h>
#include <DetourNavMeshQuery.h>
#include <DetourNode.h>
#include <criterion/criterion.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <csignal>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

/* ===== the byte layout the spec writes is the one this Detour reads ===== */

static_assert(sizeof(dtPolyRef) == 4 && sizeof(dtTileRef) == 4, "Debian's Detour: 32-bit refs");
static_assert(DT_NAVMESH_MAGIC == OP_DETOUR_MAGIC && DT_NAVMESH_VERSION == OP_DETOUR_VERSION,
              "tile data tags");
static_assert(sizeof(dtMeshHeader) == OP_DETOUR_HEADER_SIZE, "dtMeshHeader");
static_assert(offsetof(dtMeshHeader, polyCount) == 24 &&
                  offsetof(dtMeshHeader, offMeshBase) == 56 &&
                  offsetof(dtMeshHeader, walkableHeight) == 60 &&
                  offsetof(dtMeshHeader, bmin) == 72 && offsetof(dtMeshHeader, bmax) == 84 &&
                  offsetof(dtMeshHeader, bvQuantFactor) == 96,
              "dtMeshHeader offsets");
static_assert(sizeof(dtPoly) == OP_DETOUR_POLY_SIZE && offsetof(dtPoly, verts) == 4 &&
                  offsetof(dtPoly, neis) == 16 && offsetof(dtPoly, flags) == 28 &&
                  offsetof(dtPoly, vertCount) == 30 && offsetof(dtPoly, areaAndtype) == 31,
              "dtPoly");
static_assert(sizeof(dtLink) == OP_DETOUR_LINK_SIZE, "dtLink");
static_assert(sizeof(dtPolyDetail) == OP_DETOUR_DMESH_SIZE &&
                  offsetof(dtPolyDetail, triBase) == 4 && offsetof(dtPolyDetail, vertCount) == 8 &&
                  offsetof(dtPolyDetail, triCount) == 9,
              "dtPolyDetail");
static_assert(sizeof(dtBVNode) == OP_DETOUR_BVNODE_SIZE && offsetof(dtBVNode, bmax) == 6 &&
                  offsetof(dtBVNode, i) == 12,
              "dtBVNode");
static_assert(sizeof(dtNavMeshParams) == OP_DETOUR_PARAMS_SIZE, "dtNavMeshParams");

/* RecastDemo's navmesh set records (Sample_TileMesh.cpp), as its loader reads them. */
struct NavMeshSetHeader {
    int magic;
    int version;
    int numTiles;
    dtNavMeshParams params;
};
struct NavMeshTileHeader {
    dtTileRef tileRef;
    int dataSize;
};
static_assert(sizeof(NavMeshSetHeader) == OP_DETOUR_SET_HEADER_SIZE, "set header");
static_assert(sizeof(NavMeshTileHeader) == OP_DETOUR_TILE_HEADER_SIZE, "tile header");

/* ===== levels, points ===== */

namespace
{

const double kHalf[3] = {2.0, 4.0, 2.0}; /* docs/quality.md's snap box */
const int kPoints = 2000;
const int kMaxPath = 16384;
const int kMaxStraight = 4096;
const double kLengthTol = 0.01;

struct Variant {
    const char *name;
    const char *key, *value; /* one --set, or NULL */
};
const Variant kVariants[] = {{"demo", nullptr, nullptr}, {"layers", "partition", "layers"}};

/* A level: OBJ path or gen:KIND:SIZE:SEED. */
bool load_soup(const std::string &spec, op_arena *a, op_soup *soup)
{
    op_err e;
    op_status st;
    if (spec.rfind("gen:", 0) == 0) {
        char kind[32];
        int size;
        unsigned long long seed;
        if (sscanf(spec.c_str() + 4, "%31[a-z]:%d:%llu", kind, &size, &seed) != 3)
            return false;
        st = op_levelgen(kind, size, seed, a, soup, &e);
    } else
        st = op_obj_read_file(spec.c_str(), a, soup, &e);
    cr_assert_eq(st, OP_OK, "%s: %s", spec.c_str(), e.msg);
    return true;
}

/* n points on the soup's triangles weighted by their ground-projected area (walls get
 * none), uniform inside a triangle; seeded by the level's name. */
std::vector<double> sample_points(const op_soup *soup, const std::string &name, int n)
{
    size_t nt = soup->tris_len / 3;
    std::vector<double> cum(nt + 1, 0.0), pts(3 * (size_t)n);
    auto vert = [&](size_t t, int k) { return &soup->verts[3 * soup->tris[3 * t + (size_t)k]]; };
    for (size_t i = 0; i < nt; i++) {
        const float *a = vert(i, 0), *b = vert(i, 1), *c = vert(i, 2);
        double cy = ((double)b[2] - a[2]) * ((double)c[0] - a[0]) -
                    ((double)b[0] - a[0]) * ((double)c[2] - a[2]);
        cum[i + 1] = cum[i] + std::fabs(cy) * 0.5;
    }
    op_test_rng rng = {1ull ^ op_hash_bytes(name.data(), name.size())};
    for (int k = 0; k < n; k++) {
        double u = op_test_rand01(&rng) * cum[nt];
        size_t t = (size_t)(std::upper_bound(cum.begin() + 1, cum.end(), u) - cum.begin() - 1);
        t = std::min(t, nt - 1);
        const float *a = vert(t, 0), *b = vert(t, 1), *c = vert(t, 2);
        double r1 = std::sqrt(op_test_rand01(&rng)), r2 = op_test_rand01(&rng);
        for (int i = 0; i < 3; i++)
            pts[3 * (size_t)k + i] = (1 - r1) * a[i] + r1 * (1 - r2) * b[i] + r1 * r2 * c[i];
    }
    return pts;
}

/* ===== the export, loaded as RecastDemo loads it ===== */

struct Loaded {
    op_mesh *mesh = nullptr;
    op_arena *out = nullptr, *scratch = nullptr;
    op_detour_set set;
    dtNavMesh *nav = nullptr;
    dtNavMeshQuery *query = nullptr;
    std::vector<int> cell_of;   /* onepath tile -> set tile */
    std::vector<int> poly_base; /* onepath tile -> first polygon in its Detour tile */
    std::vector<dtTileRef> refs;

    ~Loaded()
    {
        dtFreeNavMeshQuery(query);
        dtFreeNavMesh(nav);
        op_mesh_destroy(mesh);
        op_arena_destroy(out);
        op_arena_destroy(scratch);
    }
};

template <typename T> T read_at(const uint8_t *p)
{
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

/* RecastDemo's Sample_TileMesh::loadAll on the set's bytes. */
void load_set(Loaded &L)
{
    const uint8_t *b = L.set.bytes;
    size_t size = L.set.size, off = sizeof(NavMeshSetHeader);
    cr_assert_geq(size, off);
    NavMeshSetHeader h = read_at<NavMeshSetHeader>(b);
    cr_assert_eq(h.magic, ('M' << 24 | 'S' << 16 | 'E' << 8 | 'T'));
    cr_assert_eq(h.version, 1);
    cr_assert_eq(h.numTiles, L.set.ntiles);
    L.nav = dtAllocNavMesh();
    cr_assert_not_null(L.nav);
    dtStatus st = L.nav->init(&h.params);
    cr_assert(dtStatusSucceed(st), "dtNavMesh::init: status %#x", st);
    for (int i = 0; i < h.numTiles; i++) {
        cr_assert_leq(off + sizeof(NavMeshTileHeader), size);
        NavMeshTileHeader th = read_at<NavMeshTileHeader>(b + off);
        off += sizeof th;
        cr_assert(th.tileRef != 0 && th.dataSize > 0, "tile %d header", i);
        cr_assert_leq(off + (size_t)th.dataSize, size);
        unsigned char *data = (unsigned char *)dtAlloc((size_t)th.dataSize, DT_ALLOC_PERM);
        cr_assert_not_null(data);
        std::memcpy(data, b + off, (size_t)th.dataSize);
        off += (size_t)th.dataSize;
        dtTileRef got = 0;
        st = L.nav->addTile(data, th.dataSize, DT_TILE_FREE_DATA, th.tileRef, &got);
        if (dtStatusFailed(st))
            dtFree(data);
        cr_assert(dtStatusSucceed(st), "addTile %d: status %#x", i, st);
        cr_assert_eq(got, th.tileRef, "tile %d placed at its ref", i);
        L.refs.push_back(got);
    }
    cr_assert_eq(off, size, "no trailing bytes");
    L.query = dtAllocNavMeshQuery();
    cr_assert_not_null(L.query);
    st = L.query->init(L.nav, 65535);
    cr_assert(dtStatusSucceed(st), "dtNavMeshQuery::init: status %#x", st);
}

void build(Loaded &L, const op_soup *soup, const Variant &v, int threads)
{
    op_settings s;
    op_settings_default(&s);
    op_err e;
    if (v.key)
        cr_assert_eq(op_settings_set(&s, v.key, v.value, &e), OP_OK, "%s", e.msg);
    op_level *lvl = nullptr;
    cr_assert_eq(op_level_create(soup, &s, nullptr, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_status st = op_mesh_build_level(lvl, threads, &L.mesh, &e);
    op_level_destroy(lvl);
    cr_assert_eq(st, OP_OK, "%s", e.msg);
    L.out = op_arena_create(0);
    L.scratch = op_arena_create(0);
    cr_assert(L.out && L.scratch);
    cr_assert_eq(op_detour_set_build(L.mesh, L.out, L.scratch, &L.set, &e), OP_OK, "%s", e.msg);
    int nt = op_mesh_tile_count(L.mesh), cell = -1, base = 0;
    for (int i = 0; i < nt; i++) {
        const op_tile *t = op_mesh_tile(L.mesh, i);
        const op_tile *p = i ? op_mesh_tile(L.mesh, i - 1) : nullptr;
        if (!p || p->tx != t->tx || p->tz != t->tz)
            cell++, base = 0;
        L.cell_of.push_back(cell);
        L.poly_base.push_back(base);
        base += t->npolys;
    }
    load_set(L);
}

dtPolyRef to_detour(const Loaded &L, op_polyref r)
{
    const dtMeshTile *t = L.nav->getTileByRef(L.refs[(size_t)L.cell_of[(size_t)r.tile]]);
    return L.nav->getPolyRefBase(t) | (dtPolyRef)(L.poly_base[(size_t)r.tile] + r.poly);
}

op_polyref to_onepath(const Loaded &L, dtPolyRef ref)
{
    unsigned salt, it, ip;
    L.nav->decodePolyId(ref, salt, it, ip);
    for (size_t i = 0; i < L.cell_of.size(); i++)
        if (L.cell_of[i] == (int)it) {
            int n = op_mesh_tile(L.mesh, (int)i)->npolys;
            if ((int)ip < L.poly_base[i] + n)
                return {(int)i, (int)ip - L.poly_base[i]};
        }
    return {-1, -1};
}

/* ===== structure: what Detour loaded is onepath's mesh ===== */

/* Links across tile lines, compared per polygon edge as sets of neighbour polygons. */
struct LinkStats {
    long internal = 0;      /* in-tile links (every one matched) */
    long op_links = 0;      /* onepath's stitched links (distinct neighbour per edge) */
    long dt_links = 0;      /* Detour's */
    long only_op_cap = 0;   /* onepath's, missing in Detour: the edge meets > 4 polygons */
    long only_op_short = 0; /* ...: the overlap is under Detour's 0.02 */
    long only_dt = 0;       /* Detour's, refused by navmesh-format.md §5.3's height rule */
    long seams = 0;         /* layer seams, in-tile links in Detour */
    long only_op_seam = 0;  /* onepath seam links over part of an edge: none in Detour */
    long multi = 0;         /* edges joining one neighbour over several stretches */
    long unexplained = 0;
};

/* Why a link exists on one side only, by (from, to) Detour reference. */
typedef std::map<std::pair<dtPolyRef, dtPolyRef>, const char *> LinkCauses;

/* Detour's links of polygon p on edge j: in-tile (side 0xff) and across tiles. */
void detour_links(const dtMeshTile *t, const dtPoly *p, int j, std::vector<dtPolyRef> &in,
                  std::vector<dtPolyRef> &across)
{
    for (unsigned k = p->firstLink; k != DT_NULL_LINK; k = t->links[k].next)
        if (t->links[k].edge == j)
            (t->links[k].side == 0xff ? in : across).push_back(t->links[k].ref);
}

/* Spec §2.1, written again here: origin + local in float32, but a coordinate on a tile
 * boundary line is the line's own, k · TileSize from the grid origin (0 for soups). */
float expected_world(const op_tile *t, int axis, float local)
{
    if (axis != 1 && local == 0.0f)
        return (float)((axis == 0 ? t->tx : t->tz) * t->tile_size);
    if (axis != 1 && local == (float)t->tile_size)
        return (float)((axis == 0 ? t->tx + 1 : t->tz + 1) * t->tile_size);
    return (float)(t->origin[axis] + (double)local);
}

/* navmesh-format.md §5.3 for edge k of polygon p (tile ti) against every portal edge of
 * polygon q (tile tj) on the opposite side: whether any pair overlaps and passes. */
bool rule_links(const Loaded &L, int ti, int p, int k, int tj, int q)
{
    const op_tile *a = op_mesh_tile(L.mesh, ti), *b = op_mesh_tile(L.mesh, tj);
    const op_settings *s = op_mesh_settings(L.mesh);
    int side = a->neis[(size_t)p * a->nvp + k] & 3, ax = (side == 0 || side == 2) ? 2 : 0;
    double a0[3], a1[3];
    int na = op_tile_poly_nverts(a, p), nb = op_tile_poly_nverts(b, q);
    op_tile_world_vert(a, a->polys[(size_t)p * a->nvp + k], a0);
    op_tile_world_vert(a, a->polys[(size_t)p * a->nvp + (k + 1) % na], a1);
    for (int j = 0; j < nb; j++) {
        if (b->neis[(size_t)q * b->nvp + j] != (OP_NEI_PORTAL | (unsigned)((side + 2) % 4)))
            continue;
        double b0[3], b1[3];
        op_tile_world_vert(b, b->polys[(size_t)q * b->nvp + j], b0);
        op_tile_world_vert(b, b->polys[(size_t)q * b->nvp + (j + 1) % nb], b1);
        double o0 = std::max(std::min(a0[ax], a1[ax]), std::min(b0[ax], b1[ax]));
        double o1 = std::min(std::max(a0[ax], a1[ax]), std::max(b0[ax], b1[ax]));
        if (!(o0 < o1))
            continue;
        auto h = [ax](const double *u, const double *v, double t) {
            return u[1] + (v[1] - u[1]) * (t - u[ax]) / (v[ax] - u[ax]);
        };
        double lim = s->agent_max_climb + s->cell_height;
        if (std::fabs(h(a0, a1, o0) - h(b0, b1, o0)) <= lim + 1e-9 &&
            std::fabs(h(a0, a1, o1) - h(b0, b1, o1)) <= lim + 1e-9)
            return true;
    }
    return false;
}

/* Whether edge m of polygon q (tile tj) has edge k of polygon p (tile ti)'s two ends the
 * other way round, in tile-local x and z. */
bool same_ends(const Loaded &L, int ti, int p, int k, int tj, int q, int m)
{
    const op_tile *a = op_mesh_tile(L.mesh, ti), *b = op_mesh_tile(L.mesh, tj);
    int na = op_tile_poly_nverts(a, p), nb = op_tile_poly_nverts(b, q);
    const float *a0 = &a->verts[3 * a->polys[(size_t)p * a->nvp + k]];
    const float *a1 = &a->verts[3 * a->polys[(size_t)p * a->nvp + (k + 1) % na]];
    const float *b0 = &b->verts[3 * b->polys[(size_t)q * b->nvp + m]];
    const float *b1 = &b->verts[3 * b->polys[(size_t)q * b->nvp + (m + 1) % nb]];
    return a0[0] == b1[0] && a0[2] == b1[2] && a1[0] == b0[0] && a1[2] == b0[2];
}

/* A layer seam (detour-export.md §4): Detour's in-tile link is onepath's seam link whose
 * edge has the same two ends; a link over part of the edge only has no Detour form. */
void check_seam(const Loaded &L, int ti, int p, int k, const std::vector<dtPolyRef> &in,
                const std::vector<dtPolyRef> &across, LinkStats &ls, LinkCauses &causes)
{
    const op_link *links;
    int nl = op_mesh_edge_links(L.mesh, ti, p, k, &links);
    dtPolyRef self = to_detour(L, {ti, p});
    std::vector<dtPolyRef> want;
    for (int i = 0; i < nl; i++) {
        dtPolyRef r = to_detour(L, {links[i].nei_tile, links[i].nei_poly});
        if (same_ends(L, ti, p, k, links[i].nei_tile, links[i].nei_poly, links[i].nei_edge))
            want.push_back(r);
        else {
            ls.only_op_seam++;
            causes[{self, r}] = "seam";
        }
    }
    cr_assert(across.empty() && want.size() <= 1 && in == want,
              "tile %d poly %d edge %d: seam links %zu, Detour in-tile %zu", ti, p, k, want.size(),
              in.size());
    ls.seams += (long)want.size();
}

/* Every polygon: vertices (Detour's winding), flags, area, type; every edge: in-tile
 * links equal, links across compared (differences classified into causes). */
void check_polygon(const Loaded &L, int ti, int p, LinkStats &ls, LinkCauses &causes)
{
    const op_tile *t = op_mesh_tile(L.mesh, ti);
    const dtMeshTile *dt = L.nav->getTileByRef(L.refs[(size_t)L.cell_of[(size_t)ti]]);
    const dtPoly &dp = dt->polys[L.poly_base[(size_t)ti] + p];
    dtPolyRef self = to_detour(L, {ti, p});
    int n = op_tile_poly_nverts(t, p);
    cr_assert(dp.vertCount == n && dp.flags == t->flags[p] && dp.getArea() == t->areas[p] &&
              dp.getType() == DT_POLYTYPE_GROUND);
    double area2 = 0.0;
    for (int j = 0; j < n; j++) {
        const float *v = &dt->verts[3 * dp.verts[j]], *u = &dt->verts[3 * dp.verts[(j + 1) % n]];
        const float *loc = &t->verts[3 * t->polys[(size_t)p * t->nvp + (n - j) % n]];
        for (int a = 0; a < 3; a++)
            cr_assert_eq(v[a], expected_world(t, a, loc[a]), "tile %d poly %d vertex %d", ti, p, j);
        area2 += (double)v[0] * u[2] - (double)u[0] * v[2];
    }
    cr_assert_lt(area2, 0.0, "Detour winds clockwise seen from above (x right, z up)");
    for (int j = 0; j < n; j++) {
        int k = n - 1 - j; /* onepath's edge */
        uint16_t nei = t->neis[(size_t)p * t->nvp + k];
        std::vector<dtPolyRef> in, across;
        detour_links(dt, &dp, j, in, across);
        if (nei != OP_NEI_WALL && !(nei & OP_NEI_PORTAL)) {
            cr_assert(in.size() == 1 && in[0] == to_detour(L, {ti, nei - 1}) && across.empty());
            ls.internal++;
            continue;
        }
        if (OP_NEI_IS_SEAM(nei)) {
            check_seam(L, ti, p, k, in, across, ls, causes);
            continue;
        }
        cr_assert(in.empty() && (across.empty() || (nei & OP_NEI_PORTAL)));
        const op_link *links;
        int nl = op_mesh_edge_links(L.mesh, ti, p, k, &links);
        std::vector<dtPolyRef> ops;
        for (int i = 0; i < nl; i++)
            ops.push_back(to_detour(L, {links[i].nei_tile, links[i].nei_poly}));
        std::sort(ops.begin(), ops.end());
        std::sort(across.begin(), across.end());
        size_t all = ops.size();
        ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
        ls.multi += all != ops.size();
        ls.op_links += (long)ops.size();
        ls.dt_links += (long)across.size();
        std::vector<dtPolyRef> only;
        std::set_difference(ops.begin(), ops.end(), across.begin(), across.end(),
                            std::back_inserter(only));
        for (dtPolyRef r : only) {
            double widest = 0.0;
            for (int i = 0; i < nl; i++)
                if (ops.size() <= 4 && to_detour(L, {links[i].nei_tile, links[i].nei_poly}) == r)
                    widest = std::max(widest, links[i].o1 - links[i].o0);
            const char *why = ops.size() > 4 ? "cap" : widest <= 0.02 + 1e-6 ? "short" : nullptr;
            ls.only_op_cap += why && why[0] == 'c';
            ls.only_op_short += why && why[0] == 's';
            ls.unexplained += !why;
            if (!why)
                fprintf(stderr, "  link tile %d poly %d edge %d: onepath only, UNEXPLAINED\n", ti,
                        p, k);
            causes[{self, r}] = why ? why : "unexplained";
        }
        only.clear();
        std::set_difference(across.begin(), across.end(), ops.begin(), ops.end(),
                            std::back_inserter(only));
        for (dtPolyRef r : only) {
            op_polyref o = to_onepath(L, r);
            bool refused = !rule_links(L, ti, p, k, o.tile, o.poly);
            ls.only_dt += refused;
            ls.unexplained += !refused;
            if (!refused)
                fprintf(stderr, "  link tile %d poly %d edge %d: Detour only, UNEXPLAINED\n", ti, p,
                        k);
            causes[{self, r}] = refused ? "height" : "unexplained";
        }
    }
}

void check_structure(const Loaded &L, LinkStats &ls, LinkCauses &causes)
{
    for (int ti = 0; ti < op_mesh_tile_count(L.mesh); ti++) {
        const op_tile *t = op_mesh_tile(L.mesh, ti);
        const dtMeshTile *dt = L.nav->getTileByRef(L.refs[(size_t)L.cell_of[(size_t)ti]]);
        cr_assert(dt && dt->header && dt->header->x == t->tx && dt->header->y == t->tz &&
                  dt->header->layer == 0);
        for (int p = 0; p < t->npolys; p++)
            check_polygon(L, ti, p, ls, causes);
    }
}

/* ===== queries ===== */

struct Snap {
    bool ok = false;
    op_polyref op = {-1, -1};
    dtPolyRef dt = 0;
    double pos[3] = {0, 0, 0};
};

bool in_box(const double *p, const double *q)
{
    for (int i = 0; i < 3; i++)
        if (std::fabs(q[i] - p[i]) > kHalf[i])
            return false;
    return true;
}

struct PairStats {
    int snap_differs = 0; /* points the two sides snapped to different polygons */
    int pairs = 0;        /* pairs compared: both ends snapped on one side at least */
    int connected[2] = {0, 0};
    int disagree = 0;                 /* connected on one side only, because */
    int why[5] = {0, 0, 0, 0, 0};     /* its corridor crosses a link the other lacks (cap, short,
                                      height), or the other connects from the same snaps */
    int both = 0;                     /* pairs both sides connect */
    double max_own = 0.0;             /* largest length difference, each its own corridor */
    double sum_own = 0.0;             /* their sum, for the mean */
    int own_over = 0, op_shorter = 0; /* ... over 1 %, and of those onepath's the shorter */
    double max_same = 0.0;            /* largest difference of the two funnels on one corridor */
    int why_portals = 0;    /* ... over 1 %: a step joins two polygons over several stretches */
    int why_degenerate = 0; /* ... over 1 %: an end collinear with a portal (1 mm in agrees) */
    int same_corridors = 0; /* pairs both sides connect through the very same corridor */
    int own_link = 0;       /* own lengths over 1 %: a corridor crosses a link of one side only */
    int own_snap = 0;       /* ... the ends snapped to other polygons; from Detour's, they agree */
    int pools = 0;          /* pairs whose node pools were compared (same snapped polygons) */
    int pools_same = 0;     /* ... identical, node by node, bit for bit */
    int pools_link = 0;     /* ... first differing at a node reached over a one-sided link */
    int unexplained = 0;
};

/* Horizontal (x-z) length of a straight path. onepath's adds a point at every tile
 * crossing with the surface's height there, Detour's (no options) only corners, so their
 * 3-D lengths differ over a hill even when the funnels agree; seen from above they are
 * the same polyline. */
double path_len(const std::vector<double> &p)
{
    double l = 0.0;
    for (size_t i = 3; i < p.size(); i += 3)
        l += std::hypot(p[i] - p[i - 3], p[i + 2] - p[i - 1]);
    return l;
}

double rel(double a, double b)
{
    return std::fabs(a - b) / std::max(std::max(a, b), 1e-9);
}

std::vector<dtPolyRef> to_detour(const Loaded &L, const std::vector<op_polyref> &c)
{
    std::vector<dtPolyRef> d;
    for (const op_polyref &r : c)
        d.push_back(to_detour(L, r));
    return d;
}

std::vector<op_polyref> to_onepath(const Loaded &L, const std::vector<dtPolyRef> &c)
{
    std::vector<op_polyref> o;
    for (dtPolyRef r : c)
        o.push_back(to_onepath(L, r));
    return o;
}

/* Whether Detour links polygon a to b, and over how many links. */
int dt_links_between(const Loaded &L, dtPolyRef a, dtPolyRef b)
{
    const dtMeshTile *t;
    const dtPoly *p;
    L.nav->getTileAndPolyByRefUnsafe(a, &t, &p);
    int n = 0;
    for (unsigned k = p->firstLink; k != DT_NULL_LINK; k = t->links[k].next)
        n += t->links[k].ref == b;
    return n;
}

/* onepath's ways from polygon a to b: in-tile edges and links. */
int op_links_between(const Loaded &L, op_polyref a, op_polyref b)
{
    const op_tile *t = op_mesh_tile(L.mesh, a.tile);
    int n = op_tile_poly_nverts(t, a.poly), count = 0;
    for (int k = 0; k < n; k++) {
        count += a.tile == b.tile && t->neis[(size_t)a.poly * t->nvp + k] == b.poly + 1;
        const op_link *links;
        int nl = op_mesh_edge_links(L.mesh, a.tile, a.poly, k, &links);
        for (int j = 0; j < nl; j++)
            count += links[j].nei_tile == b.tile && links[j].nei_poly == b.poly;
    }
    return count;
}

/* The first step of corridor c (Detour references) the other side lacks: the pair's
 * link cause, or nullptr when every step exists on both sides. */
const char *missing_step(const Loaded &L, const std::vector<dtPolyRef> &c, const LinkCauses &lc)
{
    for (size_t i = 1; i < c.size(); i++) {
        if (dt_links_between(L, c[i - 1], c[i]) &&
            op_links_between(L, to_onepath(L, c[i - 1]), to_onepath(L, c[i])))
            continue;
        auto it = lc.find({c[i - 1], c[i]});
        return it != lc.end() ? it->second : "unexplained";
    }
    return nullptr;
}

bool several_portals(const Loaded &L, const std::vector<dtPolyRef> &c)
{
    for (size_t i = 1; i < c.size(); i++)
        if (dt_links_between(L, c[i - 1], c[i]) > 1 ||
            op_links_between(L, to_onepath(L, c[i - 1]), to_onepath(L, c[i])) > 1)
            return true;
    return false;
}

/* onepath's corridor between two snaps; false when partial. */
bool op_corridor(const Loaded &L, const Snap &a, const Snap &b, op_arena *out, op_arena *scratch,
                 std::vector<dtPolyRef> &c)
{
    op_path path;
    op_err e;
    op_arena_reset(out);
    op_arena_reset(scratch);
    cr_assert_eq(op_query_path(L.mesh, nullptr, a.op, a.pos, b.op, b.pos, out, scratch, &path, &e),
                 OP_OK, "%s", e.msg);
    c = to_detour(L, std::vector<op_polyref>(path.polys, path.polys + path.npolys));
    return !path.partial;
}

/* Detour's corridor between two snaps; false when partial. */
bool dt_corridor(const Loaded &L, const dtQueryFilter &f, const Snap &a, const Snap &b,
                 std::vector<dtPolyRef> &c)
{
    c.resize(kMaxPath);
    float s[3], e[3];
    for (int i = 0; i < 3; i++)
        s[i] = (float)a.pos[i], e[i] = (float)b.pos[i];
    int n = 0;
    dtStatus st = L.query->findPath(a.dt, b.dt, s, e, &f, c.data(), &n, kMaxPath);
    cr_assert(dtStatusSucceed(st) && !(st & DT_OUT_OF_NODES) && !(st & DT_BUFFER_TOO_SMALL),
              "findPath: status %#x", st);
    c.resize((size_t)n);
    return !(st & DT_PARTIAL_RESULT) && n > 0 && c.back() == b.dt;
}

/* Horizontal length of op_query_straight's path through corridor c from s to e. */
double op_funnel(const Loaded &L, const std::vector<dtPolyRef> &c, const double *s, const double *e,
                 op_arena *out, op_arena *scratch)
{
    std::vector<op_polyref> oc = to_onepath(L, c);
    op_straight_path sp;
    op_err err;
    op_arena_reset(out);
    op_arena_reset(scratch);
    cr_assert_eq(
        op_query_straight(L.mesh, oc.data(), (int)oc.size(), s, e, out, scratch, &sp, &err), OP_OK,
        "%s", err.msg);
    std::vector<double> a;
    for (int i = 0; i < sp.npoints; i++)
        a.insert(a.end(), sp.points[i].pos, sp.points[i].pos + 3);
    return path_len(a);
}

/* The same for findStraightPath. */
double dt_funnel(const Loaded &L, const std::vector<dtPolyRef> &c, const double *s, const double *e)
{
    static thread_local std::vector<float> fp(3 * kMaxStraight);
    float fs[3], fe[3];
    for (int i = 0; i < 3; i++)
        fs[i] = (float)s[i], fe[i] = (float)e[i];
    int ns = 0;
    dtStatus st = L.query->findStraightPath(fs, fe, c.data(), (int)c.size(), fp.data(), nullptr,
                                            nullptr, &ns, kMaxStraight);
    cr_assert(dtStatusSucceed(st) && !(st & DT_BUFFER_TOO_SMALL), "findStraightPath %#x", st);
    return path_len(std::vector<double>(fp.begin(), fp.begin() + 3 * ns));
}

/* Both funnels through one corridor whose every step exists on both sides. */
void funnels(const Loaded &L, const std::vector<dtPolyRef> &c, const double *s, const double *e,
             op_arena *out, op_arena *scratch, double len[2])
{
    len[0] = op_funnel(L, c, s, e, out, scratch);
    len[1] = dt_funnel(L, c, s, e);
}

/* p moved 1 mm towards the vertex centroid of its polygon (x-z). */
void nudge(const Loaded &L, dtPolyRef r, const double *p, double *q)
{
    const dtMeshTile *t;
    const dtPoly *poly;
    L.nav->getTileAndPolyByRefUnsafe(r, &t, &poly);
    double c[2] = {0, 0};
    for (int j = 0; j < poly->vertCount; j++)
        c[0] += t->verts[3 * poly->verts[j]] / poly->vertCount,
            c[1] += t->verts[3 * poly->verts[j] + 2] / poly->vertCount;
    double dx = c[0] - p[0], dz = c[1] - p[2], d = std::hypot(dx, dz);
    q[0] = p[0] + (d > 0 ? 0.001 * dx / d : 0.0);
    q[1] = p[1];
    q[2] = p[2] + (d > 0 ? 0.001 * dz / d : 0.0);
}

/* One corridor, both funnels: within 1 %, or explained (several portals between two of
 * its polygons, or an end collinear with a portal: 1 mm inside, they agree). */
void same_corridor(const Loaded &L, const std::vector<dtPolyRef> &c, const double *s,
                   const double *e, op_arena *out, op_arena *scratch, PairStats &ps,
                   const std::string &what)
{
    double len[2];
    funnels(L, c, s, e, out, scratch, len);
    double d = rel(len[0], len[1]);
    ps.max_same = std::max(ps.max_same, d);
    if (d <= kLengthTol)
        return;
    const char *why = nullptr;
    double s2[3], e2[3];
    nudge(L, c.front(), s, s2);
    nudge(L, c.back(), e, e2);
    if (several_portals(L, c))
        why = "several portals", ps.why_portals++;
    else if (funnels(L, c, s2, e2, out, scratch, len), rel(len[0], len[1]) <= kLengthTol)
        why = "degenerate end", ps.why_degenerate++;
    else
        ps.unexplained++;
    fprintf(stderr, "  %s: one corridor, straight paths %.3f / %.3f: %s\n", what.c_str(), len[0],
            len[1], why ? why : "UNEXPLAINED");
}

struct Pair {
    const Snap *op[2], *dt[2];
};

/* A pair only one side connects: its corridor crosses a link the other side lacks (whose
 * cause check_structure found), or the other side connects too when it starts and ends
 * at the connecting side's snaps (the two nearest-polygon rules chose differently, or
 * one of them put its point outside the box). */
void explain_disagreement(const Loaded &L, const dtQueryFilter &f, const Pair &p, bool op_connects,
                          const LinkCauses &lc, op_arena *out, op_arena *scratch, PairStats &ps,
                          const std::string &what)
{
    std::vector<dtPolyRef> c, c2;
    const char *why;
    if (op_connects) {
        op_corridor(L, *p.op[0], *p.op[1], out, scratch, c);
        why = missing_step(L, c, lc);
        if (!why && dt_corridor(L, f, *p.op[0], *p.op[1], c2))
            why = "snap";
    } else {
        dt_corridor(L, f, *p.dt[0], *p.dt[1], c);
        why = missing_step(L, c, lc);
        if (!why && op_corridor(L, *p.dt[0], *p.dt[1], out, scratch, c2))
            why = "snap";
    }
    static const char *const kinds[] = {"cap", "short", "height", "snap", "seam"};
    int kind = -1;
    for (int i = 0; i < 5; i++)
        if (why && !strcmp(why, kinds[i]))
            kind = i;
    if (kind >= 0)
        ps.why[kind]++;
    else
        ps.unexplained++;
    fprintf(stderr, "  %s: only %s connects: %s\n", what.c_str(),
            op_connects ? "onepath" : "Detour", kind >= 0 ? why : "UNEXPLAINED");
}

/* Both searches from the same positions (Detour's snaps of the pair: one float each), node
 * pool against node pool in order of first touch (dtNodePool allocates in that order too):
 * the index of the first node whose polygon, side, state, position, g, f or parent differ,
 * or -1 when every node agrees bit for bit. *cause: when the pools differ and either search
 * expanded a polygon with a link the other side lacks, that link's cause (check_structure),
 * else nullptr: the two searches then walked the same graph and must agree. */
long pool_divergence(const Loaded &L, const Snap &a, const Snap &b, const LinkCauses &lc,
                     op_arena *out, op_arena *scratch, const char **cause, bool print)
{
    const dtQueryFilter f;
    std::vector<dtPolyRef> c;
    dt_corridor(L, f, a, b, c);
    const dtNodePool *pool = L.query->getNodePool();
    op_arena_reset(out);
    op_arena_reset(scratch);
    op__path_node *nodes;
    long n;
    op_err e;
    cr_assert_eq(
        op__query_path_nodes(L.mesh, a.op, a.pos, b.op, b.pos, out, scratch, &nodes, &n, &e), OP_OK,
        "%s", e.msg);
    long first = -1, nd = pool->getNodeCount();
    for (long i = 0; i < std::max(n, nd) && first < 0; i++) {
        if (i >= n || i >= nd) {
            first = i;
            break;
        }
        const dtNode *d = pool->getNodeAtIdx((unsigned)i + 1);
        const op__path_node &o = nodes[i];
        bool same = d->id == to_detour(L, o.poly) && (int)d->state == o.side &&
                    (int)d->flags == o.state && (long)d->pidx == o.parent + 1 &&
                    !memcmp(d->pos, o.pos, sizeof d->pos) && d->cost == o.g && d->total == o.f;
        if (!same)
            first = i;
    }
    *cause = nullptr;
    for (long i = 0; first >= 0 && !*cause && i < nd + n; i++) {
        dtPolyRef r;
        if (i < nd) {
            const dtNode *d = pool->getNodeAtIdx((unsigned)i + 1);
            if (!(d->flags & DT_NODE_CLOSED))
                continue;
            r = d->id;
        } else {
            if (nodes[i - nd].state != 2)
                continue;
            r = to_detour(L, nodes[i - nd].poly);
        }
        auto it = lc.lower_bound({r, 0});
        if (it != lc.end() && it->first.first == r)
            *cause = it->second;
    }
    if (print && first >= 0)
        for (long i = std::max(0L, first - 2); i < std::min(std::max(n, nd), first + 2); i++) {
            if (i < nd) {
                const dtNode *d = pool->getNodeAtIdx((unsigned)i + 1);
                op_polyref r = to_onepath(L, d->id);
                fprintf(stderr,
                        "    node %ld Detour (%d, %d) side %u flags %u parent %ld pos %.9g %.9g "
                        "%.9g g %.9g f %.9g\n",
                        i, r.tile, r.poly, d->state, d->flags, (long)d->pidx - 1, d->pos[0],
                        d->pos[1], d->pos[2], d->cost, d->total);
            }
            if (i < n) {
                const op__path_node &o = nodes[i];
                fprintf(stderr,
                        "    node %ld onepath (%d, %d) side %d state %d parent %ld pos %.9g %.9g "
                        "%.9g g %.9g f %.9g\n",
                        i, o.poly.tile, o.poly.poly, o.side, o.state, o.parent, o.pos[0], o.pos[1],
                        o.pos[2], o.g, o.f);
            }
        }
    return first;
}

/* The node pools of a pair both sides snapped to the same two polygons: identical, or their
 * searches expanded a polygon with a link of one side only (of a checked kind). Not
 * for a pair within one polygon: findPath returns before it clears its pool. */
void compare_pools(const Loaded &L, const Pair &p, const LinkCauses &lc, op_arena *out,
                   op_arena *scratch, PairStats &ps, const std::string &what)
{
    if (p.op[0]->dt != p.dt[0]->dt || p.op[1]->dt != p.dt[1]->dt || p.dt[0]->dt == p.dt[1]->dt)
        return;
    const char *cause;
    long d = pool_divergence(L, *p.dt[0], *p.dt[1], lc, out, scratch, &cause, false);
    ps.pools++;
    if (d < 0) {
        ps.pools_same++;
        return;
    }
    if (cause) {
        ps.pools_link++;
        return;
    }
    ps.unexplained++;
    fprintf(stderr, "  %s: node pools differ at node %ld: UNEXPLAINED\n", what.c_str(), d);
    pool_divergence(L, *p.dt[0], *p.dt[1], lc, out, scratch, &cause, true);
}

/* A pair both sides connect: each side's own corridor and straight path (their lengths are
 * the comparison the figures report), then both funnels through each corridor. */
/* Why two own-corridor lengths differ by more than 1 %, or nullptr: one corridor crosses a
 * link the other side lacks (the link's cause, check_structure: e.g. Detour's looser height
 * rule), or the two sides snapped an end to different polygons and onepath's search from
 * Detour's snaps comes within 1 % of Detour's length. */
const char *own_cause(const Loaded &L, const Pair &p, const std::vector<dtPolyRef> &oc,
                      const std::vector<dtPolyRef> &dc, double ld, const LinkCauses &lc,
                      op_arena *out, op_arena *scratch, PairStats &ps)
{
    const char *m = missing_step(L, dc, lc);
    if (!m)
        m = missing_step(L, oc, lc);
    if (m && strcmp(m, "unexplained")) {
        ps.own_link++;
        return m;
    }
    if (m || (p.op[0]->dt == p.dt[0]->dt && p.op[1]->dt == p.dt[1]->dt))
        return nullptr;
    std::vector<dtPolyRef> c;
    if (!op_corridor(L, *p.dt[0], *p.dt[1], out, scratch, c) ||
        rel(op_funnel(L, c, p.dt[0]->pos, p.dt[1]->pos, out, scratch), ld) > kLengthTol)
        return nullptr;
    ps.own_snap++;
    return "snap";
}

/* A pair both sides connect: each side's own corridor and straight path (their lengths are
 * the comparison the figures report: within 1 %, or a difference of a checked kind), then
 * both funnels through each corridor. */
void compare_lengths(const Loaded &L, const dtQueryFilter &f, const Pair &p, const LinkCauses &lc,
                     op_arena *out, op_arena *scratch, PairStats &ps, const std::string &what)
{
    std::vector<dtPolyRef> oc, dc;
    op_corridor(L, *p.op[0], *p.op[1], out, scratch, oc);
    dt_corridor(L, f, *p.dt[0], *p.dt[1], dc);
    double lo = op_funnel(L, oc, p.op[0]->pos, p.op[1]->pos, out, scratch);
    double ld = dt_funnel(L, dc, p.dt[0]->pos, p.dt[1]->pos);
    double own = rel(lo, ld);
    ps.both++;
    ps.same_corridors += oc == dc;
    compare_pools(L, p, lc, out, scratch, ps, what);
    ps.max_own = std::max(ps.max_own, own);
    ps.sum_own += own;
    if (own > kLengthTol) {
        ps.own_over++;
        ps.op_shorter += lo < ld;
        const char *why = own_cause(L, p, oc, dc, ld, lc, out, scratch, ps);
        if (!why)
            ps.unexplained++;
        fprintf(stderr, "  %s: own corridors, straight paths %.3f / %.3f (%.2f %%): %s\n",
                what.c_str(), lo, ld, 100.0 * own, why ? why : "UNEXPLAINED");
    }
    if (!missing_step(L, oc, LinkCauses()))
        same_corridor(L, oc, p.op[0]->pos, p.op[1]->pos, out, scratch, ps, what + " (onepath's)");
    if (!missing_step(L, dc, LinkCauses()))
        same_corridor(L, dc, p.dt[0]->pos, p.dt[1]->pos, out, scratch, ps, what + " (Detour's)");
}

void snap_points(const Loaded &L, const dtQueryFilter &f, const std::vector<double> &pts,
                 std::vector<Snap> &op, std::vector<Snap> &dt, PairStats &ps,
                 const std::string &label)
{
    for (int k = 0; k < kPoints; k++) {
        const double *p = &pts[3 * (size_t)k];
        op_err e;
        Snap &o = op[(size_t)k], &d = dt[(size_t)k];
        o.ok = op_query_nearest(L.mesh, p, kHalf, nullptr, &o.op, o.pos, &e) == OP_OK &&
               in_box(p, o.pos);
        float c[3] = {(float)p[0], (float)p[1], (float)p[2]}, h[3], n[3];
        for (int i = 0; i < 3; i++)
            h[i] = (float)kHalf[i];
        dtStatus st = L.query->findNearestPoly(c, h, &f, &d.dt, n);
        cr_assert(dtStatusSucceed(st), "findNearestPoly %#x", st);
        for (int i = 0; i < 3; i++)
            d.pos[i] = n[i];
        d.ok = d.dt != 0 && in_box(p, d.pos);
        if (d.ok)
            d.op = to_onepath(L, d.dt);
        if (o.ok)
            o.dt = to_detour(L, o.op);
        if (o.ok != d.ok || (o.ok && o.dt != d.dt)) {
            ps.snap_differs++;
            op_polyref r = d.dt ? to_onepath(L, d.dt) : op_polyref{-1, -1};
            fprintf(stderr,
                    "  %s point %d (%.2f, %.2f, %.2f): onepath %s(%d, %d) at (%.2f, %.2f, %.2f), "
                    "Detour %s(%d, %d) at (%.2f, %.2f, %.2f)\n",
                    label.c_str(), k, p[0], p[1], p[2], o.ok ? "" : "outside the box ", o.op.tile,
                    o.op.poly, o.pos[0], o.pos[1], o.pos[2], d.ok ? "" : "outside the box ", r.tile,
                    r.poly, d.pos[0], d.pos[1], d.pos[2]);
        }
    }
}

void run_queries(const Loaded &L, const std::vector<double> &pts, const LinkCauses &lc,
                 PairStats &ps, const std::string &label)
{
    dtQueryFilter f; /* the default: every area costs 1, include 0xffff */
    std::vector<Snap> op(kPoints), dt(kPoints);
    snap_points(L, f, pts, op, dt, ps, label);
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    cr_assert(out && scratch);
    std::vector<dtPolyRef> c;
    for (int k = 0; k + 1 < kPoints; k++) {
        Pair p = {{&op[(size_t)k], &op[(size_t)k + 1]}, {&dt[(size_t)k], &dt[(size_t)k + 1]}};
        bool so = p.op[0]->ok && p.op[1]->ok, sd = p.dt[0]->ok && p.dt[1]->ok;
        if (!so && !sd)
            continue;
        ps.pairs++;
        bool co = so && op_corridor(L, *p.op[0], *p.op[1], out, scratch, c);
        bool cd = sd && dt_corridor(L, f, *p.dt[0], *p.dt[1], c);
        ps.connected[0] += co;
        ps.connected[1] += cd;
        std::string what = label + " pair " + std::to_string(k);
        if (co != cd) {
            ps.disagree++;
            explain_disagreement(L, f, p, co, lc, out, scratch, ps, what);
        } else if (co)
            compare_lengths(L, f, p, lc, out, scratch, ps, what);
    }
    op_arena_destroy(out);
    op_arena_destroy(scratch);
}

void check_level(const std::string &spec)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    load_soup(spec, a, &soup);
    std::string name = spec.substr(spec.find_last_of('/') + 1);
    std::vector<double> pts = sample_points(&soup, name, kPoints);
    for (const Variant &v : kVariants) {
        Loaded L;
        build(L, &soup, v, 2);
        LinkStats ls;
        LinkCauses lc;
        check_structure(L, ls, lc);
        PairStats ps;
        std::string label = name + " " + v.name;
        run_queries(L, pts, lc, ps, label);
        fprintf(stderr,
                "detour %s %s: tiles %d polys %ld; links in-tile %ld, seams %ld, across %ld/%ld "
                "(onepath/Detour), onepath only %ld cap + %ld short + %ld seam, Detour only %ld "
                "height, multi %ld; snaps differ %d; pairs %d, connected %d/%d, disagree %d (cap "
                "%d, short %d, height %d, snap %d, seam %d); both %d: own corridors max %.2f%% "
                "mean %.3f%%, same corridor %d, %d over 1%% (onepath shorter in %d; link %d, snap "
                "%d); node pools %d: identical %d, link %d; one corridor max %.4f%%, over 1%%: "
                "several portals %d, "
                "degenerate end %d; unexplained %ld\n",
                name.c_str(), v.name, L.set.ntiles, op_mesh_poly_count(L.mesh), ls.internal,
                ls.seams, ls.op_links, ls.dt_links, ls.only_op_cap, ls.only_op_short,
                ls.only_op_seam, ls.only_dt, ls.multi, ps.snap_differs, ps.pairs, ps.connected[0],
                ps.connected[1], ps.disagree, ps.why[0], ps.why[1], ps.why[2], ps.why[3], ps.why[4],
                ps.both, 100.0 * ps.max_own, ps.both ? 100.0 * ps.sum_own / ps.both : 0.0,
                ps.same_corridors, ps.own_over, ps.op_shorter, ps.own_link, ps.own_snap, ps.pools,
                ps.pools_same, ps.pools_link, 100.0 * ps.max_same, ps.why_portals,
                ps.why_degenerate, ps.unexplained + ls.unexplained);
        cr_expect_eq(ls.unexplained + ps.unexplained, 0, "%s: differences of no known kind",
                     label.c_str());
    }
    op_arena_destroy(a);
}

// Every .obj file of ../shared/levels, in name order.
std::vector<std::string> shared_levels()
{
    std::string dir = std::string(OP_SHARED_DIR) + "/levels";
    std::vector<std::string> out;
    DIR *d = opendir(dir.c_str());
    cr_assert_not_null(d, "%s", dir.c_str());
    for (struct dirent *de; (de = readdir(d)) != nullptr;) {
        std::string n = de->d_name;
        if (n.size() > 4 && n.compare(n.size() - 4, 4, ".obj") == 0)
            out.push_back(dir + "/" + n);
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

/* Every link of every polygon of the mesh, as (polygon, edge, neighbour, side) sorted: the
 * graph Detour walks, whatever order addTile left the lists in. */
std::vector<std::vector<unsigned>> all_links(const dtNavMesh *nav)
{
    std::vector<std::vector<unsigned>> out;
    for (int i = 0; i < nav->getMaxTiles(); i++) {
        const dtMeshTile *t = nav->getTile(i);
        if (!t || !t->header)
            continue;
        dtPolyRef base = nav->getPolyRefBase(t);
        for (int p = 0; p < t->header->polyCount; p++)
            for (unsigned k = t->polys[p].firstLink; k != DT_NULL_LINK; k = t->links[k].next)
                out.push_back({(unsigned)(base | (dtPolyRef)p), t->links[k].edge,
                               (unsigned)t->links[k].ref, t->links[k].side, t->links[k].bmin,
                               t->links[k].bmax});
    }
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace

/* What onepathd will serve: a cell built alone (op_level_build_stages) and exported with
 * op_detour_tile_data replaces its tile of the loaded set (removeTile, then addTile with
 * the same ref) and links with its neighbours and its own layers exactly as before. */
Test(detour, a_cell_built_alone_replaces_its_tile)
{
    op_arena *a = op_arena_create(0), *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_soup soup;
    load_soup("gen:multifloor:64:1", a, &soup);
    op_settings s;
    op_settings_default(&s);
    op_err e;
    cr_assert_eq(op_settings_set(&s, "partition", "layers", &e), OP_OK);
    op_level *lvl = nullptr;
    cr_assert_eq(op_level_create(&soup, &s, nullptr, 0, &lvl, &e), OP_OK, "%s", e.msg);
    Loaded L;
    cr_assert_eq(op_mesh_build_level(lvl, 2, &L.mesh, &e), OP_OK, "%s", e.msg);
    L.out = op_arena_create(0);
    L.scratch = op_arena_create(0);
    cr_assert_eq(op_detour_set_build(L.mesh, L.out, L.scratch, &L.set, &e), OP_OK, "%s", e.msg);
    load_set(L);
    const std::vector<std::vector<unsigned>> before = all_links(L.nav);
    int layered = 0;
    for (int i = 0; i < L.set.ntiles; i++) {
        const op_detour_tile &dt = L.set.tiles[i];
        op_tile_stages st;
        cr_assert_eq(
            op_level_build_stages(lvl, dt.tx, dt.tz, OP_STAGE_TILE, 0, out, scratch, &st, &e),
            OP_OK, "%s", e.msg);
        op_arena_reset(scratch);
        std::vector<const op_tile *> layers;
        for (int k = 0; k < st.ntiles; k++)
            layers.push_back(&st.tiles[k]);
        layered += st.ntiles > 1;
        uint8_t *d;
        size_t size;
        int np;
        cr_assert_eq(op_detour_tile_data(layers.data(), (int)layers.size(), &s, out, scratch, &d,
                                         &size, &np, &e),
                     OP_OK, "%s", e.msg);
        dtStatus r = L.nav->removeTile(dt.ref, nullptr, nullptr);
        cr_assert(dtStatusSucceed(r), "removeTile (%d, %d): %#x", dt.tx, dt.tz, r);
        unsigned char *copy = (unsigned char *)dtAlloc(size, DT_ALLOC_PERM);
        std::memcpy(copy, d, size);
        dtTileRef got = 0;
        r = L.nav->addTile(copy, (int)size, DT_TILE_FREE_DATA, dt.ref, &got);
        if (dtStatusFailed(r))
            dtFree(copy);
        cr_assert(dtStatusSucceed(r) && got == dt.ref, "addTile (%d, %d): %#x", dt.tx, dt.tz, r);
        cr_assert(all_links(L.nav) == before, "cell (%d, %d) links as in the set", dt.tx, dt.tz);
        op_arena_reset(out);
        op_arena_reset(scratch);
    }
    cr_expect_gt(layered, 0, "some cell has several layers");
    op_level_destroy(lvl);
    op_arena_destroy(a);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
}

/* Every generated kind, one test each (they run in parallel). */
#define GEN_SIZE "128"
#define GEN_KINDS(X)                                                                               \
    X(flat) X(terrain) X(stairs) X(rooms) X(multifloor) X(ramp) X(pillars) X(furniture)
#define GEN_TEST(kind)                                                                             \
    Test(detour, loads_and_agrees_##kind)                                                          \
    {                                                                                              \
        check_level("gen:" #kind ":" GEN_SIZE ":1");                                               \
    }
GEN_KINDS(GEN_TEST)

/* The kinds above are every kind op_levelgen makes. */
Test(detour, every_generated_kind_is_tested)
{
#define GEN_NAME(kind) #kind ", "
    std::string tested = GEN_KINDS(GEN_NAME);
    std::string all = std::string(OP_LEVELGEN_KINDS) + ", ";
    cr_expect(tested == all, "tested %s, op_levelgen makes %s", tested.c_str(), all.c_str());
}

Test(detour, loads_and_agrees_shared_levels)
{
    std::vector<std::string> levels = shared_levels();
    cr_assert(!levels.empty());
    for (const std::string &l : levels)
        check_level(l);
}

/* ===== tiles from onepathd ===== */

/* onepathd as a child process on an ipc:// path under a fresh temporary directory, as
 * tests/support/op_daemon_test.h starts it for the C tests (that header is C only). */
struct Daemon {
    pid_t pid = 0;
    std::string dir, url;

    Daemon()
    {
        char tmpl[] = "/tmp/opd-detour-XXXXXX";
        cr_assert_not_null(mkdtemp(tmpl));
        dir = tmpl;
        url = "ipc://" + dir + "/s.ipc";
        std::string bin = std::string(OP_BIN_DIR) + "/onepathd", data = dir + "/data",
                    log = dir + "/log";
        const char *argv[] = {bin.c_str(), "--listen",  url.c_str(), "--data-dir", data.c_str(),
                              "--log",     log.c_str(), "--threads", "2",          nullptr};
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* dies with the test, even a failed one */
            int null = open("/dev/null", O_RDWR);
            dup2(null, 1);
            dup2(null, 2);
            execv(bin.c_str(), const_cast<char *const *>(argv));
            _exit(127);
        }
        op_client *c = connect();
        op_client_ping_result p;
        op_err e;
        op_status st = OP_ETIMEDOUT;
        for (int i = 0; i < 100 && st != OP_OK; i++) {
            st = op_client_ping(c, 100, &p, &e);
            int status;
            if (st != OP_OK && waitpid(pid, &status, WNOHANG) == pid)
                cr_assert_fail("onepathd exited during start-up");
        }
        op_client_close(c);
        cr_assert_eq(st, OP_OK, "onepathd did not answer ping: %s", e.msg);
    }

    op_client *connect() const
    {
        op_client *c = nullptr;
        op_err e;
        cr_assert_eq(op_client_open(url.c_str(), &c, &e), OP_OK, "%s", e.msg);
        return c;
    }

    /* SIGTERM and wait: the exit status (-1: killed by a signal). */
    int stop()
    {
        int status = 0;
        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        pid = 0;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

    ~Daemon()
    {
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
        }
        std::string cmd = "rm -rf '" + dir + "'";
        if (system(cmd.c_str()) != 0)
            fprintf(stderr, "cannot remove %s\n", dir.c_str());
    }
};

const int kTimeoutMs = 30000;

/* Every tile cell of the level in Detour form, by (tx, tz); cells without data left out. */
std::map<std::pair<int, int>, std::vector<uint8_t>> fetch_detour(op_client *c, const char *level,
                                                                 const int rect[4])
{
    std::map<std::pair<int, int>, std::vector<uint8_t>> tiles;
    int after[2], *ap = nullptr, more = 1;
    op_err e;
    while (more) {
        op_client_detour_range rg;
        cr_assert_eq(op_client_tile_range_get_detour(c, level, rect, ap, 0, kTimeoutMs, &rg, &e),
                     OP_OK, "%s", e.msg);
        for (int i = 0; i < rg.ntiles; i++)
            if (rg.tiles[i].data)
                tiles[{rg.tiles[i].tx, rg.tiles[i].tz}].assign(rg.tiles[i].data,
                                                               rg.tiles[i].data + rg.tiles[i].len);
        more = rg.has_next;
        after[0] = rg.next[0];
        after[1] = rg.next[1];
        ap = after;
        op_client_detour_range_free(&rg);
    }
    return tiles;
}

/* Adds one daemon tile (Detour keeps a copy it frees itself). */
void add_daemon_tile(dtNavMesh *nav, const std::vector<uint8_t> &d, int tx, int tz)
{
    unsigned char *data = (unsigned char *)dtAlloc(d.size(), DT_ALLOC_PERM);
    cr_assert_not_null(data);
    std::memcpy(data, d.data(), d.size());
    dtTileRef ref = 0;
    dtStatus st = nav->addTile(data, (int)d.size(), DT_TILE_FREE_DATA, 0, &ref);
    if (dtStatusFailed(st))
        dtFree(data);
    cr_assert(dtStatusSucceed(st), "addTile (%d, %d): status %#x", tx, tz, st);
    const dtMeshTile *t = nav->getTileAt(tx, tz, 0);
    cr_assert(t && nav->getTileRef(t) == ref, "tile (%d, %d) is not where its header says", tx, tz);
}

/* External links of tile t, by the (tx, tz) of the tile they lead into: one polygon pair
 * each (from, to) to path between. */
std::map<std::pair<int, int>, std::pair<dtPolyRef, dtPolyRef>>
external_links(const dtNavMesh *nav, const dtMeshTile *t, int *count)
{
    std::map<std::pair<int, int>, std::pair<dtPolyRef, dtPolyRef>> out;
    *count = 0;
    dtPolyRef base = nav->getPolyRefBase(t);
    for (int p = 0; p < t->header->polyCount; p++)
        for (unsigned j = t->polys[p].firstLink; j != DT_NULL_LINK; j = t->links[j].next) {
            const dtLink &l = t->links[j];
            if (l.side == 0xff)
                continue; /* in-tile */
            const dtMeshTile *u = nullptr;
            const dtPoly *q = nullptr;
            nav->getTileAndPolyByRefUnsafe(l.ref, &u, &q);
            (*count)++;
            out.emplace(std::make_pair(u->header->x, u->header->y),
                        std::make_pair(base | (dtPolyRef)p, l.ref));
        }
    return out;
}

void poly_centre(const dtNavMesh *nav, dtPolyRef ref, float c[3])
{
    const dtMeshTile *t = nullptr;
    const dtPoly *p = nullptr;
    cr_assert(dtStatusSucceed(nav->getTileAndPolyByRef(ref, &t, &p)));
    c[0] = c[1] = c[2] = 0;
    for (int i = 0; i < p->vertCount; i++)
        for (int k = 0; k < 3; k++)
            c[k] += t->verts[3 * p->verts[i] + k] / p->vertCount;
}

/* Tile (tx, tz) of nav links to each of its neighbours in tiles, and findPath crosses each
 * of those borders from a polygon of the tile into one of the neighbour's. Returns the
 * borders crossed; *nlinks the tile's external links. */
int check_borders(const dtNavMesh *nav,
                  const std::map<std::pair<int, int>, std::vector<uint8_t>> &tiles,
                  std::pair<int, int> at, const char *name, int *nlinks)
{
    const int dx[4] = {1, -1, 0, 0}, dz[4] = {0, 0, 1, -1};
    auto links = external_links(nav, nav->getTileAt(at.first, at.second, 0), nlinks);
    dtNavMeshQuery *q = dtAllocNavMeshQuery();
    cr_assert(q && dtStatusSucceed(q->init(nav, 4096)));
    dtQueryFilter f;
    int crossed = 0;
    for (int s = 0; s < 4; s++) {
        std::pair<int, int> nb = {at.first + dx[s], at.second + dz[s]};
        if (!tiles.count(nb))
            continue;
        auto l = links.find(nb);
        cr_assert(l != links.end(), "%s: tile (%d, %d) has no link to its neighbour (%d, %d)", name,
                  at.first, at.second, nb.first, nb.second);
        float a[3], b[3];
        poly_centre(nav, l->second.first, a);
        poly_centre(nav, l->second.second, b);
        dtPolyRef path[256];
        int n = 0;
        dtStatus st = q->findPath(l->second.first, l->second.second, a, b, &f, path, &n, 256);
        cr_assert(dtStatusSucceed(st) && !(st & DT_PARTIAL_RESULT) && n >= 2 &&
                      path[n - 1] == l->second.second,
                  "%s: findPath from (%d, %d) into (%d, %d): status %#x, %d polygons", name,
                  at.first, at.second, nb.first, nb.second, st, n);
        /* The corridor starts in the tile and ends in the neighbour. */
        const dtMeshTile *t0 = nullptr, *t1 = nullptr;
        const dtPoly *p0 = nullptr;
        nav->getTileAndPolyByRefUnsafe(path[0], &t0, &p0);
        nav->getTileAndPolyByRefUnsafe(path[n - 1], &t1, &p0);
        cr_assert(t0->header->x == at.first && t0->header->y == at.second &&
                  t1->header->x == nb.first && t1->header->y == nb.second);
        crossed++;
    }
    dtFreeNavMeshQuery(q);
    return crossed;
}

/* level from the daemon: the cell with the most neighbours with data is added alone
 * (no external link), then its neighbours are added; it must link to every one of them
 * and findPath must cross each border. With edit, an obstacle is then put in the middle
 * of that cell; the cell fetched again (new bytes) replaces the old one in the navmesh
 * (removeTile, addTile) and must link and path to every neighbour again. Returns the
 * borders crossed (the first time). */
int check_daemon_links(const char *name, const op_soup *soup, int min_neighbours, bool edit)
{
    Daemon d;
    op_client *c = d.connect();
    op_client_mesh m = {"m",
                        soup->verts,
                        soup->verts_len / 3,
                        (const int32_t *)soup->tris,
                        soup->tris_len / 3,
                        soup->areas};
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(op_client_level_put(c, "lv", nullptr, 0, &m, 1, kTimeoutMs, &v, &changed, &e),
                 OP_OK, "%s", e.msg);
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, "lv", kTimeoutMs, &li, &e), OP_OK, "%s", e.msg);
    cr_assert_gt(li.tile_size, 0);
    auto tiles = fetch_detour(c, "lv", li.tiles);
    cr_assert_geq(tiles.size(), 2u);

    /* The cell with the most neighbours with data. */
    const int dx[4] = {1, -1, 0, 0}, dz[4] = {0, 0, 1, -1};
    std::pair<int, int> best;
    int best_n = -1, max_polys = 1;
    for (const auto &kv : tiles) {
        int n = 0;
        for (int s = 0; s < 4; s++)
            n += tiles.count({kv.first.first + dx[s], kv.first.second + dz[s]}) > 0;
        if (n > best_n)
            best_n = n, best = kv.first;
        max_polys = std::max(max_polys, read_at<int>(kv.second.data() + 24));
    }
    cr_assert_geq(best_n, min_neighbours, "%s: no cell has %d neighbours", name, min_neighbours);

    /* Params as protocol §4.2b says a client makes them, with room for 1024 polygons a
     * tile: a tile rebuilt after an edit may have more than any has now (a flat cell of
     * one polygon gets a hole). */
    op_detour_params p;
    cr_assert_eq(op_detour_params_make(li.grid_origin[0], li.grid_origin[1], li.tile_size,
                                       (int)tiles.size(), std::max(max_polys, 1024), &p, &e),
                 OP_OK, "%s", e.msg);
    dtNavMeshParams np;
    std::memcpy(np.orig, p.orig, sizeof np.orig);
    np.tileWidth = p.tile_width;
    np.tileHeight = p.tile_height;
    np.maxTiles = p.max_tiles;
    np.maxPolys = p.max_polys;
    dtNavMesh *nav = dtAllocNavMesh();
    cr_assert_not_null(nav);
    cr_assert(dtStatusSucceed(nav->init(&np)));

    add_daemon_tile(nav, tiles[best], best.first, best.second);
    int nlinks = 0;
    external_links(nav, nav->getTileAt(best.first, best.second, 0), &nlinks);
    cr_assert_eq(nlinks, 0, "a tile alone has external links");
    for (int s = 0; s < 4; s++) {
        auto it = tiles.find({best.first + dx[s], best.second + dz[s]});
        if (it != tiles.end())
            add_daemon_tile(nav, it->second, it->first.first, it->first.second);
    }
    int crossed = check_borders(nav, tiles, best, name, &nlinks);
    fprintf(stderr,
            "%s: daemon tile (%d, %d) among %d neighbours: %d external links, %d borders "
            "crossed by findPath\n",
            name, best.first, best.second, best_n, nlinks, crossed);

    if (edit) {
        /* A 2 x 2 obstacle in the middle of the cell. */
        op_client_volume vol;
        std::memset(&vol, 0, sizeof vol);
        std::snprintf(vol.name, sizeof vol.name, "post");
        vol.mode = OP_CLIENT_VOLUME_OBSTACLE;
        vol.kind = OP_CLIENT_VOLUME_BOX;
        double cx = li.grid_origin[0] + (best.first + 0.5) * li.tile_size,
               cz = li.grid_origin[1] + (best.second + 0.5) * li.tile_size;
        double lo[3] = {cx - 1, li.bounds[1] - 1, cz - 1},
               hi[3] = {cx + 1, li.bounds[4] + 1, cz + 1};
        std::memcpy(vol.bmin, lo, sizeof lo);
        std::memcpy(vol.bmax, hi, sizeof hi);
        cr_assert_eq(op_client_volume_put(c, "lv", &vol, kTimeoutMs, &v, &changed, &e), OP_OK, "%s",
                     e.msg);
        op_client_changes ch;
        cr_assert_eq(op_client_changes_since(c, "lv", 1, 0, kTimeoutMs, &ch, &e), OP_OK, "%s",
                     e.msg);
        bool listed = false;
        for (int i = 0; i < ch.ntiles; i++)
            listed |= ch.tiles[i].tx == best.first && ch.tiles[i].tz == best.second;
        op_client_changes_free(&ch);
        cr_assert(listed, "changes.since does not list the edited cell");
        op_client_detour_tile nt;
        cr_assert_eq(
            op_client_tile_get_detour(c, "lv", best.first, best.second, kTimeoutMs, &nt, &e), OP_OK,
            "%s", e.msg);
        cr_assert_not_null(nt.data);
        std::vector<uint8_t> now(nt.data, nt.data + nt.len);
        op_client_detour_tile_free(&nt);
        cr_assert(now != tiles[best], "the edited cell's Detour bytes did not change");
        const dtMeshTile *old = nav->getTileAt(best.first, best.second, 0);
        cr_assert(dtStatusSucceed(nav->removeTile(nav->getTileRef(old), nullptr, nullptr)));
        add_daemon_tile(nav, now, best.first, best.second);
        int again = check_borders(nav, tiles, best, name, &nlinks);
        cr_assert_eq(again, crossed);
        fprintf(stderr,
                "%s: after an obstacle, the cell's new Detour tile (%d polygons, was %d) "
                "replaced it: %d external links, %d borders crossed\n",
                name, read_at<int>(now.data() + 24), read_at<int>(tiles[best].data() + 24), nlinks,
                again);
    }
    op_client_close(c);
    cr_assert_eq(d.stop(), 0);
    dtFreeNavMesh(nav);
    return crossed;
}

Test(detour, daemon_tiles_load_and_link_with_neighbours, .timeout = 300)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("flat", 40, 1, a, &soup, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(check_daemon_links("gen:flat:40:1", &soup, 4, true), 4);
    op_arena_reset(a);
    cr_assert_eq(op_obj_read_file(op_test_level("dungeon.obj"), a, &soup, &e), OP_OK, "%s", e.msg);
    cr_assert_geq(check_daemon_links("dungeon.obj", &soup, 2, false), 1);
    op_arena_destroy(a);
}
