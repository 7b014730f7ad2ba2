/*
 * The check op_tile_assemble runs on the tiles it makes (op__tile_check, tile.c) against
 * op_tile_validate, its oracle: on every tile layer of real builds (dungeon.obj, generated
 * multi-floor and terrain, layers partition: seams, portals, in-tile links, detail) both
 * accept; on copies of those tiles broken one field at a time, by hand (one break for each
 * test of the validator) and at random (seeded), both give the same status and the same
 * message, the validator's named error. And op_tile_assemble itself refuses a tile it made
 * from a bad mesh with the validator's status and message.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/src/tile_internal.h"
#include "onepath/build.h"
#include "onepath/limits.h"
#include "onepath/obj.h"
#include "onepath/polys.h"
#include "onepath/levelgen.h"
#include "onepath/rebuild.h"
#include "op_test.h"

enum { MAX_TILES = 400 };

typedef struct sample {
    op_arena *geo, *out, *scratch;
    op_tile tiles[MAX_TILES];
    int ntiles;
} sample;

static sample S;

/* Tile layers of every fourth tile of the level (every tile of a small one), copied out. */
static void add_level(const op_soup *soup, int step)
{
    op_settings s;
    op_settings_default(&s);
    s.partition = OP_PARTITION_LAYERS;
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create(soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_tile_rect r = op_level_tiles(lvl);
    int i = 0;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++, i++) {
            if (i % step)
                continue;
            op_tile_stages st;
            cr_assert_eq(op_level_build_tile(lvl, tx, tz, NULL, 0, OP_STAGE_TILE, 0, S.out,
                                             S.scratch, &st, NULL, &e),
                         OP_OK, "%s", e.msg);
            for (int k = 0; k < st.ntiles && S.ntiles < MAX_TILES; k++)
                S.tiles[S.ntiles++] = st.tiles[k]; /* arrays in S.out, kept */
            op_arena_reset(S.scratch);
        }
    op_level_destroy(lvl);
}

static void setup(void)
{
    S.geo = op_arena_create(0);
    S.out = op_arena_create(0);
    S.scratch = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_obj_read_file(op_test_level("dungeon.obj"), S.geo, &soup, &e), OP_OK, "%s",
                 e.msg);
    add_level(&soup, 4);
    cr_assert_eq(op_levelgen("multifloor", 64, 1, S.geo, &soup, &e), OP_OK, "%s", e.msg);
    add_level(&soup, 2);
    cr_assert_eq(op_levelgen("terrain", 64, 1, S.geo, &soup, &e), OP_OK, "%s", e.msg);
    add_level(&soup, 3);
    cr_assert_gt(S.ntiles, 40);
}

static void teardown(void)
{
    op_arena_destroy(S.scratch);
    op_arena_destroy(S.out);
    op_arena_destroy(S.geo);
}

/* A copy of t whose arrays are the caller's to break (malloc, freed by drop). */
static op_tile copy(const op_tile *t)
{
    op_tile c = *t;
    size_t pe = (size_t)t->npolys * (size_t)t->nvp;
#define DUP(f, n)                                                                                  \
    do {                                                                                           \
        c.f = malloc(((n) + 1) * sizeof *t->f);                                                    \
        cr_assert(c.f);                                                                            \
        memcpy(c.f, t->f, (n) * sizeof *t->f);                                                     \
    } while (0)
    DUP(verts, 3 * (size_t)t->nverts);
    DUP(polys, pe);
    DUP(neis, pe);
    DUP(areas, (size_t)t->npolys);
    DUP(flags, (size_t)t->npolys);
    DUP(regs, (size_t)t->npolys);
    DUP(dmeshes, 4 * (size_t)t->npolys);
    DUP(dverts, 3 * (size_t)t->ndverts);
    DUP(dtris, 4 * (size_t)t->ndtris);
#undef DUP
    return c;
}

static void drop(op_tile *c)
{
    free(c->verts);
    free(c->polys);
    free(c->neis);
    free(c->areas);
    free(c->flags);
    free(c->regs);
    free(c->dmeshes);
    free(c->dverts);
    free(c->dtris);
}

/* Both verdicts on t, equal in status and message; returns the status. */
static op_status same_verdict(const op_tile *t, const char *what)
{
    op_err a, b;
    memset(&a, 0x5a, sizeof a);
    memset(&b, 0x5a, sizeof b);
    op_status sa = op__tile_check(t, &a), sb = op_tile_validate(t, &b);
    cr_assert_eq(sa, sb, "%s: check %d, validate %d (%s)", what, sa, sb, b.msg);
    cr_assert_str_eq(a.msg, b.msg, "%s", what);
    return sa;
}

