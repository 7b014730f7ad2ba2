/*
 * The per-tile bounds a part keeps (snapshot.c, opd_part_tile_box) against the scanning
 * path they replace (op_level_create_tile_of over the same list, which reads every listed
 * triangle): bit for bit, on random soups with signed zeros (which compare equal, so the
 * first triangle's bits must win as in the scan), big triangles of many tiles merged into
 * the small ones' lists, and edits that replace and drop parts; and the tile bytes of a
 * snapshot's build (opd_build_tile, which makes its level from the kept bounds) against an
 * offline bake of the whole soup (op_level_create).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/src/level_internal.h"
#include "level.h"
#include "onepath/arena.h"

/* A level's per-triangle classes (core/src/level_internal.h), NULL when it has none. */
static const uint8_t *level_classes(const op_level *l)
{
    return l->tri_class;
}

typedef struct rng {
    uint64_t s;
} rng;

static uint32_t next(rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (uint32_t)(r->s >> 11);
}

/* A coordinate that is often +0 or -0 (equal values of different bits), else on a
 * coarse grid (ties of other values) or anywhere within span. */
static float coord(rng *r, float span)
{
    uint32_t k = next(r) % 10;
    if (k < 3)
        return (next(r) & 1) ? -0.0f : 0.0f;
    if (k < 7)
        return (float)((int)(next(r) % 41) - 20) * span / 20.0f;
    return ((float)(next(r) % 100001) / 50000.0f - 1.0f) * span;
}

/* A coordinate at c or just above it: at c, a zero of either sign when c is a zero, so
 * the boxes of a run's triangles tie in zeros of other bits. */
static float near(rng *r, float c)
{
    uint32_t k = next(r) % 4;
    if (k < 2)
        return c == 0.0f ? ((k & 1) ? -0.0f : 0.0f) : c;
    return c + (k == 2 ? 0.05f : 0.1f);
}

/* A random mesh of nt triangles: most small (near a random centre), some big (a box of
 * many tiles, OPD_PART_SMALL and more: kept once, found by a scan). With runs, most small
 * triangles keep the previous one's centre and stay within a fraction of a cell of it,
 * so consecutive triangles share their tiles (part_bin's runs) and tie in coordinates. */
static opd_mesh *random_mesh_runs(rng *r, const char *name, int nt, float span, int runs)
{
    size_t nv = 3 * (size_t)nt;
    float *v = malloc(nv * 3 * sizeof *v);
    int32_t *t = malloc(nv * sizeof *t);
    uint8_t *a = malloc((size_t)nt);
    float cx = 0, cz = 0, cy = 0;
    for (int i = 0; i < nt; i++) {
        int big = next(r) % 6 == 0, keep = runs && i > 0 && !big && next(r) % 5 != 0;
        if (!keep) {
            cx = coord(r, span);
            cz = coord(r, span);
            cy = coord(r, 2.0f);
        }
        for (int c = 0; c < 3; c++) {
            float *p = &v[9 * (size_t)i + 3 * (size_t)c];
            if (runs && !big) {
                p[0] = near(r, cx);
                p[1] = near(r, cy);
                p[2] = near(r, cz);
                t[3 * i + c] = 3 * i + c;
                continue;
            }
            float reach = big ? span : 1.5f;
            p[0] = (next(r) % 4 == 0) ? coord(r, span) * (big ? 1.0f : 0.0f) + cx * !big
                                      : cx + coord(r, reach);
            p[1] = (next(r) % 3 == 0) ? coord(r, 1.0f) : cy + coord(r, 0.5f);
            p[2] = (next(r) % 4 == 0) ? coord(r, span) * (big ? 1.0f : 0.0f) + cz * !big
                                      : cz + coord(r, reach);
            t[3 * i + c] = 3 * i + c;
        }
        a[i] = (uint8_t)(next(r) % 4 == 0 ? 0 : 63);
        /* Copies of an earlier triangle (the same vertex bits and area: a build keeps the
         * first), and near copies that are not (another area, a zero of the other sign). */
        uint32_t k = next(r) % 8;
        if (i > 0 && k < 3) {
            int j = (int)(next(r) % (uint32_t)i);
            memcpy(&v[9 * (size_t)i], &v[9 * (size_t)j], 9 * sizeof *v);
            a[i] = a[j];
            if (k == 1)
                a[i] = (uint8_t)(a[j] ? 0 : 63);
            if (k == 2)
                v[9 * (size_t)i + 3] =
                    v[9 * (size_t)i + 3] == 0.0f ? -v[9 * (size_t)i + 3] : v[9 * (size_t)i + 3];
        }
    }
    opd_mesh *m;
    op_err e;
    cr_assert_eq(opd_mesh_make(name, (const uint8_t *)v, nv * 12, (const uint8_t *)t, nv * 4, a,
                               (size_t)nt, &m, &e),
                 OP_OK, "%s", e.msg);
    free(v);
    free(t);
    free(a);
    return m;
}

