/*
 * Volumes of a level and cached rebuilds (docs/spec/build3d-runtime.md §2, §4, §5):
 *   - a rebuild from a tile's entry equals a build from scratch byte for byte, for every
 *     partition, along random edit sequences (every kind, both modes, overlaps, volumes on
 *     tile lines, moves, drops), on dungeon.obj and a generated multi-floor level; a build
 *     from scratch equals op_level_build_stages of a level created with the same volumes;
 *   - a build given only the volumes whose reach holds its tile equals one given them all;
 *   - every tile outside a volume's reach keeps its bytes, and obstacles lying only in a
 *     tile's border band do change it (the grid is the erosion's widening);
 *   - span layers (layer-first) are the same with and without volumes of either mode;
 *   - volume sets: names, order, sort; entries refused when they cannot be the level's.
 * "Bytes" are everything a tile build hands on: the span areas, the regions (ids, count,
 * area ids, border region, region layers), the span layers and every tile layer's encoded
 * blob.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/levelgen.h"
#include "onepath/limits.h"
#include "onepath/obj.h"
#include "onepath/rebuild.h"
#include "onepath/tile_codec.h"
#include "op_test.h"

#include "../core/src/contours_internal.h"
#include "../core/src/detail_internal.h"
#include "../core/src/level_internal.h"
#include "../core/src/regions_internal.h"

/* ---- what a build produced, as bytes ---- */

typedef struct sig {
    unsigned char *p;
    size_t n, cap;
} sig;

static void put(sig *s, const void *d, size_t n)
{
    if (s->n + n > s->cap) {
        s->cap = (s->n + n) * 2 + 64;
        s->p = realloc(s->p, s->cap);
        cr_assert_not_null(s->p);
    }
    if (n)
        memcpy(s->p + s->n, d, n);
    s->n += n;
}

static sig signature(const op_tile_stages *st)
{
    sig s = {0};
    put(&s, &st->skipped, sizeof st->skipped);
    uint32_t n = st->chf.span_count;
    put(&s, &n, sizeof n);
    if (n && st->chf.areas)
        put(&s, st->chf.areas, n);
    if (n && st->regions.reg) {
        put(&s, st->regions.reg, n * sizeof *st->regions.reg);
        put(&s, &st->regions.region_count, sizeof st->regions.region_count);
        put(&s, st->regions.region_area, (size_t)st->regions.region_count + 1);
        put(&s, &st->border_region, sizeof st->border_region);
        /* region_layer covers the regions below the border band's id. */
        if (st->region_layer && st->border_region > 0)
            put(&s, st->region_layer, (size_t)st->border_region * sizeof *st->region_layer);
    }
    if (n && st->span_layer)
        put(&s, st->span_layer, n * sizeof *st->span_layer);
    put(&s, &st->ntiles, sizeof st->ntiles);
    for (int k = 0; k < st->ntiles; k++) {
        op_bytes b;
        uint64_t h;
        op_err e;
        cr_assert_eq(op_tile_encode(&st->tiles[k], &b, &h, &e), OP_OK, "%s", e.msg);
        put(&s, &b.len, sizeof b.len);
        put(&s, b.data, b.len);
        op_bytes_free(&b);
    }
    return s;
}

static int sig_eq(const sig *a, const sig *b)
{
    return a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
}

/* ---- levels ---- */

typedef struct world {
    op_arena *geo;
    op_soup soup;
    op_settings s;
    op_level *lvl;
    op_tile_rect r;
    int ntiles;
    float bmin[3], bmax[3];
    op_arena *out, *scratch;
    double (*floors)[3]; /* world points of walkable floors (no volume), where volumes go */
    int nfloors;
    long sreused;            /* over the rebuilds: stretches copied (§5.13) */
    long preused, pcontours; /* over the rebuilds: contours whose polygons were the entry's
                                (build3d-runtime.md §5.12), and all contours polygonized */
} world;

static void world_open(world *w, const char *what, op_partition p)
{
    memset(w, 0, sizeof *w);
    w->geo = op_arena_create(0);
    op_err e;
    if (strcmp(what, "dungeon") == 0)
        cr_assert_eq(op_obj_read_file(op_test_level("dungeon.obj"), w->geo, &w->soup, &e), OP_OK,
                     "%s", e.msg);
    else
        cr_assert_eq(op_levelgen(what, 64, 1, w->geo, &w->soup, &e), OP_OK, "%s", e.msg);
    op_settings_default(&w->s);
    w->s.partition = p;
    cr_assert_eq(op_level_create(&w->soup, &w->s, NULL, 0, &w->lvl, &e), OP_OK, "%s", e.msg);
    w->r = op_level_tiles(w->lvl);
    w->ntiles = op_level_tile_count(w->lvl);
    op_level_bounds(w->lvl, w->bmin, w->bmax);
    w->out = op_arena_create(0);
    w->scratch = op_arena_create(0);
    /* Every 7th walkable span of every tile core: volumes placed there touch floors. */
    int cap = 0;
    for (int tz = w->r.tz0; tz <= w->r.tz1; tz++)
        for (int tx = w->r.tx0; tx <= w->r.tx1; tx++) {
            op_arena_reset(w->out);
            op_arena_reset(w->scratch);
            op_tile_stages st;
            cr_assert_eq(op_level_build_stages(w->lvl, tx, tz, OP_STAGE_SPANS, 0, w->out,
                                               w->scratch, &st, &e),
                         OP_OK, "%s", e.msg);
            const op_chf *c = &st.chf;
            for (int z = c->border; z < c->depth - c->border; z++)
                for (int x = c->border; x < c->width - c->border; x++)
                    for (uint32_t i = c->cells[x + z * c->width];
                         i < c->cells[x + z * c->width + 1]; i++) {
                        if (!c->areas[i] || i % 7)
                            continue;
                        if (w->nfloors == cap) {
                            cap = cap * 2 + 256;
                            w->floors = realloc(w->floors, (size_t)cap * sizeof *w->floors);
                        }
                        double *p = w->floors[w->nfloors++];
                        p[0] = c->origin[0] + (x + 0.5) * c->cs;
                        p[1] = c->origin[1] + c->y[i] * c->ch;
                        p[2] = c->origin[2] + (z + 0.5) * c->cs;
                    }
        }
    cr_assert_gt(w->nfloors, 100);
}

static void world_close(world *w)
{
    op_level_destroy(w->lvl);
    op_arena_destroy(w->out);
    op_arena_destroy(w->scratch);
    op_arena_destroy(w->geo);
    free(w->floors);
}

static void tile_of(const world *w, int i, int *tx, int *tz)
{
    int cols = w->r.tx1 - w->r.tx0 + 1;
    *tx = w->r.tx0 + i % cols;
    *tz = w->r.tz0 + i / cols;
}

/* §5.11's lists of each span layer's spans in an entry, against the definition: layer L's
 * group holds exactly the spans whose span layer is L, ascending; spans without a layer are
 * in none. */
static void layer_spans_hold(const op__region_base *rb, int tx, int tz)
{
    const uint32_t *st = rb->layer_start;
    const uint16_t *sp = rb->layer_spans;
    uint32_t want = 0;
    for (uint32_t s = 0; s < rb->span_count; s++)
        want += rb->span_layer[s] < rb->nlayers;
    cr_assert_eq(st[0], 0);
    cr_assert_eq(st[rb->nlayers], want, "tile (%d, %d): %u listed, %u with a layer", tx, tz,
                 st[rb->nlayers], want);
    for (int L = 0; L < rb->nlayers; L++) {
        uint32_t n = 0;
        for (uint32_t s = 0; s < rb->span_count; s++)
            n += rb->span_layer[s] == L;
        cr_assert_eq(st[L + 1] - st[L], n, "tile (%d, %d) layer %d: %u listed, %u spans", tx, tz, L,
                     st[L + 1] - st[L], n);
        for (uint32_t k = st[L]; k < st[L + 1]; k++) {
            cr_assert_lt(sp[k], rb->span_count);
            cr_assert_eq(rb->span_layer[sp[k]], L, "tile (%d, %d) layer %d: span %u listed", tx, tz,
                         L, sp[k]);
            cr_assert(k == st[L] || sp[k - 1] < sp[k], "tile (%d, %d) layer %d: not ascending", tx,
                      tz, L);
        }
    }
}

/* A fresh build of tile i with vols (capture optional), as bytes. */
static sig fresh(world *w, int i, const op_volume *v, int n, op_rebuild_entry **cap)
{
    int tx, tz;
    tile_of(w, i, &tx, &tz);
    op_arena_reset(w->out);
    op_arena_reset(w->scratch);
    op_tile_stages st;
    op_err e;
    cr_assert_eq(op_level_build_tile(w->lvl, tx, tz, v, n, OP_STAGE_TILE, 0, w->out, w->scratch,
                                     &st, cap, &e),
                 OP_OK, "tile (%d, %d): %s", tx, tz, e.msg);
    const op__tile_base *tb = cap ? op__rebuild_entry_base(*cap) : NULL;
    if (tb && tb->regions && tb->regions->layer_start)
        layer_spans_hold(tb->regions, tx, tz);
    if (tb && tb->contours) {
        /* The spans per region the capture recorded, counted again from its own ids (the
         * plan trusts them to skip the spans of unchanged ids). */
        const op__contour_base *cb = tb->contours;
        cr_assert_not_null(cb->spans);
        uint32_t *count = calloc((size_t)cb->region_count + 1, sizeof *count);
        for (uint32_t s = 0; s < cb->span_count; s++)
            count[cb->reg[s]]++;
        for (int b = 0; b <= cb->region_count; b++)
            cr_assert_eq(cb->spans[b], count[b], "tile (%d, %d) region %d: %u spans recorded, %u",
                         tx, tz, b, cb->spans[b], count[b]);
        free(count);
    }
    return signature(&st);
}

/* A rebuild of en's tile with vols, as bytes; *reused / *npolys (when not NULL) get the
 * polygons whose detail came from the entry and the polygons (build3d-runtime.md §5.6). */
/* Fills the memory the scratch arena hands out next with zeros (contents are undefined):
 * a stage that reads scratch it did not write then sees 0, which in a distance array is a
 * boundary span. The rebuild's erosion sets only the spans of the obstacles' box widened by
 * max(radius, 1) (tile_volumes.c); with a box one cell smaller these rebuilds differ. */
static void poison_scratch(op_arena *a)
{
    size_t n = op_arena_peak(a);
    op_arena_reset(a);
    void *p = op_arena_alloc(a, n);
    cr_assert_not_null(p);
    memset(p, 0, n);
    op_arena_reset(a);
}

static sig cached_count(world *w, const op_rebuild_entry *en, const op_volume *v, int n,
                        long *reused, long *npolys, long *creused, long *nregions, long *rreused,
                        long *lreused)
{
    op_arena_reset(w->out);
    poison_scratch(w->scratch);
    op_tile_stages st;
    op_err e;
    cr_assert_eq(
        op_level_rebuild_tile(w->lvl, en, v, n, OP_STAGE_TILE, 0, w->out, w->scratch, &st, &e),
        OP_OK, "%s", e.msg);
    /* §2.2, which rule 11's flood starts rely on: a span without a layer is not walkable
     * after the volumes. */
    for (uint32_t s = 0; st.span_layer && !st.skipped && s < st.chf.span_count; s++)
        cr_assert(st.chf.areas[s] == 0 || st.span_layer[s] != OP_NO_LAYER,
                  "tile (%d, %d): span %u walkable without a layer", st.tx, st.tz, s);
    cr_assert_leq(st.detail_reused, st.polys.npolys);
    if (reused)
        *reused += st.detail_reused;
    if (npolys && !st.skipped)
        *npolys += st.polys.npolys;
    cr_assert_leq(st.polys_reused, st.contours.count);
    w->preused += st.polys_reused;
    w->sreused += st.stretches_reused;
    if (!st.skipped)
        w->pcontours += st.contours.count;
    cr_assert_leq(st.contours_reused, st.regions.region_count);
    if (creused)
        *creused += st.contours_reused;
    if (nregions && !st.skipped)
        *nregions += st.regions.region_count;
    cr_assert(st.regions_reused == 0 || st.regions_reused == 1);
    /* The distance field is skipped exactly when the regions were the entry's. */
    if (!st.skipped && w->s.partition == OP_PARTITION_WATERSHED)
        cr_assert_eq(st.chf.dist == NULL, st.regions_reused == 1);
    if (rreused)
        *rreused += st.regions_reused;
    /* Rule 11 keeps layers only when rule 9 did not take the whole stage, only with layers. */
    cr_assert(st.layers_reused == 0 || (!st.regions_reused && st.region_layer));
    if (lreused)
        *lreused += st.layers_reused > 0;
    return signature(&st);
}

static sig cached(world *w, const op_rebuild_entry *en, const op_volume *v, int n)
{
    return cached_count(w, en, v, n, NULL, NULL, NULL, NULL, NULL, NULL);
}

/* ---- random volumes ---- */

static double rnd(op_test_rng *g, double lo, double hi)
{
    return lo + (hi - lo) * op_test_rand01(g);
}

/* Snaps x to the nearest tile line now and then, so that volumes lie on tile lines. */
static double maybe_line(op_test_rng *g, const world *w, double x)
{
    if (op_test_rand_int(g, 0, 3) != 0)
        return x;
    return floor(x / w->s.tile_size + 0.5) * w->s.tile_size;
}

static void random_shape(op_test_rng *g, const world *w, op_volume *v)
{
    char name[OP_MAX_VOLUME_NAME + 1];
    memcpy(name, v->name, sizeof name);
    memset(v, 0, sizeof *v);
    memcpy(v->name, name, sizeof name);
    v->kind = (op_volume_kind)op_test_rand_int(g, 0, 2);
    v->mode = (op_volume_mode)op_test_rand_int(g, 0, 1);
    v->area = v->mode == OP_VOLUME_OBSTACLE
                  ? (op_test_rand_int(g, 0, 4) == 0 ? op_test_rand_int(g, 1, 63) : 0)
                  : op_test_rand_int(g, 0, 63);
    const double *f = w->floors[op_test_rand_int(g, 0, w->nfloors - 1)];
    double cx = f[0] + rnd(g, -1.0, 1.0), cz = f[2] + rnd(g, -1.0, 1.0);
    double size = rnd(g, 0.3, 6.0);
    double y0 = f[1] - rnd(g, 0.0, 2.5), y1 = f[1] + rnd(g, -0.5, 3.0);
    if (y1 < y0)
        y1 = y0;
    if (op_test_rand_int(g, 0, 4) == 0)
        y0 = w->bmin[1] - 10.0, y1 = w->bmax[1] + 10.0;
    v->bmin[1] = y0;
    v->bmax[1] = y1;
    if (v->kind == OP_VOLUME_BOX) {
        v->bmin[0] = maybe_line(g, w, cx - size * rnd(g, 0.2, 1.0));
        v->bmax[0] = maybe_line(g, w, cx + size * rnd(g, 0.2, 1.0));
        v->bmin[2] = maybe_line(g, w, cz - size * rnd(g, 0.2, 1.0));
        v->bmax[2] = maybe_line(g, w, cz + size * rnd(g, 0.2, 1.0));
        if (v->bmin[0] > v->bmax[0])
            v->bmin[0] = v->bmax[0];
        if (v->bmin[2] > v->bmax[2])
            v->bmin[2] = v->bmax[2];
    } else if (v->kind == OP_VOLUME_CYLINDER) {
        v->bmin[0] = maybe_line(g, w, cx);
        v->bmin[2] = maybe_line(g, w, cz);
        v->bmax[0] = size;
    } else {
        /* A convex polygon: points on an ellipse at increasing angles (counter-clockwise
         * with x right and z up). */
        int n = op_test_rand_int(g, 3, 9);
        double t[9];
        for (int i = 0; i < n; i++)
            t[i] = rnd(g, 0.0, 6.283185307179586);
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
                double x = t[j];
                t[j] = t[j - 1];
                t[j - 1] = x;
            }
        double rx = size, rz = size * rnd(g, 0.3, 1.0);
        v->npts = n;
        for (int i = 0; i < n; i++) {
            v->pts[2 * i] = cx + rx * cos(t[i]);
            v->pts[2 * i + 1] = cz + rz * sin(t[i]);
        }
        if (op_volume_validate(v, NULL) != OP_OK) { /* nearly equal angles: a triangle */
            v->npts = 3;
            v->pts[0] = cx, v->pts[1] = cz;
            v->pts[2] = cx + size, v->pts[3] = cz;
            v->pts[4] = cx, v->pts[5] = cz + size;
        }
    }
    op_err e;
    cr_assert_eq(op_volume_validate(v, &e), OP_OK, "%s", e.msg);
}

/* ---- cached == fresh along edit sequences ---- */

