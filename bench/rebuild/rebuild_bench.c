/*
 * onepath-rebuild-bench: one obstacle edit, in process, until the tiles it changes are
 * current, side by side with DetourTileCache 1.5.1 (docs/benchmarks.md, "Volume edits").
 *
 *   ours       op_level_rebuild_tile from each tile's op_rebuild_entry (rebuild.h) with the
 *              volume set {obstacle}, for every tile of op_level_volume_tiles, detail mesh
 *              included, each layer encoded (op_tile_encode): the tile is then what tile.get
 *              serves. Dropping the obstacle is the same with the empty set.
 *   TileCache  addObstacle (a cylinder: same centre, radius and height) and update() until
 *              up to date (tilecache_side.h): its layers decompressed, the obstacle marked,
 *              regions, contours, polygons, Detour tile data; no detail mesh.
 * --edit picks our edit (TileCache always adds its obstacle at the site):
 *   obstacle   the obstacle above (default): it changes areas, the regions are computed
 *   same-area  an area volume of the walkable area (OP_WALKABLE_AREA) on the same cylinder:
 *              the floors have that area already, no area changes, every rebuild takes the
 *              entry's regions (build3d-runtime.md §5.9)
 *   eroded     a small obstacle (one cell) over a span of the tile's core that the erosion
 *              leaves unwalkable anyway, at the site kept only when a fresh build of every
 *              tile it reaches has the areas of no obstacle (checked before timing): again
 *              no area changes, but the obstacle takes spans (erosion is updated)
 * Each edit site is one tile's centre on a walkable floor; the two sides alternate (A B, then
 * B A), and the medians over the sites are reported, with the tiles each side rebuilt, so
 * the per-tile figures compare like with like (tile columns on both sides: TileCache's
 * obstacle lists one compressed tile a layer, counted apart as "layers"; ours rebuilds every
 * layer of a tile it touches, TileCache only the layers the obstacle's bounds meet). Memory: our
 * entry bytes a tile beside TileCache's layer bytes a tile (as stored, and zlib level 1 as a
 * compressor would store).
 *
 *   onepath-rebuild-bench [--level PATH | --gen KIND:SIZE[:SEED]]... [--edits N]
 *                         [--set key=value]... [--radius R]
 *                         [--edit obstacle|same-area|eroded] [--repeat N] [--only ours|tc]
 *                         [--warm]
 *
 * --repeat N runs the sites' loop N times (medians over every timed edit); --only times one
 * side alone (the other's columns read 0), for perf stat / perf record on one side's adds;
 * --warm runs each side's edit once untimed right before the timed one (caches warm), to
 * tell what a cold tile costs; the untimed adds run under names of their own
 * (ours_rebuild_warm, tc_warm), so that one profile of a --warm run holds the cold adds
 * (under those) and the warm ones (under ours_rebuild_add, tc_side_add without tc_warm).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "onepath/arena.h"
#include "onepath/limits.h"
#include "onepath/rebuild.h"
#include "onepath/tile_codec.h"
#include "tilecache_side.h"

typedef struct site {
    int tx, tz;
    double x, y, z;
    op_volume v; /* our edit at this site (--edit) */
} site;

typedef enum edit_kind { EDIT_OBSTACLE, EDIT_SAME_AREA, EDIT_ERODED } edit_kind;
static const char *const edit_names[] = {"obstacle", "same-area", "eroded"};

typedef struct ours {
    op_level *lvl;
    op_tile_rect r;
    op_rebuild_entry **ent;
    op_arena *out, *scratch;
    size_t bytes;
    int tiles;                 /* tiles whose entry holds spans */
    double stage_ms[6];        /* the last ours_edit's time by stage (op_tile_stages.stage_ms) */
    long detail_reused, polys; /* over every rebuild: polygons whose detail was copied */
    long contours_reused, regions; /* and regions whose contours were (build3d-runtime §5.6-7) */
    long polys_reused, contours;   /* and contours whose polygons were (§5.12) */
    long stretches_reused;         /* and loop stretches whose simplification was (§5.13) */
    long regions_reused, rebuilt;  /* rebuilds that took the entry's regions (§5.9), and all */
    long layers_kept;              /* rebuilds that kept some span layers' regions (§5.11) */
    long add_calls, drop_calls;    /* op_level_rebuild_tile calls, warm-up included */
    long warm_calls;               /* of the adds, --warm's untimed ones (ours_rebuild_warm) */
    int warming;                   /* --warm's untimed add: through ours_rebuild_warm */
} ours;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