static opd_mesh *random_mesh(rng *r, const char *name, int nt, float span)
{
    return random_mesh_runs(r, name, nt, span, 0);
}

static void settings(op_settings *s)
{
    op_settings_default(s);
    s->tile_size = 2.4; /* 8 cells: a big triangle spans many tiles */
}

typedef struct counts {
    int tiles, signed_zero, with_big, unknown, shared;
} counts;

/* The part's rectangle, big triangles and per-tile lists against the core's selection
 * (op_triangle_tiles, op_tile_select over the part's soup, unclamped): the lists a build
 * takes and the tiles they are kept under are the selection's. Counts in c->shared the
 * consecutive small triangles of the same tiles (a run of part_bin). */
static void check_lists(const opd_part *p, const op_settings *s, counts *c)
{
    const op_tile_range wide = {-(1 << 30), -(1 << 30), 1 << 30, 1 << 30};
    op_tile_grid g;
    op_tile_grid_derive(s, &g);
    op_tile_range rect = {0}, prev = {1, 1, 0, 0};
    size_t nbig = 0;
    for (size_t t = 0; t < p->nt; t++) {
        op_tile_range q;
        cr_assert(op_triangle_tiles(&p->soup, t, &g, &wide, &q));
        if (t == 0)
            rect = q;
        rect.tx0 = q.tx0 < rect.tx0 ? q.tx0 : rect.tx0;
        rect.tz0 = q.tz0 < rect.tz0 ? q.tz0 : rect.tz0;
        rect.tx1 = q.tx1 > rect.tx1 ? q.tx1 : rect.tx1;
        rect.tz1 = q.tz1 > rect.tz1 ? q.tz1 : rect.tz1;
        if ((int64_t)(q.tx1 - q.tx0 + 1) * (q.tz1 - q.tz0 + 1) > OPD_PART_SMALL) {
            cr_assert_lt(nbig, p->nbig, "'%s': triangle %zu is big", p->name, t);
            cr_assert_eq(p->big[nbig], t, "'%s': big triangle %zu", p->name, nbig);
            cr_assert(!memcmp(&p->big_rect[nbig], &q, sizeof q), "'%s': big triangle %zu's tiles",
                      p->name, t);
            nbig++;
            prev = (op_tile_range){1, 1, 0, 0};
            continue;
        }
        c->shared += !memcmp(&q, &prev, sizeof q);
        prev = q;
    }
    cr_assert_eq(nbig, p->nbig, "'%s': %zu big triangles, kept %zu", p->name, nbig, p->nbig);
    cr_assert(!memcmp(&rect, &p->rect, sizeof rect),
              "'%s': rectangle %d..%d x %d..%d, kept "
              "%d..%d x %d..%d",
              p->name, rect.tx0, rect.tx1, rect.tz0, rect.tz1, p->rect.tx0, p->rect.tx1,
              p->rect.tz0, p->rect.tz1);
    op_arena *a = op_arena_create(0);
    for (int tz = rect.tz0 - 1; tz <= rect.tz1 + 1; tz++)
        for (int tx = rect.tx0 - 1; tx <= rect.tx1 + 1; tx++) {
            uint32_t *want;
            size_t nw;
            op_err e;
            cr_assert_eq(op_tile_select(&p->soup, s, &wide, tx, tz, a, &want, &nw, &e), OP_OK, "%s",
                         e.msg);
            size_t n = opd_part_tile(p, tx, tz, NULL);
            cr_assert_eq(n, nw, "'%s' tile (%d, %d): %zu triangles, the selection's %zu", p->name,
                         tx, tz, n, nw);
            uint32_t *got = malloc((n ? n : 1) * sizeof *got);
            cr_assert_eq(opd_part_tile(p, tx, tz, got), n);
            cr_assert(!n || !memcmp(got, want, n * sizeof *got), "'%s' tile (%d, %d): list",
                      p->name, tx, tz);
            free(got);
            op_arena_reset(a);
        }
    op_arena_destroy(a);
}

/* Every tile of p's range and a ring around it: the kept bounds are the scan's, bit for
 * bit, and exist exactly when the tile has triangles. */