typedef struct edit_stats {
    long compared, changed;
    long reused, polys;      /* rebuilt polygons whose detail was the entry's, and all of them */
    long creused, regions;   /* rebuilt regions whose contours were the entry's, and all */
    long rreused, rebuilt;   /* rebuilds that took the entry's regions, and all (not skipped) */
    long lreused;            /* rebuilds that kept some span layers' regions (rule 11) */
    long preused, pcontours; /* contours whose polygons were the entry's (rule 12), and all */
    long sreused;            /* stretches whose simplification was the entry's (rule 13) */
} edit_stats;

static void mark_reach(const world *w, const op_volume *v, char *dirty)
{
    op_tile_rect r;
    if (!op_level_volume_tiles(w->lvl, v, &r))
        return;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++)
            dirty[op_level_tile_index(w->lvl, tx, tz)] = 1;
}

/* The volumes of set[0..n) whose reach holds tile i. */
static int subset(const world *w, const op_volume *set, int n, int i, op_volume *out)
{
    int tx, tz, k = 0;
    tile_of(w, i, &tx, &tz);
    for (int j = 0; j < n; j++) {
        op_tile_rect r;
        if (op_level_volume_tiles(w->lvl, &set[j], &r) && tx >= r.tx0 && tx <= r.tx1 &&
            tz >= r.tz0 && tz <= r.tz1)
            out[k++] = set[j];
    }
    return k;
}

