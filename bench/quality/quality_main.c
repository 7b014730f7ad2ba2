/*
 * onepath-quality: the navmesh onepath builds against the one Recast/Detour 1.5.1
 * builds, on the same soup and settings, in one run (docs/quality.md).
 *
 *   onepath-quality [--level PATH]... [--gen KIND:SIZE]... [--variant demo|fine|layers]...
 *                   [--align origin|recast]... [--points N] [--seed S] [--threads N] [--pairs]
 *                   [--json]
 *
 * Per level and settings variant: onepath's full build (op_mesh_build_level) and Recast's
 * tiled build into a dtNavMesh (bench_recast_build_navmesh); polygons, vertices and
 * coverage (polygon areas projected on the ground plane) of each; then N seeded points on
 * the level's upward-facing surfaces, snapped to each mesh (nearest polygon, the same
 * half-extents on both sides), and the N - 1 consecutive pairs: how many each side joins
 * with a complete path, and which pairs only one side joins.
 * Defaults: every generated kind at 256 m, seed 1, plus the shared levels; variants demo
 * (the Recast demo settings), fine (cell 0.15, cell height 0.1) and layers (partition);
 * both alignments of onepath's tile grid: origin (tile (0, 0) at the world origin, the
 * default settings) and recast (the grid origin at the level's minimum corner, as Recast's
 * rcConfig.bmin, so both builds have the same cells and tile lines).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "onepath/build.h"
#include "onepath/hash.h"
#include "onepath/levelgen.h"
#include "onepath/limits.h"
#include "onepath/obj.h"
#include "onepath/query.h"
#include "quality_detour.h"
#include "recast_side.h"

#define MAX_LEVELS   64
#define MAX_VARIANTS 8
#define GEN_SIZE     256
/* Detour's node pool: its index type is 16 bits in 1.5.1. */
#define DETOUR_NODES 65535

static const char *const gen_kinds[] = {"flat",       "terrain", "stairs",  "rooms",
                                        "multifloor", "ramp",    "pillars", "furniture"};

typedef struct variant {
    const char *name;
    const char *sets[3]; /* key=value, NULL-terminated */
} variant;

static const variant variants[] = {
    {"demo", {NULL}},
    {"fine", {"cell_size=0.15", "cell_height=0.1", NULL}},
    {"layers", {"partition=layers", NULL}},
};
#define NVARIANTS ((int)(sizeof variants / sizeof variants[0]))

/* Where onepath's tile grid starts: the world origin, or Recast's bmin. */
enum { ALIGN_ORIGIN = 0, ALIGN_RECAST = 1, NALIGN = 2 };
static const char *const align_names[NALIGN] = {"origin", "recast"};

typedef struct options {
    char levels[MAX_LEVELS][512]; /* "gen:KIND:SIZE:SEED" or an OBJ path */
    int nlevels;
    int variant_on[NVARIANTS];
    int any_variant;
    int align_on[NALIGN];
    int any_align;
    int points, threads, pairs, json, snaps, why, tiles;
    const char *covmap; /* --covmap DIR: the --tiles sampling as one image per row */
    unsigned long long seed;
} options;

/* One pair's outcome on one side: 0 unsnapped, 1 partial, 2 complete. */
typedef struct row {
    char level[64];
    const char *variant;
    const char *align;
    int ok;
    char err[320];
    long polys[2], verts[2];
    double coverage[2];
    double build_ms[2], query_ms[2];
    int snapped[2];     /* nearest point found inside the box */
    int raw_snapped[2]; /* nearest polygon found at all */
    int connected[2];
    int out_of_nodes; /* Detour searches that ran out of nodes */
    int npairs;
    int *only[2]; /* pair indices only side k connects */
    int nonly[2];
    int other_partial[2];
    int list_snaps; /* print the points only one side snaps */
    int list_why;   /* explain the pairs only Recast connects */
    int list_tiles; /* the tiles whose coverage differs most */
    const char *covmap;
    long portals[3];
    long seams[2]; /* onepath layer seam edges (amendments.md R3): linked, unlinked */
    /* onepath portal edges: linked, refused by height, facing nothing */ /* of those, the other
                                                                             side snapped both
                                                                             ends (so: partial
                                                                             path) */
    double *pts; /* the sampled points, 3 per point */
} row;

enum { OURS = 0, RECAST = 1 };