static void check_part(const opd_part *p, counts *c)
{
    if (p->nt == 0)
        return;
    op_settings s;
    settings(&s);
    check_lists(p, &s, c);
    for (int tz = p->rect.tz0 - 1; tz <= p->rect.tz1 + 1; tz++)
        for (int tx = p->rect.tx0 - 1; tx <= p->rect.tx1 + 1; tx++) {
            size_t n = opd_part_tile(p, tx, tz, NULL);
            float kmin[3], kmax[3];
            int have = opd_part_tile_box(p, tx, tz, kmin, kmax);
            cr_assert_eq(have != 0, n > 0, "tile (%d, %d): %zu triangles, kept bounds %d", tx, tz,
                         n, have);
            if (!n)
                continue;
            if (have < 0) { /* a -0 / +0 tie the kept bounds cannot order: builds scan */
                c->unknown++;
                continue;
            }
            uint32_t *ids = malloc(n * sizeof *ids);
            cr_assert_eq(opd_part_tile(p, tx, tz, ids), n, "tile (%d, %d): count and list", tx, tz);
            for (size_t i = 1; i < n; i++)
                cr_assert_lt(ids[i - 1], ids[i], "tile (%d, %d): list not increasing", tx, tz);
            op_level *scan, *known;
            op_err e;
            cr_assert_eq(op_level_create_tile_of(p->whole, tx, tz, ids, n, &scan, &e), OP_OK, "%s",
                         e.msg);
            cr_assert_eq(
                op_level_create_tile_known(p->whole, tx, tz, ids, n, kmin, kmax, &known, &e), OP_OK,
                "%s", e.msg);
            float smin[3], smax[3], qmin[3], qmax[3];
            op_level_bounds(scan, smin, smax);
            op_level_bounds(known, qmin, qmax);
            for (int k = 0; k < 3; k++) {
                uint32_t a, b;
                memcpy(&a, &smin[k], 4);
                memcpy(&b, &kmin[k], 4);
                cr_assert_eq(a, b, "tile (%d, %d) of '%s': bmin[%d] %a scanned, %a kept", tx, tz,
                             p->name, k, (double)smin[k], (double)kmin[k]);
                memcpy(&a, &smax[k], 4);
                memcpy(&b, &kmax[k], 4);
                cr_assert_eq(a, b, "tile (%d, %d) of '%s': bmax[%d] %a scanned, %a kept", tx, tz,
                             p->name, k, (double)smax[k], (double)kmax[k]);
                c->signed_zero +=
                    (smin[k] == 0 && signbit(smin[k])) || (smax[k] == 0 && signbit(smax[k]));
            }
            cr_assert(!memcmp(qmin, smin, sizeof qmin) && !memcmp(qmax, smax, sizeof qmax));
            op_tile_rect rs = op_level_tiles(scan), rk = op_level_tiles(known);
            cr_assert(!memcmp(&rs, &rk, sizeof rs));
            for (size_t b = 0; b < p->nbig; b++) {
                const op_tile_range *r = &p->big_rect[b];
                if (tx >= r->tx0 && tx <= r->tx1 && tz >= r->tz0 && tz <= r->tz1) {
                    c->with_big++;
                    break;
                }
            }
            c->tiles++;
            op_level_destroy(scan);
            op_level_destroy(known);
            free(ids);
        }
}

static void check_snap(const opd_snap *sn, counts *c)
{
    for (int i = 0; i < sn->nparts; i++)
        check_part(sn->parts[i], c);
}

static opd_config config(void)
{
    opd_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.max_level_verts = (size_t)1 << 30;
    cfg.max_level_tris = (size_t)1 << 30;
    return cfg;
}

