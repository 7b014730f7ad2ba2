/*
 * Reuse of a base's polygons per contour (docs/spec/build3d-runtime.md §5.12), rule by rule:
 * a polygon record is taken from op__polys_build_reuse on one contour set, and another set
 * (the same, or changed in one way) is polygonized from that record; the mesh must be
 * op_polys_build's of the second set byte for byte (the oracle: the computation the copy
 * stands for), and the number of contours copied says whether the rule let each one copy.
 * The contours are a real tile's (the generated multi-floor level's with the most contours) and,
 * for the welding rule, a hand-made pinched ring.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../core/src/polys_internal.h"
#include "onepath/build.h"
#include "onepath/level.h"
#include "onepath/levelgen.h"
#include "onepath/settings.h"
#include "op_test.h"

static op_arena *REC, *OUT, *SCR;

static void setup(void)
{
    REC = op_arena_create(0);
    OUT = op_arena_create(0);
    SCR = op_arena_create(0);
}

static void teardown(void)
{
    op_arena_destroy(REC);
    op_arena_destroy(OUT);
    op_arena_destroy(SCR);
}

TestSuite(polys_reuse, .init = setup, .fini = teardown, .timeout = 120);

/* A contour set the test owns (malloc'd, deep). */
typedef struct cset {
    op_contour_set s;
    op_tile_frame frame;
    int nvp;
} cset;

static void cset_copy(cset *d, const cset *src)
{
    *d = *src;
    d->s.contours = calloc((size_t)src->s.count + 1, sizeof *d->s.contours);
    cr_assert(d->s.contours);
    for (int i = 0; i < src->s.count; i++) {
        op_contour *c = &d->s.contours[i];
        *c = src->s.contours[i];
        c->verts = malloc((size_t)c->nverts * sizeof *c->verts);
        cr_assert(c->verts);
        memcpy(c->verts, src->s.contours[i].verts, (size_t)c->nverts * sizeof *c->verts);
        c->raw = (op_raw_loop){NULL, 0};
        c->raw_holes = NULL;
        c->nraw_holes = 0;
    }
}

static void cset_free(cset *c)
{
    for (int i = 0; i < c->s.count; i++)
        free(c->s.contours[i].verts);
    free(c->s.contours);
}

/* The contours the polygon stage of the generated multi-floor tile with the most contours read. */
static void tile_contours(cset *res)
{
    op_arena *geo = op_arena_create(0), *out = op_arena_create(0), *scr = op_arena_create(0);
    op_soup soup;
    op_settings s;
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_levelgen("multifloor", 64, 1, geo, &soup, &e), OP_OK, "%s", e.msg);
    op_settings_default(&s);
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_tile_rect r = op_level_tiles(lvl);
    int best = -1, btx = 0, btz = 0;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            op_arena_reset(out);
            op_arena_reset(scr);
            op_tile_stages st;
            cr_assert_eq(op_level_build_stages(lvl, tx, tz, OP_STAGE_POLYS, 0, out, scr, &st, &e),
                         OP_OK, "%s", e.msg);
            if (!st.skipped && st.contours.count > best)
                best = st.contours.count, btx = tx, btz = tz;
        }
    cr_assert_geq(best, 4, "best %d", best);
    op_arena_reset(out);
    op_arena_reset(scr);
    op_tile_stages st;
    cr_assert_eq(op_level_build_stages(lvl, btx, btz, OP_STAGE_POLYS, 0, out, scr, &st, &e), OP_OK,
                 "%s", e.msg);
    cset tmp = {st.contours, st.polys.frame, st.polys.nvp};
    cset_copy(res, &tmp);
    op_level_destroy(lvl);
    op_arena_destroy(geo);
    op_arena_destroy(out);
    op_arena_destroy(scr);
}

static void add(struct cset *s, const int (*v)[4], int n, int region);

typedef struct membuf {
    char *p;
    size_t n, cap;
} membuf;

static int mem_write(void *ctx, const char *data, size_t len)
{
    membuf *m = ctx;
    if (m->n + len + 1 > m->cap) {
        m->cap = 2 * (m->n + len + 1);
        m->p = realloc(m->p, m->cap);
        cr_assert(m->p);
    }
    memcpy(m->p + m->n, data, len);
    m->n += len;
    m->p[m->n] = 0;
    return 0;
}