static void edit_sequence(const char *what, op_partition p, int steps, uint64_t seed,
                          edit_stats *es)
{
    world w;
    world_open(&w, what, p);
    op_test_rng g = {seed};
    /* Entries of every tile, captured with no volume; their arenas are reset (and reused)
     * by every later build, so an entry that pointed into them would be caught. */
    op_rebuild_entry **ent = calloc((size_t)w.ntiles, sizeof *ent);
    sig *base = calloc((size_t)w.ntiles, sizeof *base);
    char *dirty = calloc((size_t)w.ntiles, 1);
    size_t bytes = 0;
    for (int i = 0; i < w.ntiles; i++) {
        base[i] = fresh(&w, i, NULL, 0, &ent[i]);
        cr_assert_not_null(ent[i]);
        bytes += op_rebuild_entry_bytes(ent[i]);
        int tx, tz, ex, ez;
        tile_of(&w, i, &tx, &tz);
        op_rebuild_entry_tile(ent[i], &ex, &ez);
        cr_assert(ex == tx && ez == tz);
        /* The plain build of the level (no volumes) gives the same bytes. */
        op_arena_reset(w.out);
        op_arena_reset(w.scratch);
        op_tile_stages st;
        op_err e;
        cr_assert_eq(
            op_level_build_stages(w.lvl, tx, tz, OP_STAGE_TILE, 0, w.out, w.scratch, &st, &e),
            OP_OK, "%s", e.msg);
        sig plain = signature(&st);
        cr_assert(sig_eq(&plain, &base[i]), "%s tile (%d, %d): capture build differs", what, tx,
                  tz);
        free(plain.p);
    }
    cr_assert_gt(bytes, 0);
    enum { MAXV = 10 };
    op_volume set[MAXV], sub[MAXV];
    int n = 0, next_name = 0;
    for (int step = 0; step < steps; step++) {
        memset(dirty, 0, (size_t)w.ntiles);
        int op = n < 2       ? 0
                 : n == MAXV ? 1 + op_test_rand_int(&g, 0, 2)
                             : op_test_rand_int(&g, 0, 3);
        if (op == 0) { /* add */
            memset(&set[n], 0, sizeof set[n]);
            snprintf(set[n].name, sizeof set[n].name, "v%02d", op_test_rand_int(&g, 0, 99));
            int clash = 0;
            for (int j = 0; j < n; j++)
                clash |= strcmp(set[j].name, set[n].name) == 0;
            if (clash)
                snprintf(set[n].name, sizeof set[n].name, "w%04d", next_name++);
            random_shape(&g, &w, &set[n]);
            mark_reach(&w, &set[n], dirty);
            n++;
        } else {
            int j = op_test_rand_int(&g, 0, n - 1);
            mark_reach(&w, &set[j], dirty);
            if (op == 1) { /* move: same name, new shape (maybe a new kind and mode) */
                random_shape(&g, &w, &set[j]);
            } else if (op == 2) { /* the other mode */
                set[j].mode = set[j].mode == OP_VOLUME_AREA ? OP_VOLUME_OBSTACLE : OP_VOLUME_AREA;
            } else { /* drop */
                set[j] = set[--n];
            }
            if (op != 3)
                mark_reach(&w, &set[j], dirty);
        }
        op_err e;
        cr_assert_eq(op_volumes_sort(set, n, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(op_volumes_check(set, n, &e), OP_OK, "%s", e.msg);
        int all = step % 10 == 9;
        for (int i = 0; i < w.ntiles; i++) {
            if (!dirty[i] && !all)
                continue;
            sig f = fresh(&w, i, set, n, NULL);
            sig c = cached_count(&w, ent[i], set, n, &es->reused, &es->polys, &es->creused,
                                 &es->regions, &es->rreused, &es->lreused);
            int tx, tz;
            tile_of(&w, i, &tx, &tz);
            cr_assert(sig_eq(&f, &c), "%s %s step %d tile (%d, %d): rebuild differs", what,
                      op_partition_name(p), step, tx, tz);
            int k = subset(&w, set, n, i, sub);
            sig s = cached(&w, ent[i], sub, k);
            cr_assert(sig_eq(&f, &s), "%s step %d tile (%d, %d): the %d reaching volumes of %d",
                      what, step, tx, tz, k, n);
            es->compared++;
            es->changed += !sig_eq(&f, &base[i]);
            int skipped;
            memcpy(&skipped, f.p, sizeof skipped); /* the signature's first field */
            es->rebuilt += !skipped;
            free(f.p);
            free(c.p);
            free(s.p);
        }
        /* Now and then the whole level made with this set, built the plain way. */
        if (step % 25 == 24) {
            op_level *lv;
            cr_assert_eq(op_level_create(&w.soup, &w.s, set, n, &lv, &e), OP_OK, "%s", e.msg);
            for (int i = 0; i < w.ntiles; i++) {
                int tx, tz;
                tile_of(&w, i, &tx, &tz);
                op_arena_reset(w.out);
                op_arena_reset(w.scratch);
                op_tile_stages st;
                cr_assert_eq(
                    op_level_build_stages(lv, tx, tz, OP_STAGE_TILE, 0, w.out, w.scratch, &st, &e),
                    OP_OK, "%s", e.msg);
                sig a = signature(&st);
                sig c = cached(&w, ent[i], set, n);
                cr_assert(sig_eq(&a, &c), "%s step %d tile (%d, %d): level with volumes differs",
                          what, step, tx, tz);
                free(a.p);
                free(c.p);
            }
            op_level_destroy(lv);
        }
    }
    for (int i = 0; i < w.ntiles; i++) {
        op_rebuild_entry_free(ent[i]);
        free(base[i].p);
    }
    free(ent);
    free(base);
    free(dirty);
    es->preused = w.preused;
    es->pcontours = w.pcontours;
    es->sreused = w.sreused;
    world_close(&w);
}

static void sequences_on(const char *what, int steps)
{
    static const op_partition parts[] = {OP_PARTITION_WATERSHED, OP_PARTITION_MONOTONE,
                                         OP_PARTITION_LAYERS};
    for (int k = 0; k < 3; k++) {
        edit_stats es = {0};
        edit_sequence(what, parts[k], steps, 1000 + (uint64_t)k, &es);
        /* Both detail paths ran: polygons copied from the entry and polygons computed. */
        cr_assert_gt(es.reused, 0, "%s %s: no detail reused", what, op_partition_name(parts[k]));
        cr_assert_lt(es.reused, es.polys, "%s %s: every detail reused", what,
                     op_partition_name(parts[k]));
        cr_assert_gt(es.creused, 0, "%s %s: no contours reused", what, op_partition_name(parts[k]));
        cr_assert_lt(es.creused, es.regions, "%s %s: every region's contours reused", what,
                     op_partition_name(parts[k]));
        /* Both polygon paths ran (rule 12): contours copied from the entry and computed. */
        cr_assert_gt(es.preused, 0, "%s %s: no polygons reused", what, op_partition_name(parts[k]));
        cr_assert_lt(es.preused, es.pcontours, "%s %s: every contour's polygons reused", what,
                     op_partition_name(parts[k]));
        /* Stretches of loops traced again took the entry's simplification (rule 13). */
        cr_assert_gt(es.sreused, 0, "%s %s: no stretch reused", what, op_partition_name(parts[k]));
        /* Both regions paths ran: rebuilds that took the entry's regions (tiles the edit
         * left alone, edits undone) and rebuilds that computed them. */
        cr_assert_gt(es.rreused, 0, "%s %s: no regions reused", what, op_partition_name(parts[k]));
        cr_assert_lt(es.rreused, es.rebuilt, "%s %s: every rebuild reused its regions", what,
                     op_partition_name(parts[k]));
        /* With layers, rebuilds that computed regions kept other layers' (rule 11) on the
         * multi-floor level; never with another partition. */
        if (parts[k] != OP_PARTITION_LAYERS)
            cr_assert_eq(es.lreused, 0);
        else if (strcmp(what, "multifloor") == 0)
            cr_assert_gt(es.lreused, 0, "%s layers: no span layer kept", what);
        fprintf(stderr,
                "%s %s: detail of %ld of %ld polygons, contours of %ld of %ld regions, "
                "regions of %ld of %ld rebuilds reused, some layers' in %ld, polygons of %ld of "
                "%ld contours, %ld stretches\n",
                what, op_partition_name(parts[k]), es.reused, es.polys, es.creused, es.regions,
                es.rreused, es.rebuilt, es.lreused, es.preused, es.pcontours, es.sreused);
        /* The edits must matter: otherwise equal bytes would prove nothing. */
        cr_assert_gt(es.compared, 100, "%s %s", what, op_partition_name(parts[k]));
        cr_assert_gt(es.changed, es.compared / 10, "%s %s: %ld of %ld changed", what,
                     op_partition_name(parts[k]), es.changed, es.compared);
    }
}

Test(rebuild, cached_equals_fresh_on_dungeon, .timeout = 600)
{
    sequences_on("dungeon", 100);
}

Test(rebuild, cached_equals_fresh_on_multifloor, .timeout = 600)
{
    sequences_on("multifloor", 100);
}

/* ---- span layers (§2.2) ---- */

Test(rebuild, span_layers_ignore_volumes_of_both_modes, .timeout = 300)
{
    world w;
    world_open(&w, "multifloor", OP_PARTITION_LAYERS);
    op_test_rng g = {77};
    long area_changed = 0, kept_layer = 0, upper = 0;
    for (int mode = 0; mode < 2; mode++) {
        op_volume set[12];
        for (int j = 0; j < 12; j++) {
            memset(&set[j], 0, sizeof set[j]);
            snprintf(set[j].name, sizeof set[j].name, "m%02d", j);
            random_shape(&g, &w, &set[j]);
            set[j].mode = (op_volume_mode)mode;
            if (mode == OP_VOLUME_AREA && set[j].area == 0)
                set[j].area = 7;
        }
        for (int i = 0; i < w.ntiles; i++) {
            int tx, tz;
            tile_of(&w, i, &tx, &tz);
            op_tile_stages s0, s1;
            op_err e;
            op_arena *o0 = op_arena_create(0);
            cr_assert_eq(op_level_build_tile(w.lvl, tx, tz, NULL, 0, OP_STAGE_REGIONS, 0, o0,
                                             w.scratch, &s0, NULL, &e),
                         OP_OK, "%s", e.msg);
            op_arena_reset(w.out);
            cr_assert_eq(op_level_build_tile(w.lvl, tx, tz, set, 12, OP_STAGE_REGIONS, 0, w.out,
                                             w.scratch, &s1, NULL, &e),
                         OP_OK, "%s", e.msg);
            cr_assert_eq(s0.chf.span_count, s1.chf.span_count);
            for (uint32_t s = 0; s < s0.chf.span_count; s++) {
                cr_assert_eq(s0.span_layer[s], s1.span_layer[s], "tile (%d, %d) span %u", tx, tz,
                             s);
                upper += s0.span_layer[s] != OP_NO_LAYER && s0.span_layer[s] > 0;
                if (mode == OP_VOLUME_AREA) {
                    area_changed += s0.chf.areas[s] != s1.chf.areas[s];
                    /* Nonzero area volumes keep walkability. */
                    cr_assert_eq(s0.chf.areas[s] != 0, s1.chf.areas[s] != 0);
                } else if (s0.regions.reg && s0.regions.reg[s] && s1.chf.areas[s] == 0) {
                    /* Under an obstacle (or eroded round it): no region, layer kept. */
                    cr_assert_neq(s1.span_layer[s], OP_NO_LAYER);
                    kept_layer++;
                }
            }
            op_arena_destroy(o0);
        }
    }
    cr_assert_gt(upper, 1000, "the level has upper layers");
    cr_assert_gt(area_changed, 200, "area volumes changed areas");
    cr_assert_gt(kept_layer, 200, "obstacles took spans");
    world_close(&w);
}

/* ---- reach (§4.4) ---- */

/* Whether [lo, hi] meets tile t's core along an axis (world). */
static int meets_core(double lo, double hi, int t, double ts)
{
    return hi >= t * ts && lo <= (t + 1) * ts;
}

static void reach_on(op_partition p, uint64_t seed, long *band_changes)
{
    world w;
    world_open(&w, "dungeon", p);
    op_test_rng g = {seed};
    sig *base = calloc((size_t)w.ntiles, sizeof *base);
    for (int i = 0; i < w.ntiles; i++)
        base[i] = fresh(&w, i, NULL, 0, NULL);
    for (int k = 0; k < 40; k++) {
        op_volume v;
        memset(&v, 0, sizeof v);
        strcpy(v.name, "x");
        random_shape(&g, &w, &v);
        if (k % 2 == 0) {
            /* An obstacle box just across a tile line from its neighbour's core: 0.05 to
             * 0.9 wu (up to 3 cells) past the line x = L, so the tile at -x has it only in
             * its border band. */
            double ts = w.s.tile_size;
            double line = ts * floor(rnd(&g, w.bmin[0], w.bmax[0]) / ts);
            v.kind = OP_VOLUME_BOX;
            v.mode = OP_VOLUME_OBSTACLE;
            v.area = 0;
            v.bmin[0] = line + 0.05;
            v.bmax[0] = line + rnd(&g, 0.1, 0.9);
            v.bmin[2] = rnd(&g, w.bmin[2], w.bmax[2]);
            v.bmax[2] = v.bmin[2] + rnd(&g, 1.0, 6.0);
            v.bmin[1] = w.bmin[1] - 10.0;
            v.bmax[1] = w.bmax[1] + 10.0;
        }
        op_tile_rect r;
        int any = op_level_volume_tiles(w.lvl, &v, &r);
        double lo[2], hi[2];
        lo[0] = v.kind == OP_VOLUME_CYLINDER ? v.bmin[0] - v.bmax[0] : v.bmin[0];
        hi[0] = v.kind == OP_VOLUME_CYLINDER ? v.bmin[0] + v.bmax[0] : v.bmax[0];
        lo[1] = v.kind == OP_VOLUME_CYLINDER ? v.bmin[2] - v.bmax[0] : v.bmin[2];
        hi[1] = v.kind == OP_VOLUME_CYLINDER ? v.bmin[2] + v.bmax[0] : v.bmax[2];
        for (int i = 0; i < w.ntiles; i++) {
            int tx, tz;
            tile_of(&w, i, &tx, &tz);
            int inside = any && tx >= r.tx0 && tx <= r.tx1 && tz >= r.tz0 && tz <= r.tz1;
            sig f = fresh(&w, i, &v, 1, NULL);
            int same = sig_eq(&f, &base[i]);
            cr_assert(inside || same, "tile (%d, %d) outside the reach %d..%d x %d..%d changed", tx,
                      tz, r.tx0, r.tx1, r.tz0, r.tz1);
            if (v.kind != OP_VOLUME_PRISM && !same &&
                !(meets_core(lo[0], hi[0], tx, w.s.tile_size) &&
                  meets_core(lo[1], hi[1], tz, w.s.tile_size)))
                ++*band_changes;
            free(f.p);
        }
    }
    for (int i = 0; i < w.ntiles; i++)
        free(base[i].p);
    free(base);
    world_close(&w);
}

Test(rebuild, tiles_outside_the_reach_keep_their_bytes, .timeout = 600)
{
    long band = 0;
    reach_on(OP_PARTITION_WATERSHED, 5, &band);
    reach_on(OP_PARTITION_LAYERS, 6, &band);
    /* A volume that only touches a tile's border band changes it: the reach must hold it. */
    cr_assert_gt(band, 3, "border-band changes: %ld", band);
}

Test(rebuild, reach_is_the_grid_widened_by_a_cell)
{
    world w;
    world_open(&w, "dungeon", OP_PARTITION_WATERSHED);
    op_tile_grid g;
    op_tile_grid_derive(&w.s, &g);
    double cs = g.cs, ts = w.s.tile_size;
    /* A point box at the centre of global cell k reaches the tiles whose grid holds cells
     * k - 1 .. k + 1: tx with tx*TC - B <= k + 1 and k - 1 <= tx*TC + TC + B - 1. */
    int tx0 = w.r.tx0 + 1, tz0 = w.r.tz0 + 1;
    for (int off = -g.border - 3; off <= g.tile_cells + g.border + 3; off++) {
        long k = (long)tx0 * g.tile_cells + off;
        double x = ((double)k + 0.5) * cs;
        op_volume v;
        memset(&v, 0, sizeof v);
        v.kind = OP_VOLUME_BOX;
        v.bmin[0] = v.bmax[0] = x;
        v.bmin[2] = v.bmax[2] = (tz0 + 0.5) * ts;
        op_tile_rect r;
        cr_assert(op_level_volume_tiles(w.lvl, &v, &r));
        for (int tx = w.r.tx0; tx <= w.r.tx1; tx++) {
            long first = (long)tx * g.tile_cells - g.border;
            long last = (long)tx * g.tile_cells + g.tile_cells + g.border - 1;
            int want = k + 1 >= first && k - 1 <= last;
            int got = tx >= r.tx0 && tx <= r.tx1;
            cr_assert_eq(got, want, "cell %ld tile %d", k, tx);
        }
        cr_assert(r.tz0 <= tz0 && r.tz1 >= tz0);
    }
    /* Far away: no tile; invalid: no tile. */
    op_volume far;
    memset(&far, 0, sizeof far);
    far.kind = OP_VOLUME_CYLINDER;
    far.bmin[0] = 1e9, far.bmin[2] = 1e9, far.bmax[0] = 1.0;
    op_tile_rect r;
    cr_assert_eq(op_level_volume_tiles(w.lvl, &far, &r), 0);
    far.bmax[0] = -1.0;
    cr_assert_eq(op_level_volume_tiles(w.lvl, &far, &r), 0);
    far.bmin[0] = 0.0, far.bmin[2] = 0.0, far.bmax[0] = 1e12; /* covers everything */
    cr_assert_eq(op_level_volume_tiles(w.lvl, &far, &r), 1);
    cr_assert(r.tx0 == w.r.tx0 && r.tx1 == w.r.tx1 && r.tz0 == w.r.tz0 && r.tz1 == w.r.tz1);
    world_close(&w);
}

/* ---- volume sets and entries ---- */

static op_volume named(const char *name)
{
    op_volume v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "%s", name);
    v.kind = OP_VOLUME_BOX;
    v.bmax[0] = v.bmax[1] = v.bmax[2] = 1.0;
    return v;
}

Test(rebuild, volume_names_and_order)
{
    cr_assert(op_volume_name_valid("door1"));
    cr_assert(op_volume_name_valid("A-b_c.9"));
    cr_assert_not(op_volume_name_valid(""));
    cr_assert_not(op_volume_name_valid(".hidden"));
    cr_assert_not(op_volume_name_valid("a b"));
    cr_assert_not(op_volume_name_valid("caf\xc3\xa9"));
    char n64[OP_MAX_VOLUME_NAME + 1];
    memset(n64, 'x', OP_MAX_VOLUME_NAME);
    n64[OP_MAX_VOLUME_NAME] = '\0';
    cr_assert(op_volume_name_valid(n64));
    n64[OP_MAX_VOLUME_NAME] = 'x'; /* not terminated within the array */
    cr_assert_not(op_volume_name_valid(n64));

    op_volume v[5] = {named("b"), named("a"), named("B"), named("a-"), named("a")};
    v[1].area = 1, v[4].area = 2;
    op_err e;
    cr_assert_eq(op_volumes_check(v, 5, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "volume 1 \"a\" sorts before volume 0 \"b\""), "%s", e.msg);
    cr_assert_eq(op_volumes_sort(v, 5, &e), OP_OK);
    const char *want[5] = {"B", "a", "a", "a-", "b"};
    for (int i = 0; i < 5; i++)
        cr_assert_str_eq(v[i].name, want[i]);
    cr_assert(v[1].area == 1 && v[2].area == 2, "stable");
    cr_assert_eq(op_volumes_check(v, 5, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "volume 2 \"a\" repeats volume 1 \"a\""), "%s", e.msg);
    strcpy(v[1].name, "Z"); /* '-' is the least name byte after the letters' case split */
    cr_assert_eq(op_volumes_check(v, 5, &e), OP_OK, "%s", e.msg);
    strcpy(v[1].name, "a b");
    cr_assert_eq(op_volumes_check(v, 5, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "volume 1: name \"a b\""), "%s", e.msg);
    strcpy(v[1].name, "Z");
    v[3].area = 99;
    cr_assert_eq(op_volumes_check(v, 5, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "volume 3 \"a-\" (box): area = 99"), "%s", e.msg);
    cr_assert_eq(op_volumes_check(v, -1, &e), OP_EINVAL);
    cr_assert_eq(op_volumes_check(v, OP_MAX_VOLUMES + 1, &e), OP_ERANGE);
    cr_assert_eq(op_volumes_sort(v, OP_MAX_VOLUMES + 1, &e), OP_ERANGE);
    cr_assert_eq(op_volumes_check(NULL, 0, &e), OP_OK);

    /* A large reversed set sorts to the order strcmp gives. */
    int n = 3000;
    op_volume *big = calloc((size_t)n, sizeof *big);
    for (int i = 0; i < n; i++)
        snprintf(big[i].name, sizeof big[i].name, "n%05d", (i * 7919) % n);
    cr_assert_eq(op_volumes_sort(big, n, &e), OP_OK);
    for (int i = 1; i < n; i++)
        cr_assert_lt(strcmp(big[i - 1].name, big[i].name), 0);
    free(big);
}

Test(rebuild, levels_and_builds_refuse_unordered_sets)
{
    world w;
    world_open(&w, "multifloor", OP_PARTITION_WATERSHED);
    op_volume v[2] = {named("b"), named("a")};
    op_level *l = NULL;
    op_err e;
    cr_assert_eq(op_level_create(&w.soup, &w.s, v, 2, &l, &e), OP_EINVAL);
    cr_assert_null(l);
    op_tile_stages st;
    op_rebuild_entry *en = (op_rebuild_entry *)(uintptr_t)16; /* reset to NULL on failure */
    cr_assert_eq(op_level_build_tile(w.lvl, w.r.tx0, w.r.tz0, v, 2, OP_STAGE_TILE, 0, w.out,
                                     w.scratch, &st, &en, &e),
                 OP_EINVAL);
    cr_assert_null(en);
    cr_assert(strstr(e.msg, "sorts before"), "%s", e.msg);
    op_volume unnamed = named("");
    cr_assert_eq(op_level_create(&w.soup, &w.s, &unnamed, 1, &l, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "name"), "%s", e.msg);
    world_close(&w);
}

Test(rebuild, entries_outlive_their_arenas_and_must_fit_the_level)
{
    world w, other;
    world_open(&w, "multifloor", OP_PARTITION_LAYERS);
    world_open(&other, "multifloor", OP_PARTITION_MONOTONE);
    int i = w.ntiles / 2, tx, tz;
    tile_of(&w, i, &tx, &tz);
    op_arena *o = op_arena_create(0), *s = op_arena_create(0);
    op_tile_stages st;
    op_rebuild_entry *en = NULL;
    op_err e;
    op_volume v = named("door");
    v.mode = OP_VOLUME_OBSTACLE;
    v.bmin[0] = tx * w.s.tile_size + 2.0, v.bmax[0] = v.bmin[0] + 2.0;
    v.bmin[2] = tz * w.s.tile_size + 2.0, v.bmax[2] = v.bmin[2] + 2.0;
    v.bmin[1] = -100.0, v.bmax[1] = 100.0;
    cr_assert_eq(op_level_build_tile(w.lvl, tx, tz, &v, 1, OP_STAGE_TILE, 0, o, s, &st, &en, &e),
                 OP_OK, "%s", e.msg);
    sig want = signature(&st);
    op_arena_destroy(o);
    op_arena_destroy(s);
    cr_assert_not_null(en);
    /* Header, cells and 24 bytes a span at least (layers partition). */
    op_tile_grid g;
    op_tile_grid_derive(&w.s, &g);
    cr_assert_geq(op_rebuild_entry_bytes(en),
                  (size_t)g.grid_cells * g.grid_cells * 4 + (size_t)st.chf.span_count * 24);
    sig got = cached(&w, en, &v, 1);
    cr_assert(sig_eq(&want, &got), "captured with the volume, rebuilt with it");
    cr_assert_eq(op_level_rebuild_tile(other.lvl, en, &v, 1, OP_STAGE_TILE, 0, other.out,
                                       other.scratch, &st, &e),
                 OP_EINVAL);
    cr_assert(strstr(e.msg, "partition is monotone"), "%s", e.msg);
    op_volume bad = v;
    bad.area = 70;
    cr_assert_eq(
        op_level_rebuild_tile(w.lvl, en, &bad, 1, OP_STAGE_TILE, 0, w.out, w.scratch, &st, &e),
        OP_ERANGE);
    cr_assert(strstr(e.msg, "\"door\"") && strstr(e.msg, "area = 70"), "%s", e.msg);
    op_rebuild_entry_free(en);
    op_rebuild_entry_free(NULL);
    free(want.p);
    free(got.p);
    world_close(&other);
    world_close(&w);
}

/* op_level_rebuild_tile asks for the whole entry before its stages read it (rebuild.c: the
 * misses of a cold entry then overlap): every 64-byte line from the entry's first byte up to
 * its last, whatever the entry holds (skipped tiles' headers alone, full records), and no
 * line past it. */
Test(rebuild, prefetch_asks_for_every_line_before_the_clearances)
{
    world w;
    world_open(&w, "multifloor", OP_PARTITION_LAYERS);
    int kept = 0;
    for (int i = 0; i < w.ntiles; i++) {
        op_rebuild_entry *en = NULL;
        sig s = fresh(&w, i, NULL, 0, &en);
        free(s.p);
        cr_assert_not_null(en);
        size_t bytes = op_rebuild_entry_bytes(en), lines = op__rebuild_entry_prefetch(en);
        cr_assert_gt(bytes, 0);
        /* Every line up to the clearances, which are the entry's last array (no stage after
         * compaction reads them), and none past them; a skipped tile's entry is asked for
         * whole (it holds no arrays). */
        const op__tile_base *b = op__rebuild_entry_base(en);
        size_t want = bytes;
        if (!b->skipped && b->chf.span_count > 0) {
            size_t at = (size_t)((const unsigned char *)b->chf.h - (const unsigned char *)en);
            cr_assert_eq(at + ((2 * (size_t)b->chf.span_count + 15) & ~(size_t)15), bytes,
                         "tile %d: the clearances are not the entry's last array", i);
            want = at;
            /* Every other array lies before them. */
            const void *arrays[] = {b->chf.cells, b->chf.y,  b->chf.links,
                                    b->chf.areas, b->eroded, b->span_layer};
            for (int k = 0; k < 6; k++)
                cr_assert(!arrays[k] ||
                              (const unsigned char *)arrays[k] < (const unsigned char *)en + at,
                          "tile %d: array %d after the clearances", i, k);
        }
        cr_assert_geq(lines * 64, want, "tile %d: %zu lines for %zu bytes", i, lines, want);
        cr_assert_lt((lines - 1) * 64, want, "tile %d: %zu lines for %zu bytes", i, lines, want);
        kept += bytes > 4096;
        op_rebuild_entry_free(en);
    }
    cr_assert_gt(kept, 0, "some entry holds a tile's records");
    world_close(&w);
}

/* ---- detail reuse, rule by rule (build3d-runtime.md §5.6) ---- */

static int detail_eq(const op_detail_mesh *a, const op_detail_mesh *b)
{
    return a->npolys == b->npolys && a->nverts == b->nverts && a->ntris == b->ntris &&
           memcmp(a->meshes, b->meshes, (size_t)a->npolys * 16) == 0 &&
           (!a->nverts || memcmp(a->verts, b->verts, (size_t)a->nverts * 12) == 0) &&
           (!a->ntris || memcmp(a->tris, b->tris, (size_t)a->ntris * 4) == 0);
}

typedef struct detail_case {
    op_tile_stages st;
    op_detail_settings ds;
    op__detail_base base;
    op_arena *o, *s;
} detail_case;

/* A tile of dungeon.obj built from scratch, and its detail stage's inputs and output as a
 * detail base on the build's own field. */
static void detail_case_open(world *w, detail_case *dc, int want_polys)
{
    memset(dc, 0, sizeof *dc);
    dc->o = op_arena_create(0);
    dc->s = op_arena_create(0);
    op_err e;
    for (int i = 0; i < w->ntiles; i++) {
        int tx, tz;
        tile_of(w, i, &tx, &tz);
        op_arena_reset(dc->o);
        cr_assert_eq(
            op_level_build_stages(w->lvl, tx, tz, OP_STAGE_TILE, 0, dc->o, dc->s, &dc->st, &e),
            OP_OK, "%s", e.msg);
        if (!dc->st.skipped && dc->st.polys.npolys >= want_polys)
            break;
    }
    cr_assert_geq(dc->st.polys.npolys, want_polys);
    const op_tile_stages *st = &dc->st;
    dc->ds = (op_detail_settings){w->s.detail_sample_distance, w->s.detail_max_error,
                                  dc->st.chf.walkable_climb};
    op__detail_base *b = &dc->base;
    b->cells = st->chf.cells;
    b->y = st->chf.y;
    b->width = st->chf.width;
    b->depth = st->chf.depth;
    b->span_count = st->chf.span_count;
    b->reg = st->regions.reg;
    b->mesh = st->polys;
    /* The base's own copy of the vertices: the rules below move the mesh's. */
    b->mesh.verts = op_arena_alloc(dc->o, (size_t)st->polys.nverts * 12 + 4);
    memcpy(b->mesh.verts, st->polys.verts, (size_t)st->polys.nverts * 12);
    b->detail = st->detail;
    b->min_row = st->min_row;
    b->ds = dc->ds;
}

static void detail_case_close(detail_case *dc)
{
    op_arena_destroy(dc->o);
    op_arena_destroy(dc->s);
}

/* Detail of (mesh, regs, min_row) on dc's field: computed, and with dc's base; the two must
 * be equal. Returns 1 when the input changed the detail against the base's. */
static int check_against_fresh(detail_case *dc, const op_poly_mesh *mesh, const op_regions *regs,
                               int min_row, int *reused)
{
    op_detail_mesh fresh_dm, reuse_dm;
    op_err e;
    cr_assert_eq(
        op_detail_build(mesh, &dc->st.chf, regs, &dc->ds, min_row, dc->o, dc->s, &fresh_dm, &e),
        OP_OK, "%s", e.msg);
    cr_assert_eq(op__detail_build_reuse(mesh, &dc->st.chf, regs, &dc->ds, min_row, &dc->base, NULL,
                                        reused, dc->o, dc->s, &reuse_dm, &e),
                 OP_OK, "%s", e.msg);
    cr_assert(detail_eq(&fresh_dm, &reuse_dm), "reused detail differs from a fresh one");
    return !detail_eq(&fresh_dm, &dc->st.detail);
}

/* check_against_fresh with rule 3a's names (op__detail_build_reuse's kept_from). */
static int check_against_fresh_from(detail_case *dc, const op_poly_mesh *mesh,
                                    const op_regions *regs, const uint16_t *from, int *reused)
{
    op_detail_mesh fresh_dm, reuse_dm;
    op_err e;
    cr_assert_eq(op_detail_build(mesh, &dc->st.chf, regs, &dc->ds, dc->st.min_row, dc->o, dc->s,
                                 &fresh_dm, &e),
                 OP_OK, "%s", e.msg);
    cr_assert_eq(op__detail_build_reuse(mesh, &dc->st.chf, regs, &dc->ds, dc->st.min_row, &dc->base,
                                        from, reused, dc->o, dc->s, &reuse_dm, &e),
                 OP_OK, "%s", e.msg);
    cr_assert(detail_eq(&fresh_dm, &reuse_dm), "reused detail (rule 3a) differs from a fresh one");
    return !detail_eq(&fresh_dm, &dc->st.detail);
}

/* The cells whose spans polygon p's interior samples look at, from the text of
 * build3d-polys.md §4 (the grid strictly inside the box, points farther than sd/2 from
 * every edge line, NearestRow's cells floor(x) and floor(x) - 1 on a cell line, likewise
 * in z), written here apart from detail_samples.c: in[] gets 1 at every such cell. */
static void sample_cells(const op_poly_mesh *m, int p, const op_chf *c, double sd, uint8_t *in)
{
    memset(in, 0, (size_t)c->width * (size_t)c->depth);
    int n = 0;
    while (n < m->nvp && m->polys[(size_t)p * (size_t)m->nvp + (size_t)n] != OP_POLY_MESH_NULL)
        n++;
    const int32_t *v[OP_MAX_VERTS_PER_POLY];
    double lx = 1e30, hx = -1e30, lz = 1e30, hz = -1e30;
    for (int k = 0; k < n; k++) {
        v[k] = &m->verts[3 * m->polys[(size_t)p * (size_t)m->nvp + (size_t)k]];
        lx = fmin(lx, v[k][0]), hx = fmax(hx, v[k][0]);
        lz = fmin(lz, v[k][2]), hz = fmax(hz, v[k][2]);
    }
    if (!(sd > 0.9) || n < 3)
        return;
    for (int j = 1; lz + j * sd < hz; j++)
        for (int i = 1; lx + i * sd < hx; i++) {
            double x = lx + i * sd, z = lz + j * sd;
            int inside = 1;
            for (int k = 0; k < n && inside; k++) {
                const int32_t *a = v[k], *b = v[(k + 1) % n];
                double ex = b[0] - a[0], ez = b[2] - a[2];
                inside = fabs(ex * (z - a[2]) - ez * (x - a[0])) / sqrt(ex * ex + ez * ez) > sd / 2;
            }
            if (!inside)
                continue;
            for (int cz = (int)floor(z) - (z == floor(z)); cz <= (int)floor(z); cz++)
                for (int cx = (int)floor(x) - (x == floor(x)); cx <= (int)floor(x); cx++)
                    if (cx >= 0 && cz >= 0 && cx < c->width && cz < c->depth)
                        in[cz * c->width + cx] = 1;
        }
}

/* Whether polygon p has any sample cell (sample_cells, into in[]). */
static int has_sample_cells(const op_poly_mesh *m, int p, const op_chf *c, double sd, uint8_t *in)
{
    sample_cells(m, p, c, sd, in);
    for (size_t i = 0; i < (size_t)c->width * (size_t)c->depth; i++)
        if (in[i])
            return 1;
    return 0;
}

Test(rebuild, detail_reuse_follows_each_rule)
{
    world w;
    world_open(&w, "dungeon", OP_PARTITION_WATERSHED);
    detail_case dc;
    detail_case_open(&w, &dc, 8);
    op_poly_mesh *pm = &dc.st.polys;
    int n3 = 0, reused = -1;
    for (int p = 0; p < pm->npolys; p++)
        n3 += pm->polys[(size_t)p * (size_t)pm->nvp + 2] != OP_POLY_MESH_NULL;
    /* The same input: every polygon's detail is the base's. */
    cr_assert_eq(check_against_fresh(&dc, pm, &dc.st.regions, dc.st.min_row, &reused), 0);
    cr_assert_eq(reused, n3);
    /* Rule 1: another minRow (every local height moves). */
    cr_assert_eq(check_against_fresh(&dc, pm, &dc.st.regions, dc.st.min_row - 3, &reused), 1);
    cr_assert_eq(reused, 0);
    /* Rule 1: another field (a copy of the floor rows, equal bytes, other arrays). */
    {
        op_tile_stages keep = dc.st;
        uint16_t *y2 = op_arena_alloc(dc.o, (size_t)dc.st.chf.span_count * 2 + 2);
        memcpy(y2, dc.st.chf.y, (size_t)dc.st.chf.span_count * 2);
        dc.st.chf.y = y2;
        cr_assert_eq(check_against_fresh(&dc, pm, &dc.st.regions, dc.st.min_row, &reused), 0);
        cr_assert_eq(reused, 0);
        dc.st = keep;
    }
    /* Rule 2: one vertex's row moved; the polygons using it recompute (and some change). */
    int changed = 0, tries = 0;
    for (int v = 0; v < pm->nverts && changed < 3; v++) {
        int32_t was = pm->verts[3 * v + 1];
        pm->verts[3 * v + 1] = was + 2;
        int used = 0;
        for (size_t i = 0; i < (size_t)pm->npolys * (size_t)pm->nvp; i++)
            used += pm->polys[i] == (uint32_t)v;
        if (used) {
            changed += check_against_fresh(&dc, pm, &dc.st.regions, dc.st.min_row, &reused);
            cr_assert_leq(reused, n3 - 1);
            tries++;
        }
        pm->verts[3 * v + 1] = was;
    }
    cr_assert_gt(changed, 0, "no vertex move of %d changed the detail", tries);
    /* Rule 3: one polygon's region taken from the spans of its box (its samples find no
     * floor); other polygons of the region may recompute, the rest reuse. */
    changed = 0;
    uint32_t n = dc.st.chf.span_count;
    uint16_t *reg2 = op_arena_alloc(dc.o, (size_t)n * 2 + 2);
    op_regions r2 = dc.st.regions;
    r2.reg = reg2;
    const op_chf *c = &dc.st.chf;
    uint8_t *in = op_arena_alloc(dc.o, (size_t)c->width * (size_t)c->depth + 1);
    for (int p = 0; p < pm->npolys && changed < 3; p++) {
        int k = 0, x0 = 1 << 30, x1 = -1, z0 = 1 << 30, z1 = -1;
        for (;
             k < pm->nvp && pm->polys[(size_t)p * (size_t)pm->nvp + (size_t)k] != OP_POLY_MESH_NULL;
             k++) {
            const int32_t *v = &pm->verts[3 * pm->polys[(size_t)p * (size_t)pm->nvp + (size_t)k]];
            x0 = v[0] < x0 ? v[0] : x0, x1 = v[0] > x1 ? v[0] : x1;
            z0 = v[2] < z0 ? v[2] : z0, z1 = v[2] > z1 ? v[2] : z1;
        }
        if (k < 3)
            continue;
        memcpy(reg2, dc.st.regions.reg, (size_t)n * 2);
        for (int z = z0; z < z1 && z < c->depth; z++)
            for (int x = x0; x < x1 && x < c->width; x++)
                for (uint32_t s = c->cells[x + z * c->width]; s < c->cells[x + z * c->width + 1];
                     s++)
                    if (reg2[s] == pm->regs[p])
                        reg2[s] = 0;
        int ch = check_against_fresh(&dc, pm, &r2, dc.st.min_row, &reused);
        /* The cut holds every cell p's samples read (they lie strictly inside the box):
         * p stops reusing when it has samples, and keeps reusing when it has none. */
        if (has_sample_cells(pm, p, c, dc.ds.sample_distance / pm->frame.cs, in))
            cr_assert_lt(reused, n3);
        changed += ch;
    }
    cr_assert_gt(changed, 0, "no region cut changed the detail");
    /* Rule 3 compares membership, not ids: every region id shifted by one still reuses. */
    for (uint32_t s = 0; s < n; s++)
        reg2[s] = (uint16_t)(dc.st.regions.reg[s] + 1);
    op_poly_mesh pm2 = *pm;
    pm2.regs = op_arena_alloc(dc.o, (size_t)pm->npolys * 2 + 2);
    for (int p = 0; p < pm->npolys; p++)
        pm2.regs[p] = (uint16_t)(pm->regs[p] + 1);
    cr_assert_eq(check_against_fresh(&dc, &pm2, &r2, dc.st.min_row, &reused), 0);
    cr_assert_eq(reused, n3);
    /* Rule 3a: regions named with the base region whose spans they have (ids shifted by one,
     * as a kept layer's renumbered regions) copy without the scan; a region cut in one
     * polygon's box and named with no base region (0) is scanned and recomputes. */
    uint16_t *from = op_arena_calloc(dc.o, (size_t)r2.region_count + 2, sizeof *from);
    for (int r = 1; r <= dc.st.regions.region_count; r++)
        from[r + 1] = (uint16_t)r;
    r2.region_count = dc.st.regions.region_count + 1;
    cr_assert_eq(check_against_fresh_from(&dc, &pm2, &r2, from, &reused), 0);
    cr_assert_eq(reused, n3);
    changed = 0;
    for (int p = 0; p < pm->npolys && changed < 3; p++) {
        int k = 0, x0 = 1 << 30, x1 = -1, z0 = 1 << 30, z1 = -1;
        for (;
             k < pm->nvp && pm->polys[(size_t)p * (size_t)pm->nvp + (size_t)k] != OP_POLY_MESH_NULL;
             k++) {
            const int32_t *v = &pm->verts[3 * pm->polys[(size_t)p * (size_t)pm->nvp + (size_t)k]];
            x0 = v[0] < x0 ? v[0] : x0, x1 = v[0] > x1 ? v[0] : x1;
            z0 = v[2] < z0 ? v[2] : z0, z1 = v[2] > z1 ? v[2] : z1;
        }
        if (k < 3)
            continue;
        int cut = pm2.regs[p];
        for (uint32_t s = 0; s < n; s++)
            reg2[s] = (uint16_t)(dc.st.regions.reg[s] + 1);
        for (int z = z0; z < z1 && z < c->depth; z++)
            for (int x = x0; x < x1 && x < c->width; x++)
                for (uint32_t s = c->cells[x + z * c->width]; s < c->cells[x + z * c->width + 1];
                     s++)
                    if (reg2[s] == cut)
                        reg2[s] = 0;
        from[cut] = 0; /* its spans are no longer base region cut - 1's */
        changed += check_against_fresh_from(&dc, &pm2, &r2, from, &reused);
        /* As above: p stops reusing only when it has samples (rule 3 reads no other cell). */
        if (has_sample_cells(pm, p, c, dc.ds.sample_distance / pm->frame.cs, in))
            cr_assert_lt(reused, n3);
        from[cut] = (uint16_t)(cut - 1);
    }
    cr_assert_gt(changed, 0, "no region cut changed the detail (rule 3a)");
    detail_case_close(&dc);
    world_close(&w);
}

/* Rule 3 compares the spans of the sample cells and no others: one polygon's region taken
 * from the spans of one cell of its box stops the detail reuse of exactly the polygons of
 * that region that sample the cell (counted with sample_cells), and the result is always a
 * fresh build's. A rule that compared the whole box, missed a cell on a cell line or
 * skipped the samples would miscount or differ. */
Test(rebuild, detail_reuse_reads_the_sample_cells)
{
    world w;
    world_open(&w, "dungeon", OP_PARTITION_LAYERS);
    detail_case dc;
    detail_case_open(&w, &dc, 8);
    const op_poly_mesh *pm = &dc.st.polys;
    const op_chf *c = &dc.st.chf;
    double sd = dc.ds.sample_distance / pm->frame.cs;
    size_t ncells = (size_t)c->width * (size_t)c->depth;
    uint8_t *cells = op_arena_alloc(dc.o, ncells * (size_t)pm->npolys + 1);
    uint8_t *cut = op_arena_alloc(dc.o, ncells + 1);
    int n3 = 0;
    for (int p = 0; p < pm->npolys; p++) {
        sample_cells(pm, p, c, sd, &cells[(size_t)p * ncells]);
        n3 += pm->polys[(size_t)p * (size_t)pm->nvp + 2] != OP_POLY_MESH_NULL;
    }
    uint32_t n = c->span_count;
    uint16_t *reg2 = op_arena_alloc(dc.o, (size_t)n * 2 + 2);
    op_regions r2 = dc.st.regions;
    r2.reg = reg2;
    int visited = 0, skipped = 0, changed = 0, reused = -1;
    for (int p = 0; p < pm->npolys; p++) {
        uint16_t r = pm->regs[p];
        int x0 = 1 << 30, x1 = -1, z0 = 1 << 30, z1 = -1;
        for (int k = 0;
             k < pm->nvp && pm->polys[(size_t)p * (size_t)pm->nvp + (size_t)k] != OP_POLY_MESH_NULL;
             k++) {
            const int32_t *v = &pm->verts[3 * pm->polys[(size_t)p * (size_t)pm->nvp + (size_t)k]];
            x0 = v[0] < x0 ? v[0] : x0, x1 = v[0] > x1 ? v[0] : x1;
            z0 = v[2] < z0 ? v[2] : z0, z1 = v[2] > z1 ? v[2] : z1;
        }
        /* Every sample cell of the polygon and every fifth other cell of its widened box. */
        int tried = 0;
        for (int z = z0 - 1 < 0 ? 0 : z0 - 1; z <= z1 && z < c->depth; z++)
            for (int x = x0 - 1 < 0 ? 0 : x0 - 1; x <= x1 && x < c->width; x++) {
                int ci = x + z * c->width;
                int has = 0;
                for (uint32_t s = c->cells[ci]; s < c->cells[ci + 1]; s++)
                    has |= dc.st.regions.reg[s] == r;
                int sampled = cells[(size_t)p * ncells + (size_t)ci];
                if (!has || (!sampled && (tried++ % 5) != 0))
                    continue;
                memcpy(reg2, dc.st.regions.reg, (size_t)n * 2);
                for (uint32_t s = c->cells[ci]; s < c->cells[ci + 1]; s++)
                    if (reg2[s] == r)
                        reg2[s] = 0;
                int expect = n3;
                for (int q = 0; q < pm->npolys; q++)
                    expect -= pm->regs[q] == r && cells[(size_t)q * ncells + (size_t)ci];
                changed += check_against_fresh(&dc, pm, &r2, dc.st.min_row, &reused);
                cr_assert_eq(reused, expect, "polygon %d cell (%d, %d)%s: %d reused, %d expected",
                             p, x, z, sampled ? " (sampled)" : "", reused, expect);
                visited += sampled;
                skipped += !sampled;
            }
        if (visited > 60 && skipped > 60)
            break;
    }
    /* Every sample cell of one polygon at once: its samples find no floor, which changes
     * the detail of the polygons whose heights they refined; the count still follows the
     * cells. */
    for (int p = 0; p < pm->npolys; p++) {
        uint16_t r = pm->regs[p];
        const uint8_t *pc = &cells[(size_t)p * ncells];
        memcpy(reg2, dc.st.regions.reg, (size_t)n * 2);
        int any = 0;
        memset(cut, 0, ncells);
        for (size_t ci = 0; ci < ncells; ci++)
            for (uint32_t s = c->cells[ci]; pc[ci] && s < c->cells[ci + 1]; s++)
                if (reg2[s] == r)
                    reg2[s] = 0, cut[ci] = 1, any = 1;
        if (!any)
            continue;
        int expect = n3;
        for (int q = 0; q < pm->npolys; q++) {
            int meets = 0;
            for (size_t ci = 0; ci < ncells && !meets; ci++)
                meets = cut[ci] && cells[(size_t)q * ncells + ci];
            expect -= pm->regs[q] == r && meets;
        }
        changed += check_against_fresh(&dc, pm, &r2, dc.st.min_row, &reused);
        cr_assert_eq(reused, expect, "polygon %d's sample cells: %d reused, %d expected", p, reused,
                     expect);
    }
    cr_assert_gt(visited, 0, "no sample cell tried");
    cr_assert_gt(skipped, 0, "no cell outside the samples tried");
    cr_assert_gt(changed, 0, "no cut of a sample cell changed the detail");
    detail_case_close(&dc);
    world_close(&w);
}

/* ---- contour reuse, rule by rule (build3d-runtime.md §5.7) ---- */

static int contours_eq(const op_contour_set *a, const op_contour_set *b)
{
    if (a->count != b->count || a->raw_fallbacks != b->raw_fallbacks ||
        a->dropped_holes != b->dropped_holes)
        return 0;
    for (int i = 0; i < a->count; i++) {
        const op_contour *x = &a->contours[i], *y = &b->contours[i];
        if (x->region != y->region || x->area != y->area || x->nholes != y->nholes ||
            x->nverts != y->nverts ||
            memcmp(x->verts, y->verts, (size_t)x->nverts * sizeof *x->verts) != 0)
            return 0;
    }
    return 1;
}

typedef struct contour_case {
    op_tile_stages st;
    op_contour_settings cs;
    op_contour_set set;
    op__contour_record rec;
    op__contour_base base;
    op_arena *o, *s;
} contour_case;

/* The tile with the most regions (the first of them), built again to last in o, s. */
static void build_richest_tile(const world *w, op_stage last, op_arena *o, op_arena *s,
                               op_tile_stages *st)
{
    op_err e;
    int best = -1, most = 0, tx, tz;
    for (int i = 0; i < w->ntiles; i++) {
        tile_of(w, i, &tx, &tz);
        op_arena_reset(o);
        cr_assert_eq(op_level_build_stages(w->lvl, tx, tz, last, 0, o, s, st, &e), OP_OK, "%s",
                     e.msg);
        if (!st->skipped && st->regions.region_count > most)
            best = i, most = st->regions.region_count;
    }
    cr_assert_geq(best, 0);
    tile_of(w, best, &tx, &tz);
    op_arena_reset(o);
    cr_assert_eq(op_level_build_stages(w->lvl, tx, tz, last, 0, o, s, st, &e), OP_OK, "%s", e.msg);
}

/* A dungeon tile with at least want regions, its contour stage as the capture runs it
 * (every region's contours and the per-region counts), as a contour base on its own field. */
static void contour_case_open(world *w, contour_case *cc, int want)
{
    memset(cc, 0, sizeof *cc);
    cc->o = op_arena_create(0);
    cc->s = op_arena_create(0);
    op_err e;
    build_richest_tile(w, OP_STAGE_CONTOURS, cc->o, cc->s, &cc->st);
    cr_assert_geq(cc->st.regions.region_count, want);
    op_contour_settings_default(&cc->cs);
    /* A small error: a region border that is no chord keeps its turns, so that area ids
     * (chords between regions of one area) show in the contours. */
    cc->cs.max_error = 0.01;
    cc->cs.max_edge_length = (int)(w->s.max_edge_length / w->s.cell_size + 0.5);
    cc->cs.straight_region_borders = w->s.straight_region_borders;
    cc->cs.border_region = cc->st.border_region;
    cr_assert_eq(op__contours_build_reuse(&cc->st.chf, &cc->st.regions, &cc->cs, NULL, NULL,
                                          &cc->rec, cc->o, cc->s, &cc->set, &e),
                 OP_OK, "%s", e.msg);
    op__contour_base *b = &cc->base;
    b->cells = cc->st.chf.cells;
    b->y = cc->st.chf.y;
    b->links = (const uint32_t(*)[4])cc->st.chf.links;
    b->span_count = cc->st.chf.span_count;
    uint32_t n = cc->st.chf.span_count;
    uint16_t *reg = op_arena_alloc(cc->o, (size_t)n * 2 + 2); /* the base's own copies */
    memcpy(reg, cc->st.regions.reg, (size_t)n * 2);
    b->reg = reg;
    int nr = cc->st.regions.region_count;
    uint8_t *area = op_arena_alloc(cc->o, (size_t)nr + 1);
    memcpy(area, cc->st.regions.region_area, (size_t)nr + 1);
    b->region_area = area;
    b->region_count = nr;
    b->max_error = cc->cs.max_error;
    b->max_edge_length = cc->cs.max_edge_length;
    b->straight_region_borders = cc->cs.straight_region_borders;
    b->border_region = cc->cs.border_region;
    b->contours = cc->set.contours;
    b->first = cc->rec.first;
    b->fallbacks = cc->rec.fallbacks;
    b->dropped = cc->rec.dropped;
    /* The spans per region as the capture counts them (contours_against_fresh also runs the
     * plan without them, the pass reading every span: the oracle of its own). */
    uint32_t *spans = op_arena_calloc(cc->o, (size_t)nr + 1, sizeof *spans);
    for (uint32_t s = 0; s < n; s++)
        spans[reg[s]]++;
    b->spans = spans;
    /* The links across each region, as the capture keeps them (§5.7). */
    uint32_t *af, *al;
    cr_assert_eq(op__contours_across(&cc->st.chf, reg, nr, cc->o, &af, &al, &e), OP_OK, "%s",
                 e.msg);
    b->across_first = af;
    b->across = al;
}

/* The reuse plan's marks against the rule computed here span by span (build3d-regions.md §6
 * "Edges", the whole field's view): a span of a region the plan copies, or without a region,
 * has none; any other span of region r has bit d (and d + 4) when its link d is missing or
 * leads to a span of another region. plan.edges is their count, plan.skipped the copied
 * regions' spans. Plans that copy nothing are not looked at (their marks are not used). */
static void plan_marks_follow_the_rule(contour_case *cc, const op_chf *chf, const op_regions *regs,
                                       const op__contour_base *base)
{
    op_arena_mark mark = op_arena_get_mark(cc->s);
    op__contour_plan plan;
    op_err e;
    cr_assert_eq(op__contour_plan_make(chf, regs, &cc->cs, base, cc->s, &plan, &e), OP_OK, "%s",
                 e.msg);
    if (plan.count > 0) {
        size_t edges = 0, skipped = 0;
        for (uint32_t s = 0; s < chf->span_count; s++) {
            uint32_t r = regs->reg[s], m = 0;
            if (r != 0 && plan.skip[r]) {
                skipped++;
            } else if (r != 0) {
                for (int d = 0; d < 4; d++) {
                    uint32_t t = chf->links[s][d];
                    if (t == OP_NO_LINK || regs->reg[t] != r)
                        m |= 1u << d;
                }
            }
            edges += (size_t)__builtin_popcount(m);
            cr_assert_eq(plan.mask[s], (uint8_t)(m | m << 4),
                         "span %u (region %u, copied %d): marks %#x, the rule %#x", s, r,
                         plan.skip[r], plan.mask[s], (unsigned)(m | m << 4));
        }
        cr_assert_eq(plan.edges, edges);
        cr_assert_eq(plan.skipped, skipped);
    }
    op_arena_release(cc->s, mark);
}

/* Contours of regs on cc's field (chf given: cc's or a copy), from scratch and with cc's
 * base: they must be equal. Returns 1 when they differ from the base's contours. */
static int contours_against_fresh(contour_case *cc, const op_chf *chf, const op_regions *regs,
                                  int *reused)
{
    op_contour_set fresh_set, reuse_set;
    op_err e;
    cr_assert_eq(op_contours_build(chf, regs, &cc->cs, cc->o, cc->s, &fresh_set, &e), OP_OK, "%s",
                 e.msg);
    cr_assert_eq(op__contours_build_reuse(chf, regs, &cc->cs, &cc->base, reused, NULL, cc->o, cc->s,
                                          &reuse_set, &e),
                 OP_OK, "%s", e.msg);
    cr_assert(contours_eq(&fresh_set, &reuse_set), "reused contours differ from fresh ones");
    /* Without the base's spans per region and links across regions the plan reads every
     * span and collects the links across the candidates itself: the same copies. */
    op__contour_base plain = cc->base;
    plain.spans = NULL;
    plain.across_first = NULL;
    plain.across = NULL;
    op_contour_set plain_set;
    int plain_reused = -1;
    cr_assert_eq(op__contours_build_reuse(chf, regs, &cc->cs, &plain, &plain_reused, NULL, cc->o,
                                          cc->s, &plain_set, &e),
                 OP_OK, "%s", e.msg);
    cr_assert(contours_eq(&fresh_set, &plain_set), "reused contours differ from fresh ones");
    plan_marks_follow_the_rule(cc, chf, regs, &cc->base);
    plan_marks_follow_the_rule(cc, chf, regs, &plain);
    if (reused)
        cr_assert_eq(*reused, plain_reused, "%d regions copied, %d reading every span", *reused,
                     plain_reused);
    return !contours_eq(&fresh_set, &cc->set);
}

/* Regions of regs with at least one span. */
static int regions_with_spans(const op_regions *regs)
{
    int n = 0;
    for (int r = 1; r <= regs->region_count; r++) {
        uint32_t s = 0;
        while (s < regs->span_count && regs->reg[s] != r)
            s++;
        n += s < regs->span_count;
    }
    return n;
}

Test(rebuild, contour_reuse_follows_each_rule)
{
    world w;
    world_open(&w, "multifloor", OP_PARTITION_WATERSHED);
    contour_case cc;
    contour_case_open(&w, &cc, 5);
    const op_chf *chf = &cc.st.chf;
    uint32_t n = chf->span_count;
    int nr = cc.st.regions.region_count, border = cc.cs.border_region, reused = -1;
    int live = regions_with_spans(&cc.st.regions);
    if (getenv("DBG")) {
        int adj = 0;
        for (uint32_t s = 0; s < n; s++)
            for (int d = 0; d < 4; d++) {
                uint32_t t = chf->links[s][d];
                if (t != OP_NO_LINK && cc.st.regions.reg[t] != cc.st.regions.reg[s] &&
                    cc.st.regions.reg[t] && cc.st.regions.reg[s] &&
                    cc.st.regions.reg[t] != border && cc.st.regions.reg[s] != border)
                    adj++;
            }
        fprintf(stderr, "regions %d border %d live %d adj %d areas", nr, border, live, adj);
        for (int r = 0; r <= nr; r++)
            fprintf(stderr, " %d", cc.st.regions.region_area[r]);
        fprintf(stderr, "\n");
    }
    /* The same regions: every region copies. */
    cr_assert_eq(contours_against_fresh(&cc, chf, &cc.st.regions, &reused), 0);
    cr_assert_eq(reused, live);
    /* Renumbered (the ids below the border band's reversed): all copy, renamed. */
    op_regions r2 = cc.st.regions;
    r2.reg = op_arena_alloc(cc.o, (size_t)n * 2 + 2);
    r2.region_area = op_arena_alloc(cc.o, (size_t)nr + 2);
    for (int r = 0; r <= nr; r++) {
        int to = r == 0 || r == border ? r : border - r;
        r2.region_area[to] = cc.st.regions.region_area[r];
    }
    for (uint32_t s = 0; s < n; s++) {
        int r = cc.st.regions.reg[s];
        r2.reg[s] = (uint16_t)(r == 0 || r == border ? r : border - r);
    }
    cr_assert_eq(contours_against_fresh(&cc, chf, &r2, &reused), 1);
    cr_assert_eq(reused, live);
    /* Rule 2: one span of a region given to a neighbouring region. */
    int moved = 0;
    for (uint32_t s = 0; s < n && moved < 4; s++) {
        int r = cc.st.regions.reg[s];
        if (r == 0 || r == border)
            continue;
        for (int d = 0; d < 4; d++) {
            uint32_t t = chf->links[s][d];
            if (t == OP_NO_LINK || cc.st.regions.reg[t] == r || cc.st.regions.reg[t] == 0)
                continue;
            memcpy(r2.reg, cc.st.regions.reg, (size_t)n * 2);
            memcpy(r2.region_area, cc.st.regions.region_area, (size_t)nr + 1);
            r2.reg[s] = cc.st.regions.reg[t];
            moved += contours_against_fresh(&cc, chf, &r2, &reused);
            cr_assert_leq(reused, live - 2);
            s += 97; /* spread the cases over the tile */
            break;
        }
    }
    cr_assert_gt(moved, 0);
    /* Rule 3, area ids: each region's area changed in turn. It does not copy (rule 2),
     * nor does any region whose base contours name it (a chord between two regions depends
     * on both areas): exactly the others copy. */
    for (int k = 1; k <= nr; k++) {
        memcpy(r2.reg, cc.st.regions.reg, (size_t)n * 2);
        memcpy(r2.region_area, cc.st.regions.region_area, (size_t)nr + 1);
        r2.region_area[k] = (uint8_t)(cc.st.regions.region_area[k] == 1 ? 2 : 1);
        int naming = 0;
        for (int r = 1; r <= nr; r++) {
            int names = 0;
            for (int c = cc.rec.first[r]; r != k && c < cc.rec.first[r + 1]; c++)
                for (int q = 0; q < cc.set.contours[c].nverts; q++)
                    names |= cc.set.contours[c].verts[q].neighbour == k;
            naming += names;
        }
        contours_against_fresh(&cc, chf, &r2, &reused);
        cr_assert_eq(reused, live - 1 - naming, "area of region %d: %d copied, %d name it", k,
                     reused, naming);
    }
    /* Rule 3, value 0: a span without a region (next to a region) gets a region of its own. */
    int gained = 0;
    op_regions r3 = cc.st.regions;
    r3.reg = r2.reg;
    r3.region_count = nr + 1;
    r3.region_area = op_arena_alloc(cc.o, (size_t)nr + 3);
    memcpy(r3.region_area, cc.st.regions.region_area, (size_t)nr + 1);
    r3.region_area[nr + 1] = 1;
    for (uint32_t s = 0; s < n && gained < 4; s++) {
        if (cc.st.regions.reg[s] != 0)
            continue;
        int near = 0;
        for (int d = 0; d < 4; d++) {
            uint32_t t = chf->links[s][d];
            near |= t != OP_NO_LINK && cc.st.regions.reg[t] != 0 && cc.st.regions.reg[t] != border;
        }
        if (!near)
            continue;
        memcpy(r2.reg, cc.st.regions.reg, (size_t)n * 2);
        r2.reg[s] = (uint16_t)(nr + 1);
        cr_assert_eq(contours_against_fresh(&cc, chf, &r3, &reused), 1);
        cr_assert_lt(reused, live);
        gained++;
        s += 97;
    }
    cr_assert_gt(gained, 0);
    /* Rule 3 reads only the links across b: a span inside region k (all its links to k)
     * losing its region, as under an obstacle, leaves every other region's copy, though k
     * is no longer clean; the same on a span of k next to another region r stops r's. */
    int inner = 0, edge = 0;
    for (uint32_t s = 0; s < n && (inner < 3 || edge < 3); s++) {
        int k = cc.st.regions.reg[s], all_k = 1, other = 0;
        if (k == 0 || k == border)
            continue;
        for (int d = 0; d < 4; d++) {
            uint32_t t = chf->links[s][d];
            all_k &= t != OP_NO_LINK && cc.st.regions.reg[t] == k;
            if (t != OP_NO_LINK && cc.st.regions.reg[t] != k && cc.st.regions.reg[t] != 0)
                other = cc.st.regions.reg[t];
        }
        if ((all_k && inner < 3) || (other && edge < 3)) {
            memcpy(r2.reg, cc.st.regions.reg, (size_t)n * 2);
            memcpy(r2.region_area, cc.st.regions.region_area, (size_t)nr + 1);
            r2.reg[s] = 0;
            cr_assert_eq(contours_against_fresh(&cc, chf, &r2, &reused), 1);
            if (all_k) {
                cr_assert_eq(reused, live - 1, "span %u inside region %d: %d of %d copied", s, k,
                             reused, live);
                inner++;
            } else {
                cr_assert_leq(reused, live - 2, "span %u of %d next to %d: %d of %d copied", s, k,
                              other, reused, live);
                edge++;
            }
            s += 53;
        }
    }
    cr_assert_gt(inner, 0);
    cr_assert_gt(edge, 0);
    /* Rule 1: another field (equal bytes, other arrays): nothing copies. */
    op_chf c2 = *chf;
    c2.y = op_arena_alloc(cc.o, (size_t)n * 2 + 2);
    memcpy(c2.y, chf->y, (size_t)n * 2);
    cr_assert_eq(contours_against_fresh(&cc, &c2, &cc.st.regions, &reused), 0);
    cr_assert_eq(reused, 0);
    op_arena_destroy(cc.o);
    op_arena_destroy(cc.s);
    world_close(&w);
}

/* With a base, the region ids are checked by the reuse plan's pass over the spans (a span
 * whose id is the base's only counted, ids above region_count found among the counts): the
 * status and message must be a build's from scratch (the oracle) on every kind of bad id. */
static void ids_as_a_build(contour_case *cc, const op_chf *chf, const op_regions *regs,
                           const char *what)
{
    op_contour_set a, b;
    op_err ea, eb;
    op_status sa = op_contours_build(chf, regs, &cc->cs, cc->o, cc->s, &a, &ea);
    op_status sb =
        op__contours_build_reuse(chf, regs, &cc->cs, &cc->base, NULL, NULL, cc->o, cc->s, &b, &eb);
    cr_assert_eq(sa, OP_EINVAL, "%s: %s", what, sa == OP_OK ? "accepted" : ea.msg);
    cr_assert_eq(sb, sa, "%s: status %d, a build's %d (%s)", what, sb, sa,
                 sb == OP_OK ? "accepted" : eb.msg);
    cr_assert_str_eq(eb.msg, ea.msg, "%s", what);
    cr_assert(b.count == 0 && b.width == 0 && b.contours == NULL,
              "%s: a failed build leaves its result cleared", what);
}

Test(rebuild, contour_reuse_checks_ids_as_a_build)
{
    world w;
    world_open(&w, "multifloor", OP_PARTITION_WATERSHED);
    contour_case cc;
    contour_case_open(&w, &cc, 5);
    const op_chf *chf = &cc.st.chf;
    uint32_t n = chf->span_count;
    int nr = cc.st.regions.region_count;
    op_regions r2 = cc.st.regions;
    r2.reg = op_arena_alloc(cc.o, (size_t)n * 2 + 2);
    /* An id above region_count where the base has another (first, middle, last span; just
     * above and the largest). */
    uint32_t at[3] = {0, n / 2, n - 1};
    for (int k = 0; k < 3; k++)
        for (int v = 0; v < 2; v++) {
            memcpy(r2.reg, cc.st.regions.reg, (size_t)n * 2);
            r2.reg[at[k]] = (uint16_t)(v == 0 ? nr + 1 : 0xffff);
            ids_as_a_build(&cc, chf, &r2, "an id above region_count");
        }
    /* region_count lowered: the spans of id nr carry the base's id, so the pass only counts
     * them; alone, then after and before a bad id of the other kind (the first is named). */
    r2.region_count = nr - 1;
    uint32_t first = 0;
    while (cc.st.regions.reg[first] != nr)
        first++;
    memcpy(r2.reg, cc.st.regions.reg, (size_t)n * 2);
    ids_as_a_build(&cc, chf, &r2, "region_count lowered");
    cr_assert_lt(first + 1, n);
    r2.reg[first + 1 + (n - first - 1) / 2] = 0xffff;
    ids_as_a_build(&cc, chf, &r2, "region_count lowered, a bad id after");
    if (first > 0) {
        memcpy(r2.reg, cc.st.regions.reg, (size_t)n * 2);
        r2.reg[first / 2] = 0xffff;
        ids_as_a_build(&cc, chf, &r2, "region_count lowered, a bad id before");
    }
    /* A base that does not fit (another field): the check is the build's own pass. */
    op_chf c2 = *chf;
    c2.y = op_arena_alloc(cc.o, (size_t)n * 2 + 2);
    memcpy(c2.y, chf->y, (size_t)n * 2);
    r2.region_count = nr;
    memcpy(r2.reg, cc.st.regions.reg, (size_t)n * 2);
    r2.reg[n / 3] = (uint16_t)(nr + 1);
    ids_as_a_build(&cc, &c2, &r2, "another field");
    /* And valid ids with a base still build (the counts taken for the check are the plan's). */
    int reused = -1;
    cr_assert_eq(contours_against_fresh(&cc, chf, &cc.st.regions, &reused), 0);
    cr_assert_gt(reused, 0);
    op_arena_destroy(cc.o);
    op_arena_destroy(cc.s);
    world_close(&w);
}

/* ---- stretch reuse, rule by rule (build3d-runtime.md §5.13) ---- */

typedef struct stretch_case {
    op_tile_stages st;
    op_contour_settings cs;
    op_contour_trace tr;
    const op__stretch_set *set;
    void *mem;
    op_arena *o, *s;
} stretch_case;

/* The richest dungeon tile's contour stage run as a capture runs it (its settings,
 * recording the stretches), the record packed as an entry holds it, and the raw loops of
 * the same field (op_contours_trace: the loops the contour stage simplifies). */
static void stretch_case_open(world *w, stretch_case *sc)
{
    memset(sc, 0, sizeof *sc);
    sc->o = op_arena_create(0);
    sc->s = op_arena_create(0);
    build_richest_tile(w, OP_STAGE_CONTOURS, sc->o, sc->s, &sc->st);
    op_contour_settings_default(&sc->cs);
    sc->cs.max_error = w->s.contour_max_error;
    sc->cs.max_edge_length = (int)(w->s.max_edge_length / w->s.cell_size + 0.5);
    sc->cs.straight_region_borders = w->s.straight_region_borders;
    sc->cs.border_region = sc->st.border_region;
    op__contour_record rec;
    memset(&rec, 0, sizeof rec);
    rec.want_stretches = 1;
    op_contour_set set;
    op_err e;
    cr_assert_eq(op__contours_build_reuse(&sc->st.chf, &sc->st.regions, &sc->cs, NULL, NULL, &rec,
                                          sc->o, sc->s, &set, &e),
                 OP_OK, "%s", e.msg);
    sc->mem = malloc(op__stretch_bytes(&rec.stretches));
    sc->set = op__stretch_pack(&rec.stretches, sc->mem);
    cr_assert_gt(sc->set->count, 3, "too few stretches recorded (%d)", sc->set->count);
    cr_assert_eq(op_contours_trace(&sc->st.chf, &sc->st.regions, sc->o, sc->s, &sc->tr, &e), OP_OK,
                 "%s", e.msg);
}

static void stretch_case_close(stretch_case *sc)
{
    free(sc->mem);
    op_arena_destroy(sc->o);
    op_arena_destroy(sc->s);
}

/* Loop v (n vertices) of region `region` simplified with set and without any; the two must
 * be equal (vertices and fallback). Returns the stretches taken from set. */
static int simplify_both(stretch_case *sc, const op__stretch_set *set, const op_contour_vert *v,
                         int n, int region)
{
    op_err e;
    int hits = 0, m0 = 0, m1 = 0, f0 = 0, f1 = 0;
    op_contour_vert *a = op_arena_alloc(sc->o, (size_t)n * sizeof *a + 16);
    op_contour_vert *b = op_arena_alloc(sc->o, (size_t)n * sizeof *b + 16);
    op__simplify_ctx fresh = {&sc->cs, &sc->st.regions, sc->s, &e, NULL, NULL, NULL};
    op__simplify_ctx reuse = {&sc->cs, &sc->st.regions, sc->s, &e, set, NULL, &hits};
    int64_t area2 = op__loop_area2(v, n);
    cr_assert_eq(op__simplify_loop(&fresh, v, n, area2, region, a, &m0, &f0), OP_OK, "%s", e.msg);
    cr_assert_eq(op__simplify_loop(&reuse, v, n, area2, region, b, &m1, &f1), OP_OK, "%s", e.msg);
    cr_assert(m0 == m1 && f0 == f1 && memcmp(a, b, (size_t)m0 * sizeof *a) == 0,
              "loop of region %d (%d vertices): a stretch copied from the record differs", region,
              n);
    return hits;
}

/* Every loop of the case with set; the stretches taken from it in all. */
static int simplify_all_loops(stretch_case *sc, const op__stretch_set *set)
{
    int hits = 0;
    for (int i = 0; i < sc->tr.count; i++)
        hits +=
            simplify_both(sc, set, sc->tr.loops[i].verts, sc->tr.loops[i].nverts, sc->tr.region[i]);
    return hits;
}

/* A copy of set whose stretch i keeps every inner vertex (what a wrong copy would give):
 * the arrays are malloc'd into *keep (freed by the caller). */
static op__stretch_set forged(const op__stretch_set *set, int i, uint32_t **keep)
{
    op__stretch_set f = *set;
    uint32_t total = set->kfirst[set->count] + (set->first[i + 1] - set->first[i]);
    uint32_t *kfirst = malloc(((size_t)set->count + 1) * 4), *kept = malloc((size_t)total * 4 + 4);
    uint32_t at = 0;
    for (int j = 0; j < set->count; j++) {
        kfirst[j] = at;
        if (j == i)
            for (uint32_t k = 1; k + 1 < set->first[j + 1] - set->first[j]; k++)
                kept[at++] = k;
        else
            for (uint32_t k = set->kfirst[j]; k < set->kfirst[j + 1]; k++)
                kept[at++] = set->kept[k];
    }
    kfirst[set->count] = at;
    f.kfirst = kfirst;
    f.kept = kept;
    keep[0] = kfirst;
    keep[1] = kept;
    return f;
}

/* A stretch of set that its refinement did not keep whole (so that a forged copy differs). */
static int partial_stretch(const op__stretch_set *set)
{
    for (int i = 0; i < set->count; i++)
        if (set->kfirst[i + 1] - set->kfirst[i] + 2 < set->first[i + 1] - set->first[i])
            return i;
    return -1;
}

Test(rebuild, stretch_reuse_follows_each_rule)
{
    world w;
    world_open(&w, "dungeon", OP_PARTITION_LAYERS);
    stretch_case sc;
    stretch_case_open(&w, &sc);
    const op__stretch_set *set = sc.set;
    /* The same loops: every recorded stretch is found again (several loops of a field may
     * hold one stretch, never fewer hits than records), the result a fresh one. */
    int all = simplify_all_loops(&sc, set);
    cr_assert_geq(all, set->count, "%d stretches taken, %d recorded", all, set->count);
    /* One inner raw vertex moved: its stretch is refined afresh (one hit fewer in its loop),
     * the others of the loop still copy. Vertices next to the band keep their band corners. */
    int moved = 0;
    for (int i = 0; i < sc.tr.count && moved < 6; i++) {
        const op_raw_loop *l = &sc.tr.loops[i];
        int n = l->nverts, before = simplify_both(&sc, set, l->verts, n, sc.tr.region[i]);
        if (before == 0)
            continue;
        op_contour_vert *c = op_arena_alloc(sc.o, (size_t)n * sizeof *c + 16);
        for (int k = 0; k < n; k++) {
            int p = (k + n - 1) % n, q = (k + 1) % n;
            /* k inside a stretch: its neighbour value and its successor's are its
             * predecessor's (no portal at k or k + 1), none is the band. */
            if (l->verts[k].neighbour != l->verts[p].neighbour ||
                l->verts[q].neighbour != l->verts[k].neighbour ||
                l->verts[k].neighbour == sc.cs.border_region)
                continue;
            memcpy(c, l->verts, (size_t)n * sizeof *c);
            c[k].x += 1;
            int after = simplify_both(&sc, set, c, n, sc.tr.region[i]);
            if (after == before - 1) {
                moved++;
                break;
            }
            /* A vertex of a short stretch (not recorded) or of a chord: nothing copied. */
            cr_assert_eq(after, before, "loop %d vertex %d: %d hits, %d before", i, k, after,
                         before);
        }
    }
    cr_assert_gt(moved, 0, "no moved vertex made its stretch miss");
    int i = partial_stretch(set);
    cr_assert_geq(i, 0, "every stretch kept whole");
    uint32_t *keep[2];
    /* A record whose start, first inner or end point differs, its key left as it was (the
     * key holds the ends, a collision would): the point comparison refuses it, whatever it
     * keeps. */
    for (int which = 0; which < 3; which++) {
        op__stretch_set f = forged(set, i, keep);
        uint16_t *pts = malloc((size_t)set->first[set->count] * 4 + 4);
        memcpy(pts, set->pts, (size_t)set->first[set->count] * 4);
        uint32_t at = which == 0   ? set->first[i]
                      : which == 1 ? set->first[i] + 1
                                   : set->first[i + 1] - 1;
        pts[2 * at + (uint32_t)(which == 2)] ^= 1;
        f.pts = pts;
        cr_assert_lt(simplify_all_loops(&sc, &f), all, "point %d of the stretch changed", which);
        free(pts);
        free(keep[0]);
        free(keep[1]);
    }
    /* A record with the other wall flag (its key still the stretch's). */
    {
        op__stretch_set f = forged(set, i, keep);
        uint8_t *wall = malloc((size_t)set->count + 1);
        memcpy(wall, set->wall, (size_t)set->count);
        wall[i] ^= 1;
        f.wall = wall;
        cr_assert_lt(simplify_all_loops(&sc, &f), all);
        free(wall);
        free(keep[0]);
        free(keep[1]);
    }
    /* Every region of one area: the region borders become chords, which are not refined,
     * so the records of their stretches (refined in the capture) must not be taken. */
    {
        uint8_t *was = sc.st.regions.region_area;
        int nr = sc.st.regions.region_count, chords = 0;
        uint8_t *one = op_arena_alloc(sc.o, (size_t)nr + 1);
        for (int r = 0; r <= nr; r++) {
            one[r] = 63;
            chords += r > 0 && was[r] != 63;
        }
        cr_assert_gt(chords, 0, "no region of another area");
        sc.st.regions.region_area = one;
        cr_assert_lt(simplify_all_loops(&sc, set), all);
        sc.st.regions.region_area = was;
    }
    /* A record made with another MaxError or MaxEdgeLength: nothing is taken. */
    {
        op__stretch_set f = forged(set, i, keep);
        f.e2 = set->e2 * 4.0 + 1.0;
        cr_assert_eq(simplify_all_loops(&sc, &f), 0);
        f.e2 = set->e2;
        f.edge2 = set->edge2 + 1;
        cr_assert_eq(simplify_all_loops(&sc, &f), 0);
        free(keep[0]);
        free(keep[1]);
    }
    stretch_case_close(&sc);
    world_close(&w);
}

/* The trace of a layer view (op_contour_settings.span_layer: each layer of a tile apart) walks
 * with the view's link and neighbour tests, the whole field's with none (the walk is compiled
 * once for each). Oracle: the layer's spans alone as a field of their own (links leaving the
 * layer cut), traced whole. The raw loops must agree vertex by vertex (corners' heights read
 * only in the layer), but at a seam: a cut link is 0 there, the layer view names the other
 * layer's region (0 for the band's or none). */
Test(rebuild, contour_trace_of_a_layer_view_is_its_layer_alone)
{
    world w;
    world_open(&w, "multifloor", OP_PARTITION_LAYERS);
    op_arena *o = op_arena_create(0), *sc = op_arena_create(0);
    int seams = 0, heights = 0, layered = 0;
    for (int tile = 0; tile < w.ntiles; tile++) {
        op_arena_reset(o);
        op_arena_reset(sc);
        op_tile_stages st;
        int tx, tz;
        op_err te;
        tile_of(&w, tile, &tx, &tz);
        cr_assert_eq(op_level_build_stages(w.lvl, tx, tz, OP_STAGE_REGIONS, 0, o, sc, &st, &te),
                     OP_OK, "%s", te.msg);
        if (st.skipped || !st.span_layer)
            continue;
        const op_chf *chf = &st.chf;
        const op_regions *regs = &st.regions;
        uint32_t n = chf->span_count;
        size_t ncell = (size_t)chf->width * chf->depth;
        int nl = 0;
        for (uint32_t s = 0; s < n; s++)
            if (regs->reg[s] && st.span_layer[s] != OP_NO_LAYER && st.span_layer[s] + 1 > nl)
                nl = st.span_layer[s] + 1;
        layered += nl >= 2;
        uint32_t *to = op_arena_alloc(o, (size_t)n * 4 + 4);
        for (int L = 0; L < nl; L++) {
            op_contour_settings cs;
            op_contour_settings_default(&cs);
            cs.span_layer = st.span_layer;
            cs.layer = L;
            cs.border_region = st.border_region;
            op_chf sub = *chf;
            op_regions sr = *regs;
            sub.cells = op_arena_alloc(o, (ncell + 1) * 4);
            sub.y = op_arena_alloc(o, (size_t)n * 2 + 2);
            sub.links = op_arena_alloc(o, (size_t)n * sizeof *sub.links + 16);
            sr.reg = op_arena_alloc(o, (size_t)n * 2 + 2);
            uint32_t m = 0;
            for (size_t c = 0; c < ncell; c++) {
                sub.cells[c] = m;
                for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
                    int in = regs->reg[s] != 0 && st.span_layer[s] == L;
                    to[s] = in ? m : OP_NO_LINK;
                    if (in) {
                        sub.y[m] = chf->y[s];
                        sr.reg[m++] = regs->reg[s];
                    }
                }
            }
            sub.cells[ncell] = m;
            sub.span_count = sr.span_count = m;
            for (uint32_t s = 0; s < n; s++)
                for (int d = 0; to[s] != OP_NO_LINK && d < 4; d++) {
                    uint32_t t = chf->links[s][d];
                    sub.links[to[s]][d] = t == OP_NO_LINK ? OP_NO_LINK : to[t];
                }
            op__loops lv, ov;
            op_err e;
            cr_assert_eq(op__contours_trace(chf, regs, &cs, o, sc, &lv, &e), OP_OK, "%s", e.msg);
            cr_assert_eq(op__contours_trace(&sub, &sr, NULL, o, sc, &ov, &e), OP_OK, "%s", e.msg);
            cr_assert_eq(lv.count, ov.count, "layer %d: %d loops, alone %d", L, lv.count, ov.count);
            cr_assert_eq(lv.start[lv.count], ov.start[ov.count], "layer %d: raw vertices", L);
            for (int i = 0; i < lv.count; i++) {
                cr_assert_eq(lv.region[i], ov.region[i]);
                cr_assert_eq(lv.start[i], ov.start[i]);
            }
            for (size_t k = 0; k < lv.start[lv.count]; k++) {
                const op_contour_vert *a = &lv.verts[k], *b = &ov.verts[k];
                cr_assert(a->x == b->x && a->y == b->y && a->z == b->z, "layer %d vertex %zu", L,
                          k);
                if (a->neighbour != b->neighbour) {
                    cr_assert(b->neighbour == 0 && a->neighbour > 0 &&
                                  a->neighbour != st.border_region,
                              "layer %d vertex %zu: neighbour %d, alone %d", L, k, a->neighbour,
                              b->neighbour);
                    seams++;
                }
            }
            /* The whole field's trace of these spans reads heights across the layers: the
             * oracle is not that one (else the test would not see a walk of the wrong kind). */
            op_contour_settings all = cs;
            all.span_layer = NULL;
            op__loops wv;
            cr_assert_eq(op__contours_trace(chf, regs, &all, o, sc, &wv, &e), OP_OK, "%s", e.msg);
            for (int i = 0, j = 0; i < ov.count && j < wv.count; j++) {
                if (wv.region[j] != ov.region[i] ||
                    wv.start[j + 1] - wv.start[j] != ov.start[i + 1] - ov.start[i])
                    continue;
                for (size_t k = 0; k < ov.start[i + 1] - ov.start[i]; k++)
                    heights += wv.verts[wv.start[j] + k].y != ov.verts[ov.start[i] + k].y;
                i++;
            }
        }
    }
    cr_assert_gt(layered, 0, "tiles of several layers");
    cr_assert_gt(seams, 0, "seams between layers");
    cr_assert_gt(heights, 0, "corner heights that the other layers would raise");
    op_arena_destroy(o);
    op_arena_destroy(sc);
    world_close(&w);
}

