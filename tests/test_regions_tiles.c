/*
 * Neighbouring tiles agree about the walkable surface on their common line, after the
 * regions stage and the border cut (build3d-polys.md §2 steps 2-3): the tile design and
 * the mesh's stitching (navmesh-format.md §5) rely on it, and build3d-regions.md §5.1 read
 * literally breaks it (a corridor piece that crosses a tile with fewer than MinRegionArea
 * spans vanishes from that tile while the next tile keeps its part); clarifications.md,
 * regions 5, is the reading that restores it.
 *
 * For every pair of tiles T, N side by side (N at +x or +z of T) and every pair of spans
 * p, q linked across the line in T's build (p in T's core, q in T's band), the spans p', q'
 * of N's build in the same cells at the same height (world floor within one row: each
 * tile has its own y origin) must be linked too, and then p has a region in T exactly when
 * q' has one in N. Checked on generated levels of every kind, the rooms level of the
 * quality table (gen:rooms:256:1, whose one-cell corridors are the case) and the shared
 * levels, for the three partitions.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "onepath/build.h"
#include "onepath/levelgen.h"
#include "onepath/obj.h"
#include "op_test.h"

typedef struct tile_res {
    op_arena *a;
    op_tile_stages st;
} tile_res;

typedef struct agree_stats {
    long pairs;     /* linked pairs compared */
    long with;      /* of which with a region on both sides */
    long unmatched; /* pairs whose cells differ between the builds (no same-height span) */
    long disagree;  /* pairs one tile keeps and the other does not */
} agree_stats;

/* The span of cell (x, z) of chf whose world floor is nearest to wy, within one row. */
static uint32_t span_at(const op_chf *chf, int x, int z, double wy)
{
    if (chf->span_count == 0 || x < 0 || z < 0 || x >= chf->width || z >= chf->depth)
        return OP_NO_LINK;
    int c = x + z * chf->width;
    uint32_t best = OP_NO_LINK;
    double bd = chf->ch * 1.0001;
    for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
        double d = fabs(chf->origin[1] + chf->y[s] * chf->ch - wy);
        if (d <= bd) {
            bd = d;
            best = s;
        }
    }
    return best;
}

/* T and N = T's neighbour in direction d (2 = +x, 1 = +z); B the band, tc the core cells. */
static void compare_pair(const tile_res *t, const tile_res *n, int d, int b, int tc,
                         const char *what, agree_stats *sx)
{
    const op_chf *ct = &t->st.chf, *cn = &n->st.chf;
    if (ct->span_count == 0)
        return;
    for (int k = b; k < b + tc; k++) {
        /* p at T's last core cell before the line; the same world cell is N's (x - tc). */
        int px = d == 2 ? b + tc - 1 : k, pz = d == 2 ? k : b + tc - 1;
        int nx = d == 2 ? px - tc : px, nz = d == 2 ? pz : pz - tc;
        int c = px + pz * ct->width;
        for (uint32_t p = ct->cells[c]; p < ct->cells[c + 1]; p++) {
            uint32_t q = ct->links[p][d];
            if (ct->areas[p] == 0 || q == OP_NO_LINK || ct->areas[q] == 0)
                continue;
            uint32_t pn = span_at(cn, nx, nz, ct->origin[1] + ct->y[p] * ct->ch);
            uint32_t qn = pn == OP_NO_LINK ? OP_NO_LINK : cn->links[pn][d];
            if (qn == OP_NO_LINK || cn->areas[qn] == 0 || cn->areas[pn] == 0) {
                sx->unmatched++;
                continue;
            }
            sx->pairs++;
            int kt = t->st.regions.reg[p] != 0, kn = n->st.regions.reg[qn] != 0;
            sx->with += kt && kn;
            if (kt != kn) {
                sx->disagree++;
                cr_log_error("%s: tiles (%d, %d) and (%d, %d) disagree at T cell (%d, %d) floor "
                             "%d: region %d in T, %d in N",
                             what, t->st.tx, t->st.tz, n->st.tx, n->st.tz, px, pz, ct->y[p],
                             t->st.regions.reg[p], n->st.regions.reg[qn]);
            }
        }
    }
}

