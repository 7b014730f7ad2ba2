/*
 * The invariants of build3d-regions.md (§2–§6) checked on the real tile pipeline
 * (op_level_build_stages up to contours) of generated levels of every kind and of the
 * shared levels (dungeon.obj, undulating.obj), for the three partitions and five
 * settings variants (default, MaxError 0, small region areas, straight borders off).
 *
 * Each tile's regions come cut (build3d-polys.md §2.3: every region span outside the
 * core cells joins the border region). The partition itself (§2–§5) is recomputed from
 * the tile's own compact heightfield with the region stage's entry point, and the cut is
 * checked to be exactly "core spans keep their region, the others go to the border",
 * so the §5 invariants (connected, one area, islands, merging, numbering) are checked
 * on what the pipeline really partitioned. The contour invariants (§6) are checked on
 * the pipeline's cut regions and contours: raw loops against an independent list of
 * boundary edges (corner, floor, neighbour value), areas and lengths, outline count,
 * orientation, portals, and with MaxError 0 the two sides of every shared boundary.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/build.h"
#include "onepath/levelgen.h"
#include "onepath/obj.h"
#include "op_test.h"

/* What one run saw, so that a test can assert it covered something. */
typedef struct inv_stats {
    long tiles, built, regions, contours, islands, holes, portals, shared_edges, fallbacks;
    long near; /* raw vertices checked to lie within MaxError */
} inv_stats;

typedef struct tile_ctx {
    const op_chf *chf;
    const op_tile_stages *st;
    const op_settings *s;
    const char *what; /* "level partition tile" for messages */
    int border;       /* grid border B */
    int tile_cells;
} tile_ctx;

/* Cell x, z of every span. */
static void span_cells(const op_chf *chf, int *sx, int *sz)
{
    for (int z = 0; z < chf->depth; z++)
        for (int x = 0; x < chf->width; x++) {
            int c = x + z * chf->width;
            for (uint32_t i = chf->cells[c]; i < chf->cells[c + 1]; i++) {
                sx[i] = x;
                sz[i] = z;
            }
        }
}

/* ---- §5 on the uncut partition ---- */

/* Every region connected through links within the region; one area per region; ids 1..k
 * numbered in order of first span; no area-0 span in a region. Returns span counts. */
static void check_regions_connected(const tile_ctx *t, const op_regions *r, int *count)
{
    const op_chf *chf = t->chf;
    uint32_t n = chf->span_count;
    int k = r->region_count;
    memset(count, 0, ((size_t)k + 1) * sizeof *count);
    int last_first = 0;
    for (uint32_t i = 0; i < n; i++) {
        int id = r->reg[i];
        cr_assert(id <= k, "%s: span %u region %d > count %d", t->what, i, id, k);
        if (id == 0)
            continue;
        cr_assert_neq(chf->areas[i], 0, "%s: area-0 span %u has region %d", t->what, i, id);
        cr_assert_eq(chf->areas[i], r->region_area[id], "%s: span %u area %d, region %d area %d",
                     t->what, i, chf->areas[i], id, r->region_area[id]);
        if (count[id] == 0) {
            cr_assert_eq(id, last_first + 1, "%s: region %d first seen after region %d", t->what,
                         id, last_first);
            last_first = id;
        }
        count[id]++;
    }
    cr_assert_eq(last_first, k, "%s: regions 1..%d, only %d used", t->what, k, last_first);
    /* One breadth-first walk per region from its first span must reach all of it. */
    uint32_t *queue = malloc(((size_t)n + 1) * sizeof *queue);
    uint8_t *seen = calloc((size_t)n + 1, 1);
    for (uint32_t i = 0; i < n; i++) {
        int id = r->reg[i];
        if (id == 0 || seen[i])
            continue;
        size_t head = 0, tail = 0;
        queue[tail++] = i;
        seen[i] = 1;
        while (head < tail) {
            uint32_t s = queue[head++];
            for (int d = 0; d < 4; d++) {
                uint32_t o = chf->links[s][d];
                if (o != OP_NO_LINK && !seen[o] && r->reg[o] == id) {
                    seen[o] = 1;
                    queue[tail++] = o;
                }
            }
        }
        cr_assert_eq((int)tail, count[id], "%s: region %d has %d spans, %zu connected to span %u",
                     t->what, id, count[id], tail, i);
    }
    free(queue);
    free(seen);
}