Test(daemon_tilebox, kept_bounds_are_the_scans_on_random_soups_and_edits)
{
    rng r = {0x9e3779b97f4a7c15ull};
    opd_config cfg = config();
    op_settings s;
    settings(&s);
    counts c = {0};
    for (int round = 0; round < 12; round++) {
        float span = round % 3 == 0 ? 6.0f : 20.0f;
        opd_mesh *m[2] = {random_mesh(&r, "a", 40 + (int)(next(&r) % 200), span),
                          random_mesh(&r, "b", 1 + (int)(next(&r) % 60), span)};
        opd_snap *sn, *ed, *dr;
        op_err e;
        cr_assert_eq(opd_snap_from_meshes(&cfg, &s, m, 2, NULL, 1, &sn, &e), OP_OK, "%s", e.msg);
        check_snap(sn, &c);
        /* An edit replacing mesh b (its part made again), then one dropping a. */
        opd_mesh *b2 = random_mesh(&r, "b", 30 + (int)(next(&r) % 100), span);
        cr_assert_eq(opd_snap_edit(&cfg, sn, b2, NULL, 2, &ed, &e), OP_OK, "%s", e.msg);
        check_snap(ed, &c);
        cr_assert_eq(opd_snap_edit(&cfg, ed, NULL, "a", 3, &dr, &e), OP_OK, "%s", e.msg);
        check_snap(dr, &c);
        opd_snap_unref(sn);
        opd_snap_unref(ed);
        opd_snap_unref(dr);
        opd_mesh_free(m[0]);
        opd_mesh_free(m[1]);
        opd_mesh_free(b2);
    }
    /* The cases the bounds must get right were met. */
    cr_assert_gt(c.tiles, 500, "%d tiles", c.tiles);
    cr_assert_gt(c.signed_zero, 20, "%d signed zeros", c.signed_zero);
    cr_assert_gt(c.with_big, 100, "%d tiles with big triangles", c.with_big);
    /* ... and the scan is left to few. */
    cr_assert_lt(c.unknown * 20, c.tiles, "%d of %d tiles scanned", c.unknown, c.tiles);
    cr_log_info("%d tiles, %d signed zeros, %d with big triangles, %d scanned", c.tiles,
                c.signed_zero, c.with_big, c.unknown);
}

/* Meshes whose triangles come in runs of the same tiles (part_bin finds a run's tiles
 * once and steps their bounds by the run's): the lists and the bounds are still the
 * selection's and the scan's, bit for bit, with signed-zero ties inside runs and between
 * a run and the triangles before it. */
Test(daemon_tilebox, runs_of_shared_tiles_keep_the_scans_bounds)
{
    rng r = {0xd1b54a32d192ed03ull};
    opd_config cfg = config();
    op_settings s;
    settings(&s);
    counts c = {0};
    for (int round = 0; round < 12; round++) {
        float span = round % 2 == 0 ? 3.0f : 12.0f;
        opd_mesh *m[2] = {random_mesh_runs(&r, "a", 100 + (int)(next(&r) % 300), span, 1),
                          random_mesh_runs(&r, "b", 1 + (int)(next(&r) % 60), span, 1)};
        opd_snap *sn;
        op_err e;
        cr_assert_eq(opd_snap_from_meshes(&cfg, &s, m, 2, NULL, 1, &sn, &e), OP_OK, "%s", e.msg);
        check_snap(sn, &c);
        opd_snap_unref(sn);
        opd_mesh_free(m[0]);
        opd_mesh_free(m[1]);
    }
    cr_assert_gt(c.shared, 500, "%d triangles sharing the previous one's tiles", c.shared);
    cr_assert_gt(c.signed_zero, 20, "%d signed zeros", c.signed_zero);
    cr_assert_gt(c.with_big, 50, "%d tiles with big triangles", c.with_big);
    cr_assert_lt(c.unknown * 10, c.tiles, "%d of %d tiles scanned", c.unknown, c.tiles);
    cr_log_info("%d tiles, %d shared, %d signed zeros, %d with big triangles, %d scanned", c.tiles,
                c.shared, c.signed_zero, c.with_big, c.unknown);
}

/* The daemon's build of every tile of a one-mesh snapshot (its level made from the kept
 * bounds) against the offline bake of the same soup, hash for hash. */
