/* Height detail's Lawson flip stack (detail.c, op__detail_build_stack). The stack starts
 * at OP__DT_STACK_START entries; a polygon that overflows it is built again from the
 * start with OP__DT_STACK_CAP entries. No real polygon comes near the normal start, so
 * these tests run real tiles (the shared dungeon, generated levels) with starts of 1, 2
 * and 7 entries: the rebuild must be taken where the rules force an overflow, and the
 * detail meshes must be byte-identical to the normal build's. An overflow of the wide
 * stack itself is OP_ELIMIT naming the polygon.
 *
 * Forced overflows, from the rules alone (detail_delaunay.c): the hull pushes each
 * interior edge of the ear-clipped ring once, and ear clipping an m-vertex ring gives
 * m - 3 distinct diagonals whatever the geometry; every sample insertion pushes 3 or 4
 * edges onto the stack emptied by the previous legalization. So a polygon of n vertices
 * and e extras (edge points and samples, from the normal build) overflows a stack of
 * s <= 2 entries when n + e >= s + 4 (no sample: the ring has n + e vertices; a sample:
 * 3 pushes > s), and with detail off (no extras) a stack of 0 entries when n >= 4. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "onepath/build.h"
#include "onepath/detail.h"
#include "onepath/levelgen.h"
#include "onepath/obj.h"
#include "../core/src/detail_internal.h"
#include "op_test.h"

static const int starts[] = {1, 2, 7};
#define NSTARTS ((int)(sizeof starts / sizeof starts[0]))

/* ---- tiles ---- */

typedef struct tile {
    op_tile_stages st;
    op_detail_settings ds;
    char name[96];
} tile;

/* The tile's detail settings as the pipeline derives them (checked by rebuilding its
 * detail mesh with op_detail_build in check_tile). */
static void tile_settings(const op_level *lvl, tile *t)
{
    const op_settings *s = op_level_settings(lvl);
    t->ds.sample_distance = s->detail_sample_distance;
    t->ds.max_error = s->detail_max_error;
    t->ds.walkable_climb = t->st.chf.walkable_climb;
}

static int poly_verts(const op_poly_mesh *m, int p)
{
    int n = 0;
    while (n < m->nvp && m->polys[(size_t)p * (size_t)m->nvp + (size_t)n] != OP_POLY_MESH_NULL)
        n++;
    return n;
}

/* First polygon that must overflow a stack of s <= 2 entries (header comment); -1 if
 * none. */
static int first_forced(const op_poly_mesh *m, const op_detail_mesh *dm, int s)
{
    for (int p = 0; p < m->npolys; p++)
        if (poly_verts(m, p) + (int)dm->meshes[p * 4 + 1] >= s + 4)
            return p;
    return -1;
}

static void same_detail(const op_detail_mesh *a, const op_detail_mesh *b, const char *what)
{
    cr_assert_eq(a->npolys, b->npolys, "%s: polygons", what);
    cr_assert_eq(a->nverts, b->nverts, "%s: vertices", what);
    cr_assert_eq(a->ntris, b->ntris, "%s: triangles", what);
    cr_assert(!memcmp(a->meshes, b->meshes, (size_t)a->npolys * 4 * sizeof(uint32_t)),
              "%s: mesh table differs", what);
    cr_assert(!memcmp(a->verts, b->verts, (size_t)a->nverts * 3 * sizeof(float)),
              "%s: vertices differ", what);
    cr_assert(!memcmp(a->tris, b->tris, (size_t)a->ntris * 4), "%s: triangles differ", what);
}

/* one (a mesh of one polygon) is polygon p of all. */
static void same_poly(const op_detail_mesh *one, const op_detail_mesh *all, int p, const char *what)
{
    const uint32_t *m = &all->meshes[p * 4];
    cr_assert_eq(one->npolys, 1, "%s", what);
    cr_assert_eq(one->nverts, (int)m[1], "%s: polygon %d vertices", what, p);
    cr_assert_eq(one->ntris, (int)m[3], "%s: polygon %d triangles", what, p);
    cr_assert(!memcmp(one->verts, all->verts + (size_t)m[0] * 3, (size_t)m[1] * 3 * sizeof(float)),
              "%s: polygon %d vertices differ", what, p);
    cr_assert(!memcmp(one->tris, all->tris + (size_t)m[2] * 4, (size_t)m[3] * 4),
              "%s: polygon %d triangles differ", what, p);
}

