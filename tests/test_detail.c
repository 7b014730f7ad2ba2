/* Height detail (build3d-polys.md §4): hand-made cases computed from the rules, and
 * invariants on seeded random fields and polygons, checked by an independent checker
 * (its own NearestRow, sample grid, point location and boundary walk). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/detail.h"
#include "../core/src/predicates.h"
#include "op_fields.h"
#include "op_test.h"

#define B  2
#define CS 0.3
#define CH 0.2

/* ---- fixtures ---- */

typedef int (*row_fn)(int x, int z, void *ctx);

typedef struct scene {
    op_arena *a;
    op_chf *chf;
    op_regions regs;
    op_poly_mesh mesh;
    op_detail_settings ds;
    int min_row;
    row_fn rows;
    void *ctx;
} scene;

/* One walkable span per cell at rows(x, z); every span in region 1 unless regfn says
 * otherwise. */
/* upper (may be NULL) gives a second floor above the first (0 = none). */
static void scene_field2(scene *s, int w, int d, row_fn rows, row_fn upper, void *ctx)
{
    s->a = op_arena_create(0);
    s->rows = rows;
    s->ctx = ctx;
    int *counts = malloc(sizeof(int) * (size_t)(w * d));
    op_test_span *sp = malloc(sizeof *sp * (size_t)(w * d) * 2);
    int k = 0;
    for (int z = 0; z < d; z++)
        for (int x = 0; x < w; x++) {
            int y = rows(x, z, ctx), u = upper ? upper(x, z, ctx) : 0;
            counts[x + z * w] = u > y ? 2 : 1;
            sp[k++] = (op_test_span){y, u > y ? u - y - 1 : 100, 63};
            if (u > y)
                sp[k++] = (op_test_span){u, 100, 63};
        }
    s->chf = op_test_field(s->a, w, d, counts, sp, 10, 4);
    free(counts);
    free(sp);
    s->regs.span_count = s->chf->span_count;
    s->regs.reg = op_arena_calloc(s->a, s->chf->span_count + 1, sizeof(uint16_t));
    for (uint32_t i = 0; i < s->chf->span_count; i++)
        s->regs.reg[i] = 1;
    s->regs.region_count = 1;
    s->ds.sample_distance = 0.6;
    s->ds.max_error = 0.2;
    s->ds.walkable_climb = 4;
}

static void scene_field(scene *s, int w, int d, row_fn rows, void *ctx)
{
    scene_field2(s, w, d, rows, NULL, ctx);
}

static int vert_row(const scene *s, int x, int z)
{
    int cx = x < s->chf->width ? x : s->chf->width - 1;
    int cz = z < s->chf->depth ? z : s->chf->depth - 1;
    return s->rows(cx, cz, s->ctx);
}

/* Polygons given as (x, z) corner lists (counter-clockwise); equal corners are one
 * vertex. */
static void scene_polys(scene *s, int npolys, const int *sizes, const int (*pts)[2])
{
    op_poly_mesh *m = &s->mesh;
    memset(m, 0, sizeof *m);
    int total = 0;
    for (int p = 0; p < npolys; p++)
        total += sizes[p];
    m->nvp = 6;
    m->npolys = npolys;
    m->verts = op_arena_calloc(s->a, (size_t)total * 3, sizeof(int32_t));
    m->polys = op_arena_calloc(s->a, (size_t)npolys * 6, sizeof(uint32_t));
    m->regs = op_arena_calloc(s->a, (size_t)npolys, sizeof(uint16_t));
    m->areas = op_arena_calloc(s->a, (size_t)npolys, 1);
    m->edge_neighbour = op_arena_calloc(s->a, (size_t)npolys * 6, sizeof(int32_t));
    for (int i = 0; i < npolys * 6; i++)
        m->polys[i] = OP_POLY_MESH_NULL;
    int k = 0;
    s->min_row = 1 << 30;
    for (int p = 0; p < npolys; p++) {
        m->regs[p] = 1;
        m->areas[p] = 63;
        for (int j = 0; j < sizes[p]; j++, k++) {
            int v = 0;
            while (v < m->nverts &&
                   !(m->verts[v * 3] == pts[k][0] && m->verts[v * 3 + 2] == pts[k][1]))
                v++;
            if (v == m->nverts) {
                m->verts[v * 3] = pts[k][0];
                m->verts[v * 3 + 1] = vert_row(s, pts[k][0], pts[k][1]);
                m->verts[v * 3 + 2] = pts[k][1];
                m->nverts++;
                if (m->verts[v * 3 + 1] < s->min_row)
                    s->min_row = m->verts[v * 3 + 1];
            }
            m->polys[p * 6 + j] = (uint32_t)v;
        }
    }
    m->frame.border = B;
    m->frame.tile_cells = s->chf->width - 2 * B;
    m->frame.cs = CS;
    m->frame.tile_size = m->frame.tile_cells * CS;
    m->frame.ch = CH;
}

/* The 16 x 16 field of rows with one polygon of n corners on it. */
static void scene_one(scene *s, row_fn rows, int n, const int (*pts)[2])
{
    scene_field(s, 16, 16, rows, NULL);
    scene_polys(s, 1, &n, pts);
}

static op_status run(scene *s, op_detail_mesh *dm, op_err *e)
{
    op_arena *scratch = op_arena_create(0);
    op_status st =
        op_detail_build(&s->mesh, s->chf, &s->regs, &s->ds, s->min_row, s->a, scratch, dm, e);
    cr_assert_eq(op_arena_used(scratch), 0, "scratch not returned");
    op_arena_destroy(scratch);
    return st;
}

/* run, asserting OP_OK. */
static void run_ok(scene *s, op_detail_mesh *dm)
{
    op_err e;
    op_status st = run(s, dm, &e);
    cr_assert_eq(st, OP_OK, "%s", e.msg);
}

/* ---- the independent checker ---- */