static int tile_index(const ours *o, int tx, int tz)
{
    return (tz - o->r.tz0) * (o->r.tx1 - o->r.tx0 + 1) + (tx - o->r.tx0);
}

/* Builds st's layers into blobs and frees them: the tile as a server hands it out. */
static void encode(const op_tile_stages *st)
{
    for (int k = 0; k < st->ntiles; k++) {
        op_bytes b;
        uint64_t h;
        op_err e;
        if (op_tile_encode(&st->tiles[k], &b, &h, &e) == OP_OK)
            op_bytes_free(&b);
    }
}

/* One rebuild, out of line under two names so that callgrind tells the adds' Ir from the
 * drops' (--toggle-collect=ours_rebuild_add / ours_rebuild_drop). */
__attribute__((noinline)) static op_status ours_rebuild_add(ours *o, int tx, int tz,
                                                            const op_volume *set, int n,
                                                            op_tile_stages *st, op_err *e)
{
    o->add_calls++;
    return op_level_rebuild_tile(o->lvl, o->ent[tile_index(o, tx, tz)], set, n, OP_STAGE_TILE, 0,
                                 o->out, o->scratch, st, e);
}

/* --warm's untimed add, under a third name: a profile of the timed adds (callgrind's toggle,
 * perf's call chains) then leaves the warm-up out, and one of the warm-ups alone shows what
 * the same add costs cold. */
__attribute__((noinline)) static op_status ours_rebuild_warm(ours *o, int tx, int tz,
                                                             const op_volume *set, int n,
                                                             op_tile_stages *st, op_err *e)
{
    o->add_calls++;
    o->warm_calls++;
    return op_level_rebuild_tile(o->lvl, o->ent[tile_index(o, tx, tz)], set, n, OP_STAGE_TILE, 0,
                                 o->out, o->scratch, st, e);
}

__attribute__((noinline)) static op_status ours_rebuild_drop(ours *o, int tx, int tz,
                                                             const op_volume *set, int n,
                                                             op_tile_stages *st, op_err *e)
{
    o->drop_calls++;
    return op_level_rebuild_tile(o->lvl, o->ent[tile_index(o, tx, tz)], set, n, OP_STAGE_TILE, 0,
                                 o->out, o->scratch, st, e);
}

/* Rebuilds every tile that v reaches from its entry with the volume set set[0..n) ({v} to
 * add v, {} to drop it); milliseconds, *tiles the tiles rebuilt, *layers their layers
 * (tile layers encoded). */
static double ours_edit(ours *o, const op_volume *v, const op_volume *set, int n, int *tiles,
                        int *layers)
{
    op_tile_rect r;
    *tiles = 0;
    *layers = 0;
    memset(o->stage_ms, 0, sizeof o->stage_ms);
    double t0 = bench_now_ms();
    if (!op_level_volume_tiles(o->lvl, v, &r))
        return 0.0;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            op_arena_reset(o->out);
            op_arena_reset(o->scratch);
            op_tile_stages st;
            op_err e;
            if ((!n           ? ours_rebuild_drop
                 : o->warming ? ours_rebuild_warm
                              : ours_rebuild_add)(o, tx, tz, set, n, &st, &e) != OP_OK) {
                fprintf(stderr, "rebuild (%d, %d): %s\n", tx, tz, e.msg);
                exit(1);
            }
            double e0 = bench_now_ms();
            encode(&st);
            for (int k = 0; k < 6; k++)
                o->stage_ms[k] += st.stage_ms[k];
            if (!st.skipped) {
                o->detail_reused += st.detail_reused;
                o->polys += st.polys.npolys;
                o->contours_reused += st.contours_reused;
                o->polys_reused += st.polys_reused;
                o->stretches_reused += st.stretches_reused;
                o->contours += st.contours.count;
                o->regions += st.regions.region_count;
                o->regions_reused += st.regions_reused;
                o->layers_kept += st.layers_reused > 0;
                o->rebuilt++;
            }
            o->stage_ms[OP_STAGE_TILE] += bench_now_ms() - e0;
            ++*tiles;
            *layers += st.ntiles;
        }
    return bench_now_ms() - t0;
}

