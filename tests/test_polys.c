/*
 * Polygons (build3d-polys.md §3): hand-made contours with outputs derived from the
 * rules by hand, and seeded random contours (orthogonal cell blobs traced by the
 * contour rule, with pinches, holes joined by bridges and split walls; star-shaped
 * polygons; two regions sharing a staircase border) checked against
 *   - invariants: convex and counter-clockwise in cells and in float32 (an
 *     independent 128-bit integer orientation oracle), at most nvp vertices, no
 *     repeated vertex, polygon areas summing to the contour's shoelace area, no
 *     wall-collinear polygon vertex, welded vertices unique, internal edges paired;
 *   - a naive reference written here from the spec text (full ear retest each step,
 *     linear welding, quadratic merge search) which must give identical meshes.
 */
#include "op_asan.h"
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/hash.h"
#include "onepath/limits.h"
#include "onepath/polys.h"
#include "op_test.h"

/* The library's exact orientation (internal symbol, predicates.c), checked against the
 * oracle on float32 inputs as the polygon stage uses it. */
int op__orient2d(double ax, double ay, double bx, double by, double cx, double cy);

static int op__orient_f32(float ax, float az, float bx, float bz, float cx, float cz)
{
    return op__orient2d(ax, az, bx, bz, cx, cz);
}

/* ====== frames ====== */

/* Local(c) = c * 0.5: exact, no rounding. */
static const op_tile_frame frame_exact = {0, 64, 0.5, 32.0, 0.25};
/* The demo grid: cs = 9.6 / 32 = 0.3 (not a dyadic value, Local rounds), border 5. */
static const op_tile_frame frame_round = {5, 32, 9.6 / 32.0, 9.6, 0.2};

/* ====== contour sets built by hand ====== */

#define MAXC 16
#define MAXV 4096

typedef struct tset {
    op_contour_set cs;
    op_contour c[MAXC];
    op_contour_vert v[MAXC][MAXV];
} tset;

static tset *tset_new(void)
{
    tset *t = calloc(1, sizeof *t);
    cr_assert(t);
    t->cs.contours = t->c;
    return t;
}

/* Appends a contour from rows {x, y, z, neighbour}. */
static void tset_add(tset *t, int region, const int (*p)[4], int n)
{
    cr_assert(t->cs.count < MAXC && n <= MAXV);
    op_contour *c = &t->c[t->cs.count];
    c->verts = t->v[t->cs.count];
    for (int i = 0; i < n; i++) {
        c->verts[i].x = p[i][0];
        c->verts[i].y = p[i][1];
        c->verts[i].z = p[i][2];
        c->verts[i].neighbour = p[i][3];
    }
    c->nverts = n;
    c->region = region;
    c->area = 63;
    t->cs.count++;
}

static op_contour_vert *tset_begin(tset *t, int region)
{
    cr_assert(t->cs.count < MAXC);
    op_contour *c = &t->c[t->cs.count];
    c->verts = t->v[t->cs.count];
    c->nverts = 0;
    c->region = region;
    c->area = 63;
    return c->verts;
}

static void tset_end(tset *t, int n)
{
    t->c[t->cs.count].nverts = n;
    t->cs.count++;
}

/* ====== exact oracles ====== */

typedef struct u128 {
    uint64_t hi, lo;
} u128;

static u128 umul(uint64_t a, uint64_t b)
{
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    u128 r = {p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32), (p00 & 0xffffffffu) | (mid << 32)};
    return r;
}

static int sgn64(int64_t a)
{
    return (a > 0) - (a < 0);
}

/* sign(a*b - c*d) exactly, |a|..|d| < 2^63. */
static int cmp_prod(int64_t a, int64_t b, int64_t c, int64_t d)
{
    int s1 = sgn64(a) * sgn64(b), s2 = sgn64(c) * sgn64(d);
    if (s1 != s2)
        return s1 > s2 ? 1 : -1;
    if (s1 == 0)
        return 0;
    u128 m1 = umul((uint64_t)llabs(a), (uint64_t)llabs(b));
    u128 m2 = umul((uint64_t)llabs(c), (uint64_t)llabs(d));
    int cmp = m1.hi != m2.hi ? (m1.hi > m2.hi ? 1 : -1) : (m1.lo > m2.lo) - (m1.lo < m2.lo);
    return s1 > 0 ? cmp : -cmp;
}

/* A float32 as an exact integer multiple of 2^-40 (asserted exact and in range). */
static int64_t fixed40(float f)
{
    double s = ldexp((double)f, 40);
    cr_assert(fabs(s) < 9007199254740992.0 && s == floor(s), "float %a out of oracle range",
              (double)f);
    return (int64_t)s;
}

/* Oracle orientation of float32 points: 128-bit integer products. */
static int orient_oracle(float ax, float az, float bx, float bz, float cx, float cz)
{
    int64_t X0 = fixed40(ax), Z0 = fixed40(az), X1 = fixed40(bx), Z1 = fixed40(bz);
    int64_t X2 = fixed40(cx), Z2 = fixed40(cz);
    return cmp_prod(X1 - X0, Z2 - Z0, Z1 - Z0, X2 - X0);
}

static int64_t cross_c(int64_t ax, int64_t az, int64_t bx, int64_t bz, int64_t cx, int64_t cz)
{
    return (bx - ax) * (cz - az) - (bz - az) * (cx - ax);
}

/* ====== naive reference of §3, written from the spec text ====== */

typedef struct rpt {
    int x, y, z, nb;
} rpt;

typedef struct refmesh {
    int nverts;
    int vx[MAXV * MAXC], vy[MAXV * MAXC], vz[MAXV * MAXC];
    int npolys;
    int pn[MAXV * MAXC];
    int pv[MAXV * MAXC][OP_MAX_VERTS_PER_POLY];
    int pnb[MAXV * MAXC][OP_MAX_VERTS_PER_POLY];
    int preg[MAXV * MAXC];
    int degenerate;
} refmesh;

static float loc(const op_tile_frame *f, int c)
{
    if (c == f->border)
        return 0.0f;
    if (c == f->border + f->tile_cells)
        return (float)f->tile_size;
    return (float)((double)(c - f->border) * f->cs);
}

/* Straight wall test of p, v, q (spec: both edges walls, collinear same direction,
 * floor within one row of the line). */
static int ref_straight(const rpt *p, const rpt *v, const rpt *q)
{
    if (p->nb != 0 || v->nb != 0)
        return 0;
    if (cross_c(p->x, p->z, v->x, v->z, q->x, q->z) != 0)
        return 0;
    if ((int64_t)(v->x - p->x) * (q->x - v->x) + (int64_t)(v->z - p->z) * (q->z - v->z) <= 0)
        return 0;
    int64_t D = (int64_t)(q->x - p->x) * (q->x - p->x) + (int64_t)(q->z - p->z) * (q->z - p->z);
    int64_t T = (int64_t)(q->x - p->x) * (v->x - p->x) + (int64_t)(q->z - p->z) * (v->z - p->z);
    int64_t dev = (int64_t)(v->y - p->y) * D - (int64_t)(q->y - p->y) * T;
    return llabs(dev) <= D;
}

/* Naive ring for ear clipping: a plain array, entries removed by shifting. */
typedef struct rring {
    int n;
    int id[MAXV];
    rpt p[MAXV];
} rring;

static int64_t rcross(const rring *r, int a, int b, int c)
{
    return cross_c(r->p[a].x, r->p[a].z, r->p[b].x, r->p[b].z, r->p[c].x, r->p[c].z);
}

static int rsame(const rring *r, int a, int b)
{
    return r->p[a].x == r->p[b].x && r->p[a].z == r->p[b].z;
}

static int ron(const rring *r, int a, int b, int c) /* c on closed segment a b */
{
    if (rcross(r, a, b, c) != 0)
        return 0;
    int lo = r->p[a].x < r->p[b].x ? r->p[a].x : r->p[b].x;
    int hi = r->p[a].x < r->p[b].x ? r->p[b].x : r->p[a].x;
    int loz = r->p[a].z < r->p[b].z ? r->p[a].z : r->p[b].z;
    int hiz = r->p[a].z < r->p[b].z ? r->p[b].z : r->p[a].z;
    return r->p[c].x >= lo && r->p[c].x <= hi && r->p[c].z >= loz && r->p[c].z <= hiz;
}

static int rtouch(const rring *r, int a, int b, int c, int d)
{
    int64_t s1 = rcross(r, a, b, c), s2 = rcross(r, a, b, d);
    int64_t s3 = rcross(r, c, d, a), s4 = rcross(r, c, d, b);
    if (((s1 > 0 && s2 < 0) || (s1 < 0 && s2 > 0)) && ((s3 > 0 && s4 < 0) || (s3 < 0 && s4 > 0)))
        return 1;
    return ron(r, a, b, c) || ron(r, a, b, d) || ron(r, c, d, a) || ron(r, c, d, b);
}

static int rcone(const rring *r, int a, int b)
{
    int a0 = (a + r->n - 1) % r->n, a1 = (a + 1) % r->n;
    if (rcross(r, a, a1, a0) >= 0)
        return rcross(r, a, b, a0) > 0 && rcross(r, b, a, a1) > 0;
    return !(rcross(r, a, b, a1) >= 0 && rcross(r, b, a, a0) >= 0);
}

/* A zero-length (a, b) (spike) skips the cone test (see polys_earclip.c). */
static int rdiag(const rring *r, int a, int b)
{
    if (!rsame(r, a, b) && (!rcone(r, a, b) || !rcone(r, b, a)))
        return 0;
    for (int c = 0; c < r->n; c++) {
        int c1 = (c + 1) % r->n;
        if (rsame(r, c, a) || rsame(r, c, b) || rsame(r, c1, a) || rsame(r, c1, b))
            continue;
        if (rtouch(r, a, b, c, c1))
            return 0;
    }
    return 1;
}

typedef struct rtri {
    int v[3], nb[3];
} rtri;

static int ref_fpos(const op_tile_frame *f, const rpt *a, const rpt *b, const rpt *c)
{
    return orient_oracle(loc(f, a->x), loc(f, a->z), loc(f, b->x), loc(f, b->z), loc(f, c->x),
                         loc(f, c->z)) > 0;
}

static int ref_is_ear(const rring *r, int i)
{
    int p = (i + r->n - 1) % r->n, q = (i + 1) % r->n;
    return rcross(r, p, i, q) > 0 && rdiag(r, p, q);
}

/* Ear clipping as the spec words it: ear validity cached per vertex (by id); after a
 * clip the two neighbours and every ear not valid are retested (the library retests
 * only the blocked ears whose reason changed). The ring keeps ids (positions in the
 * kept list) in ascending order, and the current neighbour value of each edge. */