static float local(const scene *s, double c)
{
    const op_tile_frame *f = &s->mesh.frame;
    if (c == f->border)
        return 0.0f;
    if (c == f->border + f->tile_cells)
        return (float)f->tile_size;
    return (float)((c - f->border) * f->cs);
}

static float local_y(const scene *s, double row)
{
    return (float)((row - s->min_row) * CH);
}

/* Brute NearestRow: all spans of the (up to) four cells, nearest within reach. */
static int brute_row(const scene *s, double x, double z, double expected, int region, int *row)
{
    const op_chf *c = s->chf;
    int reach = (s->ds.walkable_climb > 1 ? s->ds.walkable_climb : 1) + 1;
    double best = 1e300;
    int found = 0;
    for (int cz = 0; cz < c->depth; cz++)
        for (int cx = 0; cx < c->width; cx++) {
            int inx = cx == (int)floor(x) || (x == floor(x) && cx == (int)x - 1);
            int inz = cz == (int)floor(z) || (z == floor(z) && cz == (int)z - 1);
            if (!inx || !inz)
                continue;
            int ci = cx + cz * c->width;
            for (uint32_t i = c->cells[ci]; i < c->cells[ci + 1]; i++) {
                if (region >= 0 && s->regs.reg[i] != region)
                    continue;
                double d = fabs(c->y[i] - expected);
                if (d <= reach && d < best) {
                    best = d;
                    *row = c->y[i];
                    found = 1;
                }
            }
        }
    return found;
}

typedef struct pverts {
    int n, nx;
    double x[300], y[300], z[300];
} pverts;

static void poly_positions(const scene *s, const op_detail_mesh *dm, int p, pverts *pv)
{
    const op_poly_mesh *m = &s->mesh;
    pv->n = 0;
    while (pv->n < 6 && m->polys[p * 6 + pv->n] != OP_POLY_MESH_NULL) {
        const int32_t *v = &m->verts[m->polys[p * 6 + pv->n] * 3];
        pv->x[pv->n] = local(s, v[0]);
        pv->y[pv->n] = local_y(s, v[1]);
        pv->z[pv->n] = local(s, v[2]);
        pv->n++;
    }
    const uint32_t *mm = &dm->meshes[p * 4];
    pv->nx = (int)mm[1];
    for (uint32_t i = 0; i < mm[1]; i++) {
        pv->x[pv->n + i] = dm->verts[(mm[0] + i) * 3];
        pv->y[pv->n + i] = dm->verts[(mm[0] + i) * 3 + 1];
        pv->z[pv->n + i] = dm->verts[(mm[0] + i) * 3 + 2];
    }
}

static const uint8_t *ptri(const op_detail_mesh *dm, int p, int t)
{
    return &dm->tris[(dm->meshes[p * 4 + 2] + (uint32_t)t) * 4];
}

static double tri_area2(const pverts *pv, const uint8_t *t)
{
    return (pv->x[t[1]] - pv->x[t[0]]) * (pv->z[t[2]] - pv->z[t[0]]) -
           (pv->z[t[1]] - pv->z[t[0]]) * (pv->x[t[2]] - pv->x[t[0]]);
}

/* Topology: CCW triangles, each directed edge once, edge flags = missing reverse edge,
 * boundary = polygon ring with extra points near each polygon edge, area preserved. */
static void check_topology(const op_detail_mesh *dm, int p, const pverts *pv)
{
    int nt = (int)dm->meshes[p * 4 + 3], nv = pv->n + pv->nx;
    static int owner[256][256];
    for (int a = 0; a < 256; a++)
        for (int b = 0; b < 256; b++)
            owner[a][b] = -1;
    double area = 0.0;
    for (int t = 0; t < nt; t++) {
        const uint8_t *tr = ptri(dm, p, t);
        for (int k = 0; k < 3; k++) {
            cr_assert_lt(tr[k], nv, "poly %d tri %d index %d", p, t, tr[k]);
            int a = tr[k], b = tr[(k + 1) % 3];
            cr_assert_eq(owner[a][b], -1, "poly %d: edge %d->%d twice", p, a, b);
            owner[a][b] = t;
        }
        cr_assert_gt(op__orient2d(pv->x[tr[0]], pv->z[tr[0]], pv->x[tr[1]], pv->z[tr[1]],
                                  pv->x[tr[2]], pv->z[tr[2]]),
                     0, "poly %d tri %d not counter-clockwise", p, t);
        area += tri_area2(pv, tr);
    }
    int next[256], nb = 0;
    for (int i = 0; i < 256; i++)
        next[i] = -1;
    for (int t = 0; t < nt; t++) {
        const uint8_t *tr = ptri(dm, p, t);
        for (int k = 0; k < 3; k++) {
            int a = tr[k], b = tr[(k + 1) % 3];
            int flag = (tr[3] >> k) & 1;
            cr_assert_eq(flag, owner[b][a] < 0, "poly %d tri %d edge %d flag", p, t, k);
            if (flag) {
                cr_assert_eq(next[a], -1, "poly %d: two boundary edges leave %d", p, a);
                next[a] = b;
                nb++;
            }
        }
        cr_assert_eq(tr[3] & 0xf8, 0);
    }
    /* Walk the boundary from vertex 0: polygon vertices in order, extras between. */
    double parea = 0.0;
    for (int k = 0; k < pv->n; k++) {
        int k1 = (k + 1) % pv->n;
        parea += pv->x[k] * pv->z[k1] - pv->x[k1] * pv->z[k];
        double ex = pv->x[k1] - pv->x[k], ez = pv->z[k1] - pv->z[k];
        double len = sqrt(ex * ex + ez * ez), last = 0.0;
        int v = next[k], steps = 1;
        while (v >= pv->n) {
            double t = ((pv->x[v] - pv->x[k]) * ex + (pv->z[v] - pv->z[k]) * ez) / (len * len);
            double d = fabs((pv->x[v] - pv->x[k]) * ez - (pv->z[v] - pv->z[k]) * ex) / len;
            cr_assert(d < 1e-5 && t > last && t < 1.0, "poly %d: extra %d off edge %d", p, v, k);
            last = t;
            v = next[v];
            steps++;
        }
        cr_assert_eq(v, k1, "poly %d: boundary from vertex %d reaches %d", p, k, v);
        (void)steps;
    }
    int ring = 0;
    for (int i = 0; i < nv; i++)
        ring += next[i] >= 0;
    cr_assert_eq(ring, nb);
    cr_assert(fabs(area - parea) <= 1e-5 * fabs(parea) + 1e-9, "poly %d area %.9g != %.9g", p, area,
              parea);
}