/* ---- regions reuse, rule by rule (build3d-runtime.md §5.9) ---- */

/* A tile's regions stage from scratch (the tile with the most regions) and a region base on
 * its own field, as the capture keeps it (rebuild.c): the arrays are the build's, the
 * outputs the base's own copies. */
typedef struct region_case {
    op_tile_stages st;
    op__region_base base;
    op_region_settings rs;
    int tile_cells;
    op_arena *o, *s;
} region_case;

static void region_case_open(world *w, region_case *rc)
{
    memset(rc, 0, sizeof *rc);
    rc->o = op_arena_create(0);
    rc->s = op_arena_create(0);
    build_richest_tile(w, OP_STAGE_REGIONS, rc->o, rc->s, &rc->st);
    cr_assert_geq(rc->st.regions.region_count, 4);
    const op_tile_stages *st = &rc->st;
    const op_chf *c = &st->chf;
    rc->rs = (op_region_settings){w->s.partition, w->s.min_region_area, w->s.merge_region_area};
    rc->tile_cells = c->width - 2 * c->border;
    op__region_base *b = &rc->base;
    uint32_t n = c->span_count;
    b->cells = c->cells;
    b->y = c->y;
    b->links = (const uint32_t(*)[4])c->links;
    b->span_layer = st->span_layer;
    b->span_count = n;
    b->width = c->width;
    b->depth = c->depth;
    b->border = c->border;
    b->tile_cells = rc->tile_cells;
    uint8_t *areas = op_arena_alloc(rc->o, (size_t)n + 1);
    memcpy(areas, c->areas, n);
    b->areas = areas;
    uint16_t *reg = op_arena_alloc(rc->o, (size_t)n * 2 + 2);
    memcpy(reg, st->regions.reg, (size_t)n * 2);
    b->reg = reg;
    b->region_count = st->regions.region_count;
    uint8_t *ra = op_arena_alloc(rc->o, (size_t)b->region_count + 1);
    memcpy(ra, st->regions.region_area, (size_t)b->region_count + 1);
    b->region_area = ra;
    b->border_region = st->border_region;
    if (st->region_layer) {
        uint16_t *rl = op_arena_alloc(rc->o, (size_t)st->border_region * 2 + 2);
        memcpy(rl, st->region_layer, (size_t)st->border_region * 2);
        b->region_layer = rl;
        b->nregion_layer = st->border_region;
    }
    b->rs = rc->rs;
}