static membuf dump(const op_poly_mesh *m)
{
    membuf b = {NULL, 0, 0};
    mem_write(&b, "", 0);
    cr_assert_eq(op_polys_dump(m, mem_write, &b), 0);
    return b;
}

/* The record of base's polygon stage (arrays in REC, vertices base's). */
static op__poly_base record(const cset *base)
{
    op__poly_base rec;
    op_poly_mesh m;
    op_err e;
    cr_assert_eq(op__polys_build_reuse(&base->s, &base->frame, base->nvp, NULL, NULL, &rec, REC,
                                       OUT, SCR, &m, &e),
                 OP_OK, "%s", e.msg);
    /* A recording build is a build: its mesh is op_polys_build's. */
    op_poly_mesh f;
    cr_assert_eq(op_polys_build(&base->s, &base->frame, base->nvp, OUT, SCR, &f, &e), OP_OK, "%s",
                 e.msg);
    membuf a = dump(&m), b = dump(&f);
    cr_assert_str_eq(a.p, b.p);
    free(a.p);
    free(b.p);
    return rec;
}

/* Polygonizes set from rec and from scratch; the meshes must be equal. Returns the number
 * of contours copied. */
static int from_record(const op__poly_base *rec, const cset *set)
{
    op_poly_mesh m, f;
    op_err e;
    int reused = -1;
    cr_assert_eq(op__polys_build_reuse(&set->s, &set->frame, set->nvp, rec, &reused, NULL, NULL,
                                       OUT, SCR, &m, &e),
                 OP_OK, "%s", e.msg);
    cr_assert_eq(op_polys_build(&set->s, &set->frame, set->nvp, OUT, SCR, &f, &e), OP_OK, "%s",
                 e.msg);
    membuf a = dump(&m), b = dump(&f);
    cr_assert_str_eq(a.p, b.p, "the mesh from the record differs from the computed one");
    free(a.p);
    free(b.p);
    return reused;
}

/* A contour with a kept vertex of positive neighbour value whose value another kept vertex
 * shares (want_shared), or any with a positive value; -1 when none. *at gets the vertex. */
static int find_contour(const op__poly_base *rec, const cset *set, int want_shared, int *at,
                        int *at2)
{
    for (int i = 0; i < set->s.count; i++) {
        const op__poly_base_contour *q = &rec->contours[i];
        const op_contour *c = &set->s.contours[i];
        if (q->nverts == 0)
            continue;
        for (int j = 0; j < q->nk; j++) {
            int v = c->verts[rec->keep[q->kept_at + j]].neighbour;
            if (v <= 0)
                continue;
            if (!want_shared) {
                *at = rec->keep[q->kept_at + j];
                return i;
            }
            for (int k = j + 1; k < q->nk; k++)
                if (c->verts[rec->keep[q->kept_at + k]].neighbour == v) {
                    *at = rec->keep[q->kept_at + j];
                    *at2 = rec->keep[q->kept_at + k];
                    return i;
                }
        }
    }
    return -1;
}

Test(polys_reuse, same_contours_all_copy)
{
    cset base, set;
    tile_contours(&base);
    op__poly_base rec = record(&base);
    cset_copy(&set, &base);
    cr_assert_eq(from_record(&rec, &set), set.s.count);
    cset_free(&set);
    cset_free(&base);
}

/* Rule 12.3 reads values through their classes only: a renaming of every positive value
 * copies every contour, the edges carrying the new values. */
Test(polys_reuse, renamed_values_all_copy)
{
    cset base, set;
    tile_contours(&base);
    op__poly_base rec = record(&base);
    cset_copy(&set, &base);
    for (int i = 0; i < set.s.count; i++)
        for (int k = 0; k < set.s.contours[i].nverts; k++) {
            op_contour_vert *v = &set.s.contours[i].verts[k];
            if (v->neighbour > 0)
                v->neighbour = 700 - v->neighbour;
        }
    cr_assert_eq(from_record(&rec, &set), set.s.count);
    cset_free(&set);
    cset_free(&base);
}