/* ===== deterministic sampling ===== */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double rand01(uint64_t *s)
{
    return (double)(splitmix(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* n points on the soup's triangles, weighted by their area projected on the ground
 * (walls get no points), uniform within a triangle. Returns NULL on failure. */
static double *sample_points(const op_soup *soup, int n, uint64_t seed)
{
    size_t nt = soup->tris_len / 3;
    double *cum = malloc((nt + 1) * sizeof *cum), *pts = malloc((size_t)n * 3 * sizeof *pts);
    if (!cum || !pts) {
        free(cum);
        free(pts);
        return NULL;
    }
    cum[0] = 0.0;
    for (size_t i = 0; i < nt; i++) {
        const float *a = &soup->verts[3 * soup->tris[3 * i]],
                    *b = &soup->verts[3 * soup->tris[3 * i + 1]],
                    *c = &soup->verts[3 * soup->tris[3 * i + 2]];
        double cy = ((double)b[2] - a[2]) * ((double)c[0] - a[0]) -
                    ((double)b[0] - a[0]) * ((double)c[2] - a[2]);
        cum[i + 1] = cum[i] + fabs(cy) * 0.5;
    }
    uint64_t s = seed;
    for (int k = 0; k < n; k++) {
        double u = rand01(&s) * cum[nt];
        size_t lo = 0, hi = nt - 1;
        while (lo < hi) { /* first triangle whose cumulative end exceeds u */
            size_t mid = lo + (hi - lo) / 2;
            if (cum[mid + 1] > u)
                hi = mid;
            else
                lo = mid + 1;
        }
        const float *a = &soup->verts[3 * soup->tris[3 * lo]],
                    *b = &soup->verts[3 * soup->tris[3 * lo + 1]],
                    *c = &soup->verts[3 * soup->tris[3 * lo + 2]];
        double r1 = sqrt(rand01(&s)), r2 = rand01(&s);
        for (int i = 0; i < 3; i++)
            pts[3 * k + i] = (1 - r1) * a[i] + r1 * (1 - r2) * b[i] + r1 * r2 * c[i];
    }
    free(cum);
    return pts;
}

/* ===== the two sides ===== */

static double poly_area_xz(const op_tile *t, int p)
{
    int n = op_tile_poly_nverts(t, p);
    double a = 0.0;
    for (int k = 0; k < n; k++) {
        const float *u = &t->verts[3 * t->polys[(size_t)p * t->nvp + k]];
        const float *v = &t->verts[3 * t->polys[(size_t)p * t->nvp + (k + 1) % n]];
        a += (double)u[0] * v[2] - (double)v[0] * u[2];
    }
    return a * 0.5;
}

static void ours_counts(const op_mesh *m, row *r)
{
    for (int i = 0; i < op_mesh_tile_count(m); i++) {
        const op_tile *t = op_mesh_tile(m, i);
        r->polys[OURS] += t->npolys;
        r->verts[OURS] += t->nverts;
        for (int p = 0; p < t->npolys; p++)
            r->coverage[OURS] += poly_area_xz(t, p);
    }
}

/* Portal edges of onepath's mesh: linked; unlinked although the neighbour cell has an
 * overlapping opposite portal edge (the §5.3 height rule refused them); unlinked facing a
 * built neighbour cell with no portal edge over that stretch (the two tiles' builds
 * disagree about the walkable surface there). Portals facing an empty cell are the
 * level's edge and are not counted. */
static const int side_dx[4] = {-1, 0, 1, 0}, side_dz[4] = {0, 1, 0, -1};

static int opposite_overlap(const op_mesh *m, int tj, int side, int ax, double a0, double a1)
{
    const op_tile *u = op_mesh_tile(m, tj);
    unsigned want = OP_NEI_PORTAL | (unsigned)((side + 2) % 4);
    for (int q = 0; q < u->npolys; q++) {
        int nq = op_tile_poly_nverts(u, q);
        for (int j = 0; j < nq; j++) {
            if (u->neis[(size_t)q * u->nvp + j] != want)
                continue;
            double c[3], d[3];
            op_tile_world_vert(u, u->polys[(size_t)q * u->nvp + j], c);
            op_tile_world_vert(u, u->polys[(size_t)q * u->nvp + (j + 1) % nq], d);
            if (fmax(a0, fmin(c[ax], d[ax])) < fmin(a1, fmax(c[ax], d[ax])))
                return 1;
        }
    }
    return 0;
}

static void portal_stats(const op_mesh *m, row *r)
{
    for (int ti = 0; ti < op_mesh_tile_count(m); ti++) {
        const op_tile *t = op_mesh_tile(m, ti);
        for (int p = 0; p < t->npolys; p++) {
            int n = op_tile_poly_nverts(t, p);
            for (int k = 0; k < n; k++) {
                unsigned v = t->neis[(size_t)p * t->nvp + k];
                const op_link *l;
                if (OP_NEI_IS_SEAM(v))
                    r->seams[op_mesh_edge_links(m, ti, p, k, &l) > 0 ? 0 : 1]++;
                if (!(v & OP_NEI_PORTAL) || OP_NEI_IS_SEAM(v))
                    continue;
                if (op_mesh_edge_links(m, ti, p, k, &l) > 0) {
                    r->portals[0]++;
                    continue;
                }
                int side = (int)(v & 3u), ax = (side == 0 || side == 2) ? 2 : 0, cell = 0, over = 0;
                double a[3], b[3];
                op_tile_world_vert(t, t->polys[(size_t)p * t->nvp + k], a);
                op_tile_world_vert(t, t->polys[(size_t)p * t->nvp + (k + 1) % n], b);
                for (int layer = 0; layer < OP_MAX_LAYERS && !over; layer++) {
                    int tj =
                        op_mesh_find_tile(m, t->tx + side_dx[side], t->tz + side_dz[side], layer);
                    if (tj < 0)
                        break;
                    cell = 1;
                    over =
                        opposite_overlap(m, tj, side, ax, fmin(a[ax], b[ax]), fmax(a[ax], b[ax]));
                }
                r->portals[1] += over;
                r->portals[2] += cell && !over;
                if (cell && !over && r->list_why && r->portals[2] <= 40)
                    printf("  %s %s %s: gap e: tile (%d, %d) layer %d poly %d edge %d side %d "
                           "(%.2f, %.2f, %.2f) -> (%.2f, %.2f, %.2f)\n",
                           r->level, r->variant, r->align, t->tx, t->tz, t->layer, p, k, side, a[0],
                           a[1], a[2], b[0], b[1], b[2]);
            }
        }
    }
}

typedef struct snap {
    int ok;
    op_polyref ref;
    unsigned long long dref;
    double pos[3];
} snap;

static const double half_ext[3] = {2.0, 4.0, 2.0};

/* Both sides' nearest-polygon rules take every polygon whose bounds meet the box and
 * return its closest point even when that lies outside the box (a tall stair polygon can
 * give a point 7 m below). Which polygon shapes exist differs between the two builds, so
 * a snap counts only when the nearest point lies inside the box, on both sides alike. */
static int in_box(const double p[3], const double q[3])
{
    for (int i = 0; i < 3; i++)
        if (fabs(q[i] - p[i]) > half_ext[i])
            return 0;
    return 1;
}

/* onepath: snap every point, then path every consecutive pair (conn bits 4 and 1). */
static int ours_queries(const op_mesh *m, row *r, int n, snap *sn, unsigned char *conn)
{
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    double t0 = bench_now_ms();
    for (int k = 0; out && scratch && k < n; k++) {
        op_err e;
        snap *s = &sn[k];
        s->ok = op_query_nearest(m, &r->pts[3 * k], half_ext, NULL, &s->ref, s->pos, &e) == OP_OK;
        r->raw_snapped[OURS] += s->ok;
        s->ok = s->ok && in_box(&r->pts[3 * k], s->pos);
        r->snapped[OURS] += s->ok;
    }
    for (int k = 0; out && scratch && k + 1 < n; k++) {
        const snap *a = &sn[k], *b = &sn[k + 1];
        op_path p;
        op_err e;
        op_arena_reset(out);
        op_arena_reset(scratch);
        if (a->ok && b->ok)
            conn[k] |= 4;
        if (a->ok && b->ok &&
            op_query_path(m, NULL, a->ref, a->pos, b->ref, b->pos, out, scratch, &p, &e) == OP_OK &&
            !p.partial)
            conn[k] |= 1;
    }
    r->query_ms[OURS] = bench_now_ms() - t0;
    int rc = (out && scratch) ? 0 : -1;
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    return rc;
}

/* Detour: the same with findNearestPoly and findPath (conn bits 8 and 2). */
static void recast_queries(void *dq, row *r, int n, snap *sn, unsigned char *conn)
{
    double t0 = bench_now_ms();
    for (int k = 0; k < n; k++) {
        snap *s = &sn[k];
        s->ok = qd_nearest(dq, &r->pts[3 * k], half_ext, &s->dref, s->pos);
        r->raw_snapped[RECAST] += s->ok;
        s->ok = s->ok && in_box(&r->pts[3 * k], s->pos);
        r->snapped[RECAST] += s->ok;
    }
    for (int k = 0; k + 1 < n; k++) {
        const snap *a = &sn[k], *b = &sn[k + 1];
        int oon = 0;
        if (a->ok && b->ok)
            conn[k] |= 8;
        if (a->ok && b->ok && qd_path_complete(dq, a->dref, a->pos, b->dref, b->pos, &oon))
            conn[k] |= 2;
        r->out_of_nodes += oon;
    }
    r->query_ms[RECAST] = bench_now_ms() - t0;
}

static void list_snaps(const row *r, int n, snap *const sn[2])
{
    for (int k = 0; k < n; k++)
        if (sn[OURS][k].ok != sn[RECAST][k].ok) {
            const snap *s = &sn[sn[OURS][k].ok ? OURS : RECAST][k];
            printf("  %s %s %s: point %d (%.2f, %.2f, %.2f) snapped only by %s, to (%.2f, %.2f, "
                   "%.2f)\n",
                   r->level, r->variant, r->align, k, r->pts[3 * k], r->pts[3 * k + 1],
                   r->pts[3 * k + 2], sn[OURS][k].ok ? "onepath" : "recast", s->pos[0], s->pos[1],
                   s->pos[2]);
        }
}

/* Our path between two snapped ends; *last = its last polygon. 1 complete, 0 partial,
 * -1 no path. */
static int ours_path(const op_mesh *m, const snap *a, const snap *b, op_arena *out,
                     op_arena *scratch, op_polyref *last)
{
    op_path p;
    op_err e;
    op_arena_reset(out);
    op_arena_reset(scratch);
    if (op_query_path(m, NULL, a->ref, a->pos, b->ref, b->pos, out, scratch, &p, &e) != OP_OK ||
        p.npolys < 1)
        return -1;
    *last = p.polys[p.npolys - 1];
    return !p.partial;
}

/* --why: for each pair only Recast connects, whether our mesh joins Recast's two snapped
 * points (snapped again on our side within a small box): 'snap' when it does (the two
 * nearest-point rules chose different polygons), 'cut' when it does not (our corridor
 * breaks; the last polygon reached is printed). */
static void list_why(const op_mesh *m, void *dq, const row *r, int n, snap *const sn[2],
                     const unsigned char *conn)
{
    static const double small[3] = {0.2, 1.0, 0.2};
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    for (int k = 0; out && scratch && k + 1 < n; k++) {
        if ((conn[k] & 3u) != 2u)
            continue;
        snap rs[2];
        int ok = 1;
        for (int j = 0; j < 2; j++) {
            op_err e;
            rs[j] = sn[RECAST][k + j];
            ok = ok && op_query_nearest(m, sn[RECAST][k + j].pos, small, NULL, &rs[j].ref,
                                        rs[j].pos, &e) == OP_OK;
        }
        op_polyref last = {-1, -1};
        int got = ok ? ours_path(m, &rs[0], &rs[1], out, scratch, &last) : -2;
        printf("  %s %s %s: pair %d %s", r->level, r->variant, r->align, k,
               got == 1    ? "snap"
               : got == -2 ? "nopoly"
                           : "cut");
        for (int j = 0; j < 2; j++) {
            const snap *o = &sn[OURS][k + j], *d = &sn[RECAST][k + j];
            printf(" | p%d (%.2f, %.2f, %.2f) op %s(%.2f, %.2f, %.2f) rc (%.2f, %.2f, %.2f)", j,
                   r->pts[3 * (k + j)], r->pts[3 * (k + j) + 1], r->pts[3 * (k + j) + 2],
                   o->ok ? "" : "-", o->pos[0], o->pos[1], o->pos[2], d->pos[0], d->pos[1],
                   d->pos[2]);
            /* where the two snaps differ: has Recast a polygon at our point too? */
            double q[3];
            unsigned long long ref;
            if (fabs(o->pos[0] - d->pos[0]) + fabs(o->pos[1] - d->pos[1]) +
                    fabs(o->pos[2] - d->pos[2]) >
                0.05)
                printf(" rc-at-op %s",
                       qd_nearest(dq, o->pos, small, &ref, q) && fabs(q[0] - o->pos[0]) < 0.2 &&
                               fabs(q[2] - o->pos[2]) < 0.2 && fabs(q[1] - o->pos[1]) < 1.0
                           ? "yes"
                           : "no");
        }
        if (got == 0) {
            const op_tile *t = op_mesh_tile(m, last.tile);
            printf(" | ends in tile (%d, %d) layer %d poly %d", t->tx, t->tz, t->layer, last.poly);
            double tail[6 * 4];
            const snap *a = &sn[RECAST][k], *b = &sn[RECAST][k + 1];
            int nt = qd_path_tail(dq, a->dref, a->pos, b->dref, b->pos, 4, tail);
            printf(" | rc tail");
            for (int i = 0; i < nt; i++)
                printf(" [%.0f,%.0f (%.2f, %.2f..%.2f, %.2f)]", tail[6 * i], tail[6 * i + 1],
                       tail[6 * i + 2], tail[6 * i + 4], tail[6 * i + 5], tail[6 * i + 3]);
        }
        printf("\n");
    }
    op_arena_destroy(out);
    op_arena_destroy(scratch);
}

/* Snaps every point on both sides; pair i joins points i and i + 1. */
static int run_queries(const op_mesh *m, void *dq, row *r, int n, unsigned char *conn)
{
    snap *sn[2] = {calloc((size_t)n, sizeof(snap)), calloc((size_t)n, sizeof(snap))};
    int rc = -1;
    if (sn[0] && sn[1] && ours_queries(m, r, n, sn[OURS], conn) == 0) {
        recast_queries(dq, r, n, sn[RECAST], conn);
        if (r->list_snaps)
            list_snaps(r, n, sn);
        if (r->list_why)
            list_why(m, dq, r, n, sn, conn);
        rc = 0;
    }
    free(sn[0]);
    free(sn[1]);
    return rc;
}

static void tally_pairs(row *r, const unsigned char *conn, int npairs)
{
    r->npairs = npairs;
    for (int side = 0; side < 2; side++) {
        r->only[side] = malloc((size_t)(npairs ? npairs : 1) * sizeof(int));
        for (int k = 0; k < npairs; k++) {
            r->connected[side] += (conn[k] >> side) & 1;
            if (r->only[side] && (conn[k] & 3u) == (1u << side)) {
                r->only[side][r->nonly[side]++] = k;
                /* why the other side missed it: an end not snapped, or a partial path */
                r->other_partial[side] += (conn[k] >> (2 + (1 - side))) & 1;
            }
        }
    }
}

/* ===== one level, one variant ===== */

static int load_soup(const char *spec, op_arena *a, op_soup *soup, char *err, size_t errlen)
{
    op_err e;
    op_status st;
    if (!strncmp(spec, "gen:", 4)) {
        char kind[32];
        int size;
        unsigned long long seed;
        if (sscanf(spec + 4, "%31[a-z]:%d:%llu", kind, &size, &seed) != 3) {
            snprintf(err, errlen, "'%s' is not gen:KIND:SIZE:SEED", spec);
            return -1;
        }
        st = op_levelgen(kind, size, seed, a, soup, &e);
    } else
        st = op_obj_read_file(spec, a, soup, &e);
    if (st != OP_OK) {
        snprintf(err, errlen, "%s", e.msg);
        return -1;
    }
    return 0;
}

static int build_ours(const op_soup *soup, const op_settings *s, int threads, op_mesh **m, row *r)
{
    op_level *lvl = NULL;
    op_err e;
    double t0 = bench_now_ms();
    op_status st = op_level_create(soup, s, NULL, 0, &lvl, &e);
    if (st == OP_OK)
        st = op_mesh_build_level(lvl, threads, m, &e);
    r->build_ms[OURS] = bench_now_ms() - t0;
    op_level_destroy(lvl);
    if (st != OP_OK)
        snprintf(r->err, sizeof r->err, "onepath: %s", e.msg);
    return st == OP_OK ? 0 : -1;
}

static int build_recast(const op_soup *soup, const op_settings *s, int threads, void **nav, row *r)
{
    bench_level lv;
    memset(&lv, 0, sizeof lv);
    snprintf(lv.name, sizeof lv.name, "%s", r->level);
    lv.verts = (float *)soup->verts; /* the Recast side only reads them */
    lv.nverts = (int)(soup->verts_len / 3);
    lv.tris = (int *)soup->tris;
    lv.ntris = (int)(soup->tris_len / 3);
    bench_result res;
    double t0 = bench_now_ms();
    int rc = bench_recast_build_navmesh(&lv, s, threads, &res, nav, r->err, sizeof r->err);
    r->build_ms[RECAST] = bench_now_ms() - t0;
    return rc;
}

static void list_tiles(const op_mesh *m, const void *nav, const row *r);

/* --tiles, second part: both meshes sampled on a 0.1 m grid (a point counts once however
 * many polygons cover it), the sampled area only one side covers summed per 8 m block. */
#define COV_STEP 0.1
typedef struct covmap {
    int w, h, side;
    unsigned char *bits; /* bit side: covered by that side */
} covmap;

static void cov_fill(void *ctx, const double *xz, int n)
{
    covmap *c = ctx;
    double x0 = xz[0], x1 = xz[0], z0 = xz[1], z1 = xz[1], area = 0.0;
    for (int k = 0; k < n; k++) {
        x0 = fmin(x0, xz[2 * k]), x1 = fmax(x1, xz[2 * k]);
        z0 = fmin(z0, xz[2 * k + 1]), z1 = fmax(z1, xz[2 * k + 1]);
        int j = (k + 1) % n;
        area += xz[2 * k] * xz[2 * j + 1] - xz[2 * j] * xz[2 * k + 1];
    }
    double sign = area >= 0 ? 1.0 : -1.0;
    for (int gz = (int)ceil(z0 / COV_STEP - 0.5); gz <= (int)floor(z1 / COV_STEP - 0.5); gz++)
        for (int gx = (int)ceil(x0 / COV_STEP - 0.5); gx <= (int)floor(x1 / COV_STEP - 0.5); gx++) {
            if (gx < 0 || gz < 0 || gx >= c->w || gz >= c->h)
                continue;
            double px = (gx + 0.5) * COV_STEP, pz = (gz + 0.5) * COV_STEP;
            int in = 1;
            for (int k = 0; k < n && in; k++) {
                int j = (k + 1) % n;
                double cr = (xz[2 * j] - xz[2 * k]) * (pz - xz[2 * k + 1]) -
                            (xz[2 * j + 1] - xz[2 * k + 1]) * (px - xz[2 * k]);
                in = cr * sign >= 0;
            }
            if (in)
                c->bits[(size_t)gz * c->w + gx] |= (unsigned char)(1 << c->side);
        }
}

/* --covmap: the sampled grid as a binary PPM, north up: red where only onepath covers,
 * green where only Recast does, grey where both do. For looking, not for tests. */
static void write_covmap(const covmap *c, const row *r)
{
    char path[1024], name[160];
    snprintf(name, sizeof name, "%s-%s-%s", r->level, r->variant, r->align);
    for (char *q = name; *q; q++)
        if (*q == '/' || *q == ':')
            *q = '_';
    snprintf(path, sizeof path, "%s/%s.ppm", r->covmap, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "onepath-quality: %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(f, "P6\n%d %d\n255\n", c->w, c->h);
    for (int gz = c->h - 1; gz >= 0; gz--)
        for (int gx = 0; gx < c->w; gx++) {
            unsigned char b = c->bits[(size_t)gz * c->w + gx];
            unsigned char px[3] = {b == 1   ? 255
                                   : b == 3 ? 128
                                            : 0,
                                   b == 2   ? 255
                                   : b == 3 ? 128
                                            : 0,
                                   b == 3 ? 128 : 0};
            fwrite(px, 1, 3, f);
        }
    if (fclose(f) != 0)
        fprintf(stderr, "onepath-quality: %s: %s\n", path, strerror(errno));
}

static void list_cov_blocks(const op_mesh *m, const void *nav, const row *r, double size)
{
    covmap c = {(int)(size / COV_STEP) + 1, (int)(size / COV_STEP) + 1, 0, NULL};
    c.bits = calloc((size_t)c.w * c.h, 1);
    if (!c.bits)
        return;
    for (int i = 0; i < op_mesh_tile_count(m); i++) {
        const op_tile *t = op_mesh_tile(m, i);
        for (int p = 0; p < t->npolys; p++) {
            double xz[2 * 16], v[3];
            int n = op_tile_poly_nverts(t, p);
            for (int k = 0; k < n && k < 16; k++) {
                op_tile_world_vert(t, t->polys[(size_t)p * t->nvp + k], v);
                xz[2 * k] = v[0], xz[2 * k + 1] = v[2];
            }
            cov_fill(&c, xz, n);
        }
    }
    c.side = 1;
    qd_each_poly(nav, cov_fill, &c);
    if (r->covmap)
        write_covmap(&c, r);
    enum { B = 80 }; /* 8 m blocks */
    int bw = c.w / B + 1, bh = c.h / B + 1;
    long *only = calloc((size_t)bw * bh * 2, sizeof *only), tot[2] = {0, 0};
    if (only) {
        for (int gz = 0; gz < c.h; gz++)
            for (int gx = 0; gx < c.w; gx++) {
                unsigned char b = c.bits[(size_t)gz * c.w + gx];
                if (b == 1 || b == 2) {
                    only[2 * ((gz / B) * bw + gx / B) + (b - 1)]++;
                    tot[b - 1]++;
                }
            }
        printf("  %s %s %s: sampled area only onepath covers %.1f m2, only Recast %.1f m2\n",
               r->level, r->variant, r->align, tot[0] * COV_STEP * COV_STEP,
               tot[1] * COV_STEP * COV_STEP);
        for (int k = 0; k < 12; k++) {
            int best = -1;
            long bd = 0;
            for (int i = 0; i < bw * bh; i++)
                if (only[2 * i] + only[2 * i + 1] > bd)
                    bd = only[2 * i] + only[2 * i + 1], best = i;
            if (best < 0)
                break;
            printf("    block x %d..%d z %d..%d: only onepath %.1f m2, only Recast %.1f m2\n",
                   (best % bw) * 8, (best % bw) * 8 + 8, (best / bw) * 8, (best / bw) * 8 + 8,
                   only[2 * best] * COV_STEP * COV_STEP, only[2 * best + 1] * COV_STEP * COV_STEP);
            only[2 * best] = only[2 * best + 1] = 0;
        }
    }
    free(only);
    free(c.bits);
}

static void run_row(const options *o, const op_soup *soup, const op_settings *s, row *r,
                    uint64_t seed)
{
    op_mesh *m = NULL;
    void *nav = NULL, *dq = NULL;
    unsigned char *conn = calloc((size_t)o->points, 1);
    if (!conn || build_ours(soup, s, o->threads, &m, r) ||
        build_recast(soup, s, o->threads, &nav, r))
        goto done;
    ours_counts(m, r);
    if (r->list_tiles) {
        list_tiles(m, nav, r);
        list_cov_blocks(m, nav, r, GEN_SIZE);
    }
    portal_stats(m, r);
    qd_counts(nav, &r->polys[RECAST], &r->verts[RECAST], &r->coverage[RECAST]);
    r->pts = sample_points(soup, o->points, seed);
    dq = qd_query_create(nav, DETOUR_NODES);
    if (!r->pts || !dq) {
        snprintf(r->err, sizeof r->err, "out of memory (points or Detour query)");
        goto done;
    }
    if (run_queries(m, dq, r, o->points, conn)) {
        snprintf(r->err, sizeof r->err, "out of memory (queries)");
        goto done;
    }
    tally_pairs(r, conn, o->points - 1);
    r->ok = 1;
done:
    qd_query_free(dq);
    bench_recast_navmesh_free(nav);
    op_mesh_destroy(m);
    free(conn);
}

/* --tiles: the 12 tiles whose coverage differs most between the two meshes (the tile
 * indices agree with align recast, and with align origin when the level's minimum corner
 * is the origin, as on the generated levels). */
#define TILE_GRID 128
static void list_tiles(const op_mesh *m, const void *nav, const row *r)
{
    double *g = calloc(2 * TILE_GRID * TILE_GRID, sizeof *g);
    if (!g)
        return;
    for (int i = 0; i < op_mesh_tile_count(m); i++) {
        const op_tile *t = op_mesh_tile(m, i);
        if (t->tx < 0 || t->tz < 0 || t->tx >= TILE_GRID || t->tz >= TILE_GRID)
            continue;
        for (int p = 0; p < t->npolys; p++)
            g[t->tz * TILE_GRID + t->tx] += poly_area_xz(t, p);
    }
    qd_tile_coverage(nav, TILE_GRID, TILE_GRID, g + TILE_GRID * TILE_GRID);
    for (int k = 0; k < 12; k++) {
        int best = -1;
        double bd = 0.5;
        for (int c = 0; c < TILE_GRID * TILE_GRID; c++) {
            double d = fabs(g[c] - g[TILE_GRID * TILE_GRID + c]);
            if (d > bd)
                bd = d, best = c;
        }
        if (best < 0)
            break;
        printf("  %s %s %s: tile (%d, %d) coverage op %.1f rc %.1f (%+.1f m2)\n", r->level,
               r->variant, r->align, best % TILE_GRID, best / TILE_GRID, g[best],
               g[TILE_GRID * TILE_GRID + best], g[best] - g[TILE_GRID * TILE_GRID + best]);
        g[best] = g[TILE_GRID * TILE_GRID + best] = 0.0;
    }
    free(g);
}

/* ===== output ===== */

static double pct(double a, double b)
{
    return b != 0.0 ? 100.0 * (a - b) / b : 0.0;
}

static void print_header(void)
{
    printf("%-22s %-7s %-6s %15s %15s %25s %11s %19s %15s %11s\n", "level", "set", "align",
           "polys op/rc", "verts op/rc", "coverage m2 op/rc (diff)", "snapped",
           "paths op/rc (diff)", "only op/rc", "gaps h/e");
}

static void print_row(const row *r)
{
    if (!r->ok) {
        printf("%-22s %-7s %-6s FAILED: %s\n", r->level, r->variant, r->align, r->err);
        return;
    }
    char a[32], b[32], c[48], d[32], e[40], f[48];
    snprintf(a, sizeof a, "%ld/%ld", r->polys[0], r->polys[1]);
    snprintf(b, sizeof b, "%ld/%ld", r->verts[0], r->verts[1]);
    snprintf(c, sizeof c, "%.0f/%.0f (%+.2f%%)", r->coverage[0], r->coverage[1],
             pct(r->coverage[0], r->coverage[1]));
    snprintf(d, sizeof d, "%d/%d", r->snapped[0], r->snapped[1]);
    snprintf(e, sizeof e, "%d/%d (%+.2f%%)", r->connected[0], r->connected[1],
             pct(r->connected[0], r->connected[1]));
    snprintf(f, sizeof f, "%d(%d)/%d(%d)", r->nonly[0], r->other_partial[0], r->nonly[1],
             r->other_partial[1]);
    char g[32];
    snprintf(g, sizeof g, "%ld/%ld", r->portals[1], r->portals[2]);
    printf("%-22s %-7s %-6s %15s %15s %25s %11s %19s %15s %11s\n", r->level, r->variant, r->align,
           a, b, c, d, e, f, g);
}

static void print_pairs(const row *r)
{
    for (int side = 0; side < 2 && r->ok; side++)
        for (int i = 0; i < r->nonly[side]; i++) {
            int k = r->only[side][i];
            const double *p = &r->pts[3 * k], *q = &r->pts[3 * (k + 1)];
            printf("  %s %s %s: pair %d only %s: (%.2f, %.2f, %.2f) -> (%.2f, %.2f, %.2f)\n",
                   r->level, r->variant, r->align, k, side == OURS ? "onepath" : "recast", p[0],
                   p[1], p[2], q[0], q[1], q[2]);
        }
}

static void print_json(const row *rows, int n)
{
    printf("[");
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        printf("%s\n {\"level\": \"%s\", \"variant\": \"%s\", \"align\": \"%s\", \"ok\": %s",
               i ? "," : "", r->level, r->variant, r->align, r->ok ? "true" : "false");
        if (r->ok)
            printf(", \"polys\": [%ld, %ld], \"verts\": [%ld, %ld], \"coverage\": [%.3f, %.3f], "
                   "\"snapped\": [%d, %d], \"raw_snapped\": [%d, %d], \"pairs\": %d, "
                   "\"connected\": [%d, %d], "
                   "\"only\": [%d, %d], \"only_other_partial\": [%d, %d], \"portals\": [%ld, %ld, "
                   "%ld], \"seams\": [%ld, %ld], \"detour_out_of_nodes\": %d, "
                   "\"build_ms\": [%.1f, %.1f], "
                   "\"query_ms\": [%.1f, %.1f]",
                   r->polys[0], r->polys[1], r->verts[0], r->verts[1], r->coverage[0],
                   r->coverage[1], r->snapped[0], r->snapped[1], r->raw_snapped[0],
                   r->raw_snapped[1], r->npairs, r->connected[0], r->connected[1], r->nonly[0],
                   r->nonly[1], r->other_partial[0], r->other_partial[1], r->portals[0],
                   r->portals[1], r->portals[2], r->seams[0], r->seams[1], r->out_of_nodes,
                   r->build_ms[0], r->build_ms[1], r->query_ms[0], r->query_ms[1]);
        printf("}");
    }
    printf("\n]\n");
}

/* ===== options ===== */

static int usage(void)
{
    fprintf(stderr,
            "usage: onepath-quality [--level PATH]... [--gen KIND:SIZE]... "
            "[--variant demo|fine|layers]...\n"
            "                       [--align origin|recast]... [--points N] [--seed S] "
            "[--threads N]\n"
            "                       [--pairs] [--snaps] [--why] [--tiles] [--covmap DIR] [--json]\n"
            "Default: every generated kind at %d m and %s/levels/*.obj, all variants, both "
            "alignments.\n",
            GEN_SIZE, OP_SHARED_DIR);
    return 2;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void default_levels(options *o)
{
    for (size_t i = 0; i < sizeof gen_kinds / sizeof gen_kinds[0]; i++)
        snprintf(o->levels[o->nlevels++], sizeof o->levels[0], "gen:%s:%d:1", gen_kinds[i],
                 GEN_SIZE);
    char dir[200];
    snprintf(dir, sizeof dir, "%.190s/levels", OP_SHARED_DIR);
    DIR *d = opendir(dir);
    if (!d)
        return;
    char names[MAX_LEVELS][256];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && n < MAX_LEVELS) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".obj"))
            snprintf(names[n++], sizeof names[0], "%s", de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_name);
    for (int i = 0; i < n && o->nlevels < MAX_LEVELS; i++)
        snprintf(o->levels[o->nlevels++], sizeof o->levels[0], "%s/%.250s", dir, names[i]);
}

static int parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->points = 2000;
    o->threads = 2;
    o->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--level") && more && o->nlevels < MAX_LEVELS)
            snprintf(o->levels[o->nlevels++], sizeof o->levels[0], "%s", argv[++i]);
        else if (!strcmp(a, "--gen") && more && o->nlevels < MAX_LEVELS)
            snprintf(o->levels[o->nlevels++], sizeof o->levels[0], "gen:%s:1", argv[++i]);
        else if (!strcmp(a, "--variant") && more) {
            int found = 0;
            for (int v = 0; v < NVARIANTS; v++)
                if (!strcmp(argv[i + 1], variants[v].name))
                    o->variant_on[v] = found = 1;
            if (!found)
                return usage();
            o->any_variant = 1;
            i++;
        } else if (!strcmp(a, "--align") && more) {
            int found = 0;
            for (int k = 0; k < NALIGN; k++)
                if (!strcmp(argv[i + 1], align_names[k]))
                    o->align_on[k] = found = 1;
            if (!found)
                return usage();
            o->any_align = 1;
            i++;
        } else if (!strcmp(a, "--points") && more)
            o->points = atoi(argv[++i]);
        else if (!strcmp(a, "--seed") && more)
            o->seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--threads") && more)
            o->threads = atoi(argv[++i]);
        else if (!strcmp(a, "--pairs"))
            o->pairs = 1;
        else if (!strcmp(a, "--snaps"))
            o->snaps = 1;
        else if (!strcmp(a, "--why"))
            o->why = 1;
        else if (!strcmp(a, "--tiles"))
            o->tiles = 1;
        else if (!strcmp(a, "--covmap") && more)
            o->covmap = argv[++i];
        else if (!strcmp(a, "--json"))
            o->json = 1;
        else
            return usage();
    }
    if (o->points < 2 || o->points > 1000000 || o->threads < 1 || o->threads > 256)
        return usage();
    if (!o->any_variant)
        for (int v = 0; v < NVARIANTS; v++)
            o->variant_on[v] = 1;
    if (!o->any_align)
        for (int k = 0; k < NALIGN; k++)
            o->align_on[k] = 1;
    if (o->nlevels == 0)
        default_levels(o);
    return 0;
}