static void region_case_close(region_case *rc)
{
    op_arena_destroy(rc->o);
    op_arena_destroy(rc->s);
}

static int fits(const region_case *rc, const op_chf *chf, const uint16_t *span_layer,
                const op_region_settings *rs, int tile_cells)
{
    return op__regions_base_fits(&rc->base, chf, span_layer, rs, tile_cells);
}

static void regions_rules_on(const char *what, op_partition p)
{
    world w;
    world_open(&w, what, p);
    region_case rc;
    region_case_open(&w, &rc);
    const op_chf *chf = &rc.st.chf;
    const op_tile_stages *st = &rc.st;
    uint32_t n = chf->span_count;
    int tc = rc.tile_cells;
    /* The same input (the areas as another array of equal bytes): the base's regions. */
    op_chf c2 = *chf;
    c2.areas = op_arena_alloc(rc.o, (size_t)n + 1);
    memcpy(c2.areas, chf->areas, n);
    cr_assert(fits(&rc, &c2, st->span_layer, &rc.rs, tc), "%s: the same input", what);
    op_regions got;
    uint16_t *rl = NULL;
    int border = -1;
    cr_assert_eq(op__regions_from_base(&rc.base, rc.o, &got, &rl, &border), OP_OK);
    cr_assert_eq(got.span_count, n);
    cr_assert_eq(got.region_count, st->regions.region_count);
    cr_assert_eq(border, st->border_region);
    cr_assert_eq(memcmp(got.reg, st->regions.reg, (size_t)n * 2), 0);
    cr_assert_eq(memcmp(got.region_area, st->regions.region_area, (size_t)got.region_count + 1), 0);
    cr_assert_eq(rl == NULL, st->region_layer == NULL);
    if (rl)
        cr_assert_eq(memcmp(rl, st->region_layer, (size_t)border * 2), 0);
    /* Rule 3: one span's area changed, anywhere (first, last, unwalkable, border band,
     * core, walkable to another id, walkable to none): never reused. */
    uint32_t picks[8] = {0, n - 1, n / 2, n / 3, 0, 0, 0, 0};
    int np = 4;
    for (uint32_t s = 0; s < n && np < 8; s += 37) {
        int cell = 0;
        while (chf->cells[cell + 1] <= s)
            cell++;
        int x = cell % chf->width, z = cell / chf->width;
        int band =
            x < chf->border || z < chf->border || x >= chf->border + tc || z >= chf->border + tc;
        if ((np == 4 && band && chf->areas[s]) || (np == 5 && !band && chf->areas[s]) ||
            (np == 6 && !chf->areas[s]) || (np == 7 && !band && chf->areas[s] && s > n / 2))
            picks[np++] = s;
    }
    cr_assert_eq(np, 8, "%s: spans of every kind", what);
    for (int k = 0; k < np; k++)
        for (int v = 0; v < 2; v++) {
            uint32_t s = picks[k];
            uint8_t was = c2.areas[s];
            c2.areas[s] = (uint8_t)(v == 0 ? (was == 0 ? OP_WALKABLE_AREA : 0) : (was + 1) % 64);
            cr_assert(!fits(&rc, &c2, st->span_layer, &rc.rs, tc), "%s: span %u area %d -> %d",
                      what, s, was, c2.areas[s]);
            c2.areas[s] = was;
        }
    cr_assert(fits(&rc, &c2, st->span_layer, &rc.rs, tc));
    /* Rule 1: the span layers (partition = layers): one changed, or equal bytes in another
     * array; any other partition with span layers. */
    uint16_t *sl = op_arena_alloc(rc.o, (size_t)n * 2 + 2);
    if (st->span_layer) {
        memcpy(sl, st->span_layer, (size_t)n * 2);
        cr_assert(!fits(&rc, &c2, sl, &rc.rs, tc), "%s: span layers, other array", what);
        sl[n / 2] = (uint16_t)(sl[n / 2] == OP_NO_LAYER ? 0 : sl[n / 2] + 1);
        cr_assert(!fits(&rc, &c2, sl, &rc.rs, tc), "%s: a span layer changed", what);
        cr_assert(!fits(&rc, &c2, NULL, &rc.rs, tc), "%s: no span layers", what);
    } else {
        memset(sl, 0, (size_t)n * 2);
        cr_assert(!fits(&rc, &c2, sl, &rc.rs, tc), "%s: span layers given", what);
    }
    /* Rule 1: the other field arrays (equal bytes, other arrays), span count and frame. */
    op_chf c3 = c2;
    c3.y = op_arena_alloc(rc.o, (size_t)n * 2 + 2);
    memcpy(c3.y, chf->y, (size_t)n * 2);
    cr_assert(!fits(&rc, &c3, st->span_layer, &rc.rs, tc), "%s: floors", what);
    c3 = c2;
    size_t ncell = (size_t)chf->width * (size_t)chf->depth + 1;
    c3.cells = op_arena_alloc(rc.o, ncell * 4);
    memcpy(c3.cells, chf->cells, ncell * 4);
    cr_assert(!fits(&rc, &c3, st->span_layer, &rc.rs, tc), "%s: cells", what);
    c3 = c2;
    c3.links = op_arena_alloc(rc.o, (size_t)n * sizeof *c3.links + 16);
    memcpy(c3.links, chf->links, (size_t)n * sizeof *c3.links);
    cr_assert(!fits(&rc, &c3, st->span_layer, &rc.rs, tc), "%s: links", what);
    c3 = c2;
    c3.span_count--;
    cr_assert(!fits(&rc, &c3, st->span_layer, &rc.rs, tc), "%s: span count", what);
    c3 = c2;
    c3.border--;
    cr_assert(!fits(&rc, &c3, st->span_layer, &rc.rs, tc), "%s: border", what);
    c3 = c2;
    c3.width--, c3.depth++;
    cr_assert(!fits(&rc, &c3, st->span_layer, &rc.rs, tc), "%s: grid size", what);
    cr_assert(!fits(&rc, &c2, st->span_layer, &rc.rs, tc - 1), "%s: tile cells", what);
    /* Rule 2: other region settings. */
    op_region_settings rs = rc.rs;
    rs.min_region_area++;
    cr_assert(!fits(&rc, &c2, st->span_layer, &rs, tc), "%s: MinRegionArea", what);
    rs = rc.rs;
    rs.merge_region_area++;
    cr_assert(!fits(&rc, &c2, st->span_layer, &rs, tc), "%s: MergeRegionArea", what);
    rs = rc.rs;
    rs.partition = p == OP_PARTITION_WATERSHED ? OP_PARTITION_MONOTONE : OP_PARTITION_WATERSHED;
    cr_assert(!fits(&rc, &c2, st->span_layer, &rs, tc), "%s: partition", what);
    cr_assert(fits(&rc, &c2, st->span_layer, &rc.rs, tc), "%s: the same input again", what);
    region_case_close(&rc);
    world_close(&w);
}