/* Walkable spans without a region are exactly removed islands: each such span's walkable
 * component (links, any area) has no region at all, one area, fewer than MinRegionArea
 * spans, and no span in the border band (clarifications.md, regions 5: what reaches the
 * band lies partly in a neighbouring tile and stays). Returns the number of islands. */
static long check_islands(const tile_ctx *t, const op_regions *r)
{
    const op_chf *chf = t->chf;
    uint32_t n = chf->span_count;
    uint32_t *queue = malloc(((size_t)n + 1) * sizeof *queue);
    uint8_t *seen = calloc((size_t)n + 1, 1);
    int *sx = malloc(2 * ((size_t)n + 1) * sizeof *sx), *sz = sx + n + 1;
    span_cells(chf, sx, sz);
    int b = t->border, hi = t->border + t->tile_cells;
    long islands = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (chf->areas[i] == 0 || r->reg[i] != 0 || seen[i])
            continue;
        size_t head = 0, tail = 0;
        queue[tail++] = i;
        seen[i] = 1;
        while (head < tail) {
            uint32_t s = queue[head++];
            cr_assert_eq(r->reg[s], 0,
                         "%s: span %u (region %d) is linked to span %u of a removed island",
                         t->what, s, r->reg[s], i);
            cr_assert_eq(chf->areas[s], chf->areas[i],
                         "%s: removed island at span %u mixes areas %d and %d", t->what, i,
                         chf->areas[i], chf->areas[s]);
            cr_assert(sx[s] >= b && sx[s] < hi && sz[s] >= b && sz[s] < hi,
                      "%s: removed island at span %u reaches the border band at (%d, %d)", t->what,
                      i, sx[s], sz[s]);
            for (int d = 0; d < 4; d++) {
                uint32_t o = chf->links[s][d];
                if (o != OP_NO_LINK && !seen[o] && chf->areas[o] != 0) {
                    seen[o] = 1;
                    queue[tail++] = o;
                }
            }
        }
        cr_assert_lt((long)tail, (long)t->s->min_region_area,
                     "%s: walkable spans from %u (%zu spans) lost their region but are no island "
                     "smaller than %d",
                     t->what, i, tail, t->s->min_region_area);
        islands++;
    }
    free(sx);
    free(queue);
    free(seen);
    return islands;
}

/* After §5 merging (with amendment R2): a region smaller than MergeRegionArea has no
 * same-area neighbouring region that shares no column with it. (A small region without any
 * neighbour is legal when its group reaches the border band.) */
static void check_merged(const tile_ctx *t, const op_regions *r, const int *count)
{
    const op_chf *chf = t->chf;
    size_t k = (size_t)r->region_count + 1;
    uint8_t *ovl = calloc(k * k, 1);
    for (int c = 0; c < chf->width * chf->depth; c++)
        for (uint32_t i = chf->cells[c]; i < chf->cells[c + 1]; i++)
            for (uint32_t j = chf->cells[c]; j < chf->cells[c + 1]; j++)
                ovl[r->reg[i] * k + r->reg[j]] = 1;
    for (uint32_t i = 0; i < chf->span_count; i++) {
        int a = r->reg[i];
        if (a == 0 || count[a] >= t->s->merge_region_area)
            continue;
        for (int d = 0; d < 4; d++) {
            uint32_t o = chf->links[i][d];
            if (o == OP_NO_LINK || r->reg[o] == 0 || r->reg[o] == a ||
                r->region_area[a] != r->region_area[r->reg[o]])
                continue;
            cr_assert(ovl[(size_t)a * k + r->reg[o]],
                      "%s: region %d (%d spans < %d) has same-area neighbour %d after merging "
                      "(span %u), and they share no column",
                      t->what, a, count[a], t->s->merge_region_area, r->reg[o], i);
        }
    }
    free(ovl);
}

/* Layers: no column holds two region spans of one layer. */
static void check_layers_columns(const tile_ctx *t, const op_regions *r, const uint16_t *layer)
{
    const op_chf *chf = t->chf;
    for (int c = 0; c < chf->width * chf->depth; c++)
        for (uint32_t i = chf->cells[c]; i < chf->cells[c + 1]; i++)
            for (uint32_t j = i + 1; r->reg[i] && j < chf->cells[c + 1]; j++)
                cr_assert(!r->reg[j] || layer[r->reg[i]] != layer[r->reg[j]],
                          "%s: column %d holds spans %u (region %d) and %u (region %d) of layer %d",
                          t->what, c, i, r->reg[i], j, r->reg[j], layer[r->reg[i]]);
}