static op_status build_with(const tile *t, const op_detail_settings *ds, op__detail_stack *stack,
                            op_arena *out, op_detail_mesh *dm, op_err *e)
{
    op_arena *scratch = op_arena_create(0);
    op_status st = op__detail_build_stack(&t->st.polys, &t->st.chf, &t->st.regions, ds,
                                          t->st.min_row, stack, out, scratch, dm, e);
    cr_assert_eq(op_arena_used(scratch), 0, "%s: scratch not returned", t->name);
    op_arena_destroy(scratch);
    return st;
}

/* ---- small starts give the normal meshes ---- */

typedef struct tally {
    long tiles;            /* tiles with polygons */
    long rebuilt[NSTARTS]; /* builds that took the rebuild path, per start */
    long forced[NSTARTS];  /* tiles with a polygon that must overflow the start (s <= 2) */
    long normal_rebuilds;  /* rebuilds at the normal start (none expected) */
} tally;

static void check_tile(tile *t, op_arena *out, tally *ty)
{
    const op_detail_mesh *want = &t->st.detail;
    op_detail_mesh dm;
    op_err e;
    op_arena *scratch = op_arena_create(0);
    cr_assert_eq(op_detail_build(&t->st.polys, &t->st.chf, &t->st.regions, &t->ds, t->st.min_row,
                                 out, scratch, &dm, &e),
                 OP_OK, "%s: %s", t->name, e.msg);
    op_arena_destroy(scratch);
    same_detail(&dm, want, t->name); /* the settings are the pipeline's */
    op__detail_stack normal = {OP__DT_STACK_START, OP__DT_STACK_CAP, -1};
    cr_assert_eq(build_with(t, &t->ds, &normal, out, &dm, &e), OP_OK, "%s: %s", t->name, e.msg);
    same_detail(&dm, want, t->name);
    ty->normal_rebuilds += normal.rebuilds;
    ty->tiles++;
    int prev = 1; /* rebuilt at the previous (smaller) start */
    for (int i = 0; i < NSTARTS; i++) {
        char what[160];
        snprintf(what, sizeof what, "%s, start %d", t->name, starts[i]);
        op__detail_stack stack = {starts[i], OP__DT_STACK_CAP, -1};
        cr_assert_eq(build_with(t, &t->ds, &stack, out, &dm, &e), OP_OK, "%s: %s", what, e.msg);
        same_detail(&dm, want, what);
        /* The wide stack stays for the rest of the tile: at most one rebuild. */
        cr_assert(stack.rebuilds == 0 || stack.rebuilds == 1, "%s: %d rebuilds", what,
                  stack.rebuilds);
        /* Builds agree until the first push past the smaller start, so an overflow of a
         * larger start implies one of every smaller start. */
        cr_assert(prev || !stack.rebuilds, "%s: rebuilt, but not at a smaller start", what);
        prev = stack.rebuilds;
        ty->rebuilt[i] += stack.rebuilds;
        if (starts[i] <= 2 && first_forced(&t->st.polys, want, starts[i]) >= 0) {
            ty->forced[i]++;
            cr_assert_eq(stack.rebuilds, 1, "%s: polygon %d must overflow, no rebuild", what,
                         first_forced(&t->st.polys, want, starts[i]));
        }
    }
}

/* Every tile of the level (settings s) that has polygons, through check_tile. */
static void check_level(const op_soup *soup, const op_settings *s, const char *name, tally *ty)
{
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create(soup, s, NULL, 0, &lvl, &e), OP_OK, "%s: %s", name, e.msg);
    op_tile_rect r = op_level_tiles(lvl);
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            tile t;
            snprintf(t.name, sizeof t.name, "%s tile (%d, %d)", name, tx, tz);
            cr_assert_eq(
                op_level_build_stages(lvl, tx, tz, OP_STAGE_DETAIL, 0, out, scratch, &t.st, &e),
                OP_OK, "%s: %s", t.name, e.msg);
            op_arena_reset(scratch);
            if (!t.st.skipped && !t.st.layer_by_layer && t.st.polys.npolys > 0) {
                tile_settings(lvl, &t);
                check_tile(&t, out, ty);
            }
            op_arena_reset(out);
        }
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    op_level_destroy(lvl);
}