Test(daemon_tilebox, builds_from_kept_bounds_are_the_offline_bake)
{
    rng r = {0x2545f4914f6cdd1dull};
    opd_config cfg = config();
    op_settings s;
    settings(&s);
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    int compared = 0;
    for (int round = 0; round < 4; round++) {
        opd_mesh *m = random_mesh_runs(&r, "a", 150, 8.0f, round == 3);
        opd_snap *sn;
        op_err e;
        cr_assert_eq(opd_snap_from_meshes(&cfg, &s, &m, 1, NULL, 1, &sn, &e), OP_OK, "%s", e.msg);
        const opd_part *p = sn->parts[0];
        op_level *whole;
        cr_assert_eq(op_level_create(&p->soup, &s, NULL, 0, &whole, &e), OP_OK, "%s", e.msg);
        /* The part's level holds the classes the offline level keeps (op_level_classify):
         * its builds then skip the classification and the copies' hashing (no byte tells). */
        const uint8_t *want = level_classes(whole), *got = level_classes(p->whole);
        cr_assert(want && got, "the part's level has no classes");
        int copies = 0;
        for (size_t t = 0; t < p->nt; t++) {
            cr_assert_eq(got[t], want[t], "triangle %zu: class %u, the offline level's %u", t,
                         got[t], want[t]);
            copies += want[t] == 0xff;
        }
        cr_assert_gt(copies, 5, "%d copies", copies);
        op_tile_rect rc = op_level_tiles(whole);
        for (int tz = rc.tz0; tz <= rc.tz1; tz++)
            for (int tx = rc.tx0; tx <= rc.tx1; tx++) {
                opd_build_result b;
                opd_build_tile(sn, tx, tz, NULL, 0, out, scratch, &b);
                op_arena_reset(out);
                op_arena_reset(scratch);
                op_tile_stages st;
                cr_assert_eq(b.st, OP_OK, "%s", b.msg);
                cr_assert_eq(
                    op_level_build_stages(whole, tx, tz, OP_STAGE_TILE, 0, out, scratch, &st, &e),
                    OP_OK, "%s", e.msg);
                cr_assert_eq(b.nl, st.ntiles, "tile (%d, %d)", tx, tz);
                for (int k = 0; k < st.ntiles; k++) {
                    op_bytes blob;
                    uint64_t h;
                    cr_assert_eq(op_tile_encode(&st.tiles[k], &blob, &h, &e), OP_OK, "%s", e.msg);
                    cr_assert_eq(b.hashes[k], h, "tile (%d, %d) layer %d", tx, tz, k);
                    cr_assert(blob.len == b.blobs[k].len &&
                              !memcmp(blob.data, b.blobs[k].data, blob.len));
                    op_bytes_free(&blob);
                    compared++;
                }
                op_arena_reset(out);
                op_arena_reset(scratch);
                opd_build_result_free(&b);
            }
        op_level_destroy(whole);
        opd_snap_unref(sn);
        opd_mesh_free(m);
    }
    cr_assert_gt(compared, 20, "%d layers", compared);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
}

/* The part's tile-limit check (made from the mesh's box) against op_soup_tile_range over
 * the whole decoded soup: the same status and message, on meshes around the limit; and
 * the decoded arrays against the upload's bytes read as little-endian. */
Test(daemon_tilebox, tile_limit_from_the_box_is_the_soups)
{
    rng r = {0x853c49e6748fea9bull};
    int over = 0, under = 0;
    for (int round = 0; round < 200; round++) {
        int nt = 1 + (int)(next(&r) % 6);
        size_t nv = 3 * (size_t)nt;
        float *v = malloc(nv * 3 * sizeof *v);
        int32_t *t = malloc(nv * sizeof *t);
        float span = (float)(1 + next(&r) % 4000);
        for (size_t k = 0; k < 3 * nv; k++)
            v[k] = coord(&r, span);
        for (size_t k = 0; k < nv; k++)
            t[k] = (int32_t)(next(&r) % nv);
        op_settings s;
        op_settings_default(&s);
        s.tile_size = 0.5 + (double)(next(&r) % 40) / 10.0;
        s.cell_size = s.tile_size / (double)(1 + next(&r) % 32);
        op_soup soup = {v, 3 * nv, (int *)t, nv, NULL};
        op_tile_range rr;
        op_err want, got;
        op_status ws = op_soup_tile_range(&soup, &s, &rr, &want);
        opd_mesh *m;
        cr_assert_eq(opd_mesh_make("m", (const uint8_t *)v, nv * 12, (const uint8_t *)t, nv * 4,
                                   NULL, 0, &m, &got),
                     OP_OK, "%s", got.msg);
        opd_part *p = NULL;
        op_status gs = opd_part_make(m, &s, &p, &got);
        if (ws != OP_OK) {
            char msg[OP_ERR_MSG_MAX + 16];
            snprintf(msg, sizeof msg, "mesh 'm': %s", want.msg);
            cr_assert_eq(gs, ws, "round %d: %s", round, got.msg);
            cr_assert_str_eq(got.msg, msg);
            over++;
        } else {
            cr_assert_eq(gs, OP_OK, "round %d: %s", round, got.msg);
            for (size_t k = 0; k < 3 * nv; k++) {
                const uint8_t *b = m->verts + 4 * k;
                uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                             (uint32_t)b[3] << 24,
                         w;
                memcpy(&w, &p->verts[k], 4);
                cr_assert_eq(u, w, "vertex coordinate %zu", k);
            }
            for (size_t k = 0; k < nv; k++) {
                const uint8_t *b = m->tris + 4 * k;
                int32_t i = (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                                      (uint32_t)b[3] << 24);
                cr_assert_eq(p->tris[k], i, "index %zu", k);
            }
            under++;
            opd_part_unref(p);
        }
        opd_mesh_free(m);
        free(v);
        free(t);
    }
    cr_assert_gt(over, 10, "%d over the limit", over);
    cr_assert_gt(under, 10, "%d under it", under);
}