/* The cut of build3d-polys.md §2.3 applied to pre gives exactly the pipeline's regions. */
static void check_cut(const tile_ctx *t, const op_regions *pre, const int *sx, const int *sz)
{
    const op_tile_stages *st = t->st;
    const op_regions *post = &st->regions;
    int b = t->border, tc = t->tile_cells, inside = 0;
    cr_assert_eq(st->border_region, pre->region_count + 1, "%s: border id", t->what);
    cr_assert_eq(post->region_count, st->border_region, "%s: cut region count", t->what);
    for (uint32_t i = 0; i < t->chf->span_count; i++) {
        int core = sx[i] >= b && sx[i] < b + tc && sz[i] >= b && sz[i] < b + tc;
        int want = pre->reg[i] == 0 ? 0 : core ? pre->reg[i] : st->border_region;
        inside |= core && pre->reg[i] != 0;
        cr_assert_eq(post->reg[i], want, "%s: span %u at (%d, %d): region %d, cut of %d is %d",
                     t->what, i, sx[i], sz[i], post->reg[i], pre->reg[i], want);
    }
    for (int id = 1; id <= pre->region_count; id++)
        cr_assert_eq(post->region_area[id], pre->region_area[id], "%s: region %d area", t->what,
                     id);
    cr_assert_eq(st->skipped, !inside, "%s: skipped %d but core regions %d", t->what, st->skipped,
                 inside);
}

/* ---- §6 ---- */

typedef struct edge_key {
    int32_t r, x, y, z, n;
} edge_key;

static int cmp_edge_key(const void *pa, const void *pb)
{
    const int32_t *a = pa, *b = pb;
    for (int k = 0; k < 5; k++)
        if (a[k] != b[k])
            return a[k] < b[k] ? -1 : 1;
    return 0;
}

static const int corner_dx[4] = {0, 1, 1, 0};
static const int corner_dz[4] = {1, 1, 0, 0};

/* Highest floor among s and the spans linked around the start corner of edge d (the
 * corner shared with edge d + 1): both edge neighbours and the diagonal, either way. */
static int corner_row(const op_chf *chf, uint32_t s, int d)
{
    int d1 = (d + 1) & 3, y = chf->y[s];
    uint32_t via[2] = {chf->links[s][d], chf->links[s][d1]};
    int turn[2] = {d1, d};
    for (int k = 0; k < 2; k++) {
        if (via[k] == OP_NO_LINK)
            continue;
        if (chf->y[via[k]] > y)
            y = chf->y[via[k]];
        uint32_t diag = chf->links[via[k]][turn[k]];
        if (diag != OP_NO_LINK && chf->y[diag] > y)
            y = chf->y[diag];
    }
    return y;
}

static int32_t edge_value(const op_chf *chf, const uint16_t *reg, uint32_t s, int x, int z, int d)
{
    uint32_t o = chf->links[s][d];
    if (o != OP_NO_LINK)
        return reg[o];
    int nx = x + op_dir_dx(d), nz = z + op_dir_dz(d);
    return (nx < 0 || nz < 0 || nx >= chf->width || nz >= chf->depth) ? OP_TILE_BORDER : 0;
}

static int64_t loop_area2(const op_contour_vert *v, int n)
{
    int64_t a = 0;
    for (int i = 0; i < n; i++) {
        const op_contour_vert *p = &v[i], *q = &v[(i + 1) % n];
        a += (int64_t)p->x * q->z - (int64_t)q->x * p->z;
    }
    return a;
}

/* The raw loops (op_contours_trace of the cut regions) hold exactly one vertex per
 * boundary edge, at its start corner with its floor row and neighbour value; each loop
 * steps one cell edge at a time and closes; per region the signed areas sum to twice the
 * span count and the lengths to the boundary edge count. */