static void log_tally(const char *what, const tally *ty)
{
    cr_log_info("%s: %ld tiles; rebuilt at start 1: %ld (forced %ld), 2: %ld (forced %ld), "
                "7: %ld",
                what, ty->tiles, ty->rebuilt[0], ty->forced[0], ty->rebuilt[1], ty->forced[1],
                ty->rebuilt[2]);
}

static void check_tally(const char *what, const tally *ty)
{
    log_tally(what, ty);
    cr_assert_gt(ty->tiles, 0, "%s: no tile", what);
    cr_assert_eq(ty->normal_rebuilds, 0, "%s: a real polygon overflowed the normal start", what);
    for (int i = 0; i < NSTARTS; i++)
        cr_assert_gt(ty->rebuilt[i], 0, "%s: start %d never rebuilt", what, starts[i]);
    cr_assert_gt(ty->forced[0], 0, "%s: no forced overflow", what);
}

Test(detail_stack, small_starts_rebuild_the_dungeon_identically)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_obj_read_file(op_test_level("dungeon.obj"), a, &soup, &e), OP_OK, "%s", e.msg);
    op_settings s;
    op_settings_default(&s);
    tally ty = {0};
    check_level(&soup, &s, "dungeon", &ty);
    check_tally("dungeon", &ty);
    op_arena_destroy(a);
}

/* Generated levels of every kind: hills (many samples), stairs and decks (many edge
 * points), dense sampling with a small error, detail off (sample_distance 0: the hull
 * flips alone), and the monotone partition (long thin polygons). Comparing whole tiles
 * also catches a rebuild that leaves the abandoned triangulation's edges behind for the
 * next polygons (the pillars and rooms variants with detail on do). */
Test(detail_stack, small_starts_rebuild_generated_levels_identically)
{
    static const struct {
        const char *kind;
        int size, seed;
        double sample_distance, max_error;
        op_partition partition;
    } levels[] = {
        {"terrain", 32, 1, 1.8, 0.2, OP_PARTITION_WATERSHED},
        {"multifloor", 32, 2, 1.8, 0.2, OP_PARTITION_WATERSHED},
        {"stairs", 32, 3, 0.6, 0.05, OP_PARTITION_WATERSHED},
        {"terrain", 32, 4, 0.6, 0.02, OP_PARTITION_MONOTONE},
        {"terrain", 32, 5, 0.0, 0.2, OP_PARTITION_WATERSHED},
        {"rooms", 32, 6, 0.0, 0.2, OP_PARTITION_WATERSHED},
        {"pillars", 32, 7, 0.0, 0.2, OP_PARTITION_MONOTONE},
        {"multifloor", 32, 8, 0.0, 0.2, OP_PARTITION_MONOTONE},
        {"ramp", 32, 9, 0.0, 0.2, OP_PARTITION_WATERSHED},
        {"pillars", 32, 10, 1.8, 0.2, OP_PARTITION_WATERSHED},
        {"rooms", 32, 11, 1.2, 0.1, OP_PARTITION_MONOTONE},
    };
    tally all = {0};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        op_arena *a = op_arena_create(0);
        op_soup soup;
        op_err e;
        cr_assert_eq(
            op_levelgen(levels[i].kind, levels[i].size, (uint64_t)levels[i].seed, a, &soup, &e),
            OP_OK, "%s", e.msg);
        op_settings s;
        op_settings_default(&s);
        s.detail_sample_distance = levels[i].sample_distance;
        s.detail_max_error = levels[i].max_error;
        s.partition = levels[i].partition;
        char name[96];
        snprintf(name, sizeof name, "gen %s %d seed %d sd %g err %g", levels[i].kind,
                 levels[i].size, levels[i].seed, levels[i].sample_distance, levels[i].max_error);
        tally ty = {0};
        check_level(&soup, &s, name, &ty);
        log_tally(name, &ty);
        cr_assert_gt(ty.rebuilt[0], 0, "%s: start 1 never rebuilt", name);
        all.tiles += ty.tiles;
        all.normal_rebuilds += ty.normal_rebuilds;
        for (int k = 0; k < NSTARTS; k++) {
            all.rebuilt[k] += ty.rebuilt[k];
            all.forced[k] += ty.forced[k];
        }
        op_arena_destroy(a);
    }
    check_tally("generated", &all);
}

/* ---- an overflow of the wide stack ---- */

/* The polygon and the cap named by an overflow message; cr_assert on its shape. */
static void parse_overflow(const char *msg, int *p, int *cap)
{
    cr_assert_eq(sscanf(msg, "detail: polygon %d flip stack over %d", p, cap), 2,
                 "not an overflow message: %s", msg);
}