Test(tile_check, accepts_every_tile_the_pipeline_makes, .init = setup, .fini = teardown)
{
    int seams = 0, portals = 0, links = 0;
    for (int i = 0; i < S.ntiles; i++) {
        const op_tile *t = &S.tiles[i];
        cr_assert_eq(same_verdict(t, "pipeline tile"), OP_OK);
        for (size_t k = 0; k < (size_t)t->npolys * (size_t)t->nvp; k++) {
            uint16_t n = t->neis[k];
            seams += OP_NEI_IS_SEAM(n);
            portals += !OP_NEI_IS_SEAM(n) && (n & OP_NEI_PORTAL);
            links += n != OP_NEI_WALL && !(n & OP_NEI_PORTAL);
        }
    }
    /* The sample holds every kind of edge the checks tell apart. */
    cr_assert_gt(seams, 0);
    cr_assert_gt(portals, 0);
    cr_assert_gt(links, 0);
}

/* One break of tile t's copy c (kind k, at polygon p, slot j); 0 when it does not apply. */
static int break_one(op_tile *c, int k, int p, int j)
{
    const int nvp = c->nvp;
    uint16_t *pv = &c->polys[(size_t)p * nvp], *pn = &c->neis[(size_t)p * nvp];
    int nv = 0;
    while (nv < nvp && pv[nv] != OP_POLY_NULL)
        nv++;
    j %= nv;
    float ts = (float)c->tile_size;
    switch (k) {
    case 0:
        c->nvp = 2;
        return 1;
    case 1:
        c->nverts = -1;
        return 1;
    case 2:
        c->npolys = -1;
        return 1;
    case 3:
        c->ndverts = -1;
        return 1;
    case 4:
        c->layer = OP_MAX_LAYERS;
        return 1;
    case 5:
        c->tile_size = 0.0;
        return 1;
    case 6:
        c->tile_size = 1e300;
        return 1; /* not finite as a float */
    case 7:
        c->verts[3 * pv[j] + 0] = -0.5f;
        return 1;
    case 8:
        c->verts[3 * pv[j] + 2] = ts * 1.5f;
        return 1;
    case 9:
        c->verts[3 * pv[j] + 1] = -1.0f;
        return 1;
    case 10:
        c->verts[3 * pv[j] + 1] = INFINITY;
        return 1;
    case 11:
        c->verts[3 * pv[j] + 0] = NAN;
        return 1;
    case 12:
        if (c->ndverts == 0)
            return 0;
        c->dverts[(size_t)j % (3 * (size_t)c->ndverts)] = NAN;
        return 1;
    case 13: /* a vertex after the padding */
        if (nv == nvp)
            return 0;
        pv[nvp - 1] = pv[0];
        return 1;
    case 14: /* two vertices: the rest padding */
        for (int i = 2; i < nvp; i++)
            pv[i] = OP_POLY_NULL;
        return 1;
    case 15:
        pv[j] = (uint16_t)c->nverts;
        return 1;
    case 16:
        pv[j] = pv[(j + 1) % nv];
        return 1;
    case 17: { /* reversed: clockwise */
        for (int a = 0, b = nv - 1; a < b; a++, b--) {
            uint16_t x = pv[a];
            pv[a] = pv[b];
            pv[b] = x;
        }
        return 1;
    }
    case 18: /* all on one point's x and z: no area */
        for (int i = 0; i < nv; i++) {
            c->verts[3 * pv[i] + 0] = c->verts[3 * pv[0] + 0];
            c->verts[3 * pv[i] + 2] = c->verts[3 * pv[0] + 2];
        }
        return 1;
    case 19:
        if (nv == nvp)
            return 0;
        pn[nvp - 1] = OP_NEI_PORTAL;
        return 1;
    case 20:
        pn[j] = (uint16_t)(OP_NEI_SEAM | (unsigned)c->layer);
        return 1;
    case 21:
        pn[j] = (uint16_t)(OP_NEI_SEAM | 0x3fffu);
        return 1;
    case 22:
        pn[j] = (uint16_t)(OP_NEI_PORTAL | 4u);
        return 1;
    case 23: { /* a portal on the wrong side (or on none) */
        uint16_t n = pn[j];
        pn[j] = (uint16_t)(OP_NEI_PORTAL |
                           (!OP_NEI_IS_SEAM(n) && (n & OP_NEI_PORTAL) ? ((n & 3u) + 1u) & 3u : 0u));
        return 1;
    }
    case 24:
        pn[j] = (uint16_t)(p + 1);
        return 1; /* itself */
    case 25:
        pn[j] = (uint16_t)(c->npolys + 1);
        return 1; /* past the last */
    case 26:
        pn[j] = (uint16_t)((p + 1) % c->npolys + 1);
        return 1; /* no link back (mostly) */
    case 27: {    /* a link whose partner links elsewhere */
        uint16_t n = pn[j];
        if (n == OP_NEI_WALL || (n & OP_NEI_PORTAL))
            return 0;
        int q = n - 1;
        for (int i = 0; i < nvp; i++)
            if (c->neis[(size_t)q * nvp + i] == p + 1)
                c->neis[(size_t)q * nvp + i] = OP_NEI_WALL;
        return 1;
    }
    case 28:
        c->dmeshes[4 * p + 0] += 1;
        return 1;
    case 29:
        c->dmeshes[4 * p + 1] = (uint32_t)c->ndverts + 1;
        return 1;
    case 30:
        c->dmeshes[4 * p + 3] += 1;
        return 1;
    case 31:
        if (c->dmeshes[4 * p + 3] == 0)
            return 0;
        c->dtris[4 * c->dmeshes[4 * p + 2] + (unsigned)j % 3] =
            (uint8_t)(nv + c->dmeshes[4 * p + 1]);
        return 1;
    case 32:
        c->areas[p] = OP_MAX_AREA + 1;
        return 1;
    case 33:
        c->regs[p] = 0;
        return 1;
    case 34:
        c->regs[p] = 0xffff;
        return 1;
    case 35:
        c->ndtris -= 1;
        return c->ndtris >= 0;
    case 36:
        c->ndverts -= 1;
        return c->ndverts >= 0;
    case 37:
        c->npolys = p;
        return p > 0; /* later polygons gone: detail left over */
    }
    return 0;
}