static void check_trace(const tile_ctx *t, const op_contour_trace *tr, const int *sx, const int *sz,
                        const int *count)
{
    const op_chf *chf = t->chf;
    const op_regions *r = &t->st->regions;
    int k = r->region_count;
    size_t nedges = 0, cap = 1024;
    edge_key *want = malloc(cap * sizeof *want);
    int64_t *bedges = calloc((size_t)k + 1, sizeof *bedges);
    for (uint32_t i = 0; i < chf->span_count; i++)
        for (int d = 0; r->reg[i] && d < 4; d++) {
            int32_t nv = edge_value(chf, r->reg, i, sx[i], sz[i], d);
            if (nv == r->reg[i])
                continue;
            if (nedges == cap)
                want = realloc(want, (cap *= 2) * sizeof *want);
            want[nedges++] = (edge_key){r->reg[i], sx[i] + corner_dx[d], corner_row(chf, i, d),
                                        sz[i] + corner_dz[d], nv};
            bedges[r->reg[i]]++;
        }
    size_t ngot = 0;
    for (int l = 0; l < tr->count; l++)
        ngot += (size_t)tr->loops[l].nverts;
    cr_assert_eq(ngot, nedges, "%s: %zu raw vertices for %zu boundary edges", t->what, ngot,
                 nedges);
    edge_key *got = malloc((ngot + 1) * sizeof *got);
    int64_t *area2 = calloc((size_t)k + 1, sizeof *area2);
    int64_t *len = calloc((size_t)k + 1, sizeof *len);
    size_t m = 0;
    for (int l = 0; l < tr->count; l++) {
        const op_raw_loop *lp = &tr->loops[l];
        int id = tr->region[l];
        cr_assert(id >= 1 && id <= k, "%s: loop %d of region %d", t->what, l, id);
        for (int i = 0; i < lp->nverts; i++) {
            const op_contour_vert *p = &lp->verts[i], *q = &lp->verts[(i + 1) % lp->nverts];
            cr_assert_eq(abs(q->x - p->x) + abs(q->z - p->z), 1,
                         "%s: loop %d (region %d) steps from (%d, %d) to (%d, %d)", t->what, l, id,
                         p->x, p->z, q->x, q->z);
            got[m++] = (edge_key){id, p->x, p->y, p->z, p->neighbour};
        }
        area2[id] += loop_area2(lp->verts, lp->nverts);
        len[id] += lp->nverts;
    }
    for (int id = 1; id <= k; id++) {
        cr_assert_eq(area2[id], 2 * (int64_t)count[id],
                     "%s: region %d loops' signed areas %lld, twice its %d spans", t->what, id,
                     (long long)area2[id], count[id]);
        cr_assert_eq(len[id], bedges[id], "%s: region %d loop lengths %lld, %lld boundary edges",
                     t->what, id, (long long)len[id], (long long)bedges[id]);
    }
    qsort(want, nedges, sizeof *want, cmp_edge_key);
    qsort(got, ngot, sizeof *got, cmp_edge_key);
    for (size_t i = 0; i < nedges; i++)
        cr_assert(cmp_edge_key(&want[i], &got[i]) == 0,
                  "%s: boundary edge (region %d corner %d %d %d neighbour %d) vs raw vertex "
                  "(region %d, %d %d %d, %d)",
                  t->what, want[i].r, want[i].x, want[i].y, want[i].z, want[i].n, got[i].r,
                  got[i].x, got[i].y, got[i].z, got[i].n);
    free(want);
    free(got);
    free(bedges);
    free(area2);
    free(len);
}

static int has_xz(const op_contour *c, int x, int z)
{
    for (int i = 0; i < c->nverts; i++)
        if (c->verts[i].x == x && c->verts[i].z == z)
            return 1;
    return 0;
}

/* Every portal vertex of a raw loop (neighbour differs from the previous vertex's) is at
 * a position of the simplified contour. Returns the number checked. */
static long check_portals(const tile_ctx *t, const op_contour *c, const op_raw_loop *lp)
{
    long n = 0;
    for (int i = 0; i < lp->nverts; i++) {
        const op_contour_vert *v = &lp->verts[i];
        if (v->neighbour == lp->verts[(i + lp->nverts - 1) % lp->nverts].neighbour)
            continue;
        n++;
        cr_assert(has_xz(c, v->x, v->z),
                  "%s: region %d: portal vertex (%d, %d, %d) neighbour %d lost by simplification",
                  t->what, c->region, v->x, v->y, v->z, v->neighbour);
    }
    return n;
}

/* Squared distance from (px, pz) to the segment a b (double; the foot clamped to the
 * segment). */
static double seg_dist2(double px, double pz, const op_contour_vert *a, const op_contour_vert *b)
{
    double dx = b->x - a->x, dz = b->z - a->z, wx = px - a->x, wz = pz - a->z;
    double l2 = dx * dx + dz * dz, u = l2 > 0 ? (wx * dx + wz * dz) / l2 : 0.0;
    u = u < 0 ? 0 : u > 1 ? 1 : u;
    double ex = wx - u * dx, ez = wz - u * dz;
    return ex * ex + ez * ez;
}

/* §6: every raw vertex of a wall stretch (every raw vertex without straight region
 * borders) lies within MaxError of the simplified outline. Returns the number checked. */