/* The first tiles of the dungeon that have polygons (at most NTILES), their results in
 * out; the level borrows the soup, so both live until dungeon_fini. */
#define NTILES 12

typedef struct dungeon {
    op_arena *soup_arena, *out;
    op_soup soup;
    op_level *lvl;
    int n;
    tile tiles[NTILES];
} dungeon;

static void dungeon_init(dungeon *d)
{
    op_err e;
    d->soup_arena = op_arena_create(0);
    d->out = op_arena_create(0);
    cr_assert_eq(op_obj_read_file(op_test_level("dungeon.obj"), d->soup_arena, &d->soup, &e), OP_OK,
                 "%s", e.msg);
    op_settings s;
    op_settings_default(&s);
    cr_assert_eq(op_level_create(&d->soup, &s, NULL, 0, &d->lvl, &e), OP_OK, "%s", e.msg);
    op_tile_rect r = op_level_tiles(d->lvl);
    op_arena *scratch = op_arena_create(0);
    d->n = 0;
    for (int tz = r.tz0; tz <= r.tz1 && d->n < NTILES; tz++)
        for (int tx = r.tx0; tx <= r.tx1 && d->n < NTILES; tx++) {
            tile *t = &d->tiles[d->n];
            snprintf(t->name, sizeof t->name, "dungeon tile (%d, %d)", tx, tz);
            cr_assert_eq(op_level_build_stages(d->lvl, tx, tz, OP_STAGE_DETAIL, 0, d->out, scratch,
                                               &t->st, &e),
                         OP_OK, "%s: %s", t->name, e.msg);
            op_arena_reset(scratch);
            if (!t->st.skipped && t->st.polys.npolys > 0) {
                tile_settings(d->lvl, t);
                d->n++;
            }
        }
    op_arena_destroy(scratch);
    cr_assert_gt(d->n, 0, "no dungeon tile with polygons");
}

static void dungeon_fini(dungeon *d)
{
    op_level_destroy(d->lvl);
    op_arena_destroy(d->out);
    op_arena_destroy(d->soup_arena);
}

/* Detail off (the ring is the polygon, no extras): a stack of 0 entries overflows at
 * the first polygon of 4 or more vertices, and at no triangle. */
Test(detail_stack, overflow_at_the_cap_names_the_polygon_detail_off)
{
    static dungeon d;
    dungeon_init(&d);
    op_arena *out = d.out;
    int after_triangles = 0;
    for (int i = 0; i < d.n; i++) {
        const tile *t = &d.tiles[i];
        op_detail_settings off = t->ds;
        off.sample_distance = 0.0;
        int want = -1;
        for (int p = 0; p < t->st.polys.npolys && want < 0; p++)
            if (poly_verts(&t->st.polys, p) >= 4)
                want = p;
        op__detail_stack stack = {0, 0, -1};
        op_detail_mesh dm;
        op_err e;
        op_status st = build_with(t, &off, &stack, out, &dm, &e);
        cr_assert_eq(stack.rebuilds, 0, "%s: start = cap, yet rebuilt", t->name);
        if (want < 0) {
            cr_assert_eq(st, OP_OK, "%s: %s", t->name, e.msg);
            continue;
        }
        cr_assert_eq(st, OP_ELIMIT, "%s: polygon %d has %d vertices, status %d", t->name, want,
                     poly_verts(&t->st.polys, want), st);
        int p, cap;
        parse_overflow(e.msg, &p, &cap);
        cr_assert_eq(p, want, "%s: %s", t->name, e.msg);
        cr_assert_eq(cap, 0, "%s: %s", t->name, e.msg);
        after_triangles += want > 0;
    }
    cr_assert_gt(after_triangles, 0, "no tile with a triangle before its first larger polygon");
    dungeon_fini(&d);
}

/* polygons [from, from + count) of m as a mesh of their own (same vertices). */
static op_poly_mesh sub_mesh(const op_poly_mesh *m, int from, int count)
{
    op_poly_mesh s = *m;
    size_t off = (size_t)from * (size_t)m->nvp;
    s.npolys = count;
    s.polys = m->polys + off;
    s.edge_neighbour = m->edge_neighbour + off;
    s.regs = m->regs + from;
    s.areas = m->areas + from;
    return s;
}