enum { KINDS = 38 };

Test(tile_check, each_break_refused_with_the_validators_error, .init = setup, .fini = teardown)
{
    int refused[KINDS] = {0};
    for (int i = 0; i < S.ntiles; i += 3) {
        const op_tile *t = &S.tiles[i];
        for (int k = 0; k < KINDS; k++)
            for (int p = 0; p < t->npolys; p += 1 + t->npolys / 4) {
                op_tile c = copy(t);
                if (break_one(&c, k, p, i + p)) {
                    char what[64];
                    snprintf(what, sizeof what, "tile %d break %d polygon %d", i, k, p);
                    refused[k] += same_verdict(&c, what) != OP_OK;
                }
                drop(&c);
            }
    }
    /* Every break is refused somewhere (most everywhere): each test of the validator is met. */
    for (int k = 0; k < KINDS; k++)
        cr_expect_gt(refused[k], 0, "break %d never refused", k);
}

/* A random value for a field: near the valid ones (an index, a boundary, a flag) or not. */
static uint16_t rand_u16(op_test_rng *r, const op_tile *t)
{
    switch (op_test_rand_int(r, 0, 6)) {
    case 0:
        return (uint16_t)op_test_rand_int(r, 0, t->nverts);
    case 1:
        return (uint16_t)op_test_rand_int(r, 0, t->npolys + 1);
    case 2:
        return (uint16_t)(OP_NEI_PORTAL | (unsigned)op_test_rand_int(r, 0, 5));
    case 3:
        return (uint16_t)(OP_NEI_SEAM | (unsigned)op_test_rand_int(r, 0, 3));
    case 4:
        return OP_POLY_NULL;
    case 5:
        return 0;
    default:
        return (uint16_t)op_test_rand(r);
    }
}

static float rand_f(op_test_rng *r, const op_tile *t)
{
    float ts = (float)t->tile_size;
    static const float odd[] = {0.0f, -0.0f, -1e-30f, 1e-45f, INFINITY, -INFINITY, NAN};
    switch (op_test_rand_int(r, 0, 3)) {
    case 0:
        return ts;
    case 1:
        return nextafterf(ts, 2 * ts);
    case 2:
        return odd[op_test_rand_int(r, 0, 6)];
    default:
        return (float)(op_test_rand01(r) * 1.2 * ts - 0.1 * ts);
    }
}