static long check_within_error(const tile_ctx *t, const op_contour *c, const op_raw_loop *lp)
{
    double e2 = t->s->contour_max_error * t->s->contour_max_error;
    int all = !t->s->straight_region_borders || t->s->contour_max_error == 0.0;
    long n = 0;
    for (int i = 0; i < lp->nverts; i++) {
        const op_contour_vert *v = &lp->verts[i];
        if (!all && v->neighbour != 0)
            continue;
        double best = -1;
        for (int k = 0; k < c->nverts && best != 0; k++) {
            double d = seg_dist2(v->x, v->z, &c->verts[k], &c->verts[(k + 1) % c->nverts]);
            if (best < 0 || d < best)
                best = d;
        }
        cr_assert_leq(best, e2 + 1e-9,
                      "%s: region %d: raw vertex (%d, %d) neighbour %d is %g cells from the "
                      "simplified outline (MaxError %g)",
                      t->what, c->region, v->x, v->z, v->neighbour, best, t->s->contour_max_error);
        n++;
    }
    return n;
}

/* Contours: per non-border region with spans, one contour per positive raw loop, in
 * discovery order, whose raw outline is that loop; >= 3 vertices, counter-clockwise;
 * portals kept. Raw loops are those of the trace. */
static void check_contours(const tile_ctx *t, const op_contour_trace *tr, const int *count,
                           inv_stats *sx)
{
    const op_contour_set *cs = &t->st->contours;
    int k = t->st->regions.region_count, border = t->st->border_region;
    int ci = 0;
    for (int id = 1; id <= k; id++) {
        if (id == border)
            continue;
        for (int l = 0; l < tr->count; l++) {
            if (tr->region[l] != id || loop_area2(tr->loops[l].verts, tr->loops[l].nverts) <= 0)
                continue;
            cr_assert_lt(ci, cs->count, "%s: region %d: outline %d has no contour", t->what, id, l);
            const op_contour *c = &cs->contours[ci++];
            cr_assert_eq(c->region, id, "%s: contour %d is region %d, expected %d", t->what, ci - 1,
                         c->region, id);
            cr_assert_eq(c->area, t->st->regions.region_area[id], "%s: contour area", t->what);
            cr_assert_eq(c->raw.nverts, tr->loops[l].nverts, "%s: region %d raw outline length",
                         t->what, id);
            cr_assert(!memcmp(c->raw.verts, tr->loops[l].verts,
                              (size_t)c->raw.nverts * sizeof *c->raw.verts),
                      "%s: region %d raw outline differs from the traced loop", t->what, id);
            cr_assert_geq(c->nverts, 3, "%s: region %d contour has %d vertices", t->what, id,
                          c->nverts);
            cr_assert_gt(loop_area2(c->verts, c->nverts), 0,
                         "%s: region %d contour is not counter-clockwise", t->what, id);
            sx->portals += check_portals(t, c, &c->raw);
            sx->near += check_within_error(t, c, &c->raw);
            if (c->nholes == c->nraw_holes)
                for (int h = 0; h < c->nraw_holes; h++) {
                    sx->portals += check_portals(t, c, &c->raw_holes[h]);
                    sx->near += check_within_error(t, c, &c->raw_holes[h]);
                }
            sx->holes += c->nholes;
            sx->contours++;
        }
        if (count[id] > 0)
            cr_assert(ci > 0 && cs->contours[ci - 1].region == id,
                      "%s: region %d (%d spans) disappeared", t->what, id, count[id]);
    }
    cr_assert_eq(ci, cs->count, "%s: %d contours beyond the regions' outlines", t->what,
                 cs->count - ci);
}

typedef struct shared_edge {
    int32_t r, n, ax, ay, az, bx, by, bz;
} shared_edge;

static int cmp_shared(const void *pa, const void *pb)
{
    const int32_t *a = pa, *b = pb;
    for (int k = 0; k < 8; k++)
        if (a[k] != b[k])
            return a[k] < b[k] ? -1 : 1;
    return 0;
}

/* MaxError 0: every contour edge from region R to region N (neither the border band) has
 * the reverse edge, with the same end vertices, in a contour of N. Returns the count. */