/* The same tile from scratch (rasterization included), for what the entry saves. */
static double ours_fresh(ours *o, const site *s, const op_volume *v)
{
    double t0 = bench_now_ms();
    op_arena_reset(o->out);
    op_arena_reset(o->scratch);
    op_tile_stages st;
    op_err e;
    if (op_level_build_tile(o->lvl, s->tx, s->tz, v, 1, OP_STAGE_TILE, 0, o->out, o->scratch, &st,
                            NULL, &e) != OP_OK) {
        fprintf(stderr, "build: %s\n", e.msg);
        exit(1);
    }
    encode(&st);
    return bench_now_ms() - t0;
}

/* The memory an add allocates, untimed: site s's edit rebuilt into fresh arenas (their
 * peaks are then this rebuild's), the largest over the tiles it reaches; *out_b the results'
 * bytes (out arena), *scratch_b the scratch's high water. TileCache's side: its linear
 * allocator's high water over the same edit (tc_side_add_footprint). Read with the wall
 * figures: it bounds the lines an edit writes (an array sized by a bound and filled in part
 * counts whole here), which the caches bring in before they are written. */
static void add_footprint(ours *o, tc_side *tc, const site *s, float radius, double *out_b,
                          double *scratch_b, double *tc_b)
{
    op_tile_rect r;
    *out_b = *scratch_b = *tc_b = 0;
    if (op_level_volume_tiles(o->lvl, &s->v, &r))
        for (int tz = r.tz0; tz <= r.tz1; tz++)
            for (int tx = r.tx0; tx <= r.tx1; tx++) {
                op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
                op_tile_stages st;
                op_err e;
                if (!out || !scratch ||
                    op_level_rebuild_tile(o->lvl, o->ent[tile_index(o, tx, tz)], &s->v, 1,
                                          OP_STAGE_TILE, 0, out, scratch, &st, &e) != OP_OK) {
                    fprintf(stderr, "rebuild (%d, %d): %s\n", tx, tz, out ? e.msg : "no memory");
                    exit(1);
                }
                if ((double)op_arena_peak(out) > *out_b)
                    *out_b = (double)op_arena_peak(out);
                if ((double)op_arena_peak(scratch) > *scratch_b)
                    *scratch_b = (double)op_arena_peak(scratch);
                op_arena_destroy(out);
                op_arena_destroy(scratch);
            }
    float pos[3] = {(float)s->x, (float)(s->y - 0.5), (float)s->z};
    *tc_b = (double)tc_side_add_footprint(tc, pos, radius, 2.0f);
}

/* --warm's untimed TileCache edit, out of line under its own name (as ours_rebuild_warm). */
__attribute__((noinline)) static void tc_warm(tc_side *tc, const float pos[3], float radius)
{
    unsigned ref;
    int dummy;
    tc_side_add(tc, pos, radius, 2.0f, &ref, &dummy, &dummy);
    tc_side_remove(tc, ref);
}

/* Up to want sites: tiles whose centre cell has a walkable floor, spread over the level. */
static int pick_sites(ours *o, const op_settings *s, site *out, int want)
{
    int w = o->r.tx1 - o->r.tx0 + 1, n = w * (o->r.tz1 - o->r.tz0 + 1), got = 0;
    site *all = malloc((size_t)n * sizeof *all);
    int nall = 0;
    for (int i = 0; i < n; i++) {
        int tx = o->r.tx0 + i % w, tz = o->r.tz0 + i / w;
        op_arena_reset(o->out);
        op_arena_reset(o->scratch);
        op_tile_stages st;
        op_err e;
        if (op_level_build_stages(o->lvl, tx, tz, OP_STAGE_SPANS, 0, o->out, o->scratch, &st, &e) !=
                OP_OK ||
            st.skipped)
            continue;
        /* The walkable floor nearest the tile's centre, within a quarter tile of it (so
         * that the obstacle stays inside the tile's core). */
        const op_chf *c = &st.chf;
        int best = -1, bx = 0, bz = 0;
        uint32_t bk = 0;
        int q = (c->width - 2 * c->border) / 4;
        for (int dz = -q; dz <= q; dz++)
            for (int dx = -q; dx <= q; dx++) {
                int cx = c->width / 2 + dx, cz = c->depth / 2 + dz, cell = cx + cz * c->width;
                int d2 = dx * dx + dz * dz;
                for (uint32_t k = c->cells[cell]; k < c->cells[cell + 1]; k++)
                    if (c->areas[k] && (best < 0 || d2 < best)) {
                        best = d2, bx = cx, bz = cz, bk = k;
                        break;
                    }
            }
        if (best < 0)
            continue;
        all[nall].tx = tx, all[nall].tz = tz;
        all[nall].x = c->origin[0] + (bx + 0.5) * c->cs;
        all[nall].y = c->origin[1] + c->y[bk] * c->ch;
        all[nall].z = c->origin[2] + (bz + 0.5) * c->cs;
        nall++;
    }
    (void)s;
    for (int k = 0; k < want && k < nall; k++)
        out[got++] = all[(long)k * nall / (want < nall ? want : nall)];
    free(all);
    return got;
}