static void variant_settings(const variant *v, op_settings *s)
{
    op_settings_default(s);
    for (int k = 0; v->sets[k]; k++) {
        char key[64];
        op_err e;
        const char *eq = strchr(v->sets[k], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - v->sets[k]), v->sets[k]);
        op_settings_set(s, key, eq + 1, &e); /* the table's keys and values are valid */
    }
}

/* Recast's grid origin: rcCalcBounds over every vertex (float), as recast_side.cpp. */
static void recast_bmin(const op_soup *soup, double out[2])
{
    float x = 0.0f, z = 0.0f;
    for (size_t i = 0; i < soup->verts_len / 3; i++) {
        float vx = soup->verts[3 * i], vz = soup->verts[3 * i + 2];
        x = (i == 0 || vx < x) ? vx : x;
        z = (i == 0 || vz < z) ? vz : z;
    }
    out[0] = x;
    out[1] = z;
}

static void level_label(const char *spec, char *out, size_t n)
{
    const char *slash = strrchr(spec, '/');
    snprintf(out, n, "%s", slash ? slash + 1 : spec);
}

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o))
        return 2;
    row *rows = calloc((size_t)o.nlevels * NVARIANTS * NALIGN, sizeof *rows);
    int nrows = 0;
    if (!rows)
        return 1;
    if (!o.json)
        print_header();
    for (int l = 0; l < o.nlevels; l++) {
        op_arena *a = op_arena_create(0);
        op_soup soup;
        char err[320] = "";
        int loaded = a && load_soup(o.levels[l], a, &soup, err, sizeof err) == 0;
        double bmin[2] = {0.0, 0.0};
        if (loaded)
            recast_bmin(&soup, bmin);
        for (int v = 0; v < NVARIANTS; v++)
            for (int al = 0; al < NALIGN; al++) {
                if (!o.variant_on[v] || !o.align_on[al])
                    continue;
                row *r = &rows[nrows++];
                level_label(o.levels[l], r->level, sizeof r->level);
                r->variant = variants[v].name;
                r->align = align_names[al];
                r->list_snaps = o.snaps;
                r->list_why = o.why;
                r->list_tiles = o.tiles || o.covmap;
                r->covmap = o.covmap;
                op_settings s;
                variant_settings(&variants[v], &s);
                if (al == ALIGN_RECAST) {
                    s.grid_origin_x = bmin[0];
                    s.grid_origin_z = bmin[1];
                }
                if (!loaded)
                    snprintf(r->err, sizeof r->err, "%s", err);
                else
                    run_row(&o, &soup, &s, r, o.seed ^ op_hash_bytes(r->level, strlen(r->level)));
                if (!o.json) {
                    print_row(r);
                    fflush(stdout);
                }
            }
        op_arena_destroy(a);
    }
    if (o.json)
        print_json(rows, nrows);
    else if (o.pairs) {
        printf("\npairs only one side connects:\n");
        for (int i = 0; i < nrows; i++)
            print_pairs(&rows[i]);
    }
    int bad = 0;
    for (int i = 0; i < nrows; i++) {
        bad |= !rows[i].ok;
        free(rows[i].only[0]);
        free(rows[i].only[1]);
        free(rows[i].pts);
    }
    free(rows);
    return bad ? 1 : 0; /* a failed build fails the run (and the smoke test) */
}