static int ref_earclip(rring *r, const op_tile_frame *f, rtri *out, int *degenerate)
{
    static int valid[MAXV];
    int nt = 0;
    int head = r->id[0];
    for (int i = 0; i < r->n; i++)
        valid[r->id[i]] = ref_is_ear(r, i);
    while (r->n > 3) {
        int best = -1;
        int64_t bd = 0;
        for (int i = 0; i < r->n; i++) {
            if (!valid[r->id[i]])
                continue;
            int p = (i + r->n - 1) % r->n, q = (i + 1) % r->n;
            int64_t dx = r->p[q].x - r->p[p].x, dz = r->p[q].z - r->p[p].z;
            int64_t d2 = dx * dx + dz * dz;
            if (best < 0 || d2 < bd) { /* ascending ids: ties keep the lowest */
                best = i;
                bd = d2;
            }
        }
        if (best < 0) {
            (*degenerate)++;
            int h = 0;
            while (r->id[h] != head)
                h++;
            best = h;
            for (int k = 0; k < r->n; k++) {
                int i = (h + k) % r->n, p = (i + r->n - 1) % r->n, q = (i + 1) % r->n;
                if (rcross(r, p, i, q) >= 0 && rdiag(r, p, q)) {
                    best = i;
                    break;
                }
            }
        }
        int p = (best + r->n - 1) % r->n, q = (best + 1) % r->n;
        if (ref_fpos(f, &r->p[p], &r->p[best], &r->p[q])) {
            rtri t = {{r->id[p], r->id[best], r->id[q]},
                      {r->p[p].nb, r->p[best].nb, OP_EDGE_INTERNAL}};
            out[nt++] = t;
        }
        r->p[p].nb = OP_EDGE_INTERNAL;
        int pid = r->id[p], qid = r->id[q];
        head = qid;
        memmove(&r->id[best], &r->id[best + 1], (size_t)(r->n - best - 1) * sizeof(int));
        memmove(&r->p[best], &r->p[best + 1], (size_t)(r->n - best - 1) * sizeof(rpt));
        r->n--;
        if (r->n > 3)
            for (int i = 0; i < r->n; i++)
                if (r->id[i] == pid || r->id[i] == qid || !valid[r->id[i]])
                    valid[r->id[i]] = ref_is_ear(r, i);
    }
    int h = 0;
    while (r->id[h] != head)
        h++;
    int a = h, b = (h + 1) % 3, c = (h + 2) % 3;
    if (ref_fpos(f, &r->p[a], &r->p[b], &r->p[c])) {
        rtri t = {{r->id[a], r->id[b], r->id[c]}, {r->p[a].nb, r->p[b].nb, r->p[c].nb}};
        out[nt++] = t;
    }
    return nt;
}

static int ref_weld(refmesh *m, int x, int y, int z)
{
    for (int i = 0; i < m->nverts; i++)
        if (m->vx[i] == x && m->vz[i] == z && abs(m->vy[i] - y) <= 1)
            return i;
    m->vx[m->nverts] = x;
    m->vy[m->nverts] = y;
    m->vz[m->nverts] = z;
    return m->nverts++;
}

/* Merged ring of A (edge ka = a -> b) and B (edge kb = b -> a) per the spec, with the
 * wall-collinear exception applied; returns the vertex count or 0 if invalid. */