/* Detail on, start 1, cap 2: the first overflow is rebuilt with 2 entries, which
 * overflow again at polygon p, named by the message, at or before the first polygon
 * forced over 2. The polygons before p build with the same stack sizes into the normal
 * meshes' prefix; p alone overflows 2 entries (start = cap: no rebuild) and, with the
 * wide cap, is rebuilt into the normal polygon p. */
Test(detail_stack, overflow_at_the_cap_names_the_polygon_detail_on)
{
    static dungeon d;
    dungeon_init(&d);
    op_arena *out = d.out;
    int failed = 0;
    for (int i = 0; i < d.n; i++) {
        tile *t = &d.tiles[i];
        const op_detail_mesh *want = &t->st.detail;
        int forced = first_forced(&t->st.polys, want, 2);
        op__detail_stack stack = {1, 2, -1};
        op_detail_mesh dm;
        op_err e;
        op_status st = build_with(t, &t->ds, &stack, out, &dm, &e);
        if (st == OP_OK) {
            cr_assert_eq(forced, -1, "%s: polygon %d must overflow 2 entries", t->name, forced);
            same_detail(&dm, want, t->name);
            continue;
        }
        failed++;
        cr_assert_eq(st, OP_ELIMIT, "%s: %s", t->name, e.msg);
        cr_assert_eq(stack.rebuilds, 1, "%s: %s", t->name, e.msg);
        int p, cap;
        parse_overflow(e.msg, &p, &cap);
        cr_assert_eq(cap, 2, "%s: %s", t->name, e.msg);
        cr_assert(p >= 0 && p < t->st.polys.npolys, "%s: %s", t->name, e.msg);
        cr_assert(forced < 0 || p <= forced, "%s: %s, but polygon %d is forced", t->name, e.msg,
                  forced);
        /* Polygons before p: fine with these sizes, and the normal result. */
        op_tile_stages whole = t->st;
        t->st.polys = sub_mesh(&whole.polys, 0, p);
        op__detail_stack again = {1, 2, -1};
        cr_assert_eq(build_with(t, &t->ds, &again, out, &dm, &e), OP_OK, "%s: %s", t->name, e.msg);
        cr_assert_eq(dm.nverts,
                     p ? (int)(want->meshes[(p - 1) * 4] + want->meshes[(p - 1) * 4 + 1]) : 0);
        cr_assert(!memcmp(dm.meshes, want->meshes, (size_t)p * 4 * sizeof(uint32_t)));
        cr_assert(!memcmp(dm.verts, want->verts, (size_t)dm.nverts * 3 * sizeof(float)));
        cr_assert(!memcmp(dm.tris, want->tris, (size_t)dm.ntris * 4));
        /* Polygon p alone: over 2 entries (named as polygon 0 of its own mesh). */
        t->st.polys = sub_mesh(&whole.polys, p, 1);
        op__detail_stack alone = {2, 2, -1};
        cr_assert_eq(build_with(t, &t->ds, &alone, out, &dm, &e), OP_ELIMIT, "%s: polygon %d",
                     t->name, p);
        cr_assert_str_eq(e.msg, "detail: polygon 0 flip stack over 2");
        op__detail_stack wide = {2, OP__DT_STACK_CAP, -1};
        cr_assert_eq(build_with(t, &t->ds, &wide, out, &dm, &e), OP_OK, "%s: %s", t->name, e.msg);
        cr_assert_eq(wide.rebuilds, 1, "%s: polygon %d", t->name, p);
        same_poly(&dm, want, p, t->name);
        t->st.polys = whole.polys;
    }
    cr_assert_gt(failed, 0, "no tile overflowed a 2-entry stack");
    dungeon_fini(&d);
}

Test(detail_stack, bad_stack_sizes_are_refused)
{
    static dungeon d;
    dungeon_init(&d);
    const tile *t = &d.tiles[0];
    op_arena *out = d.out;
    op_detail_mesh dm;
    op_err e;
    op__detail_stack neg = {-1, 8, -1}, inverted = {8, 7, -1};
    cr_assert_eq(build_with(t, &t->ds, &neg, out, &dm, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "start -1"), "%s", e.msg);
    cr_assert_eq(build_with(t, &t->ds, &inverted, out, &dm, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "cap 7"), "%s", e.msg);
    cr_assert_eq(build_with(t, &t->ds, NULL, out, &dm, &e), OP_EINVAL);
    dungeon_fini(&d);
}