Test(tile_check, random_breaks_same_verdict, .init = setup, .fini = teardown)
{
    op_test_rng rng = {20261207};
    int refused = 0, accepted = 0;
    for (int round = 0; round < 30000; round++) {
        const op_tile *t = &S.tiles[op_test_rand_int(&rng, 0, S.ntiles - 1)];
        op_tile c = copy(t);
        size_t pe = (size_t)t->npolys * (size_t)t->nvp; /* the arrays' sizes */
        int nb = op_test_rand_int(&rng, 1, 3);          /* one to three fields at once */
        for (int b = 0; b < nb; b++) {
            switch (op_test_rand_int(&rng, 0, 9)) {
            case 0:
                c.polys[op_test_rand(&rng) % pe] = rand_u16(&rng, &c);
                break;
            case 1:
                c.neis[op_test_rand(&rng) % pe] = rand_u16(&rng, &c);
                break;
            case 2:
                if (t->nverts)
                    c.verts[op_test_rand(&rng) % (3 * (size_t)t->nverts)] = rand_f(&rng, &c);
                break;
            case 3:
                if (t->ndverts)
                    c.dverts[op_test_rand(&rng) % (3 * (size_t)t->ndverts)] = rand_f(&rng, &c);
                break;
            case 4:
                if (t->ndtris)
                    c.dtris[op_test_rand(&rng) % (4 * (size_t)t->ndtris)] =
                        (uint8_t)op_test_rand_int(&rng, 0, 12);
                break;
            case 5: {
                uint32_t *d = &c.dmeshes[op_test_rand(&rng) % (4 * (size_t)t->npolys)];
                *d = (uint32_t)((int64_t)*d + op_test_rand_int(&rng, -2, 2));
                break;
            }
            case 6:
                c.areas[op_test_rand(&rng) % (size_t)t->npolys] ^=
                    (uint8_t)(1u << op_test_rand_int(&rng, 0, 7));
                break;
            case 7:
                c.regs[op_test_rand(&rng) % (size_t)t->npolys] = rand_u16(&rng, &c);
                break;
            case 8: /* counts only downwards (the arrays hold the original counts) */
                switch (op_test_rand_int(&rng, 0, 3)) {
                case 0:
                    c.nverts -= op_test_rand_int(&rng, 0, 2);
                    break;
                case 1:
                    c.npolys -= op_test_rand_int(&rng, 0, 2);
                    break;
                case 2:
                    c.ndverts -= op_test_rand_int(&rng, 0, 2);
                    break;
                default:
                    c.ndtris -= op_test_rand_int(&rng, 0, 2);
                    break;
                }
                break;
            default: /* a swap of two polygon slots (order, orientation, padding) */
            {
                size_t a = op_test_rand(&rng) % pe, z = op_test_rand(&rng) % pe;
                uint16_t x = c.polys[a];
                c.polys[a] = c.polys[z];
                c.polys[z] = x;
                break;
            }
            }
        }
        char what[48];
        snprintf(what, sizeof what, "round %d", round);
        if (same_verdict(&c, what) == OP_OK)
            accepted++;
        else
            refused++;
        drop(&c);
    }
    /* Both verdicts are met often (a break may leave a valid tile: a value unchanged). */
    cr_assert_gt(refused, 10000);
    cr_assert_gt(accepted, 100);
}

/* op_tile_assemble on a mesh whose tile breaks a rule (a clockwise square; a square of region
 * 0): refused with op_tile_validate's status and message for the tile it made (left in
 * tiles[0]), the validator's named error. No setup: hand-made meshes on the frame of
 * test_tile_link.c (B = 5, 32 cells of 0.3). */
static void assemble_refused(const uint32_t *square, uint16_t reg, const char *want)
{
    int32_t verts[] = {5, 0, 5, 15, 0, 5, 15, 0, 15, 5, 0, 15};
    uint32_t polys[6];
    memcpy(polys, square, sizeof polys);
    int32_t en[6];
    for (int i = 0; i < 6; i++)
        en[i] = OP_EDGE_INTERNAL;
    uint16_t regs[1] = {reg};
    uint8_t areas[1] = {63};
    op_poly_mesh pm;
    memset(&pm, 0, sizeof pm);
    pm.nverts = 4;
    pm.verts = verts;
    pm.npolys = 1;
    pm.nvp = 6;
    pm.polys = polys;
    pm.edge_neighbour = en;
    pm.regs = regs;
    pm.areas = areas;
    pm.frame = (op_tile_frame){5, 32, 0.3, 9.6, 0.2};
    op_settings s;
    op_settings_default(&s);
    op_tile_source src = {0, 0, 0.0, 0, 0.0, 0.0, NULL, 0};
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_tile tiles[1];
    int ntiles = 0;
    op_err e, v;
    op_status st = op_tile_assemble(&pm, NULL, NULL, 1, &src, &s, out, scratch, tiles, &ntiles, &e);
    cr_assert_eq(st, OP_EPROTO, "%s", e.msg);
    cr_assert_eq(ntiles, 0);
    cr_assert_eq(op_tile_validate(&tiles[0], &v), st);
    cr_assert_str_eq(e.msg, v.msg);
    cr_assert_str_eq(e.msg, want);
    op_arena_destroy(scratch);
    op_arena_destroy(out);
}

Test(tile_check, assemble_refuses_a_bad_tile_with_the_validators_error)
{
    const uint32_t N = OP_POLY_MESH_NULL;
    const uint32_t cw[6] = {0, 3, 2, 1, N, N}, ccw[6] = {0, 1, 2, 3, N, N};
    assemble_refused(cw, 1,
                     "tile: polygon 0 turns clockwise at vertex 0 (not convex or not "
                     "counter-clockwise)");
    assemble_refused(ccw, 0, "tile: polygon 0 region 0 outside 1..65534");
}