Test(rebuild, regions_reuse_follows_each_rule)
{
    regions_rules_on("dungeon", OP_PARTITION_WATERSHED);
    regions_rules_on("dungeon", OP_PARTITION_MONOTONE);
    regions_rules_on("multifloor", OP_PARTITION_LAYERS);
}

/* A cylinder of volume mode m round floor point f. */
static op_volume cylinder_at(const char *name, const double *f, double radius, op_volume_mode m,
                             int area)
{
    op_volume v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "%s", name);
    v.kind = OP_VOLUME_CYLINDER;
    v.mode = m;
    v.area = area;
    v.bmin[0] = f[0], v.bmin[2] = f[2], v.bmax[0] = radius;
    v.bmin[1] = f[1] - 0.5, v.bmax[1] = f[1] + 1.5;
    return v;
}

/* End to end: a rebuild takes the entry's regions exactly when its areas (after the area
 * volumes) are the capture's, and is byte-equal to a build from scratch either way (the
 * signature holds the regions, their count, area ids, border region and layers). Area
 * volumes of the walkable area the floors already have change no area (always reused);
 * other volumes, random, mostly do (not reused on the tiles where they do). */
static void regions_reuse_end_to_end(const char *what, op_partition p, int layer_by_layer,
                                     uint64_t seed)
{
    world w;
    world_open(&w, what, p);
    op_test_rng g = {seed};
    op_err e;
    if (layer_by_layer) { /* no height samples: each layer built on its own (§2.3) */
        op_level_destroy(w.lvl);
        w.s.detail_sample_distance = 0;
        cr_assert_eq(op_level_create(&w.soup, &w.s, NULL, 0, &w.lvl, &e), OP_OK, "%s", e.msg);
    }
    op_rebuild_entry **ent = calloc((size_t)w.ntiles, sizeof *ent);
    uint8_t **areas = calloc((size_t)w.ntiles, sizeof *areas);
    uint32_t *nspans = calloc((size_t)w.ntiles, sizeof *nspans);
    for (int i = 0; i < w.ntiles; i++) {
        int tx, tz;
        tile_of(&w, i, &tx, &tz);
        op_arena_reset(w.out);
        op_arena_reset(w.scratch);
        op_tile_stages st;
        cr_assert_eq(op_level_build_tile(w.lvl, tx, tz, NULL, 0, OP_STAGE_TILE, 0, w.out, w.scratch,
                                         &st, &ent[i], &e),
                     OP_OK, "%s", e.msg);
        cr_assert_eq(st.regions_reused, 0, "a build from scratch reuses nothing");
        cr_assert_eq(st.layer_by_layer, layer_by_layer && !st.skipped);
        if (st.skipped)
            continue;
        nspans[i] = st.chf.span_count;
        areas[i] = malloc((size_t)nspans[i] + 1);
        memcpy(areas[i], st.chf.areas, nspans[i]);
    }
    op_arena *fo = op_arena_create(0), *fs = op_arena_create(0);
    long same_reused = 0, other_reused = 0, other_not = 0;
    for (int k = 0; k < 60; k++) {
        const double *f = w.floors[op_test_rand_int(&g, 0, w.nfloors - 1)];
        int same = k % 3 == 0;
        op_volume v;
        if (same) {
            v = cylinder_at("same", f, rnd(&g, 0.5, 4.0), OP_VOLUME_AREA, OP_WALKABLE_AREA);
        } else {
            memset(&v, 0, sizeof v);
            strcpy(v.name, "other");
            random_shape(&g, &w, &v);
        }
        op_tile_rect r;
        if (!op_level_volume_tiles(w.lvl, &v, &r))
            continue;
        for (int tz = r.tz0; tz <= r.tz1; tz++)
            for (int tx = r.tx0; tx <= r.tx1; tx++) {
                int i = op_level_tile_index(w.lvl, tx, tz);
                op_arena_reset(fo);
                op_arena_reset(fs);
                op_tile_stages sf;
                cr_assert_eq(op_level_build_tile(w.lvl, tx, tz, &v, 1, OP_STAGE_TILE, 0, fo, fs,
                                                 &sf, NULL, &e),
                             OP_OK, "%s", e.msg);
                sig a = signature(&sf);
                op_arena_reset(w.out);
                op_arena_reset(w.scratch);
                op_tile_stages sc;
                cr_assert_eq(op_level_rebuild_tile(w.lvl, ent[i], &v, 1, OP_STAGE_TILE, 0, w.out,
                                                   w.scratch, &sc, &e),
                             OP_OK, "%s", e.msg);
                sig b = signature(&sc);
                cr_assert(sig_eq(&a, &b), "%s %s volume %d tile (%d, %d): rebuild differs", what,
                          op_partition_name(p), k, tx, tz);
                free(a.p);
                free(b.p);
                if (sf.skipped || !areas[i])
                    continue;
                int equal = sf.chf.span_count == nspans[i] &&
                            memcmp(sf.chf.areas, areas[i], nspans[i]) == 0;
                cr_assert_eq(sc.regions_reused, equal,
                             "%s %s volume %d tile (%d, %d): areas %s the capture's, reused %d",
                             what, op_partition_name(p), k, tx, tz, equal ? "are" : "are not",
                             sc.regions_reused);
                if (same) {
                    cr_assert(equal, "an area volume of the floors' own area changed an area");
                    same_reused++;
                } else if (equal) {
                    other_reused++;
                } else {
                    other_not++;
                }
                /* The distance field only when the regions were computed. */
                if (p == OP_PARTITION_WATERSHED)
                    cr_assert_eq(sc.chf.dist == NULL, equal);
            }
    }
    fprintf(stderr, "%s %s: same-area volumes reused on %ld tiles; others %ld reused, %ld not\n",
            what, op_partition_name(p), same_reused, other_reused, other_not);
    cr_assert_gt(same_reused, 10);
    cr_assert_gt(other_not, 20);
    for (int i = 0; i < w.ntiles; i++) {
        op_rebuild_entry_free(ent[i]);
        free(areas[i]);
    }
    free(ent);
    free(areas);
    free(nspans);
    op_arena_destroy(fo);
    op_arena_destroy(fs);
    world_close(&w);
}