/* The areas of tile (tx, tz) after the span stage with vols[0..n), malloc'd (NULL: skipped). */
static uint8_t *tile_areas(ours *o, int tx, int tz, const op_volume *vols, int n, uint32_t *count)
{
    op_arena_reset(o->out);
    op_arena_reset(o->scratch);
    op_tile_stages st;
    op_err e;
    if (op_level_build_tile(o->lvl, tx, tz, vols, n, OP_STAGE_SPANS, 0, o->out, o->scratch, &st,
                            NULL, &e) != OP_OK) {
        fprintf(stderr, "build (%d, %d): %s\n", tx, tz, e.msg);
        exit(1);
    }
    *count = st.chf.span_count;
    if (st.skipped || !st.chf.span_count)
        return NULL;
    uint8_t *a = malloc(st.chf.span_count);
    memcpy(a, st.chf.areas, st.chf.span_count);
    return a;
}

/* Whether every tile v reaches has, after the span stage, the areas it has without v. */
static int changes_no_area(ours *o, const op_volume *v)
{
    op_tile_rect r;
    if (!op_level_volume_tiles(o->lvl, v, &r))
        return 0;
    int same = 1;
    for (int tz = r.tz0; tz <= r.tz1 && same; tz++)
        for (int tx = r.tx0; tx <= r.tx1 && same; tx++) {
            uint32_t n0, n1;
            uint8_t *a0 = tile_areas(o, tx, tz, NULL, 0, &n0);
            uint8_t *a1 = tile_areas(o, tx, tz, v, 1, &n1);
            same = n0 == n1 && (!a0) == (!a1) && (!a0 || memcmp(a0, a1, n0) == 0);
            free(a0);
            free(a1);
        }
    return same;
}

/* --edit eroded: the span of site k's tile core nearest the site whose erosion leaves it
 * unwalkable while it has all four links (ground, not a ledge's edge), under a one-cell
 * obstacle that changes no area (changes_no_area); 0 when the first 60 such spans fail. */