static void check_level(const op_soup *soup, op_partition p, const char *name, agree_stats *sx)
{
    op_settings s;
    op_settings_default(&s);
    s.partition = p;
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create(soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s: %s", name, e.msg);
    op_tile_rect r = op_level_tiles(lvl);
    op_tile_grid g;
    op_tile_grid_derive(&s, &g);
    int w = r.tx1 - r.tx0 + 1, n = w * (r.tz1 - r.tz0 + 1);
    tile_res *tiles = calloc((size_t)n, sizeof *tiles);
    op_arena *scratch = op_arena_create(0);
    for (int i = 0; i < n; i++) {
        tiles[i].a = op_arena_create(0);
        op_status rc = op_level_build_stages(lvl, r.tx0 + i % w, r.tz0 + i / w, OP_STAGE_REGIONS, 0,
                                             tiles[i].a, scratch, &tiles[i].st, &e);
        cr_assert_eq(rc, OP_OK, "%s: %s", name, e.msg);
        op_arena_reset(scratch);
    }
    char what[96];
    snprintf(what, sizeof what, "%s %s", name, op_partition_name(p));
    long before = sx->disagree;
    for (int i = 0; i < n; i++) {
        if (i % w + 1 < w)
            compare_pair(&tiles[i], &tiles[i + 1], 2, g.border, g.tile_cells, what, sx);
        if (i + w < n)
            compare_pair(&tiles[i], &tiles[i + w], 1, g.border, g.tile_cells, what, sx);
    }
    cr_log_info("%s: %d tiles, %ld pairs so far", what, n, sx->pairs);
    cr_expect_eq(sx->disagree, before, "%s: %ld span pairs on tile lines kept by one tile only",
                 what, sx->disagree - before);
    for (int i = 0; i < n; i++)
        op_arena_destroy(tiles[i].a);
    free(tiles);
    op_arena_destroy(scratch);
    op_level_destroy(lvl);
}

static void check_generated(const char *kind, int size, int seed, op_partition p, agree_stats *sx)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen(kind, size, (uint64_t)seed, a, &soup, &e), OP_OK, "%s", e.msg);
    char name[64];
    snprintf(name, sizeof name, "gen:%s:%d:%d", kind, size, seed);
    check_level(&soup, p, name, sx);
    op_arena_destroy(a);
}

static void run(op_partition p)
{
    static const char *const kinds[] = {"flat",       "terrain", "stairs",  "rooms",
                                        "multifloor", "ramp",    "pillars", "furniture"};
    agree_stats sx = {0};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        check_generated(kinds[k], 64, 1, p, &sx);
    check_generated("rooms", 256, 1, p, &sx);
    static const char *const levels[] = {"dungeon.obj", "undulating.obj"};
    for (int i = 0; i < 2; i++) {
        op_arena *a = op_arena_create(0);
        op_soup soup;
        op_err e;
        cr_assert_eq(op_obj_read_file(op_test_level(levels[i]), a, &soup, &e), OP_OK, "%s", e.msg);
        check_level(&soup, p, levels[i], &sx);
        op_arena_destroy(a);
    }
    cr_log_info("%s: %ld linked pairs across tile lines (%ld with regions), %ld not matched, "
                "%ld disagreements",
                op_partition_name(p), sx.pairs, sx.with, sx.unmatched, sx.disagree);
    /* The check saw the lines: most crossings match, and most have regions. */
    cr_assert_gt(sx.pairs, 10000);
    cr_assert_gt(sx.with, sx.pairs / 2);
    cr_assert_lt(sx.unmatched, sx.pairs / 20);
}

Test(regions_tiles, neighbours_agree_watershed, .timeout = 120)
{
    run(OP_PARTITION_WATERSHED);
}

Test(regions_tiles, neighbours_agree_monotone, .timeout = 120)
{
    run(OP_PARTITION_MONOTONE);
}

Test(regions_tiles, neighbours_agree_layers, .timeout = 120)
{
    run(OP_PARTITION_LAYERS);
}