Test(rebuild, regions_reused_exactly_when_the_areas_are_the_captures, .timeout = 300)
{
    regions_reuse_end_to_end("dungeon", OP_PARTITION_WATERSHED, 0, 501);
    regions_reuse_end_to_end("dungeon", OP_PARTITION_MONOTONE, 0, 502);
    regions_reuse_end_to_end("multifloor", OP_PARTITION_LAYERS, 0, 503);
    regions_reuse_end_to_end("multifloor", OP_PARTITION_LAYERS, 1, 504);
}

/* ---- regions of unchanged span layers, rule by rule (build3d-runtime.md §5.11) ---- */

/* The oracle: the full layer-first labelling of chf (build3d-regions.md §4, §5 with R1) and
 * the border cut of build3d-polys.md §2.3, written out here as tile_pipeline.c does it. */
typedef struct layer_regions {
    op_regions r;
    uint16_t *rl;
    int border, skipped, kept;
} layer_regions;

static void layers_full(const op_chf *c, const uint16_t *sl, int min_area, int tc, op_arena *o,
                        op_arena *s, layer_regions *out)
{
    op_err e;
    memset(out, 0, sizeof *out);
    cr_assert_eq(op_regions_build_from_layers(c, sl, min_area, o, s, &out->r, &out->rl, &e), OP_OK,
                 "%s", e.msg);
    int b = c->border, border = out->r.region_count + 1, inside = 0;
    for (int z = 0; z < c->depth; z++)
        for (int x = 0; x < c->width; x++) {
            int core = x >= b && x < b + tc && z >= b && z < b + tc;
            for (uint32_t i = c->cells[z * c->width + x]; i < c->cells[z * c->width + x + 1]; i++) {
                if (!core && out->r.reg[i])
                    out->r.reg[i] = (uint16_t)border;
                inside |= core && out->r.reg[i];
            }
        }
    uint8_t *ra = op_arena_calloc(o, (size_t)border + 1, 1);
    memcpy(ra, out->r.region_area, (size_t)border);
    out->r.region_area = ra;
    out->r.region_count = border;
    out->border = border;
    out->skipped = !inside;
}