static int eroded_site(ours *o, site *st)
{
    op_arena_reset(o->out);
    op_arena_reset(o->scratch);
    op_tile_stages ts;
    op_err e;
    if (op_level_build_stages(o->lvl, st->tx, st->tz, OP_STAGE_SPANS, 0, o->out, o->scratch, &ts,
                              &e) != OP_OK ||
        ts.skipped)
        return 0;
    const op_chf *c = &ts.chf;
    int b = c->border, n = 0, cap = 0;
    double *cand = NULL; /* d2, x, y, z */
    for (int z = b; z < c->depth - b; z++)
        for (int x = b; x < c->width - b; x++)
            for (uint32_t k = c->cells[x + z * c->width]; k < c->cells[x + z * c->width + 1]; k++) {
                int linked = 1;
                for (int d = 0; d < 4; d++)
                    linked &= c->links[k][d] != OP_NO_LINK;
                if (c->areas[k] || !linked)
                    continue;
                double px = c->origin[0] + (x + 0.5) * c->cs, pz = c->origin[2] + (z + 0.5) * c->cs;
                double py = c->origin[1] + c->y[k] * c->ch;
                if (n == cap)
                    cap = cap * 2 + 64, cand = realloc(cand, (size_t)cap * 4 * sizeof *cand);
                double dx = px - st->x, dz = pz - st->z, dy = py - st->y;
                cand[4 * n] = dx * dx + dz * dz + dy * dy;
                cand[4 * n + 1] = px, cand[4 * n + 2] = py, cand[4 * n + 3] = pz;
                n++;
            }
    double cs = c->cs, ch = c->ch;
    int found = 0;
    for (int tries = 0; tries < 60 && tries < n && !found; tries++) {
        int best = tries;
        for (int i = tries + 1; i < n; i++)
            if (cand[4 * i] < cand[4 * best])
                best = i;
        for (int j = 0; j < 4; j++) {
            double t = cand[4 * tries + j];
            cand[4 * tries + j] = cand[4 * best + j];
            cand[4 * best + j] = t;
        }
        op_volume v;
        memset(&v, 0, sizeof v);
        strcpy(v.name, "obstacle");
        v.kind = OP_VOLUME_CYLINDER;
        v.mode = OP_VOLUME_OBSTACLE;
        v.bmin[0] = cand[4 * tries + 1], v.bmin[2] = cand[4 * tries + 3], v.bmax[0] = 0.4 * cs;
        v.bmin[1] = cand[4 * tries + 2] - 0.5 * ch, v.bmax[1] = cand[4 * tries + 2] + 0.5 * ch;
        if (changes_no_area(o, &v)) {
            st->v = v;
            st->x = v.bmin[0], st->y = cand[4 * tries + 2], st->z = v.bmin[2];
            found = 1;
        }
    }
    free(cand);
    return found;
}

/* Our edit at each site (--edit); the sites where an eroded edit is not found are dropped. */
static int edits_at(ours *o, site *sites, int ns, edit_kind kind, double radius)
{
    int kept = 0;
    for (int k = 0; k < ns; k++) {
        site *st = &sites[k];
        op_volume *v = &st->v;
        memset(v, 0, sizeof *v);
        strcpy(v->name, "obstacle");
        v->kind = OP_VOLUME_CYLINDER;
        v->mode = OP_VOLUME_OBSTACLE;
        v->bmin[0] = st->x, v->bmin[2] = st->z, v->bmax[0] = radius;
        v->bmin[1] = st->y - 0.5, v->bmax[1] = st->y + 1.5;
        if (kind == EDIT_SAME_AREA) {
            v->mode = OP_VOLUME_AREA;
            v->area = OP_WALKABLE_AREA;
        } else if (kind == EDIT_ERODED && !eroded_site(o, st)) {
            continue;
        }
        sites[kept++] = *st;
    }
    return kept;
}

/* --only: both sides (default), or one, for a profiler that should see one side's adds. */
typedef enum only_side { ONLY_BOTH, ONLY_OURS, ONLY_TC } only_side;