/* Rule 12.2: one vertex one row higher; that contour is computed. */
Test(polys_reuse, moved_vertex_is_computed)
{
    cset base, set;
    tile_contours(&base);
    op__poly_base rec = record(&base);
    cset_copy(&set, &base);
    set.s.contours[0].verts[0].y += 1;
    cr_assert_eq(from_record(&rec, &set), set.s.count - 1);
    cset_free(&set);
    cset_free(&base);
}

/* Rule 12.3, zeros: a positive value no other kept vertex shares made 0 (a wall now; the
 * value classes alone would not see it), and a straight wall vertex's 0 made positive (it is
 * then kept: the base's kept vertices would be wrong). */
Test(polys_reuse, zero_values)
{
    cset base, set;
    tile_contours(&base);
    op__poly_base rec = record(&base);
    int done = 0;
    for (int i = 0; i < base.s.count && !done; i++) {
        const op__poly_base_contour *q = &rec.contours[i];
        const op_contour *c = &base.s.contours[i];
        for (int j = 0; j < q->nk && !done; j++) {
            int v = c->verts[rec.keep[q->kept_at + j]].neighbour, n = 0;
            for (int k = 0; k < q->nk; k++)
                n += c->verts[rec.keep[q->kept_at + k]].neighbour == v;
            if (v <= 0 || n != 1)
                continue;
            cset_copy(&set, &base);
            set.s.contours[i].verts[rec.keep[q->kept_at + j]].neighbour = 0;
            cr_assert_eq(from_record(&rec, &set), set.s.count - 1);
            cset_free(&set);
            done = 1;
        }
    }
    cr_assert(done, "no contour with a value of one kept vertex");
    cset_free(&base);
    /* A room with a straight wall vertex (4, 0, 0) between two walls. */
    static const int room[][4] = {
        {0, 0, 0, 0}, {4, 0, 0, 0}, {8, 0, 0, 0}, {8, 0, 8, 3}, {0, 0, 8, 0}};
    cset hb;
    memset(&hb, 0, sizeof hb);
    hb.s.contours = calloc(2, sizeof *hb.s.contours);
    cr_assert(hb.s.contours);
    hb.frame = (op_tile_frame){0, 64, 0.5, 32.0, 0.25};
    hb.nvp = 6;
    add(&hb, room, 5, 1);
    op__poly_base rh = record(&hb);
    cr_assert_eq(rh.contours[0].nk, 4, "(4, 0, 0) is a straight wall vertex");
    cset_copy(&set, &hb);
    cr_assert_eq(from_record(&rh, &set), 1);
    set.s.contours[0].verts[1].neighbour = 640;
    cr_assert_eq(from_record(&rh, &set), 0);
    cset_free(&set);
    cset_free(&hb);
}

/* Rule 12.2 is checked vertex by vertex, not through the lookup's hash: a record whose
 * contour vertices differ from the contour it is asked about (a row), hash alike. */
Test(polys_reuse, positions_checked_not_hashed)
{
    cset base, set, alt;
    tile_contours(&base);
    op__poly_base rec = record(&base);
    cset_copy(&alt, &base);
    alt.s.contours[0].verts[0].y += 1;
    rec.contours[0].verts = alt.s.contours[0].verts; /* the hash is still the original's */
    cset_copy(&set, &base);
    cr_assert_eq(from_record(&rec, &set), set.s.count - 1);
    cset_free(&set);
    cset_free(&alt);
    cset_free(&base);
}

/* Rule 12.3, classes: two values the base told apart made equal still copy (the copy
 * reads each edge's value through a vertex of its class); two kept vertices of one value
 * given different values do not (the edge of the second would get the first's). */