static int ref_try_merge(const refmesh *m, const op_tile_frame *f, int A, int ka, int B, int kb,
                         int *ov, int *onb)
{
    int na = m->pn[A], nb = m->pn[B], v[12], e[12], n = 0;
    for (int i = 0; i < na; i++) {
        v[n] = m->pv[A][(ka + 1 + i) % na];
        e[n++] = m->pnb[A][(ka + 1 + i) % na];
    }
    e[n - 1] = m->pnb[B][(kb + 1) % nb];
    for (int i = 2; i < nb; i++) {
        v[n] = m->pv[B][(kb + i) % nb];
        e[n++] = m->pnb[B][(kb + i) % nb];
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (v[i] == v[j])
                return 0;
    int gone[12] = {0}, joints[2] = {0, na - 1};
    for (int k = 0; k < 2; k++) {
        int j = joints[k], ip = (j + n - 1) % n, in = (j + 1) % n;
        int64_t c = cross_c(m->vx[v[ip]], m->vz[v[ip]], m->vx[v[j]], m->vz[v[j]], m->vx[v[in]],
                            m->vz[v[in]]);
        if (c < 0)
            return 0;
        int64_t dot = (int64_t)(m->vx[v[j]] - m->vx[v[ip]]) * (m->vx[v[in]] - m->vx[v[j]]) +
                      (int64_t)(m->vz[v[j]] - m->vz[v[ip]]) * (m->vz[v[in]] - m->vz[v[j]]);
        if (c == 0 && e[ip] == 0 && e[j] == 0 && dot > 0)
            gone[j] = 1;
    }
    /* Final ring without removed joints; fpos maps a merged position to it. */
    int fv[12], fe[12], fpos[12], fn = 0, check[12] = {0};
    for (int i = 0; i < n; i++) {
        fpos[i] = gone[i] ? -1 : fn;
        if (!gone[i]) {
            fv[fn] = v[i];
            fe[fn++] = e[i];
        }
    }
    if (fn < 3)
        return 0;
    for (int k = 0; k < 2; k++) {
        int j = joints[k];
        if (!gone[j]) {
            check[fpos[j]] = 1;
            continue;
        }
        int ip = j, in = j; /* live neighbours of a removed joint */
        do
            ip = (ip + n - 1) % n;
        while (gone[ip]);
        do
            in = (in + 1) % n;
        while (gone[in]);
        check[fpos[ip]] = check[fpos[in]] = 1;
    }
    for (int i = 0; i < fn; i++) {
        if (!check[i])
            continue;
        int ip = (i + fn - 1) % fn, in = (i + 1) % fn;
        if (orient_oracle(loc(f, m->vx[fv[ip]]), loc(f, m->vz[fv[ip]]), loc(f, m->vx[fv[i]]),
                          loc(f, m->vz[fv[i]]), loc(f, m->vx[fv[in]]), loc(f, m->vz[fv[in]])) < 0)
            return 0;
    }
    memcpy(ov, fv, sizeof(int) * (size_t)fn);
    memcpy(onb, fe, sizeof(int) * (size_t)fn);
    return fn;
}

static void ref_merge(refmesh *m, const op_tile_frame *f, int first, int nvp)
{
    for (;;) {
        int bA = -1, bB = -1, bn = 0, bv[12], be[12];
        int64_t bl = -1;
        for (int A = first; A < m->npolys; A++)
            for (int ka = 0; ka < m->pn[A]; ka++) {
                int a = m->pv[A][ka], b = m->pv[A][(ka + 1) % m->pn[A]];
                int64_t dx = m->vx[b] - m->vx[a], dz = m->vz[b] - m->vz[a];
                int64_t len = dx * dx + dz * dz;
                for (int B = A + 1; B < m->npolys; B++) {
                    if (m->pn[A] + m->pn[B] - 2 > nvp)
                        continue;
                    for (int kb = 0; kb < m->pn[B]; kb++) {
                        if (m->pv[B][kb] != b || m->pv[B][(kb + 1) % m->pn[B]] != a)
                            continue;
                        int tv[12], te[12];
                        int tn = ref_try_merge(m, f, A, ka, B, kb, tv, te);
                        if (tn > 0 && len > bl) {
                            bl = len;
                            bA = A;
                            bB = B;
                            bn = tn;
                            memcpy(bv, tv, sizeof tv);
                            memcpy(be, te, sizeof te);
                        }
                    }
                }
            }
        if (bA < 0)
            return;
        m->pn[bA] = bn;
        memcpy(m->pv[bA], bv, sizeof(int) * (size_t)bn);
        memcpy(m->pnb[bA], be, sizeof(int) * (size_t)bn);
        for (int i = bB; i + 1 < m->npolys; i++) {
            m->pn[i] = m->pn[i + 1];
            m->preg[i] = m->preg[i + 1];
            memcpy(m->pv[i], m->pv[i + 1], sizeof m->pv[i]);
            memcpy(m->pnb[i], m->pnb[i + 1], sizeof m->pnb[i]);
        }
        m->npolys--;
    }
}

static refmesh *ref_build(const op_contour_set *cs, const op_tile_frame *f, int nvp)
{
    refmesh *m = calloc(1, sizeof *m);
    static rring r; /* per process; tests run one at a time in their worker */
    rtri *tris = malloc(sizeof(rtri) * MAXV);
    cr_assert(m && tris);
    for (int ci = 0; ci < cs->count; ci++) {
        const op_contour *c = &cs->contours[ci];
        /* straight walls: remove the lowest-index removable vertex until none is left */
        r.n = c->nverts;
        for (int i = 0; i < c->nverts; i++) {
            rpt p = {c->verts[i].x, c->verts[i].y, c->verts[i].z, c->verts[i].neighbour};
            r.p[i] = p;
            r.id[i] = i;
        }
        for (int found = 1; found && r.n > 3;) {
            found = 0;
            for (int i = 0; i < r.n; i++) {
                if (ref_straight(&r.p[(i + r.n - 1) % r.n], &r.p[i], &r.p[(i + 1) % r.n])) {
                    memmove(&r.p[i], &r.p[i + 1], (size_t)(r.n - i - 1) * sizeof(rpt));
                    r.n--;
                    found = 1;
                    break;
                }
            }
        }
        int vid[MAXV];
        for (int i = 0; i < r.n; i++) {
            r.id[i] = i;
            vid[i] = ref_weld(m, r.p[i].x, r.p[i].y, r.p[i].z);
        }
        int first = m->npolys;
        int nt = ref_earclip(&r, f, tris, &m->degenerate);
        for (int t = 0; t < nt; t++) {
            int a = vid[tris[t].v[0]], b = vid[tris[t].v[1]], d = vid[tris[t].v[2]];
            if (a == b || b == d || a == d)
                continue;
            int P = m->npolys++;
            m->pn[P] = 3;
            m->preg[P] = c->region;
            m->pv[P][0] = a;
            m->pv[P][1] = b;
            m->pv[P][2] = d;
            for (int k = 0; k < 3; k++)
                m->pnb[P][k] = tris[t].nb[k];
        }
        ref_merge(m, f, first, nvp);
    }
    free(tris);
    return m;
}

/* ====== running the stage ====== */

typedef struct run {
    op_arena *out, *scratch;
    op_poly_mesh m;
} run;

static void run_polys(run *r, const op_contour_set *cs, const op_tile_frame *f, int nvp)
{
    r->out = op_arena_create(0);
    r->scratch = op_arena_create(0);
    cr_assert(r->out && r->scratch);
    op_err e;
    op_status st = op_polys_build(cs, f, nvp, r->out, r->scratch, &r->m, &e);
    cr_assert_eq(st, OP_OK, "%s", e.msg);
    cr_assert_eq(op_arena_used(r->scratch), 0, "scratch released");
}

static void run_free(run *r)
{
    op_arena_destroy(r->out);
    op_arena_destroy(r->scratch);
}

static int poly_n(const op_poly_mesh *m, int p)
{
    int n = 0;
    while (n < m->nvp && m->polys[p * m->nvp + n] != OP_POLY_MESH_NULL)
        n++;
    return n;
}

static int pvx(const op_poly_mesh *m, int v)
{
    return m->verts[3 * v];
}

static int pvz(const op_poly_mesh *m, int v)
{
    return m->verts[3 * v + 2];
}

static int64_t poly_area2(const op_poly_mesh *m, int p)
{
    int n = poly_n(m, p);
    int64_t a = 0;
    for (int i = 0; i < n; i++) {
        int u = m->polys[p * m->nvp + i], v = m->polys[p * m->nvp + (i + 1) % n];
        a += (int64_t)pvx(m, u) * pvz(m, v) - (int64_t)pvx(m, v) * pvz(m, u);
    }
    return a;
}

static int64_t contour_area2(const op_contour *c)
{
    int64_t a = 0;
    for (int i = 0; i < c->nverts; i++) {
        const op_contour_vert *u = &c->verts[i], *v = &c->verts[(i + 1) % c->nverts];
        a += (int64_t)u->x * v->z - (int64_t)v->x * u->z;
    }
    return a;
}

/* Invariants of §3 on any output. paired: every internal edge has a reverse partner
 * (true when no triangle was dropped). */
static void check_invariants(const op_contour_set *cs, const op_poly_mesh *m, int nvp, int paired)
{
    const op_tile_frame *f = &m->frame;
    cr_assert_eq(m->nvp, nvp);
    for (int i = 0; i < m->nverts; i++)
        for (int j = i + 1; j < m->nverts; j++)
            cr_assert(!(pvx(m, i) == pvx(m, j) && pvz(m, i) == pvz(m, j) &&
                        abs(m->verts[3 * i + 1] - m->verts[3 * j + 1]) <= 1),
                      "vertices %d and %d should have been welded", i, j);
    for (int p = 0; p < m->npolys; p++) {
        int n = poly_n(m, p);
        const uint32_t *v = &m->polys[p * nvp];
        const int32_t *nb = &m->edge_neighbour[p * nvp];
        cr_assert(n >= 3 && n <= nvp, "poly %d has %d vertices", p, n);
        for (int k = n; k < nvp; k++)
            cr_assert_eq(v[k], OP_POLY_MESH_NULL);
        int fpos = 0;
        for (int i = 0; i < n; i++) {
            cr_assert(v[i] < (uint32_t)m->nverts);
            for (int j = i + 1; j < n; j++)
                cr_assert_neq(v[i], v[j], "poly %d repeats vertex %u", p, v[i]);
            int a = v[(i + n - 1) % n], b = v[i], c = v[(i + 1) % n];
            int64_t cr = cross_c(pvx(m, a), pvz(m, a), pvx(m, b), pvz(m, b), pvx(m, c), pvz(m, c));
            cr_assert(cr >= 0, "poly %d turns right in cells at %d", p, i);
            int64_t dot = (int64_t)(pvx(m, b) - pvx(m, a)) * (pvx(m, c) - pvx(m, b)) +
                          (int64_t)(pvz(m, b) - pvz(m, a)) * (pvz(m, c) - pvz(m, b));
            cr_assert(!(cr == 0 && dot > 0 && nb[(i + n - 1) % n] == 0 && nb[i] == 0),
                      "poly %d keeps a wall-collinear vertex %u", p, b);
            int o = orient_oracle(loc(f, pvx(m, a)), loc(f, pvz(m, a)), loc(f, pvx(m, b)),
                                  loc(f, pvz(m, b)), loc(f, pvx(m, c)), loc(f, pvz(m, c)));
            cr_assert(o >= 0, "poly %d turns right in float32 at %d", p, i);
            fpos |= o > 0;
        }
        cr_assert(fpos, "poly %d has no positive float32 corner", p);
        cr_assert(poly_area2(m, p) > 0, "poly %d has no area in cells", p);
        if (!paired)
            continue;
        for (int i = 0; i < n; i++) {
            if (nb[i] != OP_EDGE_INTERNAL)
                continue;
            int a = v[i], b = v[(i + 1) % n], found = 0;
            for (int q = 0; q < m->npolys && !found; q++) {
                int nq = poly_n(m, q);
                for (int k = 0; k < nq; k++)
                    if (q != p && m->regs[q] == m->regs[p] &&
                        m->polys[q * nvp + k] == (uint32_t)b &&
                        m->polys[q * nvp + (k + 1) % nq] == (uint32_t)a)
                        found = 1;
            }
            cr_assert(found, "internal edge %d -> %d of poly %d has no partner", a, b, p);
        }
    }
    /* Coverage: per region, polygon areas sum to the contours' shoelace areas. */
    for (int ci = 0; ci < cs->count; ci++) {
        int reg = cs->contours[ci].region;
        int64_t want = 0, got = 0;
        for (int cj = 0; cj < cs->count; cj++)
            if (cs->contours[cj].region == reg)
                want += contour_area2(&cs->contours[cj]);
        for (int p = 0; p < m->npolys; p++)
            if (m->regs[p] == reg)
                got += poly_area2(m, p);
        cr_assert_eq(got, want, "region %d: polygons cover %lld half-cells, contour %lld", reg,
                     (long long)got, (long long)want);
    }
}

/* The stage's mesh equals the naive reference's. */
static void check_reference(const op_contour_set *cs, const op_poly_mesh *m, int nvp)
{
    refmesh *r = ref_build(cs, &m->frame, nvp);
    cr_assert_eq(m->nverts, r->nverts, "vertices %d, reference %d", m->nverts, r->nverts);
    for (int i = 0; i < r->nverts; i++)
        cr_assert(m->verts[3 * i] == r->vx[i] && m->verts[3 * i + 1] == r->vy[i] &&
                      m->verts[3 * i + 2] == r->vz[i],
                  "vertex %d", i);
    cr_assert_eq(m->npolys, r->npolys, "polygons %d, reference %d", m->npolys, r->npolys);
    cr_assert_eq(m->degenerate_ears, r->degenerate);
    for (int p = 0; p < r->npolys; p++) {
        cr_assert_eq(poly_n(m, p), r->pn[p], "poly %d size", p);
        cr_assert_eq(m->regs[p], r->preg[p]);
        for (int k = 0; k < r->pn[p]; k++) {
            cr_assert_eq(m->polys[p * nvp + k], (uint32_t)r->pv[p][k], "poly %d vertex %d", p, k);
            cr_assert_eq(m->edge_neighbour[p * nvp + k], r->pnb[p][k], "poly %d edge %d", p, k);
        }
    }
    free(r);
}

/* Expects poly p to be exactly v[0..n) with edge values nb[0..n) (I = internal). */
#define I OP_EDGE_INTERNAL
static void expect_poly(const op_poly_mesh *m, int p, const int *v, const int *nb, int n)
{
    cr_assert(p < m->npolys, "poly %d missing (%d polys)", p, m->npolys);
    cr_assert_eq(poly_n(m, p), n, "poly %d has %d vertices, want %d", p, poly_n(m, p), n);
    for (int k = 0; k < n; k++) {
        cr_assert_eq(m->polys[p * m->nvp + k], (uint32_t)v[k], "poly %d vertex %d", p, k);
        cr_assert_eq(m->edge_neighbour[p * m->nvp + k], nb[k], "poly %d edge %d", p, k);
    }
}
#define EXPECT(m, p, n, ...)                                                                       \
    do {                                                                                           \
        const int ev_[2][n] = __VA_ARGS__;                                                         \
        expect_poly(m, p, ev_[0], ev_[1], n);                                                      \
    } while (0)

/* ====== hand-made contours ====== */

static const int square[][4] = {{0, 0, 0, 0}, {4, 0, 0, 0}, {4, 0, 4, 0}, {0, 0, 4, 0}};

Test(polys, square_nvp3)
{
    /* Every ear has diagonal 32: vertex 0 first (lowest index) -> (3, 0, 1); the last
     * three from the head (1) -> (1, 2, 3). */
    tset *t = tset_new();
    tset_add(t, 1, square, 4);
    run r;
    run_polys(&r, &t->cs, &frame_exact, 3);
    cr_assert_eq(r.m.nverts, 4);
    cr_assert_eq(r.m.npolys, 2);
    EXPECT(&r.m, 0, 3, {{3, 0, 1}, {0, 0, I}});
    EXPECT(&r.m, 1, 3, {{1, 2, 3}, {0, 0, I}});
    check_invariants(&t->cs, &r.m, 3, 1);
    check_reference(&t->cs, &r.m, 3);
    run_free(&r);
    free(t);
}

Test(polys, square_nvp6)
{
    /* Shared edge 1 -> 3 of A = (3, 0, 1): A from b = 3 to a = 1, then B's 2. */
    tset *t = tset_new();
    tset_add(t, 1, square, 4);
    run r;
    run_polys(&r, &t->cs, &frame_exact, 6);
    cr_assert_eq(r.m.npolys, 1);
    EXPECT(&r.m, 0, 4, {{3, 0, 1, 2}, {0, 0, 0, 0}});
    cr_assert_eq(r.m.regs[0], 1);
    cr_assert_eq(r.m.areas[0], 63);
    check_invariants(&t->cs, &r.m, 6, 1);
    run_free(&r);
    free(t);
}

Test(polys, collinear_split_within_one_row_removed)
{
    /* (4, 0) is one row off the line of its neighbours (|1 * D| <= D): removed, as is
     * (4, 2); the rest is the square case. */
    static const int c[][4] = {{0, 0, 0, 0}, {4, 1, 0, 0}, {8, 0, 0, 0},
                               {8, 0, 2, 0}, {4, 0, 2, 0}, {0, 0, 2, 0}};
    tset *t = tset_new();
    tset_add(t, 1, c, 6);
    run r;
    run_polys(&r, &t->cs, &frame_round, 6);
    cr_assert_eq(r.m.nverts, 4);
    cr_assert_eq(r.m.npolys, 1);
    EXPECT(&r.m, 0, 4, {{3, 0, 1, 2}, {0, 0, 0, 0}});
    cr_assert_eq(r.m.verts[3 * 1], 8);
    check_invariants(&t->cs, &r.m, 6, 1);
    check_reference(&t->cs, &r.m, 6);
    run_free(&r);
    free(t);
}

/* (4, 0) at row 3 is 3 rows off: kept by the straight-wall rule. */
static const int split_off[][4] = {{0, 0, 0, 0}, {4, 3, 0, 0}, {8, 0, 0, 0},
                                   {8, 0, 2, 0}, {4, 0, 2, 0}, {0, 0, 2, 0}};

Test(polys, collinear_split_off_row_dropped_at_merge)
{
    /* Kept ring 0 (0,0), 1 (4,0), 2 (8,0), 3 (8,2), 4 (0,2). Ears: 0 and 2 (diagonal 20),
     * 3 and 4 (68), 1 is straight. Clip 0 -> (4,0,1); then 2 (20, lower than 4) ->
     * (1,2,3); last from head 3 -> (3,4,1). Merges: (4,0,1)+(3,4,1) over 1 -> 4 gives
     * (4,0,1,3); + (1,2,3) over 1 -> 3 gives (3,4,0,1,2) whose joint 1 is collinear
     * between two walls and is removed. */
    tset *t = tset_new();
    tset_add(t, 1, split_off, 6);
    run r;
    run_polys(&r, &t->cs, &frame_exact, 6);
    cr_assert_eq(r.m.nverts, 5);
    cr_assert_eq(r.m.verts[3 * 1 + 1], 3);
    cr_assert_eq(r.m.npolys, 1);
    EXPECT(&r.m, 0, 4, {{3, 4, 0, 2}, {0, 0, 0, 0}});
    check_invariants(&t->cs, &r.m, 6, 1);
    check_reference(&t->cs, &r.m, 6);
    run_free(&r);

    run_polys(&r, &t->cs, &frame_exact, 4);
    cr_assert_eq(r.m.npolys, 2);
    EXPECT(&r.m, 0, 4, {{4, 0, 1, 3}, {0, 0, I, 0}});
    EXPECT(&r.m, 1, 3, {{1, 2, 3}, {0, 0, I}});
    check_reference(&t->cs, &r.m, 4);
    run_free(&r);

    run_polys(&r, &t->cs, &frame_exact, 3);
    cr_assert_eq(r.m.npolys, 3);
    EXPECT(&r.m, 0, 3, {{4, 0, 1}, {0, 0, I}});
    EXPECT(&r.m, 1, 3, {{1, 2, 3}, {0, 0, I}});
    EXPECT(&r.m, 2, 3, {{3, 4, 1}, {0, I, I}});
    check_invariants(&t->cs, &r.m, 3, 1);
    run_free(&r);
    free(t);
}

static const int lshape[][4] = {{0, 0, 0, 0}, {4, 0, 0, 0}, {4, 0, 2, 0},
                                {2, 0, 2, 0}, {2, 0, 4, 0}, {0, 0, 4, 0}};

Test(polys, l_shape)
{
    /* Ears: 2 and 4 (diagonal 8), 1 and 5 (20); 0's diagonal touches (2, 2); 3 reflex.
     * Clip 2 -> (1,2,3); 0 unblocked but outside the cone at 1; clip 1 (8) -> (0,1,3);
     * clip 0 (8, lowest index) -> (5,0,3); last (3,4,5). Merges: (1,2,3)+(0,1,3) over
     * 3 -> 1 -> (1,2,3,0); (1,2,3,0)+(5,0,3) would turn right at 3; (5,0,3)+(3,4,5)
     * over 3 -> 5 -> (5,0,3,4); the two quads would turn right at 3. */
    tset *t = tset_new();
    tset_add(t, 1, lshape, 6);
    run r;
    run_polys(&r, &t->cs, &frame_exact, 3);
    cr_assert_eq(r.m.npolys, 4);
    EXPECT(&r.m, 0, 3, {{1, 2, 3}, {0, 0, I}});
    EXPECT(&r.m, 1, 3, {{0, 1, 3}, {0, I, I}});
    EXPECT(&r.m, 2, 3, {{5, 0, 3}, {0, I, I}});
    EXPECT(&r.m, 3, 3, {{3, 4, 5}, {0, 0, I}});
    check_invariants(&t->cs, &r.m, 3, 1);
    check_reference(&t->cs, &r.m, 3);
    run_free(&r);

    run_polys(&r, &t->cs, &frame_exact, 6);
    cr_assert_eq(r.m.npolys, 2);
    EXPECT(&r.m, 0, 4, {{1, 2, 3, 0}, {0, 0, I, 0}});
    EXPECT(&r.m, 1, 4, {{5, 0, 3, 4}, {0, I, 0, 0}});
    check_invariants(&t->cs, &r.m, 6, 1);
    check_reference(&t->cs, &r.m, 6);
    run_free(&r);
    free(t);
}

Test(polys, u_shape)
{
    /* A U needs at least three convex pieces (two reflex corners, each needs its own
     * cut); with nvp 6 merging reaches exactly three quads/pentagons. */
    static const int u[][4] = {{0, 0, 0, 0}, {6, 0, 0, 0}, {6, 0, 4, 0}, {4, 0, 4, 0},
                               {4, 0, 2, 0}, {2, 0, 2, 0}, {2, 0, 4, 0}, {0, 0, 4, 0}};
    tset *t = tset_new();
    tset_add(t, 1, u, 8);
    for (int nvp = 3; nvp <= 6; nvp++) {
        run r;
        run_polys(&r, &t->cs, &frame_round, nvp);
        check_invariants(&t->cs, &r.m, nvp, 1);
        check_reference(&t->cs, &r.m, nvp);
        if (nvp == 3) {
            /* Ears 3 and 6 (diagonal 8), 2 and 7 (20); 0 and 1 cross the inner edges.
             * Clip 3; 2 becomes an 8-ear (lower index than 6): clip 2; clip 6; 7 (8);
             * then 0, 1, 4, 5 all 20: clip 0; last from head 1. */
            cr_assert_eq(r.m.npolys, 6);
            EXPECT(&r.m, 0, 3, {{2, 3, 4}, {0, 0, I}});
            EXPECT(&r.m, 1, 3, {{1, 2, 4}, {0, I, I}});
            EXPECT(&r.m, 2, 3, {{5, 6, 7}, {0, 0, I}});
            EXPECT(&r.m, 3, 3, {{5, 7, 0}, {I, 0, I}});
            EXPECT(&r.m, 4, 3, {{5, 0, 1}, {I, 0, I}});
            EXPECT(&r.m, 5, 3, {{1, 4, 5}, {I, 0, I}});
        }
        if (nvp == 6) {
            /* Longest shared edge 1 -> 5 (20) first: (5,0,1,4); then the 8s in order:
             * (2,3,4)+(1,2,4); (2,3,4,1)+(5,0,1,4) turns right at 4; (5,6,7)+(5,7,0);
             * (5,6,7,0)+(5,0,1,4) turns right at 5. */
            cr_assert_eq(r.m.npolys, 3);
            EXPECT(&r.m, 0, 4, {{2, 3, 4, 1}, {0, 0, I, 0}});
            EXPECT(&r.m, 1, 4, {{5, 6, 7, 0}, {0, 0, 0, I}});
            EXPECT(&r.m, 2, 4, {{5, 0, 1, 4}, {I, 0, I, 0}});
        }
        run_free(&r);
    }
    free(t);
}

Test(polys, square_with_bridged_hole)
{
    /* Outline (0,0) (6,0) (6,6) (0,6), hole (2,2) (2,4) (4,4) (4,2) joined at its
     * leftmost vertex (2,2) to the nearest outline vertex (0,0); both bridge edges carry
     * the contour's own region. */
    static const int c[][4] = {{0, 0, 0, 1}, {2, 0, 2, 0}, {2, 0, 4, 0}, {4, 0, 4, 0},
                               {4, 0, 2, 0}, {2, 0, 2, 1}, {0, 0, 0, 0}, {6, 0, 0, 0},
                               {6, 0, 6, 0}, {0, 0, 6, 0}};
    tset *t = tset_new();
    tset_add(t, 1, c, 10);
    for (int nvp = 3; nvp <= 6; nvp++) {
        run r;
        run_polys(&r, &t->cs, &frame_round, nvp);
        cr_assert_eq(r.m.nverts, 8, "bridge ends collapse");
        cr_assert_eq(r.m.degenerate_ears, 0);
        check_invariants(&t->cs, &r.m, nvp, 0);
        check_reference(&t->cs, &r.m, nvp);
        if (nvp == 3)
            cr_assert_eq(r.m.npolys, 8); /* 10 - 2 triangles, none dropped */
        run_free(&r);
    }
    free(t);
}

Test(polys, thin_sliver)
{
    /* One cell high, 30 long, portal vertices along both long sides (not walls, so
     * kept): every polygon keeps them and stays convex. */
    static const int c[][4] = {{0, 0, 0, 2},  {10, 0, 0, 2}, {20, 1, 0, 0}, {30, 0, 0, 0},
                               {30, 1, 1, 3}, {20, 0, 1, 3}, {10, 0, 1, 0}, {0, 0, 1, 0}};
    tset *t = tset_new();
    tset_add(t, 1, c, 8);
    for (int nvp = 3; nvp <= 6; nvp++) {
        run r;
        run_polys(&r, &t->cs, &frame_round, nvp);
        check_invariants(&t->cs, &r.m, nvp, 1);
        check_reference(&t->cs, &r.m, nvp);
        cr_assert_eq(r.m.nverts, 8);
        cr_assert_eq(r.m.npolys, nvp == 3 ? 6 : nvp == 6 ? 2 : r.m.npolys);
        run_free(&r);
    }
    free(t);
}

Test(polys, weld_neighbouring_contours)
{
    /* Two squares sharing the edge x = 4; region 2's copy of (4, 4) is one row higher
     * (welds), its (4, 0) two rows higher (does not weld). */
    static const int a[][4] = {{0, 0, 0, 0}, {4, 5, 0, 2}, {4, 5, 4, 0}, {0, 0, 4, 0}};
    static const int b[][4] = {{4, 7, 0, 0}, {8, 0, 0, 0}, {8, 0, 4, 0}, {4, 6, 4, 1}};
    tset *t = tset_new();
    tset_add(t, 1, a, 4);
    tset_add(t, 2, b, 4);
    run r;
    run_polys(&r, &t->cs, &frame_round, 6);
    cr_assert_eq(r.m.nverts, 7);
    cr_assert_eq(r.m.npolys, 2);
    /* region 2: (4,0) new vertex 4, (8,0) 5, (8,4) 6, (4,4) welded to 2 (row 5 kept). */
    EXPECT(&r.m, 1, 4, {{2, 4, 5, 6}, {1, 0, 0, 0}});
    cr_assert_eq(r.m.verts[3 * 2 + 1], 5);
    cr_assert_eq(r.m.verts[3 * 4 + 1], 7);
    check_invariants(&t->cs, &r.m, 6, 1);
    check_reference(&t->cs, &r.m, 6);
    run_free(&r);
    /* A third contour touching (4, 0) at row 6: within one row of both vertex 1 (row 5)
     * and vertex 4 (row 7); it joins the first one created there. */
    static const int c3[][4] = {{4, 6, 0, 0}, {4, 0, -4, 0}, {8, 0, -4, 0}};
    tset_add(t, 3, c3, 3);
    run_polys(&r, &t->cs, &frame_round, 6);
    cr_assert_eq(r.m.nverts, 9);
    cr_assert_eq(r.m.npolys, 3);
    EXPECT(&r.m, 2, 3, {{1, 7, 8}, {0, 0, 0}});
    check_reference(&t->cs, &r.m, 6);
    run_free(&r);
    free(t);
}

Test(polys, pinch_corner_is_one_vertex)
{
    /* Two squares touching at (2, 2), traced as one loop visiting it twice. */
    static const int c[][4] = {{0, 0, 0, 0}, {2, 0, 0, 0}, {2, 0, 2, 0}, {4, 0, 2, 0},
                               {4, 0, 4, 0}, {2, 0, 4, 0}, {2, 1, 2, 0}, {0, 0, 2, 0}};
    tset *t = tset_new();
    tset_add(t, 1, c, 8);
    for (int nvp = 3; nvp <= 6; nvp++) {
        run r;
        run_polys(&r, &t->cs, &frame_exact, nvp);
        cr_assert_eq(r.m.nverts, 7);
        check_invariants(&t->cs, &r.m, nvp, 0);
        check_reference(&t->cs, &r.m, nvp);
        if (nvp >= 4)
            cr_assert_eq(r.m.npolys, 2);
        run_free(&r);
    }
    free(t);
}
#undef I

/* ====== random contours ====== */

#define GW 26 /* grid side for random blobs (cells) */

typedef struct grid {
    int w, h;
    int lab[GW * GW]; /* region id of a cell, 0 = none (wall) */
    int row[(GW + 1) * (GW + 1)];
} grid;

static int glab(const grid *g, int x, int z)
{
    if (x < 0 || z < 0 || x >= g->w || z >= g->h)
        return -1;
    return g->lab[x + z * g->w];
}

static const int dir_dx[4] = {-1, 0, 1, 0}, dir_dz[4] = {0, 1, 0, -1};
static const int corner_dx[4] = {0, 1, 1, 0}, corner_dz[4] = {1, 1, 0, 0};

/* Traces the outline of region reg from its first cell (z-major) by the contour rule of
 * build3d-regions.md §6 and simplifies it to corners and neighbour changes. Returns the
 * vertex count written to out. */
static int trace_outline(const grid *g, int reg, op_contour_vert *out)
{
    static op_contour_vert raw[4 * GW * GW];
    int sx = -1, sz = -1;
    for (int z = 0; z < g->h && sx < 0; z++)
        for (int x = 0; x < g->w; x++)
            if (glab(g, x, z) == reg) {
                sx = x;
                sz = z;
                break;
            }
    cr_assert(sx >= 0);
    int x = sx, z = sz, d = 3, n = 0;
    do {
        int nl = glab(g, x + dir_dx[d], z + dir_dz[d]);
        if (nl != reg) {
            int cx = x + corner_dx[d], cz = z + corner_dz[d];
            op_contour_vert v = {cx, g->row[cx + cz * (GW + 1)], cz, nl};
            raw[n++] = v;
            d = (d + 3) % 4;
        } else {
            x += dir_dx[d];
            z += dir_dz[d];
            d = (d + 1) % 4;
        }
    } while (!(x == sx && z == sz && d == 3));
    int k = 0;
    for (int i = 0; i < n; i++) {
        const op_contour_vert *p = &raw[(i + n - 1) % n], *v = &raw[i], *q = &raw[(i + 1) % n];
        int turn = (v->x - p->x) * (q->z - v->z) - (v->z - p->z) * (q->x - v->x) != 0;
        if (turn || p->neighbour != v->neighbour)
            out[k++] = *v;
    }
    return k;
}

/* Inserts random collinear vertices into wall edges (the length split of
 * simplification), rows drawn around the corner rows so that some stay. */
static int split_walls(op_test_rng *rng, op_contour_vert *v, int n, int maxn)
{
    op_contour_vert tmp[MAXV];
    int k = 0;
    for (int i = 0; i < n && k < maxn - 8; i++) {
        const op_contour_vert *a = &v[i], *b = &v[(i + 1) % n];
        tmp[k++] = *a;
        int dx = b->x - a->x, dz = b->z - a->z;
        int len = abs(dx) > abs(dz) ? abs(dx) : abs(dz);
        if (a->neighbour != 0 || len < 2 || op_test_rand_int(rng, 0, 1) == 0)
            continue;
        int g = len, sx = dx / len, sz = dz / len;
        if (dx % len || dz % len)
            continue; /* not axis-aligned or diagonal: no integer points */
        for (int s = 1; s < g && k < maxn - 8; s++) {
            if (op_test_rand_int(rng, 0, 2) != 0)
                continue;
            op_contour_vert m = {a->x + s * sx, a->y + op_test_rand_int(rng, -2, 2), a->z + s * sz,
                                 0};
            tmp[k++] = m;
        }
    }
    memcpy(v, tmp, sizeof(op_contour_vert) * (size_t)k);
    return k;
}

static void grid_rows(op_test_rng *rng, grid *g)
{
    for (int i = 0; i < (GW + 1) * (GW + 1); i++)
        g->row[i] = 10 + op_test_rand_int(rng, 0, 3);
}

/* A random 4-connected blob of region 1 on a w x h grid, holes filled; cells outside
 * the blob are walls, or cells of regions 2/3 in patches (portal edges). */
static void make_blob(op_test_rng *rng, grid *g, int w, int h, int ncells)
{
    memset(g, 0, sizeof *g);
    g->w = w;
    g->h = h;
    int cnt = 1;
    g->lab[w / 2 + (h / 2) * w] = 1;
    while (cnt < ncells) {
        int x = op_test_rand_int(rng, 0, w - 1), z = op_test_rand_int(rng, 0, h - 1);
        if (g->lab[x + z * w] != 1)
            continue;
        int d = op_test_rand_int(rng, 0, 3), nx = x + dir_dx[d], nz = z + dir_dz[d];
        if (nx < 1 || nz < 1 || nx >= w - 1 || nz >= h - 1 || g->lab[nx + nz * w] == 1)
            continue;
        g->lab[nx + nz * w] = 1;
        cnt++;
    }
    /* Fill holes: cells not reachable from the grid edge through non-blob cells. */
    static int reach[GW * GW], stack[GW * GW];
    memset(reach, 0, sizeof reach);
    int sp = 0;
    for (int z = 0; z < h; z++)
        for (int x = 0; x < w; x++)
            if ((x == 0 || z == 0 || x == w - 1 || z == h - 1) && g->lab[x + z * w] != 1) {
                reach[x + z * w] = 1;
                stack[sp++] = x + z * w;
            }
    while (sp > 0) {
        int c = stack[--sp], x = c % w, z = c / w;
        for (int d = 0; d < 4; d++) {
            int nx = x + dir_dx[d], nz = z + dir_dz[d];
            if (nx < 0 || nz < 0 || nx >= w || nz >= h)
                continue;
            int nc = nx + nz * w;
            if (!reach[nc] && g->lab[nc] != 1) {
                reach[nc] = 1;
                stack[sp++] = nc;
            }
        }
    }
    int patch = op_test_rand_int(rng, 0, 2);
    for (int c = 0; c < w * h; c++) {
        if (!reach[c])
            g->lab[c] = 1;
        else if (g->lab[c] != 1 && patch > 0)
            g->lab[c] = ((c % w) / 4 + (c / w) / 4) % 3 == 0 ? 1 + patch : 0;
    }
    grid_rows(rng, g);
}

/* ---- hole joining for the generator (build3d-regions.md §6 rule, naive) ---- */

static int64_t vcr(const op_contour_vert *a, const op_contour_vert *b, const op_contour_vert *c)
{
    return cross_c(a->x, a->z, b->x, b->z, c->x, c->z);
}

static int von(const op_contour_vert *a, const op_contour_vert *b, const op_contour_vert *c)
{
    if (vcr(a, b, c) != 0)
        return 0;
    return c->x >= (a->x < b->x ? a->x : b->x) && c->x <= (a->x < b->x ? b->x : a->x) &&
           c->z >= (a->z < b->z ? a->z : b->z) && c->z <= (a->z < b->z ? b->z : a->z);
}

static int vtouch(const op_contour_vert *a, const op_contour_vert *b, const op_contour_vert *c,
                  const op_contour_vert *d)
{
    int64_t s1 = vcr(a, b, c), s2 = vcr(a, b, d), s3 = vcr(c, d, a), s4 = vcr(c, d, b);
    if (((s1 > 0 && s2 < 0) || (s1 < 0 && s2 > 0)) && ((s3 > 0 && s4 < 0) || (s3 < 0 && s4 > 0)))
        return 1;
    return von(a, b, c) || von(a, b, d) || von(c, d, a) || von(c, d, b);
}

static int vcone(const op_contour_vert *ring, int n, int a, const op_contour_vert *b)
{
    const op_contour_vert *A = &ring[a], *a0 = &ring[(a + n - 1) % n], *a1 = &ring[(a + 1) % n];
    if (vcr(A, a1, a0) >= 0)
        return vcr(A, b, a0) > 0 && vcr(b, A, a1) > 0;
    return !(vcr(A, b, a1) >= 0 && vcr(b, A, a0) >= 0);
}

static int vsame(const op_contour_vert *a, const op_contour_vert *b)
{
    return a->x == b->x && a->z == b->z;
}

static int clear_of(const op_contour_vert *ring, int n, const op_contour_vert *p,
                    const op_contour_vert *q)
{
    for (int i = 0; i < n; i++) {
        const op_contour_vert *c = &ring[i], *d = &ring[(i + 1) % n];
        if (vsame(c, p) || vsame(c, q) || vsame(d, p) || vsame(d, q))
            continue;
        if (vtouch(p, q, c, d))
            return 0;
    }
    return 1;
}

/* Joins hole into outline (in place); returns the new count or 0 if no bridge. */
static int join_hole(op_contour_vert *o, int no, const op_contour_vert *hole, int nh, int region)
{
    int pi = 0;
    for (int i = 1; i < nh; i++)
        if (hole[i].x < hole[pi].x || (hole[i].x == hole[pi].x && hole[i].z < hole[pi].z))
            pi = i;
    const op_contour_vert *p = &hole[pi];
    for (int tries = 0; tries < no; tries++) {
        int qi = -1;
        int64_t bd = 0, prev = tries == 0 ? -1 : 0;
        (void)prev;
        /* the (tries+1)-th candidate by squared distance, lowest index on ties */
        static int used[MAXV];
        if (tries == 0)
            memset(used, 0, sizeof used);
        for (int i = 0; i < no; i++) {
            if (used[i])
                continue;
            int64_t dx = o[i].x - p->x, dz = o[i].z - p->z, d2 = dx * dx + dz * dz;
            if (qi < 0 || d2 < bd) {
                qi = i;
                bd = d2;
            }
        }
        used[qi] = 1;
        const op_contour_vert *q = &o[qi];
        if (!vcone(hole, nh, pi, q) || !vcone(o, no, qi, p) || !clear_of(o, no, p, q) ||
            !clear_of(hole, nh, p, q))
            continue;
        op_contour_vert tmp[MAXV];
        int k = 0;
        for (int i = 0; i <= qi; i++)
            tmp[k++] = o[i];
        tmp[k - 1].neighbour = region;
        for (int i = 0; i <= nh; i++)
            tmp[k++] = hole[(pi + i) % nh];
        tmp[k - 1].neighbour = region;
        tmp[k++] = o[qi];
        for (int i = qi + 1; i < no; i++)
            tmp[k++] = o[i];
        memcpy(o, tmp, sizeof(op_contour_vert) * (size_t)k);
        return k;
    }
    return 0;
}

/* A blob contour (region 1), optionally with a rectangular hole joined by a bridge,
 * with split walls. Appends it to t; returns 0 if the hole could not be placed. */
static int gen_blob(op_test_rng *rng, tset *t, int with_hole)
{
    static grid g;
    int w = op_test_rand_int(rng, 6, GW), h = op_test_rand_int(rng, 6, GW);
    make_blob(rng, &g, w, h, op_test_rand_int(rng, 4, (w - 2) * (h - 2) * 2 / 3));
    int hx = 0, hz = 0, hw = 0, hh = 0;
    if (with_hole) {
        /* a rectangle whose cells and their 8-neighbours are all in the blob */
        int ok = 0;
        for (int tries = 0; tries < 200 && !ok; tries++) {
            hw = op_test_rand_int(rng, 1, 3);
            hh = op_test_rand_int(rng, 1, 3);
            hx = op_test_rand_int(rng, 1, w - 2);
            hz = op_test_rand_int(rng, 1, h - 2);
            ok = 1;
            for (int z = hz - 1; z <= hz + hh && ok; z++)
                for (int x = hx - 1; x <= hx + hw && ok; x++)
                    ok = glab(&g, x, z) == 1;
        }
        if (!ok)
            return 0;
        for (int z = hz; z < hz + hh; z++)
            for (int x = hx; x < hx + hw; x++)
                g.lab[x + z * g.w] = 0;
    }
    op_contour_vert *v = tset_begin(t, 1);
    int n = trace_outline(&g, 1, v);
    n = split_walls(rng, v, n, MAXV / 2);
    if (with_hole) {
        /* clockwise: region on the left */
        op_contour_vert hole[MAXV];
        const int hc[4][2] = {{hx, hz}, {hx, hz + hh}, {hx + hw, hz + hh}, {hx + hw, hz}};
        for (int i = 0; i < 4; i++) {
            op_contour_vert c = {hc[i][0], g.row[hc[i][0] + hc[i][1] * (GW + 1)], hc[i][1], 0};
            hole[i] = c;
        }
        int nh = split_walls(rng, hole, 4, 64);
        n = join_hole(v, n, hole, nh, 1);
        if (n == 0)
            return 0;
    }
    tset_end(t, n);
    return 1;
}

/* A star-shaped polygon around (0, 0) on the integer grid with random neighbour values
 * and rows, midpoints inserted into some wall edges: 3 .. max_m corners, radius up to
 * 2 .. max_r cells. */
static void gen_star_sized(op_test_rng *rng, tset *t, int region, int cx, int cz, int max_m,
                           int max_r)
{
    op_contour_vert *v = tset_begin(t, region);
    int m = op_test_rand_int(rng, 3, max_m), n = 0;
    int rmax = op_test_rand_int(rng, 2, max_r);
    for (int k = 0; k < m; k++) {
        double a = 6.283185307179586 * (k + 0.8 * op_test_rand01(rng)) / m;
        double r = 1.0 + (rmax - 1) * op_test_rand01(rng);
        op_contour_vert p = {(int)lround(r * cos(a)), op_test_rand_int(rng, 0, 3),
                             (int)lround(r * sin(a)), 0};
        int u = op_test_rand_int(rng, 0, 9);
        p.neighbour = u < 6 ? 0 : u < 8 ? -1 : region + 1;
        v[n++] = p;
    }
    /* keep strictly increasing angles around the centre (drops duplicates too) */
    op_contour_vert o = {0, 0, 0, 0};
    for (int changed = 1; changed && n >= 3;) {
        changed = 0;
        for (int i = 0; i < n && n >= 3; i++) {
            int j = (i + 1) % n;
            if (vcr(&o, &v[i], &v[j]) <= 0) {
                memmove(&v[j], &v[j + 1], sizeof(op_contour_vert) * (size_t)(n - j - 1));
                n--;
                changed = 1;
            }
        }
    }
    if (n < 3) { /* fall back to a triangle */
        op_contour_vert tri[3] = {{-2, 0, -1, 0}, {2, 0, -1, 0}, {0, 0, 2, 0}};
        memcpy(v, tri, sizeof tri);
        n = 3;
    }
    /* winding: the angles must go round once (sum of turns); reject double loops */
    int64_t area = 0;
    for (int i = 0; i < n; i++)
        area += vcr(&o, &v[i], &v[(i + 1) % n]);
    cr_assert(area > 0);
    op_contour_vert tmp[MAXV];
    int k = 0;
    for (int i = 0; i < n; i++) {
        tmp[k++] = v[i];
        const op_contour_vert *b = &v[(i + 1) % n];
        if (v[i].neighbour == 0 && (b->x - v[i].x) % 2 == 0 && (b->z - v[i].z) % 2 == 0 &&
            op_test_rand_int(rng, 0, 1)) {
            op_contour_vert mid = {(v[i].x + b->x) / 2, v[i].y + op_test_rand_int(rng, -2, 2),
                                   (v[i].z + b->z) / 2, 0};
            tmp[k++] = mid;
        }
    }
    for (int i = 0; i < k; i++) {
        tmp[i].x += cx;
        tmp[i].z += cz;
    }
    memcpy(v, tmp, sizeof(op_contour_vert) * (size_t)k);
    tset_end(t, k);
}

static void gen_star(op_test_rng *rng, tset *t, int region, int cx, int cz)
{
    gen_star_sized(rng, t, region, cx, cz, 48, 40);
}

/* A random simple polygon: distinct random grid points in random order, untangled by
 * 2-opt moves (reverse the path between two touching edges) until no two non-adjacent
 * edges touch; counter-clockwise; random neighbour values. 0 if it did not settle. */
static int gen_2opt(op_test_rng *rng, tset *t, int region)
{
    op_contour_vert *v = tset_begin(t, region);
    int n = op_test_rand_int(rng, 4, 40), side = op_test_rand_int(rng, 6, 40);
    for (int i = 0; i < n; i++) {
        int dup;
        do {
            v[i] = (op_contour_vert){op_test_rand_int(rng, 0, side), op_test_rand_int(rng, 0, 4),
                                     op_test_rand_int(rng, 0, side), 0};
            dup = 0;
            for (int j = 0; j < i; j++)
                dup |= vsame(&v[i], &v[j]);
        } while (dup);
        int u = op_test_rand_int(rng, 0, 9);
        v[i].neighbour = u < 6 ? 0 : u < 8 ? -1 : region + 1;
    }
    for (int iter = 0;; iter++) {
        if (iter > 20000)
            return 0;
        int moved = 0;
        for (int i = 0; i < n && !moved; i++)
            for (int j = i + 2; j < n && !moved; j++) {
                if (i == 0 && j == n - 1)
                    continue;
                if (!vtouch(&v[i], &v[i + 1], &v[j], &v[(j + 1) % n]))
                    continue;
                for (int a = i + 1, b = j; a < b; a++, b--) {
                    op_contour_vert tmp = v[a];
                    v[a] = v[b];
                    v[b] = tmp;
                }
                moved = 1;
            }
        if (!moved)
            break;
    }
    /* adjacent edges may still overlap (a spike): reject */
    for (int i = 0; i < n; i++) {
        const op_contour_vert *p = &v[(i + n - 1) % n], *c = &v[i], *q = &v[(i + 1) % n];
        if (vcr(p, c, q) == 0 &&
            (int64_t)(c->x - p->x) * (q->x - c->x) + (int64_t)(c->z - p->z) * (q->z - c->z) < 0)
            return 0;
    }
    int64_t area = 0;
    for (int i = 0; i < n; i++)
        area += (int64_t)v[i].x * v[(i + 1) % n].z - (int64_t)v[(i + 1) % n].x * v[i].z;
    if (area == 0)
        return 0;
    if (area < 0)
        for (int a = 0, b = n - 1; a < b; a++, b--) {
            op_contour_vert tmp = v[a];
            v[a] = v[b];
            v[b] = tmp;
        }
    tset_end(t, n);
    return 1;
}

/* Two regions filling a rectangle, split by a random staircase x < s(z). */
static void gen_two_regions(op_test_rng *rng, tset *t)
{
    static grid g;
    memset(&g, 0, sizeof g);
    g.w = op_test_rand_int(rng, 3, GW);
    g.h = op_test_rand_int(rng, 2, GW);
    for (int z = 0; z < g.h; z++) {
        int s = op_test_rand_int(rng, 1, g.w - 1);
        for (int x = 0; x < g.w; x++)
            g.lab[x + z * g.w] = x < s ? 1 : 2;
    }
    grid_rows(rng, &g);
    for (int reg = 1; reg <= 2; reg++) {
        op_contour_vert *v = tset_begin(t, reg);
        tset_end(t, trace_outline(&g, reg, v));
    }
}

/* ====== random families ====== */

static const op_tile_frame *pick_frame(int seed)
{
    return seed % 2 ? &frame_round : &frame_exact;
}

static void check_all(const tset *t, const op_tile_frame *f, int nvp, int paired, int seed)
{
    run r;
    run_polys(&r, &t->cs, f, nvp);
    (void)seed;
    check_invariants(&t->cs, &r.m, nvp, paired);
    check_reference(&t->cs, &r.m, nvp);
    run_free(&r);
}

Test(polys, random_blobs)
{
    for (int seed = 0; seed < 120; seed++) {
        op_test_rng rng = {0x70b1e5ULL + (uint64_t)seed};
        tset *t = tset_new();
        gen_blob(&rng, t, 0);
        check_all(t, pick_frame(seed), 3 + seed % 4, 0, seed);
        free(t);
    }
}

Test(polys, random_blobs_with_bridged_holes)
{
    int made = 0;
    for (int seed = 0; seed < 120; seed++) {
        op_test_rng rng = {0x401e5ULL + (uint64_t)seed};
        tset *t = tset_new();
        if (gen_blob(&rng, t, 1)) {
            made++;
            check_all(t, pick_frame(seed), 3 + seed % 4, 0, seed);
        }
        free(t);
    }
    cr_assert(made >= 30, "only %d blobs with holes", made);
}

Test(polys, random_stars)
{
    for (int seed = 0; seed < 200; seed++) {
        op_test_rng rng = {0x57a25ULL + (uint64_t)seed};
        tset *t = tset_new();
        gen_star(&rng, t, 1, 20, 20);
        check_all(t, pick_frame(seed), 3 + seed % 4, 1, seed);
        free(t);
    }
}

/* Contours of hundreds of corners: the merge's candidate heap fills and drops its stale
 * entries, and its edge table fills and is built again, many times a contour. */
Test(polys, random_big_stars)
{
    for (int seed = 0; seed < 24; seed++) {
        op_test_rng rng = {0xb16ULL + (uint64_t)seed};
        tset *t = tset_new();
        gen_star_sized(&rng, t, 1, 20, 20, 700, 300);
        check_all(t, pick_frame(seed), 4 + seed % 3, 1, seed);
        free(t);
    }
}

Test(polys, random_simple_polygons)
{
    int made = 0;
    for (int seed = 0; seed < 600; seed++) {
        op_test_rng rng = {0x2097ULL + (uint64_t)seed};
        tset *t = tset_new();
        if (gen_2opt(&rng, t, 1)) {
            made++;
            check_all(t, pick_frame(seed), 3 + seed % 4, 1, seed);
        }
        free(t);
    }
    cr_assert(made > 400, "only %d polygons", made);
}

Test(polys, two_regions_share_boundary_vertices)
{
    for (int seed = 0; seed < 80; seed++) {
        op_test_rng rng = {0x2e91ULL + (uint64_t)seed};
        tset *t = tset_new();
        gen_two_regions(&rng, t);
        run r;
        int nvp = 3 + seed % 4;
        run_polys(&r, &t->cs, pick_frame(seed), nvp);
        check_invariants(&t->cs, &r.m, nvp, 1);
        check_reference(&t->cs, &r.m, nvp);
        /* every distinct contour corner is exactly one mesh vertex: no walls here, so
         * nothing is removed, and both sides of the staircase share their vertices */
        int distinct = 0;
        for (int c = 0; c < t->cs.count; c++)
            for (int i = 0; i < t->c[c].nverts; i++) {
                const op_contour_vert *v = &t->c[c].verts[i];
                int seen = 0;
                for (int d = 0; d <= c && !seen; d++)
                    for (int j = 0; j < (d == c ? i : t->c[d].nverts); j++)
                        if (vsame(&t->c[d].verts[j], v))
                            seen = 1;
                distinct += !seen;
            }
        cr_assert_eq(r.m.nverts, distinct);
        run_free(&r);
        free(t);
    }
}

Test(polys, many_contours_in_one_set)
{
    /* Stars of several regions side by side: contour order, region per polygon, merging
     * never crosses contours. */
    for (int seed = 0; seed < 20; seed++) {
        op_test_rng rng = {0x3a7ULL + (uint64_t)seed};
        tset *t = tset_new();
        for (int k = 0; k < 8; k++)
            gen_star(&rng, t, 1 + k, 90 * (k % 4), 90 * (k / 4));
        check_all(t, pick_frame(seed), 6, 1, seed);
        free(t);
    }
}

Test(polys, long_comb_is_not_cubic, .timeout = 20)
{
    /* A comb with 600 teeth (2400 vertices): most convex vertices are blocked ears; the
     * cached ear states keep this well under a second. */
    tset *t = tset_new();
    op_contour_vert *v = tset_begin(t, 1);
    int n = 0, teeth = 600;
    v[n++] = (op_contour_vert){0, 0, 0, 0};
    v[n++] = (op_contour_vert){2 * teeth, 0, 0, 0};
    for (int k = teeth - 1; k >= 0; k--) {
        v[n++] = (op_contour_vert){2 * k + 2, 0, 40, 0};
        v[n++] = (op_contour_vert){2 * k + 1, 0, 40, 0};
        v[n++] = (op_contour_vert){2 * k + 1, 0, 3, 0};
        v[n++] = (op_contour_vert){2 * k, 0, 3, 0};
    }
    n--; /* the last (0, 3) continues to (0, 0) */
    v[n++] = (op_contour_vert){0, 0, 40, 0};
    tset_end(t, n);
    run r;
    run_polys(&r, &t->cs, &frame_round, 6);
    check_invariants(&t->cs, &r.m, 6, 1);
    run_free(&r);
    free(t);
}

static int orient_cells_f32(const op_tile_frame *f, int ax, int az, int bx, int bz, int cx, int cz)
{
    return orient_oracle(loc(f, ax), loc(f, az), loc(f, bx), loc(f, bz), loc(f, cx), loc(f, cz));
}

Test(polys, float32_right_turn_blocks_a_merge)
{
    /* A rectangle whose lower side p -> v -> q is a straight region border (not a wall,
     * so v stays): in cells v is collinear, but with cs = 0.3 the stored float32 points
     * turn right at v. Merging across v must be refused (two polygons), while the same
     * contour on the exact frame merges into one pentagon. The case is found by search
     * with the oracle, not with the library. */
    const op_tile_frame *f = &frame_round;
    static const int dirs[][2] = {{1, 3}, {3, 1}, {2, 5}, {5, 2}, {1, 2}, {2, 1}, {3, 4}};
    int found = 0, px = 0, pz = 0, a = 0, b = 0;
    for (int d = 0; d < 7 && !found; d++)
        for (px = -5; px < 30 && !found; px++)
            for (pz = -5; pz < 30 && !found; pz++) {
                a = dirs[d][0];
                b = dirs[d][1];
                found = orient_cells_f32(f, px, pz, px + a, pz + b, px + 2 * a, pz + 2 * b) < 0;
            }
    cr_assert(found, "no float32 right turn found");
    px--;
    pz--;
    /* p, v, q along (a, b); then back along the left normal (-b, a) * 2. */
    const int c[][4] = {{px, 0, pz, 2},
                        {px + a, 0, pz + b, 2},
                        {px + 2 * a, 0, pz + 2 * b, 0},
                        {px + 2 * a - 2 * b, 0, pz + 2 * b + 2 * a, 0},
                        {px - 2 * b, 0, pz + 2 * a, 0}};
    tset *t = tset_new();
    tset_add(t, 1, c, 5);
    run r;
    run_polys(&r, &t->cs, f, 6);
    check_invariants(&t->cs, &r.m, 6, 1);
    check_reference(&t->cs, &r.m, 6);
    cr_assert_eq(r.m.npolys, 2, "merge across the float32 right turn must be refused");
    run_free(&r);
    run_polys(&r, &t->cs, &frame_exact, 6);
    cr_assert_eq(r.m.npolys, 1);
    cr_assert_eq(poly_n(&r.m, 0), 5);
    run_free(&r);
    free(t);
}

Test(polys, float32_negative_triangle_is_not_emitted)
{
    /* A thin triangle far from the tile origin (cross 1 in cells) whose float32 points
     * are clockwise or collinear: the last three form no triangle. Found by search with
     * the oracle; the same triangle near the origin is emitted. */
    const op_tile_frame f = {0, 64, 0.3, 19.2, 0.2};
    int dx = 3000, dz = 1001, u = 0, w = 0;
    for (u = 0; u < dx; u++)
        if ((1 + dz * u) % dx == 0)
            break;
    w = (1 + dz * u) / dx; /* dx * w - dz * u = 1 */
    cr_assert_eq(cross_c(0, 0, dx, dz, u, w), 1);
    int found = 0, X = 0, Z = 0;
    for (X = 20000; X < 23000 && !found; X += 7)
        for (Z = 20000; Z < 20100 && !found; Z += 3)
            found = orient_cells_f32(&f, X, Z, X + dx, Z + dz, X + u, Z + w) <= 0;
    cr_assert(found, "no float32 flip found");
    X -= 7;
    Z -= 3;
    const int c[][4] = {{X, 0, Z, 0}, {X + dx, 0, Z + dz, 0}, {X + u, 0, Z + w, 0}};
    tset *t = tset_new();
    tset_add(t, 1, c, 3);
    run r;
    run_polys(&r, &t->cs, &f, 6);
    cr_assert_eq(r.m.npolys, 0);
    cr_assert_eq(r.m.nverts, 3, "the vertices are still welded in");
    run_free(&r);
    for (int i = 0; i < 3; i++) {
        t->v[0][i].x -= X - 10;
        t->v[0][i].z -= Z - 10;
    }
    run_polys(&r, &t->cs, &f, 6);
    cr_assert_eq(r.m.npolys, 1);
    run_free(&r);
    free(t);
}

/* n unit cells two cells apart (rows of 1024), each its own contour of k vertices: the
 * first k of the cell's corners counter-clockwise (k = 3: a triangle, k = 4: a square).
 * Room is left for one more contour of up to 4 vertices. */
static op_contour *cells(int n, int k, op_contour_vert **vout)
{
    op_contour *c = calloc((size_t)n + 2, sizeof *c);
    op_contour_vert *v = calloc((size_t)n * (size_t)k + 8, sizeof *v);
    cr_assert(c && v);
    for (int i = 0; i < n; i++) {
        int x = 2 * (i % 1024), z = 2 * (i / 1024);
        const int q[4][2] = {{x, z}, {x + 1, z}, {x + 1, z + 1}, {x, z + 1}};
        for (int j = 0; j < k; j++)
            v[(size_t)k * (size_t)i + (size_t)j] = (op_contour_vert){q[j][0], 0, q[j][1], 0};
        c[i] =
            (op_contour){.verts = &v[(size_t)k * (size_t)i], .nverts = k, .region = 1, .area = 63};
    }
    *vout = v;
    return c;
}

Test(polys, vertex_indices_pass_16_bits)
{
    /* 16384 squares: 65536 vertices, one more than a tile layer holds (uint16 with 0xffff
     * padding). The polygon mesh is not a tile layer: it may weld several layers (a tile
     * built in one piece), so it takes them, with uint32 indices; the per-layer limit is
     * the tile pipeline's (test_cli_limits). */
    int nsq = 16384;
    op_contour_vert *v;
    op_contour *c = cells(nsq, 4, &v);
    op_contour_set cs = {0};
    cs.contours = c;
    cs.count = nsq;
    op_arena *out = op_arena_create(0), *scr = op_arena_create(0);
    op_poly_mesh m;
    op_err e;
    cr_assert_eq(op_polys_build(&cs, &frame_exact, 6, out, scr, &m, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(m.nverts, 4 * nsq);
    cr_assert_eq(m.npolys, nsq);
    /* The last square is one polygon of vertices 65532..65535 (each once). */
    unsigned got = 0;
    for (int k = 0; k < 4; k++) {
        uint32_t u = m.polys[(size_t)(nsq - 1) * 6 + (size_t)k];
        cr_assert(u >= (uint32_t)(4 * nsq - 4) && u < (uint32_t)(4 * nsq), "index %u", u);
        got |= 1u << (u - (uint32_t)(4 * nsq - 4));
    }
    cr_assert_eq(got, 15u);
    cr_assert_eq(m.polys[(size_t)(nsq - 1) * 6 + 4], OP_POLY_MESH_NULL);
    cr_assert_eq(m.verts[3 * (4 * nsq - 1)], 2 * 1023);
    cr_assert_eq(m.verts[3 * (4 * nsq - 1) + 2], 2 * 15 + 1);
    op_arena_destroy(out);
    op_arena_destroy(scr);
    free(c);
    free(v);
}

Test(polys, tile_mesh_vertex_limit, .timeout = 600)
{
    /* Triangles (cheap: nothing to merge) and one square, exactly OP_MAX_TILE_MESH_VERTS
     * vertices: accepted; one triangle more: OP_ELIMIT naming the limit. 2.5 s of CPU and
     * 440 MB; under ASan the arena's per-contour scratch release costs system time that
     * pushed it past ten minutes, so it runs in the plain build only (the uint32 indices
     * are checked under ASan by vertex_indices_pass_16_bits). */
    if (OPT_ASAN)
        cr_skip_test("2^22 vertices: too slow under ASan");
    int ntri = (OP_MAX_TILE_MESH_VERTS - 4) / 3;
    cr_assert_eq(3 * ntri + 4, OP_MAX_TILE_MESH_VERTS);
    op_contour_vert *v;
    op_contour *c = cells(ntri, 3, &v);
    op_contour_vert *extra = &v[(size_t)ntri * 3];
    const int sq[4][2] = {{0, 4000}, {1, 4000}, {1, 4001}, {0, 4001}};
    const int tri[3][2] = {{4, 4000}, {5, 4000}, {5, 4001}};
    for (int k = 0; k < 4; k++)
        extra[k] = (op_contour_vert){sq[k][0], 0, sq[k][1], 0};
    for (int k = 0; k < 3; k++)
        extra[4 + k] = (op_contour_vert){tri[k][0], 0, tri[k][1], 0};
    c[ntri] = (op_contour){.verts = extra, .nverts = 4, .region = 1, .area = 63};
    c[ntri + 1] = (op_contour){.verts = extra + 4, .nverts = 3, .region = 1, .area = 63};
    op_contour_set cs = {0};
    cs.contours = c;
    cs.count = ntri + 1;
    op_arena *out = op_arena_create(0), *scr = op_arena_create(0);
    op_poly_mesh m;
    op_err e;
    cr_assert_eq(op_polys_build(&cs, &frame_exact, 6, out, scr, &m, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(m.nverts, OP_MAX_TILE_MESH_VERTS);
    cr_assert_eq(m.npolys, ntri + 1);
    uint32_t top = 0;
    for (int k = 0; k < 6; k++) {
        uint32_t u = m.polys[(size_t)ntri * 6 + (size_t)k];
        if (u != OP_POLY_MESH_NULL && u > top)
            top = u;
    }
    cr_assert_eq(top, (uint32_t)OP_MAX_TILE_MESH_VERTS - 1, "the square holds the last index");
    op_arena_destroy(out);
    out = op_arena_create(0);
    cs.count = ntri + 2;
    cr_assert_eq(op_polys_build(&cs, &frame_exact, 6, out, scr, &m, &e), OP_ELIMIT);
    cr_assert(strstr(e.msg, "OP_MAX_TILE_MESH_VERTS"), "%s", e.msg);
    cr_assert_eq(m.nverts, 0, "the mesh is zeroed on error");
    op_arena_destroy(out);
    op_arena_destroy(scr);
    free(c);
    free(v);
}

/* ====== exact orientation ====== */

static float near_float(op_test_rng *rng, float f)
{
    int k = op_test_rand_int(rng, -2, 2);
    while (k > 0) {
        f = nextafterf(f, 1e30f);
        k--;
    }
    while (k < 0) {
        f = nextafterf(f, -1e30f);
        k++;
    }
    return f;
}

Test(polys, exact_orientation_matches_oracle)
{
    op_test_rng rng = {77};
    int naive_wrong = 0, zero = 0;
    for (int i = 0; i < 200000; i++) {
        /* nearly collinear points of mixed magnitudes: multiples of 2^-17 below 2^12 */
        float ax = (float)op_test_rand_int(&rng, -4000, 4000) / 64.0f;
        float az = (float)op_test_rand_int(&rng, -4000, 4000) / 64.0f;
        float bx = ax + (float)op_test_rand_int(&rng, -200000, 200000) / 128.0f;
        float bz = az + (float)op_test_rand_int(&rng, -200000, 200000) / 128.0f;
        double t = op_test_rand01(&rng) * 2.0 - 0.5;
        float cx = near_float(&rng, (float)(ax + t * ((double)bx - ax)));
        float cz = near_float(&rng, (float)(az + t * ((double)bz - az)));
        if (i % 4 == 0) { /* exactly collinear: 2b - a is exact here */
            cx = 2.0f * bx - ax;
            cz = 2.0f * bz - az;
        }
        int want = orient_oracle(ax, az, bx, bz, cx, cz);
        cr_assert_eq(op__orient_f32(ax, az, bx, bz, cx, cz), want, "case %d", i);
        cr_assert_eq(op__orient_f32(bx, bz, cx, cz, ax, az), want);
        cr_assert_eq(op__orient_f32(bx, bz, ax, az, cx, cz), -want);
        /* the plain float evaluation is not enough (shows the test has teeth) */
        float naive = (bx - ax) * (cz - az) - (bz - az) * (cx - ax);
        naive_wrong += (naive > 0) - (naive < 0) != want;
        zero += want == 0;
    }
    cr_assert(naive_wrong > 100, "naive wrong %d times", naive_wrong);
    cr_assert(zero > 100, "%d exactly collinear cases", zero);
    /* extreme magnitudes: exact products of tiny and huge floats */
    cr_assert_eq(op__orient_f32(0.0f, 0.0f, 1e30f, 1e-30f, 2e30f, 2e-30f), 0);
    cr_assert_eq(op__orient_f32(0.0f, 0.0f, 1e30f, 1e-30f, 2e30f, nextafterf(2e-30f, 1.0f)), 1);
    cr_assert_eq(op__orient_f32(0.0f, 0.0f, 1e30f, 1e-30f, 2e30f, nextafterf(2e-30f, 0.0f)), -1);
}

/* ====== tile coordinates ====== */

Test(polys, tile_local)
{
    /* The ends of the tile are exact; inner cells are the float of the double product. */
    cr_assert_eq(op_tile_local(&frame_round, 5), 0.0f);
    cr_assert_eq(op_tile_local(&frame_round, 37), 9.6f);
    cr_assert_eq(op_tile_local(&frame_round, 36), (float)(31 * (9.6 / 32.0)));
    cr_assert_eq(op_tile_local(&frame_round, 0), (float)(-5 * (9.6 / 32.0)));
    cr_assert_eq(op_tile_local(&frame_round, 42), (float)(37 * (9.6 / 32.0)));
    cr_assert_eq(op_tile_local_y(&frame_round, 17, 10), (float)(7 * 0.2));
    cr_assert_eq(op_tile_local_y(&frame_round, 10, 10), 0.0f);
    /* 32 * (9.6/32) in double is not 9.6 exactly in every case; the rule pins the end. */
    op_tile_frame f = {3, 34, 10.0 / 34.0, 10.0, 0.2};
    cr_assert_eq(op_tile_local(&f, 37), 10.0f);
}

/* ====== refusals ====== */

Test(polys, refusals)
{
    tset *t = tset_new();
    tset_add(t, 1, square, 4);
    op_arena *out = op_arena_create(0), *scr = op_arena_create(0);
    op_poly_mesh m;
    op_err e;
    cr_assert_eq(op_polys_build(&t->cs, &frame_exact, 2, out, scr, &m, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "2 vertices per polygon"), "%s", e.msg);
    cr_assert_eq(op_polys_build(&t->cs, &frame_exact, 7, out, scr, &m, &e), OP_ERANGE);
    cr_assert_eq(op_polys_build(NULL, &frame_exact, 6, out, scr, &m, &e), OP_EINVAL);
    cr_assert_eq(op_polys_build(&t->cs, NULL, 6, out, scr, &m, &e), OP_EINVAL);
    t->c[0].nverts = 2;
    cr_assert_eq(op_polys_build(&t->cs, &frame_exact, 6, out, scr, &m, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "contour 0 has 2 vertices"), "%s", e.msg);
    t->c[0].nverts = 4;
    t->v[0][2].x = 1 << 20;
    cr_assert_eq(op_polys_build(&t->cs, &frame_exact, 6, out, scr, &m, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "vertex 2"), "%s", e.msg);
    t->v[0][2].x = (1 << 20) - 1; /* N - 1 is accepted */
    cr_assert_eq(op_polys_build(&t->cs, &frame_exact, 6, out, scr, &m, &e), OP_OK, "%s", e.msg);
    /* an empty set is fine */
    t->cs.count = 0;
    cr_assert_eq(op_polys_build(&t->cs, &frame_exact, 6, out, scr, &m, &e), OP_OK);
    cr_assert_eq(m.npolys, 0);
    cr_assert_eq(m.nverts, 0);
    op_arena_destroy(out);
    op_arena_destroy(scr);
    free(t);
}

Test(polys, out_of_memory_is_reported_and_clean)
{
    /* Fail the k-th allocation for growing k: each failure is OP_ENOMEM with a message
     * naming the stage; the first k that succeeds gives the normal result. */
    op_test_rng rng = {5};
    tset *t = tset_new();
    if (!gen_blob(&rng, t, 1))
        cr_assert(gen_blob(&rng, t, 0));
    run ref;
    run_polys(&ref, &t->cs, &frame_round, 6);
    int ok = 0;
    for (long k = 0; k < 200 && !ok; k++) {
        op_arena *out = op_arena_create(4096), *scr = op_arena_create(4096);
        op_arena_set_limit(scr, 1 << 20);
        op_arena_fail_after(scr, k);
        op_poly_mesh m;
        op_err e;
        op_status st = op_polys_build(&t->cs, &frame_round, 6, out, scr, &m, &e);
        if (st == OP_OK) {
            ok = 1;
            cr_assert_eq(m.npolys, ref.m.npolys);
        } else {
            cr_assert_eq(st, OP_ENOMEM, "%s", e.msg);
            cr_assert(strncmp(e.msg, "polys:", 6) == 0, "%s", e.msg);
        }
        op_arena_destroy(out);
        op_arena_destroy(scr);
    }
    cr_assert(ok);
    run_free(&ref);
    free(t);
}

/* ====== hash-matrix scenario build3d/polys-unit ====== */

static uint64_t scenario_hash(void)
{
    uint64_t h = OP_HASH_INIT;
    for (int seed = 0; seed < 40; seed++) {
        op_test_rng rng = {0xb0117ULL * (uint64_t)(seed + 1)};
        tset *t = tset_new();
        switch (seed % 4) {
        case 0:
            gen_blob(&rng, t, 0);
            break;
        case 1:
            if (!gen_blob(&rng, t, 1)) {
                t->cs.count = 0;
                gen_blob(&rng, t, 0);
            }
            break;
        case 2:
            for (int k = 0; k < 4; k++)
                gen_star(&rng, t, 1 + k, 90 * k, 0);
            break;
        default:
            gen_two_regions(&rng, t);
        }
        for (int nvp = 3; nvp <= 6; nvp += 3) {
            run r;
            run_polys(&r, &t->cs, pick_frame(seed), nvp);
            cr_assert_eq(op_polys_dump(&r.m, op_hash_sink_write, &h), 0);
            run_free(&r);
        }
        free(t);
    }
    return h;
}

Test(polys, golden_polys_unit)
{
    uint64_t h1 = scenario_hash(), h2 = scenario_hash();
    cr_assert_eq(h1, h2, "same input, same bytes");
    op_test_golden("build3d/polys-unit", h1);
}