/* Plane height of the first triangle containing (x, z); 0 when none. */
static int height_at(const op_detail_mesh *dm, int p, const pverts *pv, double x, double z,
                     double *h)
{
    for (int t = 0; t < (int)dm->meshes[p * 4 + 3]; t++) {
        const uint8_t *tr = ptri(dm, p, t);
        int in = 1;
        for (int k = 0; k < 3 && in; k++)
            in = op__orient2d(pv->x[tr[k]], pv->z[tr[k]], pv->x[tr[(k + 1) % 3]],
                              pv->z[tr[(k + 1) % 3]], x, z) >= 0;
        if (!in)
            continue;
        double ax = pv->x[tr[0]], az = pv->z[tr[0]];
        double bx = pv->x[tr[1]] - ax, bz = pv->z[tr[1]] - az;
        double cx = pv->x[tr[2]] - ax, cz = pv->z[tr[2]] - az;
        double det = bx * cz - cx * bz, qx = x - ax, qz = z - az;
        double u = (qx * cz - cx * qz) / det, v = (bx * qz - qx * bz) / det;
        *h = pv->y[tr[0]] + u * (pv->y[tr[1]] - pv->y[tr[0]]) + v * (pv->y[tr[2]] - pv->y[tr[0]]);
        return 1;
    }
    return 0;
}

/* Heights: every interior sample inside the polygon within max_error of the detail
 * surface (unless the 255-vertex cap was hit); every extra vertex at a floor row of its
 * cells (or, on the boundary, between the edge's end rows). Returns the samples over. */
static int check_heights(const scene *s, const op_detail_mesh *dm, int p, const pverts *pv)
{
    const op_poly_mesh *m = &s->mesh;
    double sd = s->ds.sample_distance / CS;
    int over = 0;
    if (sd <= 0.9) {
        cr_assert_eq(pv->nx, 0, "detail off but %d extras", pv->nx);
        cr_assert_eq(dm->meshes[p * 4 + 3], (uint32_t)(pv->n - 2));
        return 0;
    }
    int lo[2] = {1 << 30, 1 << 30}, hi[2] = {-1, -1};
    double mean = 0;
    for (int k = 0; k < pv->n; k++) {
        const int32_t *v = &m->verts[m->polys[p * 6 + k] * 3];
        lo[0] = v[0] < lo[0] ? v[0] : lo[0];
        hi[0] = v[0] > hi[0] ? v[0] : hi[0];
        lo[1] = v[2] < lo[1] ? v[2] : lo[1];
        hi[1] = v[2] > hi[1] ? v[2] : hi[1];
        mean += v[1];
    }
    mean /= pv->n;
    for (int j = 1; lo[1] + j * sd < hi[1]; j++)
        for (int i = 1; lo[0] + i * sd < hi[0]; i++) {
            double z = lo[1] + j * sd, x = lo[0] + i * sd;
            int inside = 1, row;
            for (int k = 0; k < pv->n && inside; k++) {
                const int32_t *a = &m->verts[m->polys[p * 6 + k] * 3];
                const int32_t *b = &m->verts[m->polys[p * 6 + (k + 1) % pv->n] * 3];
                double ex = b[0] - a[0], ez = b[2] - a[2];
                double cr = ex * (z - a[2]) - ez * (x - a[0]);
                inside = cr / sqrt(ex * ex + ez * ez) > sd * 0.5 + 1e-9;
            }
            if (!inside || !brute_row(s, x, z, mean, m->regs[p], &row))
                continue;
            /* Set: gcc -O1 cannot see that a failed cr_assert does not return. */
            double h = 0.0;
            float fx = local(s, x), fz = local(s, z);
            cr_assert(height_at(dm, p, pv, fx, fz, &h), "poly %d: sample %g %g not covered", p, x,
                      z);
            double err = fabs(local_y(s, row) - h);
            if (err > s->ds.max_error + 1e-6)
                over++;
        }
    if (pv->n + pv->nx < 255)
        cr_assert_eq(over, 0, "poly %d: %d samples over max error with %d vertices", p, over,
                     pv->n + pv->nx);
    for (int i = pv->n; i < pv->n + pv->nx; i++) {
        double cx = B + pv->x[i] / CS, cz = B + pv->z[i] / CS;
        int ok = 0;
        for (int dz = -1; dz <= 1 && !ok; dz++)
            for (int dx = -1; dx <= 1 && !ok; dx++) {
                int gx = (int)floor(cx) + dx, gz = (int)floor(cz) + dz;
                if (gx < 0 || gz < 0 || gx >= s->chf->width || gz >= s->chf->depth)
                    continue;
                int ci = gx + gz * s->chf->width;
                for (uint32_t k = s->chf->cells[ci]; k < s->chf->cells[ci + 1]; k++)
                    ok |= (float)pv->y[i] == local_y(s, s->chf->y[k]);
            }
        for (int k = 0; k < pv->n && !ok; k++) {
            /* an edge point whose NearestRow found nothing keeps the interpolated row */
            int k1 = (k + 1) % pv->n;
            double ex = pv->x[k1] - pv->x[k], ez = pv->z[k1] - pv->z[k];
            double d = fabs((pv->x[i] - pv->x[k]) * ez - (pv->z[i] - pv->z[k]) * ex) /
                       sqrt(ex * ex + ez * ez);
            double ylo = fmin(pv->y[k], pv->y[k1]), yhi = fmax(pv->y[k], pv->y[k1]);
            ok = d < 1e-5 && pv->y[i] >= ylo - 1e-6 && pv->y[i] <= yhi + 1e-6;
        }
        cr_assert(ok, "poly %d: extra %d at y %g is no floor near (%g, %g)", p, i, pv->y[i], cx,
                  cz);
    }
    return over;
}