Test(polys_reuse, value_classes)
{
    cset base, set;
    tile_contours(&base);
    op__poly_base rec = record(&base);
    int at = -1, at2 = -1;
    int i = find_contour(&rec, &base, 1, &at, &at2);
    cr_assert_geq(i, 0, "no contour with a repeated neighbour value");
    cset_copy(&set, &base);
    set.s.contours[i].verts[at2].neighbour = 650;
    cr_assert_eq(from_record(&rec, &set), set.s.count - 1);
    cset_free(&set);

    /* Every positive value of contour i made one value. */
    cset_copy(&set, &base);
    for (int k = 0; k < set.s.contours[i].nverts; k++)
        if (set.s.contours[i].verts[k].neighbour > 0)
            set.s.contours[i].verts[k].neighbour = 651;
    cr_assert_eq(from_record(&rec, &set), set.s.count);
    cset_free(&set);
    cset_free(&base);
}

/* Rule 12.1: another frame (border, cell size) or vertices per polygon. */
Test(polys_reuse, other_frame_or_nvp_is_computed)
{
    cset base, set;
    tile_contours(&base);
    op__poly_base rec = record(&base);
    cset_copy(&set, &base);
    set.frame.border += 1;
    cr_assert_eq(from_record(&rec, &set), 0);
    set.frame = base.frame;
    set.frame.cs *= 1.5;
    cr_assert_eq(from_record(&rec, &set), 0);
    set.frame = base.frame;
    set.nvp = base.nvp - 1;
    cr_assert_eq(from_record(&rec, &set), 0);
    cset_free(&set);
    cset_free(&base);
}

/* ---- welding (rule 12.4) on hand-made contours ---- */

/* Two 4 x 4 squares touching at P = (4, 4), one ring: P is visited at row 0, then at row 2
 * (rows 2 apart: two mesh vertices unless something between them comes first). */
static const int pinched[][4] = {{0, 0, 0, 0}, {4, 0, 0, 0}, {4, 0, 4, 0}, {8, 0, 4, 0},
                                 {8, 0, 8, 0}, {4, 0, 8, 0}, {4, 2, 4, 0}, {0, 0, 4, 0}};
/* The square [0, 4] x [4, 8] with its corner P at row 1: welds both of the ring's P. */
static const int joiner[][4] = {{0, 1, 4, 0}, {4, 1, 4, 0}, {4, 1, 8, 0}, {0, 1, 8, 0}};
/* A square far away: joins nothing, adds four mesh vertices before the ring's. */
static const int far[][4] = {{20, 0, 20, 0}, {24, 0, 20, 0}, {24, 0, 24, 0}, {20, 0, 24, 0}};

static void add(struct cset *s, const int (*v)[4], int n, int region)
{
    op_contour *c = &s->s.contours[s->s.count++];
    memset(c, 0, sizeof *c);
    c->verts = malloc((size_t)n * sizeof *c->verts);
    cr_assert(c->verts);
    for (int k = 0; k < n; k++)
        c->verts[k] = (op_contour_vert){v[k][0], v[k][1], v[k][2], v[k][3]};
    c->nverts = n;
    c->region = region;
    c->area = 63;
}

static void hand(cset *s, const int (*first)[4], int nfirst)
{
    memset(s, 0, sizeof *s);
    s->s.contours = calloc(4, sizeof *s->s.contours);
    cr_assert(s->s.contours);
    s->frame = (op_tile_frame){0, 64, 0.5, 32.0, 0.25};
    s->nvp = 6;
    if (first)
        add(s, first, nfirst, 2);
    add(s, pinched, 8, 1);
}

Test(polys_reuse, welding_partition)
{
    cset alone, joined, shifted;
    hand(&alone, NULL, 0);
    hand(&joined, joiner, 4);
    hand(&shifted, far, 4);
    /* The ring alone: its two P are two mesh vertices. An earlier contour that welds both
     * onto one changes the partition (computed); one that only shifts mesh indices does
     * not (copied, read through the rebuild's welding). */
    op__poly_base rec = record(&alone);
    cr_assert_eq(from_record(&rec, &joined), 0);
    cr_assert_eq(from_record(&rec, &shifted), 1);
    cr_assert_eq(from_record(&rec, &alone), 1);
    /* The base with the joiner: its P are one mesh vertex; alone they split. */
    op__poly_base rec2 = record(&joined);
    cr_assert_eq(from_record(&rec2, &alone), 0);
    cr_assert_eq(from_record(&rec2, &joined), 2);
    cset_free(&alone);
    cset_free(&joined);
    cset_free(&shifted);
}