static long check_shared_boundaries(const tile_ctx *t)
{
    const op_contour_set *cs = &t->st->contours;
    int border = t->st->border_region;
    size_t n = 0, cap = 256;
    shared_edge *fwd = malloc(cap * sizeof *fwd), *rev = malloc(cap * sizeof *rev);
    for (int i = 0; i < cs->count; i++) {
        const op_contour *c = &cs->contours[i];
        for (int k = 0; k < c->nverts; k++) {
            const op_contour_vert *a = &c->verts[k], *b = &c->verts[(k + 1) % c->nverts];
            if (a->neighbour <= 0 || a->neighbour == border || a->neighbour == c->region)
                continue;
            if (n == cap) {
                cap *= 2;
                fwd = realloc(fwd, cap * sizeof *fwd);
                rev = realloc(rev, cap * sizeof *rev);
            }
            fwd[n] = (shared_edge){c->region, a->neighbour, a->x, a->y, a->z, b->x, b->y, b->z};
            rev[n] = (shared_edge){a->neighbour, c->region, b->x, b->y, b->z, a->x, a->y, a->z};
            n++;
        }
    }
    qsort(fwd, n, sizeof *fwd, cmp_shared);
    qsort(rev, n, sizeof *rev, cmp_shared);
    for (size_t i = 0; i < n; i++)
        cr_assert(!cmp_shared(&fwd[i], &rev[i]),
                  "%s: MaxError 0: edge of region %d to %d (%d %d %d)->(%d %d %d) has no twin "
                  "(nearest: region %d to %d (%d %d %d)->(%d %d %d))",
                  t->what, fwd[i].r, fwd[i].n, fwd[i].ax, fwd[i].ay, fwd[i].az, fwd[i].bx,
                  fwd[i].by, fwd[i].bz, rev[i].r, rev[i].n, rev[i].ax, rev[i].ay, rev[i].az,
                  rev[i].bx, rev[i].by, rev[i].bz);
    free(fwd);
    free(rev);
    return (long)n;
}

/* ---- one tile, one level ---- */

static void check_tile(const op_level *lvl, int tx, int tz, const char *name, op_arena *out,
                       op_arena *scratch, op_arena *mine, inv_stats *sx)
{
    const op_settings *s = op_level_settings(lvl);
    op_tile_stages st;
    op_err e;
    char what[160];
    snprintf(what, sizeof what, "%s %s error %g areas %d/%d straight %d tile (%d, %d)", name,
             op_partition_name(s->partition), s->contour_max_error, s->min_region_area,
             s->merge_region_area, s->straight_region_borders, tx, tz);
    op_status rc = op_level_build_stages(lvl, tx, tz, OP_STAGE_CONTOURS, 1, out, scratch, &st, &e);
    cr_assert_eq(rc, OP_OK, "%s: %s", what, e.msg);
    sx->tiles++;
    if (st.chf.span_count == 0)
        return;
    op_tile_grid g;
    op_tile_grid_derive(s, &g);
    tile_ctx t = {&st.chf, &st, s, what, g.border, g.tile_cells};
    const op_chf *chf = &st.chf;
    cr_assert_eq(st.regions.span_count, chf->span_count, "%s: region span count", what);
    int *sxz = malloc(2 * ((size_t)chf->span_count + 1) * sizeof *sxz);
    int *spx = sxz, *spz = sxz + chf->span_count + 1;
    span_cells(chf, spx, spz);

    /* The partition before the cut, recomputed from the tile's field. */
    op_region_settings rs = {s->partition, s->min_region_area, s->merge_region_area};
    op_regions pre;
    uint16_t *layer = NULL;
    if (s->partition == OP_PARTITION_LAYERS)
        rc = op_regions_build_layer_first(chf, chf, &rs, mine, scratch, &pre, &layer, &e);
    else
        rc = op_regions_build(chf, &rs, mine, scratch, &pre, &e);
    cr_assert_eq(rc, OP_OK, "%s: %s", what, e.msg);
    int *count = malloc(((size_t)st.regions.region_count + 2) * sizeof *count);
    check_regions_connected(&t, &pre, count);
    sx->islands += check_islands(&t, &pre);
    if (s->partition != OP_PARTITION_LAYERS)
        check_merged(&t, &pre, count);
    if (layer) {
        check_layers_columns(&t, &pre, layer);
        for (int id = 1; id <= pre.region_count; id++)
            cr_assert_eq(st.region_layer[id], layer[id], "%s: region %d layer", what, id);
    }
    check_cut(&t, &pre, spx, spz);
    sx->regions += pre.region_count;
    if (!st.skipped) {
        sx->built++;
        /* Span counts of the cut regions (the border band included). */
        memset(count, 0, ((size_t)st.regions.region_count + 1) * sizeof *count);
        for (uint32_t i = 0; i < chf->span_count; i++)
            count[st.regions.reg[i]]++;
        count[0] = 0;
        op_contour_trace tr;
        rc = op_contours_trace(chf, &st.regions, mine, scratch, &tr, &e);
        cr_assert_eq(rc, OP_OK, "%s: %s", what, e.msg);
        check_trace(&t, &tr, spx, spz, count);
        check_contours(&t, &tr, count, sx);
        sx->fallbacks += st.contours.raw_fallbacks;
        if (s->contour_max_error == 0.0)
            sx->shared_edges += check_shared_boundaries(&t);
    }
    free(count);
    free(sxz);
}