static int layer_regions_eq(const layer_regions *a, const layer_regions *b, uint32_t n)
{
    return a->r.region_count == b->r.region_count && a->border == b->border &&
           a->skipped == b->skipped && memcmp(a->r.reg, b->r.reg, (size_t)n * 2) == 0 &&
           memcmp(a->r.region_area, b->r.region_area, (size_t)a->r.region_count + 1) == 0 &&
           memcmp(a->rl, b->rl, (size_t)a->border * 2) == 0;
}

/* A base as a capture keeps it (rebuild.c), made from the full labelling of field c with
 * areas base_areas (copied), plus rule 11's record. */
static void layer_base_make(const op_chf *c, const uint16_t *sl, const uint8_t *base_areas,
                            int min_area, int tc, op_arena *o, op_arena *s, op__region_base *b)
{
    op_chf cb = *c;
    cb.areas = op_arena_alloc(o, (size_t)c->span_count + 1);
    memcpy(cb.areas, base_areas, c->span_count);
    layer_regions full;
    layers_full(&cb, sl, min_area, tc, o, s, &full);
    memset(b, 0, sizeof *b);
    b->cells = c->cells;
    b->y = c->y;
    b->links = (const uint32_t(*)[4])c->links;
    b->span_layer = sl;
    b->span_count = c->span_count;
    b->width = c->width;
    b->depth = c->depth;
    b->border = c->border;
    b->tile_cells = tc;
    b->areas = cb.areas;
    b->reg = full.r.reg;
    b->region_count = full.r.region_count;
    b->region_area = full.r.region_area;
    b->border_region = full.border;
    b->region_layer = full.rl;
    b->nregion_layer = full.border;
    b->rs = (op_region_settings){OP_PARTITION_LAYERS, min_area, 0};
    uint32_t *first;
    uint8_t *settled;
    op_err e;
    cr_assert_eq(op__region_layers_record(&cb, sl, &full.r, full.border, min_area, o, &first,
                                          &settled, &b->nlayers, &e),
                 OP_OK, "%s", e.msg);
    cr_assert_not_null(first, "the record of a full labelling");
    b->first = first;
    b->settled = settled;
    uint32_t *lstart;
    uint16_t *lspans;
    cr_assert_eq(op__region_layers_spans(sl, c->span_count, b->nlayers, o, &lstart, &lspans, &e),
                 OP_OK, "%s", e.msg);
    cr_assert_not_null(lstart);
    b->layer_start = lstart;
    b->layer_spans = lspans;
}

/* Rule 11 on field c (its areas) from base b: got, and checked against the full labelling
 * when some layer was kept; returns the layers kept. */
/* §5.6 rule 3a's premise, from the definition: every region r with from[r] = q > 0 has, after
 * the cut, exactly the spans base region q had (the two span sets compared span by span); q is
 * a base region below the border region whose span layer's spans all kept their areas; every
 * region of a kept base region is found (no kept base region is left unnamed). */
static void kept_from_holds(const op__region_base *b, const op_chf *c, const op_regions *r,
                            const uint16_t *from, const char *what)
{
    int named = 0;
    for (int k = 1; k <= r->region_count; k++) {
        int q = from[k];
        if (q == 0)
            continue;
        named++;
        cr_assert(q < b->border_region && k < r->region_count, "%s: region %d from base %d", what,
                  k, q);
        uint32_t spans = 0;
        for (uint32_t i = 0; i < c->span_count; i++) {
            cr_assert_eq(r->reg[i] == k, b->reg[i] == q,
                         "%s: region %d (from base %d) differs at span %u", what, k, q, i);
            spans += r->reg[i] == k;
            if (b->span_layer[i] == b->region_layer[q])
                cr_assert_eq(c->areas[i], b->areas[i], "%s: base %d's layer changed", what, q);
        }
        cr_assert_gt(spans, 0, "%s: region %d has no span", what, k);
    }
    /* Every base region whose spans all keep their region id class is named: a base region
     * of a kept layer is exactly such (the regions of kept layers are the base's). */
    int kept_regions = 0;
    for (int q = 1; q < b->border_region; q++) {
        int L = b->region_layer[q], same = 1;
        for (uint32_t i = 0; i < c->span_count && same; i++)
            if (b->span_layer[i] == L)
                same = c->areas[i] == b->areas[i];
        if (!same || L >= b->nlayers || !b->settled[L])
            continue;
        kept_regions++;
    }
    cr_assert_eq(named, kept_regions, "%s: %d regions named, %d base regions of kept layers", what,
                 named, kept_regions);
}

static int layers_against_full(const op__region_base *b, const op_chf *c, int min_area, int tc,
                               op_arena *o, op_arena *s, const char *what, layer_regions *got)
{
    layer_regions want, mine;
    op_err e;
    if (!got)
        got = &mine;
    memset(got, 0, sizeof *got);
    op_region_settings rs = b->rs;
    cr_assert(op__regions_layers_fit(b, c, b->span_layer, &rs, tc));
    uint16_t *from = NULL;
    cr_assert_eq(op__regions_layers_local(b, c, min_area, tc, o, s, &got->r, &got->rl, &got->border,
                                          &got->skipped, &got->kept, &from, &e),
                 OP_OK, "%s", e.msg);
    layers_full(c, b->span_layer, min_area, tc, o, s, &want);
    if (got->kept > 0)
        cr_assert(layer_regions_eq(got, &want, c->span_count), "%s: kept %d layers, differs", what,
                  got->kept);
    cr_assert_eq(from == NULL, got->kept == 0, "%s: kept_from given exactly when layers are kept",
                 what);
    if (from)
        kept_from_holds(b, c, &got->r, from, what);
    return got->kept;
}

/* The skip-th walkable span of layer L in the tile's core, two cells clear of the band. */
static uint32_t core_span_of_layer(const op_chf *c, const uint16_t *sl, const uint8_t *areas, int L,
                                   int tc, int skip)
{
    int b = c->border;
    for (int z = b + 2; z < b + tc - 2; z++)
        for (int x = b + 2; x < b + tc - 2; x++)
            for (uint32_t i = c->cells[z * c->width + x]; i < c->cells[z * c->width + x + 1]; i++)
                if (sl[i] == L && areas[i] != 0 && skip-- <= 0)
                    return i;
    return OP_NO_LINK;
}

/* A layer that is not settled: in the base, a walkable core span x of layer L1 that links
 * to a walkable span t of another layer L2 is made its own one-span component (an area of
 * its own, its other neighbours unwalkable): its group is t's, it survives, and L1 is not
 * settled. The rebuild takes t away (L2 changes, L1 does not): x's group is x alone and
 * goes. L1 must not be kept. 0 when st's core has no layer seam. */
static int unsettled_case(const op_tile_stages *st, int min, op_arena *o, op_arena *s)
{
    const op_chf *c = &st->chf;
    const uint16_t *sl = st->span_layer;
    uint32_t n = c->span_count;
    int tc = c->width - 2 * c->border, bb = c->border;
    op_chf c2 = *c;
    c2.areas = op_arena_alloc(o, (size_t)n + 1);
    for (int cell = 0; cell < c->width * c->depth; cell++) {
        int x0 = cell % c->width, z0 = cell / c->width;
        if (x0 < bb + 1 || z0 < bb + 1 || x0 >= bb + tc - 1 || z0 >= bb + tc - 1)
            continue;
        for (uint32_t x = c->cells[cell]; x < c->cells[cell + 1]; x++) {
            if (sl[x] == OP_NO_LAYER || c->areas[x] == 0)
                continue;
            int dt = -1;
            for (int d = 0; d < 4 && dt < 0; d++) {
                uint32_t t = c->links[x][d];
                if (t != OP_NO_LINK && sl[t] != sl[x] && sl[t] != OP_NO_LAYER && c->areas[t])
                    dt = d;
            }
            if (dt < 0)
                continue;
            uint32_t t = c->links[x][dt];
            /* The rule reads the span layers as given: t's layer's spans in the rows more
             * than two below x's become a layer of their own, unchanged by the edit (the
             * generated tiles have two layers at most where floors meet). */
            uint16_t *sl2 = op_arena_alloc(o, (size_t)n * 2 + 2), top = 0;
            memcpy(sl2, sl, (size_t)n * 2);
            for (uint32_t i = 0; i < n; i++)
                if (sl[i] != OP_NO_LAYER && sl[i] >= top)
                    top = (uint16_t)(sl[i] + 1);
            for (int z = 0; z < z0 - 2; z++)
                for (uint32_t i = c->cells[z * c->width]; i < c->cells[(z + 1) * c->width]; i++)
                    if (sl[i] == sl[t])
                        sl2[i] = top;
            uint8_t *ba = op_arena_alloc(o, (size_t)n + 1);
            memcpy(ba, c->areas, n);
            uint8_t own = (uint8_t)((c->areas[x] % 62) + 2);
            ba[x] = own == c->areas[t] ? 1 : own;
            for (int d = 0; d < 4; d++)
                if (d != dt && c->links[x][d] != OP_NO_LINK)
                    ba[c->links[x][d]] = 0;
            op__region_base b2;
            layer_base_make(c, sl2, ba, min, tc, o, s, &b2);
            if (b2.settled[sl2[x]] || !b2.settled[sl2[t]] || b2.reg[x] == 0 || !b2.settled[top])
                continue;
            memcpy(c2.areas, ba, n);
            c2.areas[t] = 0;
            int s1 = 0;
            for (int L = 0; L < b2.nlayers; L++)
                s1 += b2.settled[L] && L != sl2[t];
            if (s1 == 0) /* nothing left to keep: no test of the rule */
                continue;
            int kept = layers_against_full(&b2, &c2, min, tc, o, s, "unsettled", NULL);
            cr_assert_eq(kept, s1, "unsettled layer %d: kept %d of %d", sl2[x], kept, s1);
            cr_assert_gt(kept, 0, "some layer kept: the comparison ran");
            layer_regions want;
            layers_full(&c2, sl2, min, tc, o, s, &want);
            cr_assert_eq(want.r.reg[x], 0, "x is an island once t is gone");
            /* Anchored: x's own layer changes instead (x takes yet another area), t's layer
             * is kept. x's component is x alone, below MinRegionArea, but linked to t: its
             * group holds a kept region and survives. */
            memcpy(c2.areas, ba, n);
            c2.areas[x] = (uint8_t)(ba[x] == 63 ? 62 : ba[x] + 1) == c->areas[t]
                              ? (uint8_t)(ba[x] == 63 ? 61 : ba[x] + 2)
                              : (uint8_t)(ba[x] == 63 ? 62 : ba[x] + 1);
            kept = layers_against_full(&b2, &c2, min, tc, o, s, "anchored", NULL);
            cr_assert_gt(kept, 0);
            layers_full(&c2, sl2, min, tc, o, s, &want);
            cr_assert_neq(want.r.reg[x], 0, "x survives through t");
            return 1;
        }
    }
    return 0;
}

Test(rebuild, layer_regions_reuse_follows_each_rule)
{
    world w;
    world_open(&w, "multifloor", OP_PARTITION_LAYERS);
    op_arena *o = op_arena_create(0), *s = op_arena_create(0);
    op_tile_stages st;
    build_richest_tile(&w, OP_STAGE_REGIONS, o, s, &st);
    const op_chf *c = &st.chf;
    const uint16_t *sl = st.span_layer;
    uint32_t n = c->span_count;
    int tc = c->width - 2 * c->border, min = w.s.min_region_area;
    op__region_base b;
    layer_base_make(c, sl, c->areas, min, tc, o, s, &b);
    cr_assert_geq(b.nlayers, 2, "a tile with several span layers");
    int nsettled = 0;
    for (int L = 0; L < b.nlayers; L++)
        nsettled += b.settled[L];
    cr_assert_geq(nsettled, 2);
    op_chf c2 = *c;
    c2.areas = op_arena_alloc(o, (size_t)n + 1);
    /* Unchanged areas: every settled layer kept, the full labelling's bytes. */
    memcpy(c2.areas, c->areas, n);
    cr_assert_eq(layers_against_full(&b, &c2, min, tc, o, s, "unchanged", NULL), nsettled);
    /* One span of one layer changed (to another walkable area, to none): the other settled
     * layers are kept, the result is the full labelling's. */
    int cases = 0;
    for (int L = 0; L < b.nlayers; L++)
        for (int k = 0; k < 3; k++) {
            uint32_t i = core_span_of_layer(c, sl, c->areas, L, tc, 37 * k);
            if (i == OP_NO_LINK)
                continue;
            memcpy(c2.areas, c->areas, n);
            c2.areas[i] = (uint8_t)(k == 2 ? 0 : (c->areas[i] % 63) + 1);
            int kept = layers_against_full(&b, &c2, min, tc, o, s, "one span", NULL);
            cr_assert_eq(kept, nsettled - b.settled[L], "layer %d span %u changed: kept %d", L, i,
                         kept);
            cases++;
        }
    cr_assert_geq(cases, 4);
    /* Renumbering: a one-span region split off (another area) at the lowest-index walkable
     * core span of a layer comes before later regions of the kept layers, whose ids then
     * move (the result still the full labelling's). */
    int moved = 0;
    for (int L = 0; L < b.nlayers && !moved; L++) {
        uint32_t i = core_span_of_layer(c, sl, c->areas, L, tc, 0);
        if (i == OP_NO_LINK)
            continue;
        memcpy(c2.areas, c->areas, n);
        c2.areas[i] = (uint8_t)((c->areas[i] % 63) + 1);
        layer_regions got;
        if (layers_against_full(&b, &c2, min, tc, o, s, "renumbered", &got) == 0)
            continue;
        /* A kept layer's core span whose id differs from its base id: renumbered. */
        for (uint32_t t = 0; t < n && !moved; t++)
            moved = b.reg[t] != 0 && b.reg[t] != b.border_region && sl[t] != L &&
                    got.r.reg[t] != got.border && got.r.reg[t] != b.reg[t];
    }
    cr_assert(moved, "no kept region renumbered");
    /* Every layer changed: nothing kept (the full path). */
    memcpy(c2.areas, c->areas, n);
    for (int L = 0; L < b.nlayers; L++)
        for (uint32_t t = 0; t < n; t++)
            if (sl[t] == L && c2.areas[t]) {
                c2.areas[t] = 0;
                break;
            }
    cr_assert_eq(layers_against_full(&b, &c2, min, tc, o, s, "every layer", NULL), 0);
    /* Unsettled layer: on the first tile with a layer seam in its core. */
    int unsettled = 0;
    for (int i = 0; i < w.ntiles && !unsettled; i++) {
        int tx, tz;
        op_err e;
        tile_of(&w, i, &tx, &tz);
        op_arena_reset(o);
        op_arena_reset(s);
        cr_assert_eq(op_level_build_stages(w.lvl, tx, tz, OP_STAGE_REGIONS, 0, o, s, &st, &e),
                     OP_OK, "%s", e.msg);
        if (!st.skipped)
            unsettled = unsettled_case(&st, min, o, s);
    }
    cr_assert(unsettled, "no layer seam to make an unsettled layer at");
    op_arena_destroy(o);
    op_arena_destroy(s);
    world_close(&w);
}