static int check_all(const scene *s, const op_detail_mesh *dm)
{
    int over = 0;
    cr_assert_eq(dm->npolys, s->mesh.npolys);
    uint32_t vsum = 0, tsum = 0;
    for (int p = 0; p < dm->npolys; p++) {
        cr_assert_eq(dm->meshes[p * 4], vsum);
        cr_assert_eq(dm->meshes[p * 4 + 2], tsum);
        vsum += dm->meshes[p * 4 + 1];
        tsum += dm->meshes[p * 4 + 3];
        pverts pv;
        poly_positions(s, dm, p, &pv);
        cr_assert_leq(pv.n + pv.nx, 255);
        check_topology(dm, p, &pv);
        over += check_heights(s, dm, p, &pv);
    }
    cr_assert_eq(vsum, (uint32_t)dm->nverts);
    cr_assert_eq(tsum, (uint32_t)dm->ntris);
    return over;
}

/* ---- row functions ---- */

static int flat_rows(int x, int z, void *ctx)
{
    (void)x, (void)z, (void)ctx;
    return 10;
}

static int step_rows(int x, int z, void *ctx)
{
    (void)z, (void)ctx;
    return x < 8 ? 10 : 14;
}

static int bump_rows(int x, int z, void *ctx)
{
    (void)ctx;
    return (x == 7 || x == 8) && (z == 7 || z == 8) ? 13 : 10;
}

typedef struct noise {
    int w, d;
    uint8_t h[160 * 160];
    uint8_t up[160 * 160]; /* rows of a second floor above h, 0 = none */
} noise;

static int noise_upper(int x, int z, void *ctx)
{
    const noise *n = ctx;
    return n->up[x + z * n->w] ? 10 + n->h[x + z * n->w] + n->up[x + z * n->w] : 0;
}

static int noise_rows(int x, int z, void *ctx)
{
    const noise *n = ctx;
    return 10 + n->h[x + z * n->w];
}

/* Smooth-ish random floor: sum of random slopes and bumps, 0..8 rows. */
static void noise_init(noise *n, op_test_rng *r, int w, int d)
{
    n->w = w;
    n->d = d;
    double ax = op_test_rand01(r) * 0.6 - 0.3, az = op_test_rand01(r) * 0.6 - 0.3;
    double fx = op_test_rand01(r) * 0.8, fz = op_test_rand01(r) * 0.8;
    for (int z = 0; z < d; z++)
        for (int x = 0; x < w; x++) {
            double v = 4.0 + ax * (x - w / 2) + az * (z - d / 2) + 2.0 * sin(fx * x) * cos(fz * z);
            v += op_test_rand_int(r, 0, 1);
            n->h[x + z * w] = (uint8_t)(v < 0 ? 0 : v > 8 ? 8 : (int)v);
            /* a bridge-like floor 4..9 rows above in some cells: within reach at times */
            n->up[x + z * w] =
                (uint8_t)(op_test_rand_int(r, 0, 5) == 0 ? op_test_rand_int(r, 4, 9) : 0);
        }
}

/* ---- hand-made cases ---- */

Test(detail, flat_square_is_two_triangles)
{
    scene s;
    static const int pts[][2] = {{4, 4}, {12, 4}, {12, 12}, {4, 12}};
    scene_one(&s, flat_rows, 4, pts);
    op_detail_mesh dm;
    run_ok(&s, &dm);
    cr_assert_eq(dm.nverts, 0);
    cr_assert_eq(dm.ntris, 2);
    /* Ear clipping from the head: vertex 0 is the first strictly convex empty ear. */
    const uint8_t *t = dm.tris;
    cr_assert(t[0] == 3 && t[1] == 0 && t[2] == 1, "%d %d %d", t[0], t[1], t[2]);
    cr_assert_eq(t[3], 0x3); /* edges 3->0 and 0->1 on the boundary */
    /* The last three from the head (vertex 1): (prev, head, next) = (3, 1, 2); the
     * diagonal is cocircular, so no flip. */
    cr_assert(t[4] == 3 && t[5] == 1 && t[6] == 2, "%d %d %d", t[4], t[5], t[6]);
    cr_assert_eq(t[7], 0x6);
    check_all(&s, &dm);
    op_arena_destroy(s.a);
}

Test(detail, step_edge_points_follow_douglas_peucker)
{
    /* Rows 10 for x < 8, 14 from x = 8; sd = 2 cells, limit 1 row. Bottom edge (4,4) ->
     * (12,4): points x = 6, 8, 10 with expected rows 11, 12, 13 get rows 10, 10 (tie at
     * x = 8: the lower cell index, x = 7, wins), 14. DP keeps x = 8 (deviation 2), then
     * x = 10 (deviation 2 from the 10..14 chord); x = 6 deviates 0. The top edge walks
     * from (4,8) too and emits 10 then 8. The sides deviate 0. */
    scene s;
    static const int pts[][2] = {{4, 4}, {12, 4}, {12, 8}, {4, 8}};
    scene_one(&s, step_rows, 4, pts);
    op_detail_mesh dm;
    run_ok(&s, &dm);
    cr_assert_eq(dm.nverts, 4, "got %d extras", dm.nverts);
    const float want[4][3] = {{(float)(6 * CS), 0.0f, (float)(2 * CS)},
                              {(float)(8 * CS), (float)(4 * CH), (float)(2 * CS)},
                              {(float)(8 * CS), (float)(4 * CH), (float)(6 * CS)},
                              {(float)(6 * CS), 0.0f, (float)(6 * CS)}};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 3; k++)
            cr_assert_eq(dm.verts[i * 3 + k], want[i][k], "extra %d comp %d: %a", i, k,
                         dm.verts[i * 3 + k]);
    cr_assert_eq(dm.ntris, 6);
    /* Interior samples (6,6), (8,6), (10,6) lie on the planar surface: no insertion. */
    cr_assert_eq(check_all(&s, &dm), 0);
    op_arena_destroy(s.a);
}