static int run_level(const char *spec, const op_settings *s, int edits, double radius,
                     edit_kind kind, int repeat, only_side only, int warm)
{
    char err[512];
    bench_level lv;
    if (bench_level_load(spec, &lv, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    op_soup soup = {lv.verts, (size_t)lv.nverts * 3, lv.tris, (size_t)lv.ntris * 3, NULL};
    ours o;
    memset(&o, 0, sizeof o);
    op_err e;
    if (op_level_create(&soup, s, NULL, 0, &o.lvl, &e) != OP_OK) {
        fprintf(stderr, "%s: %s\n", spec, e.msg);
        return 1;
    }
    o.r = op_level_tiles(o.lvl);
    o.out = op_arena_create(0);
    o.scratch = op_arena_create(0);
    int n = op_level_tile_count(o.lvl), w = o.r.tx1 - o.r.tx0 + 1;
    o.ent = calloc((size_t)n, sizeof *o.ent);
    double t0 = bench_now_ms();
    for (int i = 0; i < n; i++) {
        op_arena_reset(o.out);
        op_arena_reset(o.scratch);
        op_tile_stages st;
        if (op_level_build_tile(o.lvl, o.r.tx0 + i % w, o.r.tz0 + i / w, NULL, 0, OP_STAGE_TILE, 0,
                                o.out, o.scratch, &st, &o.ent[i], &e) != OP_OK) {
            fprintf(stderr, "%s: %s\n", spec, e.msg);
            return 1;
        }
        if (!st.skipped || st.chf.span_count) {
            o.bytes += op_rebuild_entry_bytes(o.ent[i]);
            o.tiles++;
        }
    }
    double ours_prep = bench_now_ms() - t0;

    op_arena *bins = op_arena_create(0);
    uint32_t *offsets, *ids;
    if (op_tile_buckets(&soup, s, &o.r, bins, o.scratch, &offsets, &ids, &e) != OP_OK) {
        fprintf(stderr, "%s: %s\n", spec, e.msg);
        return 1;
    }
    tc_sizes tz;
    tc_side *tc = tc_side_create(&soup, s, o.r, offsets, ids, &tz, err, sizeof err);
    if (!tc) {
        fprintf(stderr, "%s: %s\n", spec, err);
        return 1;
    }

    site *sites = malloc((size_t)edits * sizeof *sites);
    int ns = edits_at(&o, sites, pick_sites(&o, s, sites, edits), kind, radius);
    if (ns == 0) {
        fprintf(stderr, "%s: no site for --edit %s\n", spec, edit_names[kind]);
        return 1;
    }
    /* --repeat: the sites' loop runs that many times (each pass visits every site once, so a
     * site's tile is as cold as in one pass); the medians are over every timed edit. */
    int nt = ns * repeat;
    double *stg = malloc((size_t)(nt + 1) * 6 * sizeof(double));
    double *oa = malloc((size_t)(nt + 1) * 8 * sizeof(double)), *od = oa + nt + 1,
           *ta = od + nt + 1, *td = ta + nt + 1, *of = td + nt + 1, *opt = of + nt + 1,
           *tpt = opt + nt + 1;
    long ours_tiles = 0, tc_tiles = 0, ours_layers = 0, tc_layers = 0;
    for (int k = -1; k < nt; k++) { /* k = -1: one untimed warm-up edit a side */
        const site *st = &sites[k < 0 ? 0 : k % ns];
        op_volume v = st->v;
        float pos[3] = {(float)st->x, (float)(st->y - 0.5), (float)st->z};
        double a = 0, d = 0, ta1 = 0, td1 = 0;
        int nt_o = 0, nt_t = 0, nl_o = 0, nl_t = 0, dummy;
        unsigned ref;
        for (int side = 0; side < 2; side++) {
            int mine = (side == 0) == (k % 2 == 0);
            if (mine ? only == ONLY_TC : only == ONLY_OURS)
                continue;
            if (mine && warm) { /* --warm: the same edit once untimed, right before */
                o.warming = 1;
                ours_edit(&o, &v, &v, 1, &dummy, &dummy);
                o.warming = 0;
                ours_edit(&o, &v, NULL, 0, &dummy, &dummy);
            } else if (warm) {
                tc_warm(tc, pos, (float)radius);
            }
            if (mine) {
                a = ours_edit(&o, &v, &v, 1, &nt_o, &nl_o);
                for (int j = 0; j < 6 && k >= 0; j++)
                    stg[j * (nt + 1) + k] = o.stage_ms[j];
                d = ours_edit(&o, &v, NULL, 0, &dummy, &dummy);
            } else {
                ta1 = tc_side_add(tc, pos, (float)radius, 2.0f, &ref, &nt_t, &nl_t);
                td1 = tc_side_remove(tc, ref);
            }
        }
        if (k < 0)
            continue;
        oa[k] = a, od[k] = d, ta[k] = ta1, td[k] = td1;
        opt[k] = nt_o ? a / nt_o : 0;
        tpt[k] = nt_t ? ta1 / nt_t : 0;
        ours_tiles += nt_o;
        tc_tiles += nt_t;
        ours_layers += nl_o;
        tc_layers += nl_t;
    }
    /* From scratch, in a pass of its own: between the edits, a whole build (heightfield,
     * rasterizer, several times a rebuild's memory) would leave the caches to whichever side
     * came next in a state of its making (our stages' code warm, TileCache's evicted). */
    for (int k = 0; k < nt; k++)
        of[k] = only != ONLY_BOTH ? 0 : ours_fresh(&o, &sites[k % ns], &sites[k % ns].v);
    /* What an add allocates (untimed, each site once): after the timed passes, so it
     * changes nothing they measure. */
    double *fo = malloc((size_t)ns * 3 * sizeof *fo), *fs = fo + ns, *ft = fs + ns;
    for (int k = 0; k < ns; k++)
        add_footprint(&o, tc, &sites[k], (float)radius, &fo[k], &fs[k], &ft[k]);
    double m_fo = median(fo, ns), m_fs = median(fs, ns), m_ft = median(ft, ns);
    free(fo);
    double m_oa = median(oa, nt), m_od = median(od, nt), m_ta = median(ta, nt),
           m_td = median(td, nt), m_of = median(of, nt), m_op = median(opt, nt),
           m_tp = median(tpt, nt);
    printf("## %s (%d triangles, %d tiles, tile %d cells, partition %s, %d edits, edit %s)\n\n",
           spec, lv.ntris, n, (int)(s->tile_size / s->cell_size + 0.5),
           op_partition_name(s->partition), ns, edit_names[kind]);
    if (repeat > 1 || only != ONLY_BOTH)
        printf("(--repeat %d%s: medians over %d edits)\n\n", repeat,
               only == ONLY_OURS ? ", --only ours"
               : only == ONLY_TC ? ", --only tc"
                                 : "",
               nt);
    if (warm)
        printf("(--warm: each timed edit right after the same edit untimed)\n\n");
    printf("| per edit (median) | ours (entry, with detail) | TileCache (no detail) | ratio |\n");
    printf("|---|---|---|---|\n");
    /* Four decimals: a rebuilt tile takes tens of microseconds, and a change of one or two
     * must show in one run's figures. */
    printf("| add obstacle, ms | %.4f | %.4f | **%.2f** |\n", m_oa, m_ta, m_oa / m_ta);
    printf("| drop obstacle, ms | %.4f | %.4f | %.2f |\n", m_od, m_td, m_od / m_td);
    printf("| tiles rebuilt a edit (mean) | %.2f | %.2f | |\n", (double)ours_tiles / nt,
           (double)tc_tiles / nt);
    printf("| layers rebuilt a edit (mean) | %.2f | %.2f | |\n", (double)ours_layers / nt,
           (double)tc_layers / nt);
    printf("| add, ms a rebuilt tile | %.4f | %.4f | **%.2f** |\n", m_op, m_tp, m_op / m_tp);
    printf("| ours from scratch (one tile, same obstacle), ms | %.3f | | |\n", m_of);
    static const char *const sn[6] = {"spans", "regions", "contours",
                                      "polys", "detail",  "tile + encode"};
    printf("| ours by stage (median ms an add):");
    for (int j = 0; j < 6; j++)
        printf(" %s %.3f%s", sn[j], median(&stg[j * (nt + 1)], nt), j < 5 ? "," : "");
    printf(" | | | |\n");
    printf("| memory a tile, bytes | %.0f (entry) | %.0f stored, %.0f zlib-1 | %.1f / %.1f |\n",
           (double)o.bytes / (o.tiles ? o.tiles : 1),
           (double)tz.raw_bytes / (tz.tiles ? tz.tiles : 1),
           (double)tz.zlib_bytes / (tz.tiles ? tz.tiles : 1),
           (double)o.bytes / (o.tiles ? o.tiles : 1) /
               ((double)tz.raw_bytes / (tz.tiles ? tz.tiles : 1)),
           (double)o.bytes / (o.tiles ? o.tiles : 1) /
               ((double)tz.zlib_bytes / (tz.tiles ? tz.tiles : 1)));
    printf(
        "| arena high water of an add, bytes (median of the sites' largest tile) | %.0f out + %.0f "
        "scratch | %.0f (linear allocator) | %.2f |\n",
        m_fo, m_fs, m_ft, m_ft > 0 ? (m_fo + m_fs) / m_ft : 0.0);
    printf("| tiles kept / layers | %d | %d / %d | |\n", o.tiles, tz.tiles, tz.layers);
    printf("| reused from the entry (every rebuild) | detail of %ld / %ld polygons, contours of "
           "%ld / %ld regions, polygons of %ld / %ld contours, regions of %ld / %ld rebuilds, "
           "some span layers' regions in %ld, stretches %ld | | |\n",
           o.detail_reused, o.polys, o.contours_reused, o.regions, o.polys_reused, o.contours,
           o.regions_reused, o.rebuilt, o.layers_kept, o.stretches_reused);
    printf("| op_level_rebuild_tile calls (warm-up included) | %ld adds (%ld --warm's), %ld drops "
           "| | |\n",
           o.add_calls, o.warm_calls, o.drop_calls);
    printf("| preprocessing (every tile), ms | %.1f | %.1f | |\n\n", ours_prep, tz.prepare_ms);
    free(oa);
    free(stg);
    free(sites);
    tc_side_free(tc);
    for (int i = 0; i < n; i++)
        op_rebuild_entry_free(o.ent[i]);
    free(o.ent);
    op_arena_destroy(bins);
    op_arena_destroy(o.out);
    op_arena_destroy(o.scratch);
    op_level_destroy(o.lvl);
    bench_level_free(&lv);
    return 0;
}

int main(int argc, char **argv)
{
    op_settings s;
    op_settings_default(&s);
    const char *levels[16];
    int nl = 0, edits = 41, repeat = 1, warm = 0;
    only_side only = ONLY_BOTH;
    double radius = 1.0;
    edit_kind kind = EDIT_OBSTACLE;
    for (int i = 1; i < argc; i++) {
        int more = i + 1 < argc;
        if ((!strcmp(argv[i], "--level") || !strcmp(argv[i], "--gen")) && more && nl < 16) {
            static char gen[16][300];
            if (!strcmp(argv[i], "--gen")) {
                snprintf(gen[nl], sizeof gen[nl], "gen:%s", argv[++i]);
                levels[nl] = gen[nl];
                nl++;
            } else {
                levels[nl++] = argv[++i];
            }
        } else if (!strcmp(argv[i], "--edits") && more) {
            edits = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--edit") && more) {
            const char *k = argv[++i];
            int known = 0;
            for (int j = 0; j < 3; j++)
                if (!strcmp(k, edit_names[j]))
                    kind = (edit_kind)j, known = 1;
            if (!known) {
                fprintf(stderr, "--edit wants obstacle, same-area or eroded, not \"%s\"\n", k);
                return 2;
            }
        } else if (!strcmp(argv[i], "--warm")) {
            warm = 1;
        } else if (!strcmp(argv[i], "--repeat") && more) {
            repeat = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--only") && more) {
            const char *w = argv[++i];
            if (strcmp(w, "ours") && strcmp(w, "tc")) {
                fprintf(stderr, "--only wants ours or tc, not \"%s\"\n", w);
                return 2;
            }
            only = !strcmp(w, "ours") ? ONLY_OURS : ONLY_TC;
        } else if (!strcmp(argv[i], "--radius") && more) {
            radius = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--set") && more) {
            const char *kv = argv[++i], *eq = strchr(kv, '=');
            char key[64];
            op_err e;
            if (!eq || (size_t)(eq - kv) >= sizeof key) {
                fprintf(stderr, "--set wants key=value\n");
                return 2;
            }
            memcpy(key, kv, (size_t)(eq - kv));
            key[eq - kv] = '\0';
            if (op_settings_set(&s, key, eq + 1, &e) != OP_OK) {
                fprintf(stderr, "%s\n", e.msg);
                return 2;
            }
        } else {
            fprintf(stderr,
                    "usage: onepath-rebuild-bench [--level PATH | --gen KIND:SIZE[:SEED]]..."
                    " [--edits N] [--radius R] [--set key=value]..."
                    " [--edit obstacle|same-area|eroded] [--repeat N] [--only ours|tc] [--warm]\n");
            return 2;
        }
    }
    op_err e;
    e.msg[0] = '\0';
    if (edits < 1 || repeat < 1 || radius <= 0 || op_settings_validate(&s, &e) != OP_OK) {
        fprintf(stderr, "bad --edits, --repeat, --radius or settings: %s\n", e.msg);
        return 2;
    }
    if (nl == 0)
        levels[nl++] = OP_BENCH_DEFAULT_LEVEL;
    for (int i = 0; i < nl; i++)
        if (run_level(levels[i], &s, edits, radius, kind, repeat, only, warm))
            return 1;
    return 0;
}