/* Settings variants: the defaults, MaxError 0, and small region areas (many regions, so
 * many shared boundaries) at both errors. */
typedef struct variant {
    double max_error;
    int min_area, merge_area;
    int straight;
} variant;

static const variant variants[] = {
    {1.3, 64, 400, 1}, {0.0, 64, 400, 1}, {0.0, 8, 20, 1}, {1.3, 8, 20, 1}, {1.3, 8, 20, 0}};

static void check_level(const op_soup *soup, op_partition p, const variant *v, const char *name,
                        inv_stats *sx)
{
    op_settings s;
    op_settings_default(&s);
    s.partition = p;
    s.contour_max_error = v->max_error;
    s.min_region_area = v->min_area;
    s.merge_region_area = v->merge_area;
    s.straight_region_borders = v->straight;
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create(soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s: %s", name, e.msg);
    op_tile_rect r = op_level_tiles(lvl);
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0), *mine = op_arena_create(0);
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            check_tile(lvl, tx, tz, name, out, scratch, mine, sx);
            op_arena_reset(out);
            op_arena_reset(scratch);
            op_arena_reset(mine);
        }
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    op_arena_destroy(mine);
    op_level_destroy(lvl);
}

static const char *const kinds[] = {"flat",       "terrain", "stairs",  "rooms",
                                    "multifloor", "ramp",    "pillars", "furniture"};

static void log_stats(const char *what, op_partition p, const inv_stats *sx)
{
    cr_log_info("%s %s: %ld tiles, %ld built, %ld regions, %ld contours, %ld islands, %ld holes, "
                "%ld portals, %ld shared edges, %ld raw fallbacks, %ld raw vertices near",
                what, op_partition_name(p), sx->tiles, sx->built, sx->regions, sx->contours,
                sx->islands, sx->holes, sx->portals, sx->shared_edges, sx->fallbacks, sx->near);
}

/* Generated levels of every kind, seeds 1..2 (OP_INVARIANT_SEEDS=N and
 * OP_INVARIANT_SIZE=M explore further when hunting bugs). */
static void run_generated(op_partition p)
{
    inv_stats sx = {0};
    const char *env_seeds = getenv("OP_INVARIANT_SEEDS"), *env_size = getenv("OP_INVARIANT_SIZE");
    int nseeds = env_seeds ? atoi(env_seeds) : 2, size = env_size ? atoi(env_size) : 64;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int seed = 1; seed <= nseeds; seed++) {
            op_arena *a = op_arena_create(0);
            op_soup soup;
            op_err e;
            cr_assert_eq(op_levelgen(kinds[k], size, (uint64_t)seed, a, &soup, &e), OP_OK, "%s",
                         e.msg);
            char name[64];
            snprintf(name, sizeof name, "gen %s %d seed %d", kinds[k], size, seed);
            long before = sx.contours;
            for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++)
                check_level(&soup, p, &variants[v], name, &sx);
            cr_assert_gt(sx.contours, before, "%s: no contour at all", name);
            op_arena_destroy(a);
        }
    cr_assert_gt(sx.islands, 0);
    cr_assert_gt(sx.holes, 0);
    cr_assert_gt(sx.shared_edges, 0);
    log_stats("generated", p, &sx);
}

/* The shared real levels: the multi-floor dungeon and the terrain far from the origin. */
static void run_shared(op_partition p)
{
    static const char *const levels[] = {"dungeon.obj", "undulating.obj"};
    for (int i = 0; i < 2; i++) {
        inv_stats sx = {0};
        op_arena *a = op_arena_create(0);
        op_soup soup;
        op_err e;
        cr_assert_eq(op_obj_read_file(op_test_level(levels[i]), a, &soup, &e), OP_OK, "%s", e.msg);
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++)
            check_level(&soup, p, &variants[v], levels[i], &sx);
        cr_assert_gt(sx.built, 5 * 40, "%s: %ld tiles built", levels[i], sx.built);
        /* Layer regions are the components of "same layer, same area": on a level of one
         * area two of them meet only where floors overlap, which may not happen. */
        if (p != OP_PARTITION_LAYERS)
            cr_assert_gt(sx.shared_edges, 0, "%s: no shared boundary", levels[i]);
        log_stats(levels[i], p, &sx);
        op_arena_destroy(a);
    }
}