Test(detail, bump_is_inserted_first)
{
    /* A 2x2 bump 3 rows high at cells 7..8: the sample (8,8) sees only bump cells and has
     * error 0.6 > 0.2, the largest: it is the first inserted vertex. */
    scene s;
    static const int pts[][2] = {{4, 4}, {12, 4}, {12, 12}, {4, 12}};
    scene_one(&s, bump_rows, 4, pts);
    op_detail_mesh dm;
    run_ok(&s, &dm);
    cr_assert_geq(dm.nverts, 1);
    cr_assert_eq(dm.verts[0], (float)(6 * CS));
    cr_assert_eq(dm.verts[1], (float)(3 * CH));
    cr_assert_eq(dm.verts[2], (float)(6 * CS));
    cr_assert_eq(check_all(&s, &dm), 0);
    op_arena_destroy(s.a);
}

/* Refinement stops when the worst error is not above MaxError (build3d-polys.md §4): the bump's
 * samples are exactly LocalY(3 rows) = (float)(3 * 0.2) off the flat hull; with MaxError equal
 * to that error nothing is inserted, with the next double below it the bump is. */
Test(detail, refinement_stops_at_an_error_equal_to_max_error)
{
    scene s;
    static const int pts[][2] = {{4, 4}, {12, 4}, {12, 12}, {4, 12}};
    scene_one(&s, bump_rows, 4, pts);
    op_detail_mesh dm;
    op_err e;
    double bump = (double)local_y(&s, 13.0) - (double)local_y(&s, 10.0);
    s.ds.max_error = bump;
    cr_assert_eq(run(&s, &dm, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(dm.nverts, 0, "a sample whose error equals MaxError was inserted");
    cr_assert_eq(dm.ntris, 2);
    s.ds.max_error = nextafter(bump, 0.0);
    cr_assert_eq(run(&s, &dm, &e), OP_OK, "%s", e.msg);
    cr_assert_gt(dm.nverts, 0);
    cr_assert_eq(dm.verts[1], (float)bump);
    op_arena_destroy(s.a);
}

Test(detail, detail_off_below_0_9_cells)
{
    scene s;
    static const int pts[][2] = {{4, 4}, {9, 3}, {12, 6}, {12, 10}, {8, 13}, {4, 11}};
    scene_one(&s, bump_rows, 6, pts);
    op_detail_mesh dm;
    op_err e;
    s.ds.sample_distance = 0.26; /* sd = 0.867: off */
    cr_assert_eq(run(&s, &dm, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(dm.nverts, 0);
    cr_assert_eq(dm.ntris, 4);
    check_all(&s, &dm);
    s.ds.sample_distance = 0.28; /* sd = 0.933: on */
    cr_assert_eq(run(&s, &dm, &e), OP_OK, "%s", e.msg);
    cr_assert_gt(dm.nverts, 0);
    check_all(&s, &dm);
    op_arena_destroy(s.a);
}

Test(detail, detail_off_boundary_is_sd_0_9_inclusive)
{
    scene s;
    static const int pts[][2] = {{4, 4}, {12, 4}, {12, 12}, {4, 12}};
    scene_one(&s, bump_rows, 4, pts);
    s.mesh.frame.cs = 0.5;
    s.mesh.frame.tile_size = s.mesh.frame.tile_cells * 0.5;
    op_detail_mesh dm;
    op_err e;
    s.ds.sample_distance = 0.45; /* 0.45 / 0.5 == 0.9 exactly in double: off */
    cr_assert_eq(s.ds.sample_distance / s.mesh.frame.cs, 0.9);
    cr_assert_eq(run(&s, &dm, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(dm.nverts, 0);
    cr_assert_eq(dm.ntris, 2);
    s.ds.sample_distance = nextafter(0.45, 1.0); /* just above: on, the bump is sampled */
    cr_assert_gt(s.ds.sample_distance / s.mesh.frame.cs, 0.9);
    cr_assert_eq(run(&s, &dm, &e), OP_OK, "%s", e.msg);
    cr_assert_gt(dm.nverts, 0);
    op_arena_destroy(s.a);
}

static int far_bump_rows(int x, int z, void *ctx)
{
    (void)z, (void)ctx;
    return x == 2000 || x == 2001 ? 13 : 10;
}

/* Extras on the bottom edge z = 3 of a thin triangle of length len (sd = 1 cell). */
static int bottom_edge_points(int len)
{
    scene s;
    scene_field(&s, len + 8, 8, far_bump_rows, NULL);
    int sizes[] = {3};
    int pts[3][2] = {{3, 3}, {3 + len, 3}, {3, 6}};
    scene_polys(&s, 1, sizes, (const int(*)[2])pts);
    s.ds.sample_distance = CS; /* sd = 1 */
    s.ds.max_error = 0.2;
    op_detail_mesh dm;
    run_ok(&s, &dm);
    int n = 0;
    for (int i = 0; i < dm.nverts; i++)
        n += dm.verts[i * 3 + 2] == (float)((3 - B) * CS);
    op_arena_destroy(s.a);
    return n;
}

Test(detail, edges_over_4096_steps_get_no_points)
{
    /* A bump at x = 2000 makes Douglas-Peucker keep points there when the edge is walked:
     * 4096 steps are walked, 4097 are not. */
    cr_assert_gt(bottom_edge_points(4096), 0);
    cr_assert_eq(bottom_edge_points(4097), 0);
}

/* Alternating 2x2 blocks along both axes: rows 10 / 13, so every edge point (sd = 2 on
 * odd corners) differs from its neighbours and Douglas–Peucker keeps them all. */
static int block_rows(int x, int z, void *ctx)
{
    (void)ctx;
    return 10 + 3 * (((x >> 1) ^ (z >> 1)) & 1);
}

static void limit_scene(scene *s, int w, int h)
{
    scene_field(s, w + 8, h + 8, block_rows, NULL);
    int sizes[] = {4};
    int pts[4][2] = {{3, 3}, {3 + w, 3}, {3 + w, 3 + h}, {3, 3 + h}};
    scene_polys(s, 1, sizes, (const int(*)[2])pts);
    s->ds.sample_distance = 2 * CS;
    s->ds.max_error = 0.01;
}

Test(detail, edge_points_up_to_255_vertices)
{
    /* 128 x 126 cells, sd = 2: 64 and 63 steps a side, 63 and 62 points, all kept; ring
     * = 4 + 2 * (63 + 62) = 254 vertices; refinement adds one sample and stops at 255,
     * with 254 - 2 + 2 triangles. */
    scene s;
    limit_scene(&s, 128, 126);
    op_detail_mesh dm;
    run_ok(&s, &dm);
    cr_assert_eq(dm.nverts, 251, "extras %d", dm.nverts);
    cr_assert_eq(dm.ntris, 254);
    cr_assert_gt(check_all(&s, &dm), 0, "the cap stopped refinement with samples over");
    op_arena_destroy(s.a);
}

Test(detail, edge_points_at_exactly_255_vertices)
{
    /* The 128 x 126 polygon with one more vertex at (130, 3) on its bottom edge: that edge, now
     * 127 cells from (3, 3), still has 63 points (x = 5 .. 129), the 1-cell edge after it none;
     * the ring is 5 + 63 + 62 + 63 + 62 = 255, not above 255, so the points stay: 250 extras,
     * refinement has no room, 253 triangles. */
    scene s;
    scene_field(&s, 136, 134, block_rows, NULL);
    int sizes[] = {5};
    int pts[5][2] = {{3, 3}, {130, 3}, {131, 3}, {131, 129}, {3, 129}};
    scene_polys(&s, 1, sizes, (const int(*)[2])pts);
    s.ds.sample_distance = 2 * CS;
    s.ds.max_error = 0.01;
    op_detail_mesh dm;
    run_ok(&s, &dm);
    cr_assert_eq(dm.nverts, 250, "extras %d", dm.nverts);
    cr_assert_eq(dm.ntris, 253);
    op_arena_destroy(s.a);
}

Test(detail, edge_points_dropped_beyond_255_vertices)
{
    /* 128 x 128: ring would be 4 + 252 = 256 > 255, so no edge points at all. */
    scene s;
    limit_scene(&s, 128, 128);
    s.ds.max_error = 1000.0;
    op_detail_mesh dm;
    run_ok(&s, &dm);
    cr_assert_eq(dm.nverts, 0, "extras %d", dm.nverts);
    cr_assert_eq(dm.ntris, 2);
    check_all(&s, &dm);
    op_arena_destroy(s.a);
}

Test(detail, the_largest_detail_mesh_is_not_a_limit)
{
    /* The scene that fills a polygon with samples up to the 255-vertex cap: it must
     * build (the triangle cap is above 2 * 255 - 5) and hold every invariant. */
    scene s;
    limit_scene(&s, 128, 128);
    op_detail_mesh dm;
    run_ok(&s, &dm);
    cr_assert_gt(dm.ntris, 255);
    check_all(&s, &dm);
    op_arena_destroy(s.a);
}

Test(detail, bad_settings_are_refused)
{
    scene s;
    static const int pts[][2] = {{4, 4}, {12, 4}, {12, 12}};
    scene_one(&s, flat_rows, 3, pts);
    op_detail_mesh dm;
    op_err e;
    s.ds.sample_distance = NAN;
    cr_assert_eq(run(&s, &dm, &e), OP_ERANGE);
    s.ds.sample_distance = 0.6;
    s.ds.max_error = -1;
    cr_assert_eq(run(&s, &dm, &e), OP_ERANGE);
    s.ds.max_error = 0.2;
    s.regs.span_count--;
    cr_assert_eq(run(&s, &dm, &e), OP_EINVAL);
    op_arena_destroy(s.a);
}

static void random_scene(scene *s, op_test_rng *r, noise *nz, int npolys);

Test(detail, lawson_flip_fixes_a_long_diagonal)
{
    /* A tall diamond: ear clipping from the head cuts (3, 0, 1), leaving the long
     * diagonal 1 - 3, whose opposite angles (127 degrees each) make it illegal; the flip
     * of edge 1->3 (t0 = (a, d, c), t1 = (b, c, d)) gives (1, 2, 0) and (3, 0, 2). */
    scene s;
    static const int pts[][2] = {{6, 8}, {8, 4}, {10, 8}, {8, 12}};
    scene_one(&s, flat_rows, 4, pts);
    op_detail_mesh dm;
    run_ok(&s, &dm);
    cr_assert_eq(dm.nverts, 0);
    cr_assert_eq(dm.ntris, 2);
    const uint8_t want[8] = {1, 2, 0, 0x5, 3, 0, 2, 0x5};
    cr_assert_arr_eq(dm.tris, want, 8);
    check_all(&s, &dm);
    op_arena_destroy(s.a);
}

Test(detail, bad_polygons_are_refused)
{
    scene s;
    static const int pts[][2] = {{4, 4}, {12, 4}, {12, 12}};
    scene_one(&s, flat_rows, 3, pts);
    op_detail_mesh dm;
    op_err e;
    s.mesh.polys[1] = 3; /* only 3 vertices */
    cr_assert_eq(run(&s, &dm, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "vertex 3"), "%s", e.msg);
    s.mesh.polys[1] = 1;
    s.mesh.nvp = 7;
    cr_assert_eq(run(&s, &dm, &e), OP_ERANGE);
    op_arena_destroy(s.a);
}

Test(detail, out_of_memory_is_reported_at_every_allocation)
{
    op_test_rng r = {99};
    static noise nz;
    scene s;
    random_scene(&s, &r, &nz, 5);
    s.ds.sample_distance = 1.5 * CS;
    s.ds.max_error = 0.05;
    op_detail_mesh dm;
    op_err e;
    cr_assert_eq(run(&s, &dm, &e), OP_OK, "%s", e.msg);
    int failures = 0;
    for (int which = 0; which < 2; which++)
        for (long n = 0;; n++) {
            op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
            op_arena_fail_after(which ? scratch : out, n);
            op_status st =
                op_detail_build(&s.mesh, s.chf, &s.regs, &s.ds, s.min_row, out, scratch, &dm, &e);
            op_arena_destroy(out);
            op_arena_destroy(scratch);
            if (st == OP_OK)
                break;
            cr_assert_eq(st, OP_ENOMEM, "n %ld: %s", n, e.msg);
            cr_assert(strstr(e.msg, "detail: out of memory"), "%s", e.msg);
            failures++;
        }
    cr_assert_gt(failures, 5);
    op_arena_destroy(s.a);
}

/* ---- shared edges ---- */

static long cross3(const int *o, const int *a, const int *b)
{
    return (long)(a[0] - o[0]) * (b[1] - o[1]) - (long)(a[1] - o[1]) * (b[0] - o[0]);
}

/* The points of the boundary walk from polygon vertex a to b (positions). */
static int boundary_points(const scene *s, const op_detail_mesh *dm, int p, int ka, int kb,
                           float (*out)[3])
{
    pverts pv;
    poly_positions(s, dm, p, &pv);
    int next[256];
    for (int i = 0; i < 256; i++)
        next[i] = -1;
    for (uint32_t t = 0; t < dm->meshes[p * 4 + 3]; t++) {
        const uint8_t *tr = ptri(dm, p, (int)t);
        for (int k = 0; k < 3; k++)
            if ((tr[3] >> k) & 1)
                next[tr[k]] = tr[(k + 1) % 3];
    }
    int n = 0;
    for (int v = next[ka]; v != kb; v = next[v], n++) {
        out[n][0] = (float)pv.x[v];
        out[n][1] = (float)pv.y[v];
        out[n][2] = (float)pv.z[v];
    }
    return n;
}

Test(detail, shared_edges_get_identical_points)
{
    op_test_rng r = {77};
    int shared_points = 0;
    for (int it = 0; it < 40; it++) {
        static noise nz;
        noise_init(&nz, &r, 40, 40);
        scene s;
        scene_field(&s, 40, 40, noise_rows, &nz);
        /* A convex hexagon split along the diagonal v0 - v3 into two quads. */
        int cx = op_test_rand_int(&r, 17, 22), cz = op_test_rand_int(&r, 17, 22);
        int rr = op_test_rand_int(&r, 8, 14);
        int hx[6], hz[6];
        for (int k = 0; k < 6; k++) {
            double ang = k * 3.14159265358979 / 3 + op_test_rand01(&r) * 0.3;
            hx[k] = cx + (int)lround(rr * cos(ang));
            hz[k] = cz + (int)lround(rr * sin(ang));
        }
        int convex = 1;
        for (int k = 0; k < 6; k++) {
            int o[2] = {hx[k], hz[k]}, a2[2] = {hx[(k + 1) % 6], hz[(k + 1) % 6]};
            int b2[2] = {hx[(k + 2) % 6], hz[(k + 2) % 6]};
            convex &= cross3(o, a2, b2) > 0;
        }
        if (!convex) {
            op_arena_destroy(s.a);
            continue;
        }
        int sizes[] = {4, 4};
        int pts[8][2] = {{hx[0], hz[0]}, {hx[1], hz[1]}, {hx[2], hz[2]}, {hx[3], hz[3]},
                         {hx[3], hz[3]}, {hx[4], hz[4]}, {hx[5], hz[5]}, {hx[0], hz[0]}};
        scene_polys(&s, 2, sizes, (const int(*)[2])pts);
        s.ds.sample_distance = (1.0 + op_test_rand01(&r) * 2.0) * CS;
        s.ds.max_error = 0.1 + op_test_rand01(&r) * 0.3;
        op_detail_mesh dm;
        op_err e;
        cr_assert_eq(run(&s, &dm, &e), OP_OK, "%s", e.msg);
        check_all(&s, &dm);
        float a[256][3], b[256][3];
        int na = boundary_points(&s, &dm, 0, 3, 0, a);
        int nb = boundary_points(&s, &dm, 1, 3, 0, b);
        /* Polygon 0 walks v3 -> v0 (slots 3 -> 0); polygon 1 walks v0 -> v3 (slots 3 -> 0
         * as well, since its slot 3 is v0 and slot 0 is v3). */
        cr_assert_eq(na, nb, "iteration %d: %d vs %d points", it, na, nb);
        for (int i = 0; i < na; i++)
            for (int k = 0; k < 3; k++)
                cr_assert_eq(a[i][k], b[na - 1 - i][k], "iteration %d point %d", it, i);
        shared_points += na;
        op_arena_destroy(s.a);
    }
    cr_assert_gt(shared_points, 20, "too few shared edge points to test (%d)", shared_points);
}

/* ---- random polygons ---- */

static int cmp_pt(const void *x, const void *y)
{
    const int *a = x, *b = y;
    return a[0] != b[0] ? a[0] - b[0] : a[1] - b[1];
}

/* Strict convex hull (counter-clockwise) of n points; returns its size. */
static int hull(int (*p)[2], int n, int (*out)[2])
{
    qsort(p, (size_t)n, sizeof p[0], cmp_pt);
    int k = 0;
    for (int i = 0; i < n; i++) {
        while (k >= 2 && cross3(out[k - 2], out[k - 1], p[i]) <= 0)
            k--;
        out[k][0] = p[i][0], out[k][1] = p[i][1], k++;
    }
    for (int i = n - 2, t = k + 1; i >= 0; i--) {
        while (k >= t && cross3(out[k - 2], out[k - 1], p[i]) <= 0)
            k--;
        out[k][0] = p[i][0], out[k][1] = p[i][1], k++;
    }
    return k - 1;
}

static void random_scene(scene *s, op_test_rng *r, noise *nz, int npolys)
{
    noise_init(nz, r, 48, 48);
    scene_field2(s, 48, 48, noise_rows, noise_upper, nz);
    int sizes[8], pts[48][2], k = 0;
    for (int p = 0; p < npolys; p++) {
        int h;
        int tmp[6][2], out[8][2];
        do {
            int span = op_test_rand_int(r, 2, 30);
            int ox = op_test_rand_int(r, 3, 44 - span), oz = op_test_rand_int(r, 3, 44 - span);
            for (int i = 0; i < 6; i++) {
                tmp[i][0] = ox + op_test_rand_int(r, 0, span);
                tmp[i][1] = oz + op_test_rand_int(r, 0, span);
            }
            h = hull(tmp, 6, out);
        } while (h < 3);
        sizes[p] = h;
        for (int i = 0; i < h; i++, k++)
            pts[k][0] = out[i][0], pts[k][1] = out[i][1];
    }
    scene_polys(s, npolys, sizes, (const int(*)[2])pts);
    /* Random regions: half the spans in region 2 for some scenes (samples skip them). */
    if (op_test_rand_int(r, 0, 2) == 0)
        for (uint32_t i = 0; i < s->chf->span_count; i += 2)
            s->regs.reg[i] = 2;
    s->ds.sample_distance = (0.5 + op_test_rand01(r) * 3.0) * CS;
    s->ds.max_error = 0.05 + op_test_rand01(r) * 0.5;
    s->ds.walkable_climb = op_test_rand_int(r, 0, 5);
}

Test(detail, random_polygons_hold_the_invariants)
{
    op_test_rng r = {2024};
    static noise nz;
    int elimit = 0, ok = 0;
    for (int it = 0; it < 300; it++) {
        scene s;
        random_scene(&s, &r, &nz, 1 + it % 5);
        op_detail_mesh dm;
        op_err e;
        op_status st = run(&s, &dm, &e);
        cr_assert_eq(st, OP_OK, "iteration %d: %s", it, e.msg);
        check_all(&s, &dm);
        ok++;
        op_arena_destroy(s.a);
    }
    cr_assert_eq(ok, 300, "ok %d elimit %d", ok, elimit);
}

/* The workspace is not zeroed as a whole (detail.c work_init): a build whose scratch arena
 * holds leftovers of earlier work must give the same bytes as one on a fresh arena. The
 * leftovers are every byte pattern a stale counter or triangle mark could hold. */
static uint64_t detail_hash(scene *s, op_arena *scratch)
{
    op_detail_mesh dm;
    op_err e;
    op_status st =
        op_detail_build(&s->mesh, s->chf, &s->regs, &s->ds, s->min_row, s->a, scratch, &dm, &e);
    cr_assert_eq(st, OP_OK, "%s", e.msg);
    uint64_t h = OP_HASH_INIT;
    cr_assert_eq(op_detail_dump(&dm, op_hash_sink_write, &h), 0);
    return h;
}

Test(detail, stale_scratch_gives_the_same_bytes)
{
    op_test_rng r = {77};
    static noise nz;
    static const uint8_t fill[] = {0x00, 0x01, 0x7f, 0xff};
    for (int it = 0; it < 40; it++) {
        scene s;
        random_scene(&s, &r, &nz, 1 + it % 5);
        op_arena *fresh = op_arena_create(0);
        uint64_t want = detail_hash(&s, fresh);
        op_arena_destroy(fresh);
        for (size_t f = 0; f < sizeof fill; f++) {
            /* One block for everything, so that the release keeps it (a release frees
             * only the blocks newer than the mark's) and the build reuses the junk. */
            op_arena *stale = op_arena_create((size_t)16 << 20);
            cr_assert(op_arena_alloc(stale, 1));
            op_arena_mark m = op_arena_get_mark(stale);
            void *junk = op_arena_alloc(stale, (size_t)8 << 20);
            cr_assert(junk);
            memset(junk, fill[f], (size_t)8 << 20);
            op_arena_release(stale, m);
            uint64_t got = detail_hash(&s, stale);
            op_arena_destroy(stale);
            cr_assert_eq(got, want, "iteration %d, fill %02x: detail differs", it, fill[f]);
        }
        op_arena_destroy(s.a);
    }
}

/* ---- hash matrix ---- */

static uint64_t scenario_hash(void)
{
    op_test_rng r = {4242};
    static noise nz;
    uint64_t h = OP_HASH_INIT;
    for (int it = 0; it < 40; it++) {
        scene s;
        random_scene(&s, &r, &nz, 1 + it % 5);
        op_detail_mesh dm;
        op_err e;
        op_status st = run(&s, &dm, &e);
        char line[64];
        int n = snprintf(line, sizeof line, "scene %d status %d\n", it, (int)st);
        op_hash_sink_write(&h, line, (size_t)n);
        if (st == OP_OK)
            cr_assert_eq(op_detail_dump(&dm, op_hash_sink_write, &h), 0);
        op_arena_destroy(s.a);
    }
    return h;
}

Test(detail, hash_matrix_detail_unit)
{
    uint64_t h1 = scenario_hash();
    uint64_t h2 = scenario_hash();
    cr_assert_eq(h1, h2, "two runs differ");
    op_test_golden("build3d/detail-unit", h1);
}