/* Seeded random soups: overlapping triangles of random size and gentle random slope
 * stacked at random heights in a 32 m box (many small regions, holes, floors over
 * floors). OP_INVARIANT_SOUPS=N explores more. */
static void run_random_soups(op_partition p)
{
    const char *env = getenv("OP_INVARIANT_SOUPS");
    int nsoups = env ? atoi(env) : 3;
    inv_stats sx = {0};
    for (int seed = 1; seed <= nsoups; seed++) {
        op_test_rng rng = {(uint64_t)seed * 2654435761u};
        int ntris = op_test_rand_int(&rng, 60, 200);
        float *verts = malloc((size_t)ntris * 9 * sizeof *verts);
        int *tris = malloc((size_t)ntris * 3 * sizeof *tris);
        for (int t = 0; t < ntris; t++) {
            double cx = op_test_rand01(&rng) * 32, cz = op_test_rand01(&rng) * 32;
            double cy = op_test_rand_int(&rng, 0, 12) * 0.5, r = 0.5 + op_test_rand01(&rng) * 8;
            double sx_ = (op_test_rand01(&rng) - 0.5) * 1.2,
                   sz_ = (op_test_rand01(&rng) - 0.5) * 1.2;
            double ang[3] = {0, 0, 0};
            for (int c = 0; c < 3; c++)
                ang[c] = (c + op_test_rand01(&rng) * 0.8) * (2.0 / 3.0); /* ccw thirds of a turn */
            for (int c = 0; c < 3; c++) {
                /* Points on a rough circle, counter-clockwise seen from above (x right, z
                 * up gives clockwise, so the order is reversed for an upward normal). */
                int k = 2 - c;
                double u = ang[k] * 3.14159265358979 - 3.14159265358979, dx = 0, dz = 0;
                /* cos/sin on [-pi, pi] by a short series (within 0.03), free of libm. */
                double u2 = u * u;
                dx = 1 - u2 / 2 + u2 * u2 / 24 - u2 * u2 * u2 / 720 + u2 * u2 * u2 * u2 / 40320;
                dz = u - u * u2 / 6 + u * u2 * u2 / 120 - u * u2 * u2 * u2 / 5040;
                double x = cx + r * dx, z = cz + r * dz;
                verts[9 * t + 3 * c + 0] = (float)x;
                verts[9 * t + 3 * c + 1] = (float)(cy + sx_ * (x - cx) + sz_ * (z - cz));
                verts[9 * t + 3 * c + 2] = (float)z;
                tris[3 * t + c] = 3 * t + c;
            }
        }
        op_soup soup = {verts, (size_t)ntris * 9, tris, (size_t)ntris * 3, NULL};
        char name[64];
        snprintf(name, sizeof name, "random soup %d", seed);
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++)
            check_level(&soup, p, &variants[v], name, &sx);
        free(verts);
        free(tris);
    }
    cr_assert_gt(sx.contours, 0);
    log_stats("random soups", p, &sx);
}

Test(pipeline_invariants, random_soups_watershed, .timeout = 300)
{
    run_random_soups(OP_PARTITION_WATERSHED);
}

Test(pipeline_invariants, random_soups_monotone, .timeout = 300)
{
    run_random_soups(OP_PARTITION_MONOTONE);
}

Test(pipeline_invariants, random_soups_layers, .timeout = 300)
{
    run_random_soups(OP_PARTITION_LAYERS);
}

Test(pipeline_invariants, generated_watershed, .timeout = 300)
{
    run_generated(OP_PARTITION_WATERSHED);
}

Test(pipeline_invariants, generated_monotone, .timeout = 300)
{
    run_generated(OP_PARTITION_MONOTONE);
}

Test(pipeline_invariants, generated_layers, .timeout = 300)
{
    run_generated(OP_PARTITION_LAYERS);
}

Test(pipeline_invariants, shared_levels_watershed, .timeout = 300)
{
    run_shared(OP_PARTITION_WATERSHED);
}

Test(pipeline_invariants, shared_levels_monotone, .timeout = 300)
{
    run_shared(OP_PARTITION_MONOTONE);
}

Test(pipeline_invariants, shared_levels_layers, .timeout = 300)
{
    run_shared(OP_PARTITION_LAYERS);
}
