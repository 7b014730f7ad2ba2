/*
 * Span stage, classification and rasterization (build3d-spans.md §2, §3).
 *
 * Input: triangles (float32 vertices) with one area id each and a heightfield
 * frame. Output: fragments (column, rows [smin, smax), area) appended to the
 * heightfield, whose columns are then rebuilt (heightfield.c).
 *
 * Rule (§3.2): a triangle leaves a fragment in cell (x, z) iff its XZ projection
 * meets the open cell square, decided in double on the row polygon R (the triangle
 * clipped to the row's closed z slab) and the cell's point set P (R's vertices in
 * the x slab plus R's strict crossings with the two x lines), followed by the
 * degeneracy test. A wall lying exactly on a cell line goes to the one column or row
 * behind it (§3.2a, raster_wall). Every crossing depends only on its edge and its line, never on
 * the grid or the loops, so two tiles that share a cell compute bitwise identical
 * fragments there, and the cells beside a line share its crossings.
 * Cost: a triangle at most TRI_CELLS cells wide (nearly all) has its rows done in
 * one pass (raster_rows): with its vertices ordered by z, every row polygon is the
 * same five edges (two caps on the row's lines, two left pieces, one right piece),
 * a line's two points and their cells (and, between rows of four or more cells, its
 * crossings with the x lines) serve the rows on both of its sides, and a
 * row's points go edge by edge and vertex by vertex into one array of per-cell
 * sums, of which only the z tests remain per cell. Wider triangles, and grids
 * without line tables, take the general row polygon and chunk (raster_row). A
 * crossing's two coordinates share one packed division. Any change here must keep
 * every value bitwise: tests/golden, and test_rasterize_rule (and its
 * OP_RASTER_SCALAR twin), which compares with the rule written out literally cell
 * by cell.
 * Typical sizes: a tile grid of 42 x 42 cells, 1-20k triangles, 1-3 cells each
 * (dungeon: 4 rows a triangle, 2-3 cells a row, 4 vertices a row polygon).
 */
#include <math.h>

#include "heightfield_internal.h"
#include "onepath/limits.h"
#include "predicates.h"

/* ---- classification (§2) ---- */

int op_triangle_walkable(const float *v0, const float *v1, const float *v2, float slope_cos)
{
    return op__triangle_walkable(v0, v1, v2, slope_cos); /* heightfield_internal.h */
}

int op_triangle_may_be_walkable(const float *v0, const float *v1, const float *v2, float slope_cos)
{
    double e0x = (double)v1[0] - v0[0], e0y = (double)v1[1] - v0[1], e0z = (double)v1[2] - v0[2];
    double e1x = (double)v2[0] - v0[0], e1y = (double)v2[1] - v0[1], e1z = (double)v2[2] - v0[2];
    double nx = e0y * e1z - e0z * e1y;
    double ny = e0z * e1x - e0x * e1z;
    double nz = e0x * e1y - e0y * e1x;
    double len = sqrt(nx * nx + ny * ny + nz * nz);
    return len > 0.0 && ny >= ((double)slope_cos - 1e-3) * len;
}

void op_classify_triangles(const op_soup *soup, float slope_cos, uint8_t *areas_out)
{
    size_t ntris = soup->tris_len / 3;
    for (size_t t = 0; t < ntris; t++) {
        const int *ix = &soup->tris[3 * t];
        const float *v0 = &soup->verts[3 * (size_t)ix[0]];
        const float *v1 = &soup->verts[3 * (size_t)ix[1]];
        const float *v2 = &soup->verts[3 * (size_t)ix[2]];
        int area = soup->areas ? soup->areas[t] : OP_WALKABLE_AREA;
        areas_out[t] = (uint8_t)(op_triangle_walkable(v0, v1, v2, slope_cos) ? area : 0);
    }
}

/* ---- clipping (§3.2) ---- */

/* A row polygon's vertex: its point, and its x cell on the grid with whether it lies
 * on that cell's left line (the cell is clamped to [-2, width + 2]: beyond the grid
 * only the side matters). The cell is found once per vertex or crossing. With a
 * clamped cell (-2 or width + 2) on is never read: every reader takes only cells
 * inside the grid (one-cell and two- or three-cell rows, columns, single cells), or
 * slots, which clamp such a cell past the triangle's range whatever on is, or
 * raster_chunk's ranges, clipped to the chunk likewise; set_cell leaves it 0 for a
 * point far beyond the grid. */
typedef struct vtx {
    double p[3];
    int cell, on;
    int s0, s1; /* raster_rows' slots: its cell's, and the one it also belongs to (the
                 * cell before when it lies on its cell's left line, else its own) */
} vtx;

/* Largest row polygon: three vertices plus at most two strict crossings per line
 * (a triangle's cyclic sequence of z values is unimodal), so 7; 5 when convex. */
#define MAX_POLY 8

static inline double mind(double a, double b)
{
    return a < b ? a : b;
}
static inline double maxd(double a, double b)
{
    return a > b ? a : b;
}

/* Two coordinates of a point handled together: with SSE2 (every x86-64) in one
 * register, so that a crossing's two quotients cost one division; elsewhere as two
 * doubles. Lane by lane the operations are the same IEEE ones: min(a, b) is
 * a < b ? a : b and max(a, b) is a > b ? a : b, as mind / maxd. */
#if defined(__SSE2__) && !defined(OP_RASTER_SCALAR)
#include <emmintrin.h>
typedef __m128d dpair;
static inline dpair dp_load(const double *p)
{
    return _mm_loadu_pd(p);
}
static inline void dp_store(double *p, dpair a)
{
    _mm_storeu_pd(p, a);
}
/* (*lo, *hi) from two loads: each is then within one earlier store (see vtx_put). */
static inline dpair dp_load2(const double *lo, const double *hi)
{
    return _mm_loadh_pd(_mm_load_sd(lo), hi);
}
static inline dpair dp_set(double lo, double hi)
{
    return _mm_set_pd(hi, lo);
}
static inline dpair dp_set1(double v)
{
    return _mm_set1_pd(v);
}
static inline double dp_lo(dpair a)
{
    return _mm_cvtsd_f64(a);
}
static inline double dp_hi(dpair a)
{
    return _mm_cvtsd_f64(_mm_unpackhi_pd(a, a));
}
static inline dpair dp_min(dpair a, dpair b)
{
    return _mm_min_pd(a, b);
}
static inline dpair dp_max(dpair a, dpair b)
{
    return _mm_max_pd(a, b);
}
/* (a * wa + b * wb) / d, lane by lane. */
static inline dpair dp_lerp(dpair a, dpair b, double wa, double wb, double d)
{
    return _mm_div_pd(_mm_add_pd(_mm_mul_pd(a, _mm_set1_pd(wa)), _mm_mul_pd(b, _mm_set1_pd(wb))),
                      _mm_set1_pd(d));
}
/* (a - o) / c, lane by lane. */
static inline dpair dp_scale(dpair a, double o, double c)
{
    return _mm_div_pd(_mm_sub_pd(a, _mm_set1_pd(o)), _mm_set1_pd(c));
}
#else
typedef struct dpair {
    double v[2];
} dpair;
static inline dpair dp_load(const double *p)
{
    dpair r = {{p[0], p[1]}};
    return r;
}
static inline void dp_store(double *p, dpair a)
{
    p[0] = a.v[0];
    p[1] = a.v[1];
}
static inline dpair dp_load2(const double *lo, const double *hi)
{
    dpair r = {{*lo, *hi}};
    return r;
}
static inline dpair dp_set(double lo, double hi)
{
    dpair r = {{lo, hi}};
    return r;
}
static inline dpair dp_set1(double v)
{
    return dp_set(v, v);
}
static inline double dp_lo(dpair a)
{
    return a.v[0];
}
static inline double dp_hi(dpair a)
{
    return a.v[1];
}
static inline dpair dp_min(dpair a, dpair b)
{
    return dp_set(mind(a.v[0], b.v[0]), mind(a.v[1], b.v[1]));
}
static inline dpair dp_max(dpair a, dpair b)
{
    return dp_set(maxd(a.v[0], b.v[0]), maxd(a.v[1], b.v[1]));
}
static inline dpair dp_lerp(dpair a, dpair b, double wa, double wb, double d)
{
    return dp_set((a.v[0] * wa + b.v[0] * wb) / d, (a.v[1] * wa + b.v[1] * wb) / d);
}
static inline dpair dp_scale(dpair a, double o, double c)
{
    return dp_set((a.v[0] - o) / c, (a.v[1] - o) / c);
}
#endif

/* A point's coordinates are stored as x, then (y, z) in one 16-byte store, and read
 * as x, (y, z) (the sums) or x and y in two loads (the z crossings): each read then
 * lies within one store and can be forwarded from it (a read spanning two recent
 * stores waits for both to leave the store buffer). In wall time this measured even
 * with the old layout; it is kept as the one way points are written. */
static inline void vtx_put(vtx *v, const float *f)
{
    v->p[0] = f[0];
    dp_store(&v->p[1], dp_set(f[1], f[2]));
}

/* A z crossing: lerp2's (x, y) on the line z = L. */
static inline void vtx_put_zc(vtx *v, dpair xy, double L)
{
    v->p[0] = dp_lo(xy);
    dp_store(&v->p[1], dp_set(dp_hi(xy), L));
}

/* The crossing of edge (a, b) with the line p[ax] = L (§3.2): exactly L on ax and,
 * on each other axis, (a * (b_ax - L) + b * (L - a_ax)) / (b_ax - a_ax) clamped to
 * [min(a, b), max(a, b)]. One rounding at the end: exact whenever the products and
 * the sum are (then a crossing at a cell corner lands on it), and the same for
 * (b, a). Here for the two other axes at once (ca, cb: the ends' coordinates on
 * them); the clamp is max(lo, min(hi, v)), which compiles without a branch and
 * equals v < lo ? lo : (v > hi ? hi : v) since lo <= hi (only the sign of a zero
 * can differ when a == b, and no rule sees it). */
static inline dpair lerp2(dpair ca, dpair cb, double wa, double wb, double d)
{
    return dp_max(dp_min(ca, cb), dp_min(dp_max(ca, cb), dp_lerp(ca, cb, wa, wb, d)));
}

/* Where fragments go: a callback (op_triangle_fragments) or the heightfield. */
typedef struct raster_ctx {
    op_heightfield *hf; /* NULL with a callback */
    int area;
    op_fragment_fn fn;
    void *fn_ctx;
    double inv_cs; /* 1 / cs, for CellOf's estimate */
    op_err *err;
    /* The grid's lines, xl[j] = line_origin[0] + (cell0[0] + j) * cs for local
     * j in [-LINE_PAD, width + LINE_PAD] (zl likewise along z), computed once per call
     * with the very expression of §1.1, so reading one is bitwise the same as
     * computing it; NULL for grids wider than LINES_MAX (then they are computed). */
    const double *xl, *zl;
    struct vcache *vc; /* the vertex cell cache, NULL without indices */
} raster_ctx;

/* The x cells of the soup's vertices met lately, by vertex index: a vertex is shared by
 * several triangles (six in a terrain grid), and its cell and on-line flag are a pure
 * function of its x and the grid, so a triangle whose vertex is in the cache takes
 * them from it instead of set_cell (terrain:256 spent 5 % of its span stage finding
 * vertex cells). Direct mapped on the index's low bits; reset by each call.
 * 1024 entries, not 256: a grid's triangles use two vertex rows at once, and with 256
 * entries a row of 513 vertices (terrain:256) put vertex (i, k + 1) on the entry of
 * (i + 1, k), so every cell of a tile row met a vertex the cell before had evicted;
 * with 1024 the two rows of a tile's pass share no entry. The keys are an array of
 * their own so that the reset is a plain vectorised fill: a loop over 1024 keys of
 * 12-byte entries cost stairs:256 (many small tiles) more than the larger cache saved
 * it. */
#define VCACHE 1024
typedef struct vcache {
    int key[VCACHE]; /* the vertex index, -1 when empty */
    struct {
        int cell, on;
    } val[VCACHE];
} vcache;

static void vcache_reset(vcache *vc)
{
    for (int i = 0; i < VCACHE; i++)
        vc->key[i] = -1;
}

#define LINE_PAD 5
/* Cells beyond which set_cell's estimate decides a clamped cell alone. */
#define CELL_FAR  4
#define LINES_MAX 1024
/* Room for both tables of a grid of at most LINES_MAX a side. */
#define LINE_BUF (2 * (LINES_MAX + 2 * LINE_PAD + 1))

/* Fills rc's tables in buf (LINE_BUF doubles) when the grid fits. */
static void raster_lines(raster_ctx *rc, const op_heightfield *hf, double *buf)
{
    rc->xl = rc->zl = NULL;
    if (hf->width > LINES_MAX || hf->depth > LINES_MAX)
        return;
    const double cs = hf->cs;
    double *t = buf;
    for (int a = 0; a < 2; a++) {
        const double o = hf->line_origin[a];
        const int64_t g0 = hf->cell0[a];
        const int n = a == 0 ? hf->width : hf->depth;
        for (int j = -LINE_PAD; j <= n + LINE_PAD; j++)
            t[j + LINE_PAD] = o + (double)(g0 + j) * cs;
        if (a == 0)
            rc->xl = t + LINE_PAD;
        else
            rc->zl = t + LINE_PAD;
        t += n + 2 * LINE_PAD + 1;
    }
}

/* Line j of the grid along x (a = 0) or z (a = 1), local j in [-LINE_PAD, side + LINE_PAD]. */
static inline double line_at(const op_heightfield *hf, const raster_ctx *rc, int a, int64_t j)
{
    const double *t = a == 0 ? rc->xl : rc->zl;
    return t ? t[j] : hf->line_origin[a] + (double)(hf->cell0[a] + j) * hf->cs;
}

/* v's x cell (CellOf against the grid's lines, §1.2) and whether v is on its line:
 * the search of op__cell_of (for grids without a table, and estimates far off). */
static __attribute__((noinline)) void set_cell_search(const op_heightfield *hf,
                                                      const raster_ctx *rc, vtx *v)
{
    double x = v->p[0], ox = hf->line_origin[0], cs = hf->cs;
    const int64_t w = hf->width;
    int64_t k = op__cell_of(x, ox, cs, rc->inv_cs);
    v->on = x == ox + (double)k * cs;
    k -= hf->cell0[0];
    v->cell = k < -2 ? -2 : (k > w + 2 ? (int)w + 2 : (int)k);
}

/* The same from the table: CellOf is the one k with line(k) <= x < line(k + 1) (lines
 * strictly increase), so op__cell_of's estimate checked against the table and
 * corrected by one cell gives it; an estimate further off or beyond the table takes
 * the search. Inlined: it runs for every vertex and crossing of a row polygon. */
static inline __attribute__((always_inline)) void set_cell(const op_heightfield *hf,
                                                           const raster_ctx *rc, vtx *v)
{
    const double *t = rc->xl;
    if (t) {
        const double x = v->p[0];
        const int w = hf->width;
        double q = (x - hf->line_origin[0]) * rc->inv_cs;
        q = q > 4e15 ? 4e15 : (q < -4e15 ? -4e15 : q);
        int64_t k = (int64_t)q - hf->cell0[0];
        if (k >= 1 - LINE_PAD && k <= w + LINE_PAD - 2) {
            int j = (int)k;
            j -= t[j] > x;
            j += t[j + 1] <= x;
            if (t[j] <= x && x < t[j + 1]) {
                v->on = x == t[j];
                v->cell = j < -2 ? -2 : (j > w + 2 ? w + 2 : j);
                return;
            }
        } else if (k < -2 - CELL_FAR || k > w + 2 + CELL_FAR) {
            /* Far beyond the grid (large triangles reach there: the search ran for
             * 26k points of dungeon's span stage). The estimate is within one cell of
             * CellOf (truncation toward zero; its rounding is far below a cell), so
             * the cell clamps to -2 or w + 2; on is then never read (see vtx). */
            v->cell = k < 0 ? -2 : w + 2;
            v->on = 0;
            return;
        }
    }
    set_cell_search(hf, rc, v);
}

/* The crossings of the triangle's edges (tri[e], tri[e + 1]) with the line z = L
 * where it lies strictly between their z (has[e]). A line's crossings serve the rows
 * on both of its sides, as clipping each row against its own lines would give. */
static inline void z_crossings(const op_heightfield *hf, const raster_ctx *rc, const vtx *tri,
                               double zlo, double zhi, double L, vtx *q, int *has)
{
    if (!(zlo < L && L < zhi)) { /* outside the triangle's open z range: none */
        has[0] = has[1] = has[2] = 0;
        return;
    }
#pragma GCC unroll 3
    for (int e = 0; e < 3; e++) {
        const vtx *a = &tri[e], *b = &tri[e == 2 ? 0 : e + 1];
        double va = a->p[2], vb = b->p[2];
        /* Bitwise: one branch an edge instead of up to four, badly predicted. */
        has[e] = ((va < L) & (L < vb)) | ((vb < L) & (L < va));
        if (has[e]) {
            vtx_put_zc(&q[e],
                       lerp2(dp_load2(&a->p[0], &a->p[1]), dp_load2(&b->p[0], &b->p[1]), vb - L,
                             L - va, vb - va),
                       L);
            /* The clamp keeps the crossing's x between the ends' x, so when both ends
             * are in one cell of the grid's unclamped range it is in that cell. */
            int c = a->cell;
            if (c == b->cell && c > -2 && c < hf->width + 2) {
                q[e].cell = c;
                q[e].on = q[e].p[0] == line_at(hf, rc, 0, c);
            } else {
                set_cell(hf, rc, &q[e]);
            }
        }
    }
}

/* The row polygon (§3.2): the triangle's vertices with zb <= z <= zt and, after each
 * vertex a, the crossings of edge (a, b) with the lines zb (qb), zt (qt) that lie
 * strictly between a.z and b.z, in their order along the edge. */
static inline int row_polygon(const vtx *tri, const vtx *qb, const int *hb, const vtx *qt,
                              const int *ht, double zb, double zt, const vtx **out)
{
    /* Without branches (they follow the geometry and predict badly): every candidate
     * is written at out[m] and m counts it when it is in; m stays below MAX_POLY. */
    const vtx *const q[2] = {qb, qt};
    const int *const h[2] = {hb, ht};
    int m = 0;
#pragma GCC unroll 3
    for (int i = 0; i < 3; i++) {
        const vtx *a = &tri[i], *b = &tri[i == 2 ? 0 : i + 1];
        out[m] = a;
        m += (a->p[2] >= zb) & (a->p[2] <= zt);
        int up = a->p[2] < b->p[2]; /* then qb's crossing comes first along the edge */
        out[m] = &q[!up][i];
        m += h[!up][i];
        out[m] = &q[up][i];
        m += h[up][i];
    }
    return m;
}

/* floor(t0) and ceil(t1) of t = (t0, t1) as emit_rows reads them: exact wherever
 * |t| <= ROWS_CLAMP, and beyond it the value clamped to +-ROWS_CLAMP, which leaves
 * every decision of §3.4 as it was. Why: ROWS_CLAMP >= rows >= 1, so a t0 below
 * -ROWS_CLAMP still gives smin = 0 and fmin + 1 <= 0 (which lifts no fmax above 0),
 * one above it is dropped either way (fmin >= rows), and a t1 beyond +ROWS_CLAMP
 * still gives smax = rows. With SSE2 both ends take one packed conversion to int32
 * and back (ceil(t1) = -floor(-t1), exact), instead of two scalar round trips and
 * their compares: 522k fragments of dungeon's span stage come through here. */
#define ROWS_CLAMP 1048576.0
_Static_assert(OP_MAX_ROWS < 1048576, "ROWS_CLAMP must be at least any heightfield's rows");
#if defined(__SSE2__) && !defined(OP_RASTER_SCALAR)
/* -ROWS_CLAMP, -ROWS_CLAMP / ROWS_CLAMP, ROWS_CLAMP / the sign of lane 1: loaded as
 * they are (gcc built the set1 forms from scalars, two instructions each). */
static const double rows_consts[3][2] __attribute__((aligned(16))) = {
    {-ROWS_CLAMP, -ROWS_CLAMP}, {ROWS_CLAMP, ROWS_CLAMP}, {0.0, -0.0}};
static inline void rows_floor_ceil(dpair t, int *fmin, int *fmax)
{
    __m128d v = _mm_xor_pd(t, _mm_load_pd(rows_consts[2])); /* (t0, -t1) */
    v = _mm_min_pd(_mm_max_pd(v, _mm_load_pd(rows_consts[0])), _mm_load_pd(rows_consts[1]));
    __m128i k = _mm_cvttpd_epi32(v); /* toward zero, exact: |v| <= 2^20 */
    /* Minus one where the truncation went up (a negative non-integer). */
    __m128i up = _mm_castpd_si128(_mm_cmpgt_pd(_mm_cvtepi32_pd(k), v));
    k = _mm_add_epi32(k, _mm_shuffle_epi32(up, _MM_SHUFFLE(3, 3, 2, 0)));
    *fmin = _mm_cvtsi128_si32(k);
    *fmax = -_mm_cvtsi128_si32(_mm_shuffle_epi32(k, _MM_SHUFFLE(3, 3, 3, 1)));
}
#else
static inline void rows_floor_ceil(dpair t, int *fmin, int *fmax)
{
    /* floor and ceil in integers: |t| < 2^51 here (coordinates within 2^21, the
     * origin within 2^40, ch >= 0.001), so the conversions are exact; then clamped
     * to +-ROWS_CLAMP, as the SSE2 form. */
    double t0 = dp_lo(t), t1 = dp_hi(t);
    int64_t lo = (int64_t)t0, hi = (int64_t)t1;
    lo -= (double)lo > t0;
    hi += (double)hi < t1;
    const int64_t m = (int64_t)ROWS_CLAMP;
    *fmin = (int)(lo < -m ? -m : (lo > m ? m : lo));
    *fmax = (int)(hi < -m ? -m : (hi > m ? m : hi));
}
#endif

/* Rows of a fragment (§3.4) from t = ((ymin - oy) / ch, (ymax - oy) / ch) and its push
 * into the column through cur (a row's pushes share one: see op__hf_cursor). */
static inline void emit_rows(op__hf_cursor *cur, int rows, uint32_t col, int area, dpair t)
{
    int fmin, fmax;
    rows_floor_ceil(t, &fmin, &fmax);
    if (fmax < fmin + 1)
        fmax = fmin + 1;
    if (fmax <= 0 || fmin >= rows)
        return;
    int smin = fmin < 0 ? 0 : fmin;
    int smax = fmax > rows ? rows : fmax;
    op__hf_cursor_push(cur, col, smin, smax, area);
}

static inline void emit(raster_ctx *rc, int x, int z, double ymin, double ymax)
{
    if (rc->fn) {
        rc->fn(rc->fn_ctx, x, z, ymin, ymax);
        return;
    }
    op_heightfield *hf = rc->hf;
    op__hf_cursor cur = op__hf_cursor_open(hf);
    emit_rows(&cur, hf->rows, (uint32_t)x + (uint32_t)z * (uint32_t)hf->width, rc->area,
              dp_scale(dp_set(ymin, ymax), hf->origin[1], hf->ch));
    op__hf_cursor_close(hf, &cur);
}

/* One fragment, making room for it first. */
static inline op_status emit_one(raster_ctx *rc, int x, int z, double ymin, double ymax)
{
    if (rc->hf && rc->hf->frag_count >= rc->hf->frag_cap) {
        op_status st = op__hf_reserve(rc->hf, 1, rc->err);
        if (st != OP_OK)
            return st;
    }
    emit(rc, x, z, ymin, ymax);
    return OP_OK;
}

/* Cells of a row handled in one pass (a tile grid is 42 cells wide; a wider row of a
 * plain heightfield is cut into chunks). */
#define ROW_CHUNK 64

/* A row chunk's point sets, gathered edge by edge and vertex by vertex rather than
 * cell by cell: per line j (line c0 + j) the y / z ranges of the crossings on it,
 * per cell j the x / y / z ranges of the row vertices in its closed x slab ((y, z)
 * pairs: lo = minima, hi = maxima). Empty ranges hold +inf / -inf, so merging is
 * plain min / max and a set is empty iff its y range is (every point has a finite
 * y). */
typedef struct row_sums {
    const double *xs; /* the lines c0 .. c0 + m: the table's, or xbuf */
    double xbuf[ROW_CHUNK + 1];
    double llo[ROW_CHUNK + 1][2], lhi[ROW_CHUNK + 1][2];
    double vxlo[ROW_CHUNK], vxhi[ROW_CHUNK];
    double vlo[ROW_CHUNK][2], vhi[ROW_CHUNK][2];
} row_sums;

/* The crossings of edge (a, b) with lines first..last of the chunk (all strictly
 * between a.x and b.x), added to their lines' sums. */
static inline void edge_crossings(const vtx *a, const vtx *b, int first, int last, row_sums *rs)
{
    double xa = a->p[0], xb = b->p[0], d = xb - xa;
    dpair ca = dp_load(&a->p[1]), cb = dp_load(&b->p[1]);
    for (int j = first; j <= last; j++) {
        double L = rs->xs[j];
        dpair q = lerp2(ca, cb, xb - L, L - xa, d);
        dp_store(rs->llo[j], dp_min(q, dp_load(rs->llo[j])));
        dp_store(rs->lhi[j], dp_max(q, dp_load(rs->lhi[j])));
    }
}

static inline void vertex_add(row_sums *rs, int j, const vtx *v)
{
    rs->vxlo[j] = mind(v->p[0], rs->vxlo[j]);
    rs->vxhi[j] = maxd(v->p[0], rs->vxhi[j]);
    dpair q = dp_load(&v->p[1]);
    dp_store(rs->vlo[j], dp_min(q, dp_load(rs->vlo[j])));
    dp_store(rs->vhi[j], dp_max(q, dp_load(rs->vhi[j])));
}

/* Cells c0 .. c0 + m - 1 of row z (m <= ROW_CHUNK). Cell j's points: the vertices of
 * cell j, those on line j + 1 (the next cell's left line), the crossings on lines
 * j and j + 1. */
static __attribute__((noinline)) void raster_chunk(const op_heightfield *hf, raster_ctx *rc,
                                                   const vtx *const *rp, int n, int c0, int m,
                                                   int z, double zb, double zt)
{
    row_sums rs;
    const dpair inf = dp_set1(INFINITY), ninf = dp_set1(-INFINITY);
    if (rc->xl) {
        rs.xs = rc->xl + c0;
    } else {
        for (int j = 0; j <= m; j++)
            rs.xbuf[j] = line_at(hf, rc, 0, c0 + j);
        rs.xs = rs.xbuf;
    }
    for (int j = 0; j <= m; j++) {
        dp_store(rs.llo[j], inf);
        dp_store(rs.lhi[j], ninf);
    }
    for (int j = 0; j < m; j++) {
        rs.vxlo[j] = INFINITY;
        rs.vxhi[j] = -INFINITY;
        dp_store(rs.vlo[j], inf);
        dp_store(rs.vhi[j], ninf);
    }
    /* Edges and vertices in one loop: they feed different sums (lines, cells), each
     * in the order of the two loops they replace. Selects rather than branches where
     * the geometry decides (the branches predicted badly). */
    for (int i = 0; i < n; i++) {
        const vtx *a = rp[i], *b = rp[i + 1]; /* rp[n] is rp[0] */
        /* Lines strictly between the two x: after the lower one's cell, before the
         * higher one's cell or up to it when the higher x is not on its line (the lower
         * one is a when a.x < b.x, else b). */
        int sw = -(a->p[0] < b->p[0]); /* all ones when a is the lower */
        int locell = (a->cell & sw) | (b->cell & ~sw), hicell = (b->cell & sw) | (a->cell & ~sw);
        int hion = (b->on & sw) | (a->on & ~sw);
        int first = locell + 1 - c0, last = hicell - hion - c0;
        first = first < 0 ? 0 : first;
        last = last > m ? m : last;
        if (first <= last)
            edge_crossings(a, b, first, last, &rs);
        int j = a->cell - c0;
        if (j >= 0 && j < m)
            vertex_add(&rs, j, a);
        if (a->on && j >= 1 && j <= m)
            vertex_add(&rs, j - 1, a);
    }
    for (int j = 0; j < m; j++) {
        double xl = rs.xs[j], xr = rs.xs[j + 1];
        int ln = rs.llo[j][0] <= rs.lhi[j][0], rn = rs.llo[j + 1][0] <= rs.lhi[j + 1][0];
        dpair lo = dp_min(dp_min(dp_load(rs.llo[j]), dp_load(rs.llo[j + 1])), dp_load(rs.vlo[j]));
        dpair hi = dp_max(dp_max(dp_load(rs.lhi[j]), dp_load(rs.lhi[j + 1])), dp_load(rs.vhi[j]));
        double ylo = dp_lo(lo), czlo = dp_hi(lo), yhi = dp_lo(hi), czhi = dp_hi(hi);
        /* Every point of the cell has xl <= x <= xr, and xl < xr (lines within 2^41
         * are at least cs >= 0.001 apart, more than an ulp): the x range is not
         * {xl} iff a point lies right of xl (a crossing on line j + 1 or a vertex),
         * and not {xr} iff one lies left of xr. */
        int offl = rn | (rs.vxhi[j] > xl), offr = ln | (rs.vxlo[j] < xr);
        if (ylo <= yhi && offl && offr && czhi != zb && czlo != zt)
            emit(rc, c0 + j, z, ylo, yhi); /* not empty, not on one edge line */
    }
}

/* Row z's polygon (§3.2, §3.3): nothing when it lies on one of its lines, one
 * fragment when it lies in one cell, else its cells (clipped to the grid) in
 * chunks. Cells come from the vertices' cells: CellOf is monotone.
 * On a line: the polygon's z range is the triangle's [zlo, zhi] met with [zb, zt]
 * (its points are the vertices there and the crossings, whose z is exactly the
 * line's), and zlo < zt in every row tried, so it lies on a line iff zhi == zb. */
static op_status raster_row(const op_heightfield *hf, raster_ctx *rc, const vtx *const *rp, int n,
                            int z, double zb, double zt, double zhi)
{
    if (zhi == zb)
        return OP_OK; /* the row's polygon lies on its bottom line */
    int kx0 = rp[0]->cell, kx1 = kx0;
    for (int i = 1; i < n; i++) {
        kx0 = rp[i]->cell < kx0 ? rp[i]->cell : kx0;
        kx1 = rp[i]->cell > kx1 ? rp[i]->cell : kx1;
    }
    if (kx1 < 0 || kx0 >= hf->width)
        return OP_OK;
    if (kx0 == kx1) {
        /* The row lies in one cell: P is R itself (no vertex beyond its lines, so no
         * crossing); it is on one edge line only if every x is the left line. */
        double rylo = rp[0]->p[1], ryhi = rylo;
        int allon = rp[0]->on;
        for (int i = 1; i < n; i++) {
            rylo = mind(rp[i]->p[1], rylo);
            ryhi = maxd(rp[i]->p[1], ryhi);
            allon &= rp[i]->on;
        }
        return allon ? OP_OK : emit_one(rc, kx0, z, rylo, ryhi);
    }
    kx0 = kx0 < 0 ? 0 : kx0;
    kx1 = kx1 >= hf->width ? hf->width - 1 : kx1;
    /* Room for a fragment in every cell of the row (rarely grows). */
    if (rc->hf && (size_t)rc->hf->frag_count + (size_t)(kx1 - kx0 + 1) > rc->hf->frag_cap) {
        op_status st = op__hf_reserve(rc->hf, (size_t)(kx1 - kx0 + 1), rc->err);
        if (st != OP_OK)
            return st;
    }
    for (int c0 = kx0; c0 <= kx1; c0 += ROW_CHUNK) {
        int m = kx1 - c0 + 1 < ROW_CHUNK ? kx1 - c0 + 1 : ROW_CHUNK;
        raster_chunk(hf, rc, rp, n, c0, m, z, zb, zt);
    }
    return OP_OK;
}

/* ---- the wall rule (§3.2a) ---- */

/* A triangle whose three vertices share one x (or one z) that is exactly a cell line
 * lies on that line and belongs to the cells behind it: the side its outward normal
 * (e0 x e1, as for floors) points away from. Returns the axis (0 for x, 2 for z) and
 * the grid's local index of that column (x) or row (z) in *cell, or -1 when the
 * triangle is no such wall (a degenerate one included: rule 2 gives it nothing). */
static int wall_on_line(const op_heightfield *hf, const vtx *t, double inv, int64_t *cell)
{
    /* Most triangles share neither coordinate: one branch on both tests, computed
     * without short-circuits (the loop's four mispredicted some 17k times in dungeon's
     * span stage, where floors and walls alternate). */
    const double x0 = t[0].p[0], z0 = t[0].p[2];
    if (!(((t[1].p[0] == x0) & (t[2].p[0] == x0)) | ((t[1].p[2] == z0) & (t[2].p[2] == z0))))
        return -1;
    for (int ax = 0; ax <= 2; ax += 2) {
        double c = t[0].p[ax];
        if (t[1].p[ax] != c || t[2].p[ax] != c)
            continue;
        int i = ax == 0 ? 0 : 1;
        double o = hf->line_origin[i];
        int64_t k = op__cell_of(c, o, hf->cs, inv);
        if (c != o + (double)k * hf->cs)
            return -1; /* inside a column (row): the plain rule applies */
        /* The normal's component along ax: n.x = orient(y, z), n.z = orient(x, y). */
        int u = ax == 0 ? 1 : 0, w = ax == 0 ? 2 : 1;
        int side = op__orient2d(t[0].p[u], t[0].p[w], t[1].p[u], t[1].p[w], t[2].p[u], t[2].p[w]);
        if (side == 0)
            return -1;
        *cell = (side > 0 ? k - 1 : k) - hf->cell0[i];
        return ax;
    }
    return -1;
}

/* y of the crossing of edge (a, b) with the line p[ax] = L: lerp2, the one crossing of
 * §3.2, on the (x, y) pair (y is the second lane whatever ax is). */
static double wall_crossing_y(const vtx *a, const vtx *b, int ax, double L)
{
    double va = a->p[ax], vb = b->p[ax];
    return dp_hi(lerp2(dp_load(a->p), dp_load(b->p), vb - L, L - va, vb - va));
}

/* The y range and the range along ax of the triangle clipped to the closed slab
 * lo <= p[ax] <= hi: its vertices inside and the strict crossings of its edges with
 * the slab's lines (these lie on the lines). Returns 0 when the clip is empty. */
static int wall_slab(const vtx *t, int ax, double lo, double hi, double r[4])
{
    r[0] = r[2] = INFINITY;
    r[1] = r[3] = -INFINITY;
    for (int i = 0; i < 3; i++) {
        const vtx *a = &t[i], *b = &t[i == 2 ? 0 : i + 1];
        double va = a->p[ax], vb = b->p[ax], emin = mind(va, vb), emax = maxd(va, vb);
        double pts[3][2];
        int m = 0;
        if (va >= lo && va <= hi) {
            pts[m][0] = va;
            pts[m++][1] = a->p[1];
        }
        if (emin < lo && lo < emax) {
            pts[m][0] = lo;
            pts[m][1] = wall_crossing_y(a, b, ax, lo);
            m++;
        }
        if (emin < hi && hi < emax) {
            pts[m][0] = hi;
            pts[m][1] = wall_crossing_y(a, b, ax, hi);
            m++;
        }
        for (int k = 0; k < m; k++) {
            r[0] = mind(r[0], pts[k][1]);
            r[1] = maxd(r[1], pts[k][1]);
            r[2] = mind(r[2], pts[k][0]);
            r[3] = maxd(r[3], pts[k][0]);
        }
    }
    return r[0] <= r[1];
}

/* A wall on the line p[ax] = L: its cells are those of the one column (ax = 0) or row
 * (ax = 2) behind it, found along the other axis: the triangle clipped to each cell's
 * slab there, unless empty or on one of the slab's lines (§3.2a). Row-major order. */
static op_status raster_wall(const op_heightfield *hf, raster_ctx *rc, const vtx *tri, int ax,
                             int64_t cell)
{
    int along = ax == 0 ? 2 : 0, i = ax == 0 ? 1 : 0;
    int64_t limit = ax == 0 ? hf->width : hf->depth, count = ax == 0 ? hf->depth : hf->width;
    if (cell < 0 || cell >= limit)
        return OP_OK;
    const double cs = hf->cs, o = hf->line_origin[i];
    const int64_t g0 = hf->cell0[i];
    double lo = mind(mind(tri[0].p[along], tri[1].p[along]), tri[2].p[along]);
    double hi = maxd(maxd(tri[0].p[along], tri[1].p[along]), tri[2].p[along]);
    int64_t k0 = op__cell_of(lo, o, cs, rc->inv_cs) - g0;
    int64_t k1 = op__cell_of(hi, o, cs, rc->inv_cs) - g0;
    k0 = k0 < 0 ? 0 : k0;
    k1 = k1 >= count ? count - 1 : k1;
    for (int64_t k = k0; k <= k1; k++) {
        double a = o + (double)(g0 + k) * cs, b = o + (double)(g0 + k + 1) * cs, r[4];
        if (!wall_slab(tri, along, a, b, r) || r[3] == a || r[2] == b)
            continue; /* empty, or on one of the slab's lines as well: no area */
        op_status st = ax == 0 ? emit_one(rc, (int)cell, (int)k, r[0], r[1])
                               : emit_one(rc, (int)k, (int)cell, r[0], r[1]);
        if (st != OP_OK)
            return st;
    }
    return OP_OK;
}

/* ---- the rows of one triangle in one pass (§3.2, §3.3) ----
 *
 * With its vertices named by z, A <= B <= C (every order of three is a rotation or
 * a reversal of (v0, v1, v2), which gives R the same edges; a crossing is the same
 * for (a, b) and (b, a)), the row polygon R of the row [zb, zt] is the cycle
 * BL, [B], TL, TR, BR: BL and BR are R's points on zb, TL and TR those on zt, B is
 * there iff zb <= B.z <= zt. A line L strictly between A.z and C.z meets the left
 * chain A-B-C in Lp(L) (the crossing with AB or BC, or B when B.z = L) and CA in
 * Rp(L); on a line at or below A.z both points are A, at or above C.z both are C. So
 * R's edges are the bottom cap (BR, BL), the left pieces (BL, B), (B, TL) (or
 * (BL, TL)), the top cap (TL, TR) and the right piece (TR, BR): exactly the spec's
 * sequence of points, duplicates aside (a zero-length edge crosses no line, a point
 * counted twice changes no minimum). A line's points and their cells are computed
 * once for the rows on both of its sides.
 *
 * Per cell j of a row (cells kx0 .. kx1, R's cells) the point set P is never empty
 * and always has a point left of xr, and it has one right of xl unless j = kx1 and
 * every vertex of R in kx1 lies on its left line: R reaches both sides of every line
 * between kx0 and kx1 + 1, so it crosses the line strictly or has a vertex on it.
 * Only the z tests remain per cell. */

/* Triangles at most this many cells wide (clipped to the grid) take this path. */
#define TRI_CELLS 62

/* A row's points summed per cell of the triangle's clipped range tx0 .. tx0 + t - 1,
 * slot j + 1 for local cell j; slots 0 and t + 1 take what lies beyond (so no
 * branch): lo = (min y, min z), hi = (max y, max z), +inf / -inf when empty. */
typedef struct cell_sums {
    dpair lo[TRI_CELLS + 2], hi[TRI_CELLS + 2];
} cell_sums;

/* A point of R with its slots (vtx's s0, s1). */
typedef vtx rvtx;

/* R's points on one line. Its crossings' slots are set only when a row of four or
 * more cells (the one path that reads slots) first takes the line: most lines serve
 * only rows of one to three cells, which read cells (terrain:256 has 5 M crossings,
 * few of them in such rows). */
typedef struct cap {
    const rvtx *l, *r;
    rvtx q[2];
    /* 0; 1 when q's slots are set; 2 when xq also holds the cap's crossings with the
     * x lines, by slot (sums_cap): a line's cap serves the rows on both of its sides,
     * and when both are rows of four or more cells the second reads them instead of
     * computing them again (the same lerp2 on the same ends and line, so the same
     * bits). One field for both, so that cap_at resets both in one store. */
    int slotted;
    dpair xq[TRI_CELLS + 1];
} cap;

typedef struct tri_rows {
    const op_heightfield *hf;
    raster_ctx *rc;
    rvtx *a, *b, *c;  /* the vertices by z (their slots set by raster_rows) */
    const double *xs; /* the x lines from tx0: xs[j] is line tx0 + j */
    int tx0, tx1, t;  /* the clipped cell range, t = tx1 - tx0 + 1 */
    int clipped;      /* whether the grid clips the triangle's cell range */
    /* z_point's operands, read for every crossing (270k in dungeon's span stage): here
     * one load each, not two through hf and rc, and the cell origin converted once. */
    const double *xl;         /* rc->xl */
    double ox, inv_cs, cell0; /* line_origin[0], 1 / cs, (double)cell0[0] */
    int wlim;                 /* width + 2 */
} tri_rows;

static inline int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}
static inline int min2i(int a, int b)
{
    return a < b ? a : b;
}
static inline int max2i(int a, int b)
{
    return a > b ? a : b;
}

static inline void set_slots(int tx0, int t, int clipped, rvtx *p)
{
    int k = p->cell - tx0 + 1;
    if (clipped) {
        p->s0 = clampi(k, 0, t + 1);
        p->s1 = clampi(k - p->on, 0, t + 1);
    } else { /* every cell is in tx0 .. tx1 (CellOf is monotone) */
        p->s0 = k;
        p->s1 = k - p->on;
    }
}

static inline void sums_add(cell_sums *s, int k, dpair q)
{
    s->lo[k] = dp_min(s->lo[k], q);
    s->hi[k] = dp_max(s->hi[k], q);
}

/* Two or more points at once: lo, hi their minima and maxima. */
static inline void sums_add2(cell_sums *s, int k, dpair lo, dpair hi)
{
    s->lo[k] = dp_min(s->lo[k], lo);
    s->hi[k] = dp_max(s->hi[k], hi);
}

/* A vertex's point in its slots: the second only when it differs (a point on a line,
 * rare, so the branch predicts well). Each sums_add is a load, min / max and store on
 * its slot, so a slot's updates form one chain through memory; adding a point to the
 * same slot twice lengthened that chain by a store-to-load round trip, on the critical
 * path of the row. */
static inline void sums_vertex(cell_sums *s, const rvtx *p)
{
    dpair q = dp_load(&p->p[1]);
    sums_add(s, p->s0, q);
    if (p->s1 != p->s0)
        sums_add(s, p->s1, q);
}

/* The crossings of R's edge (a, b) with the x lines strictly between a.x and b.x
 * (as raster_chunk's edge_crossings): lines after the lower end's cell up to the
 * higher end's cell, or the line before it when the higher end lies on its left
 * line. Local line j is the left line of slot j + 1: its crossing serves slots j and
 * j + 1. */
static inline void sums_edge(const tri_rows *tr, cell_sums *s, const rvtx *a, const rvtx *b)
{
    double xa = a->p[0], xb = b->p[0];
    /* Masks rather than a branch: the order follows the geometry, badly predicted. */
    int sw = -(xa < xb); /* all ones when a is the lower */
    int first = (a->s0 & sw) | (b->s0 & ~sw), last = ((b->s1 & sw) | (a->s1 & ~sw)) - 1;
    if (first > last)
        return;
    double d = xb - xa;
    dpair ca = dp_load(&a->p[1]), cb = dp_load(&b->p[1]);
    for (int j = first; j <= last; j++) {
        double L = tr->xs[j];
        dpair q = lerp2(ca, cb, xb - L, L - xa, d);
        sums_add(s, j, q);
        sums_add(s, j + 1, q);
    }
}

/* q = the crossing of the triangle's edge (a, b) with the line z = L and its cell
 * (its slots: cap_slots). */
static inline void z_point(const tri_rows *tr, const rvtx *a, const rvtx *b, double L, rvtx *q)
{
    double va = a->p[2], vb = b->p[2];
    vtx_put_zc(
        q,
        lerp2(dp_load2(&a->p[0], &a->p[1]), dp_load2(&b->p[0], &b->p[1]), vb - L, L - va, vb - va),
        L);
    /* The clamp keeps x between the ends' x, so its cell is between theirs (CellOf is
     * monotone). When they are at most three cells apart in the grid's unclamped range,
     * the cell is lo plus the number of lines lo + 1 .. lo + 3 at or left of x: x lies
     * in [xl[lo], xl[hi + 1]) and the lines strictly increase, so exactly the lines up
     * to its own cell's left line count, and a line beyond hi lies right of x. Counted
     * without a branch (the old test hi - lo <= 1, and its select, mispredicted 50k
     * times in dungeon's span stage); lo + 3 <= width + 4 stays inside the table's
     * LINE_PAD. */
    int lo = min2i(a->cell, b->cell), hi = max2i(a->cell, b->cell);
    const double x = q->p[0], *xl = tr->xl;
    if (lo > -2 && hi < tr->wlim) {
        int c;
        if (hi - lo <= 3) {
            c = lo + (x >= xl[lo + 1]) + (x >= xl[lo + 2]) + (x >= xl[lo + 3]);
        } else {
            /* CellOf's estimate kept within [lo, hi], checked against the lines and
             * corrected by one cell (as set_cell); the search if still off. The
             * estimate is converted first and clamped in integers: x lies between
             * the ends' x, inside the table's lines, so it fits an int, and truncating
             * then clamping to integers gives what clamping then truncating gave. */
            c = (int)((x - tr->ox) * tr->inv_cs - tr->cell0);
            c = clampi(c, lo, hi);
            c -= xl[c] > x;
            c += xl[c + 1] <= x;
            if (!(xl[c] <= x && x < xl[c + 1])) {
                set_cell(tr->hf, tr->rc, q);
                return;
            }
        }
        q->cell = c;
        q->on = x == xl[c];
    } else {
        set_cell(tr->hf, tr->rc, q);
    }
}

/* R's points on the line z = L. */
static inline void cap_at(const tri_rows *tr, double L, cap *k)
{
    const rvtx *a = tr->a, *b = tr->b, *c = tr->c;
    k->slotted = 0;
    if (!(a->p[2] < L)) {
        k->l = k->r = a;
    } else if (!(L < c->p[2])) {
        k->l = k->r = c;
    } else {
        z_point(tr, c, a, L, &k->q[1]);
        k->r = &k->q[1];
        double zb = b->p[2];
        if (L == zb) {
            k->l = b;
        } else {
            int below = L < zb; /* on AB, else on BC */
            z_point(tr, below ? a : b, below ? b : c, L, &k->q[0]);
            k->l = &k->q[0];
        }
    }
}

/* The slots of a cap's crossings, once a line (a cap's vertex has its own, set with
 * the first row that reads slots). */
static inline void cap_slots(const tri_rows *tr, cap *k)
{
    if (k->slotted)
        return;
    k->slotted = 1;
    if (k->l == &k->q[0])
        set_slots(tr->tx0, tr->t, tr->clipped, &k->q[0]);
    if (k->r == &k->q[1])
        set_slots(tr->tx0, tr->t, tr->clipped, &k->q[1]);
}

/* A cap's points in a row's sums: its ends and its edge's crossings. */
static inline void sums_cap(const tri_rows *tr, cell_sums *s, cap *k)
{
    const rvtx *a = k->l, *b = k->r;
    double xa = a->p[0], xb = b->p[0];
    int sw = -(xa < xb); /* as sums_edge */
    int first = (a->s0 & sw) | (b->s0 & ~sw), last = ((b->s1 & sw) | (a->s1 & ~sw)) - 1;
    if (first > last) { /* no crossing (a one-point cap included) */
        sums_vertex(s, a);
        if (b != a)
            sums_vertex(s, b);
        return;
    }
    /* The lower end's own slot is first, the crossings' first slot, and the higher
     * end's slot s1 is last + 1, their last: each end goes in with the crossing beside
     * it, one update of the slot for both points. (Each update waits for the slot's
     * previous store, so fewer updates are a shorter chain.) */
    const rvtx *lv = sw ? a : b, *hv = sw ? b : a;
    dpair pl = dp_load(&lv->p[1]), pu = dp_load(&hv->p[1]);
    if (lv->s1 != lv->s0)
        sums_add(s, lv->s1, pl);
    if (hv->s0 != hv->s1)
        sums_add(s, hv->s0, pu);
    dpair plo = pl, phi = pl; /* what slot j has besides its right line's crossing */
    if (k->slotted == 2) {
        for (int j = first; j <= last; j++) {
            dpair q = k->xq[j];
            sums_add2(s, j, dp_min(plo, q), dp_max(phi, q));
            plo = phi = q;
        }
    } else {
        double d = xb - xa;
        dpair ca = dp_load(&a->p[1]), cb = dp_load(&b->p[1]);
        for (int j = first; j <= last; j++) {
            double L = tr->xs[j];
            dpair q = lerp2(ca, cb, xb - L, L - xa, d);
            k->xq[j] = q;
            sums_add2(s, j, dp_min(plo, q), dp_max(phi, q));
            plo = phi = q;
        }
        k->slotted = 2;
    }
    sums_add2(s, last + 1, dp_min(plo, pu), dp_max(phi, pu));
}

/* A row of two cells kx0, kx1 = kx0 + 1 inside the triangle's clipped range keeps
 * both cells' sums in registers (lo0, hi0 for kx0; lo1, hi1 for kx1) instead of the
 * slots: in memory each slot update waits for the slot's previous store, and here
 * every point of the row would go to one of two slots. The points are taken by
 * branches: with masks (+inf / -inf for a point not in a cell, every edge's
 * division done) terrain:256's spans took 3 % more than before instead of 6 % less. */
typedef struct two_sums {
    dpair lo0, hi0, lo1, hi1;
} two_sums;

/* A vertex of R in the two cells: in kx1 iff its cell is kx1, in kx0 iff its cell is
 * kx0 or it lies on the line between them. */
static inline void two_vertex(two_sums *w, const rvtx *v, int kx1)
{
    const dpair q = dp_load(&v->p[1]);
    int in1 = v->cell == kx1, in0 = (in1 ^ 1) | v->on;
    if (in0) {
        w->lo0 = dp_min(w->lo0, q);
        w->hi0 = dp_max(w->hi0, q);
    }
    if (in1) {
        w->lo1 = dp_min(w->lo1, q);
        w->hi1 = dp_max(w->hi1, q);
    }
}

/* The crossing of R's edge (a, b) with the line X between the two cells, if strict
 * (as sums_edge: the same lerp2 on the same ends and line), into *clo, *chi. */
static inline void two_edge(const rvtx *a, const rvtx *b, double X, dpair *clo, dpair *chi)
{
    double xa = a->p[0], xb = b->p[0];
    if ((int)(mind(xa, xb) < X) & (int)(X < maxd(xa, xb))) {
        dpair q = lerp2(dp_load(&a->p[1]), dp_load(&b->p[1]), xb - X, X - xa, xb - xa);
        *clo = dp_min(*clo, q);
        *chi = dp_max(*chi, q);
    }
}

/* A row of three cells kx0, kx0 + 1, kx0 + 2 inside the triangle's clipped range, as
 * the two-cell row: the three cells' sums in registers, the lines X1 = line kx0 + 1 and
 * X2 = line kx0 + 2 between them. A point's cell is its own, and also the cell before
 * when it lies on its cell's left line (only X1 and X2 can be such lines here: no point
 * of R lies left of line kx0). */
typedef struct three_sums {
    dpair lo0, hi0, lo1, hi1, lo2, hi2;
} three_sums;

static inline void three_vertex(three_sums *w, const rvtx *v, int kx0)
{
    const dpair q = dp_load(&v->p[1]);
    const int d = v->cell - kx0;
    if (d == 0 || (d == 1 && v->on)) {
        w->lo0 = dp_min(w->lo0, q);
        w->hi0 = dp_max(w->hi0, q);
    }
    if (d == 1 || (d == 2 && v->on)) {
        w->lo1 = dp_min(w->lo1, q);
        w->hi1 = dp_max(w->hi1, q);
    }
    if (d == 2) {
        w->lo2 = dp_min(w->lo2, q);
        w->hi2 = dp_max(w->hi2, q);
    }
}

/* Edge (a, b)'s strict crossings with X1 and X2 (the same lerp2 on the same ends and
 * lines as sums_edge), into the lines' ranges (l1lo, l1hi), (l2lo, l2hi). */
static inline void three_edge(const rvtx *a, const rvtx *b, double X1, double X2, dpair *l1lo,
                              dpair *l1hi, dpair *l2lo, dpair *l2hi)
{
    const double xa = a->p[0], xb = b->p[0], mn = mind(xa, xb), mx = maxd(xa, xb);
    if ((mn < X1) & (X1 < mx)) {
        dpair q = lerp2(dp_load(&a->p[1]), dp_load(&b->p[1]), xb - X1, X1 - xa, xb - xa);
        *l1lo = dp_min(*l1lo, q);
        *l1hi = dp_max(*l1hi, q);
    }
    if ((mn < X2) & (X2 < mx)) {
        dpair q = lerp2(dp_load(&a->p[1]), dp_load(&b->p[1]), xb - X2, X2 - xa, xb - xa);
        *l2lo = dp_min(*l2lo, q);
        *l2hi = dp_max(*l2hi, q);
    }
}

/* Rows kz0 .. kz1 of a triangle whose vertices have their cells (their slots are set
 * here, with the first row that reads them). */
static op_status raster_rows(const tri_rows *tr, int64_t kz0, int64_t kz1, double zhi)
{
    const op_heightfield *hf = tr->hf;
    raster_ctx *rc = tr->rc;
    const rvtx *B = tr->b;
    const double zbv = B->p[2];
    const int w = hf->width;
    const dpair inf = dp_set1(INFINITY), ninf = dp_set1(-INFINITY);
    cap caps[3];
    cap *cb = &caps[0], *ct = &caps[1], *cn = &caps[2];
    cell_sums s;
    /* The slots are emptied when the first row of four or more cells comes (most
     * triangles have none: terrain:256 spent 1 % of its span stage emptying slots never
     * used); a row takes its cells' sums and leaves its slots empty again (below),
     * rather than emptying its range before it starts. */
    int slots_empty = 0;
    /* dup_bl: in a row without B, bm is bl. The two- and three-cell rows add R's points
     * to their cells' minima and maxima, where bl added again after the others changes
     * nothing but which of two zeros of opposite sign is kept (min and max keep the
     * later one on a tie): op_triangle_fragments' y keep their bits that way, and for
     * the heightfield's rows no zero has a sign (§3.4's floor and ceil of
     * (y - y0) / ch), so there the second bl is left out (most rows have no B). Left
     * out the same way, a cap's repeated point (one-point caps at A and C) cost
     * dungeon and stairs:256 more than it saved them. */
    const int dup_bl = rc->fn != NULL;
    /* A line's points are found a row ahead: their divisions then run while this row's
     * branches resolve, and a mispredicted one does not discard them (they are older). */
    cap_at(tr, rc->zl[kz0], cb);
    cap_at(tr, rc->zl[kz0 + 1], ct);
    for (int64_t z = kz0; z <= kz1; z++) {
        double zb = rc->zl[z], zt = rc->zl[z + 1];
        if (zhi == zb)
            break; /* the row's polygon lies on its bottom line (the last row) */
        /* The next row's top line, also after the last row (its cap is then never
         * read; z + 2 <= depth + 1 is inside the table's LINE_PAD, and for a triangle
         * the grid does not clip the line lies above C, whose cap has no crossing):
         * a test z < kz1 mispredicted at the last row of many triangles. */
        cap_at(tr, rc->zl[z + 2], cn);
        const rvtx *bl = cb->l, *br = cb->r, *tl = ct->l, *trp = ct->r;
        int inb = (zbv >= zb) & (zbv <= zt);
        const rvtx *bm = inb ? B : bl;
        int kx0 = min2i(min2i(min2i(bl->cell, br->cell), min2i(tl->cell, trp->cell)), bm->cell);
        int kx1 = max2i(max2i(max2i(bl->cell, br->cell), max2i(tl->cell, trp->cell)), bm->cell);
        if (kx1 >= 0 && kx0 < w) {
            if (kx0 == kx1) {
                /* One cell: P is R itself, on one edge line only if every x is the
                 * left line (see raster_row). */
                double ylo =
                    mind(mind(mind(bl->p[1], br->p[1]), mind(tl->p[1], trp->p[1])), bm->p[1]);
                double yhi =
                    maxd(maxd(maxd(bl->p[1], br->p[1]), maxd(tl->p[1], trp->p[1])), bm->p[1]);
                if (!(bl->on & br->on & tl->on & trp->on & bm->on)) {
                    op_status st = emit_one(rc, kx0, (int)z, ylo, yhi);
                    if (st != OP_OK)
                        return st;
                }
            } else if (kx1 == kx0 + 1 && kx0 >= tr->tx0 && kx1 <= tr->tx1) {
                /* Two cells, both in the triangle's range: the sums in registers. */
                const double X = rc->xl[kx1];
                two_sums ws = {inf, ninf, inf, ninf};
                two_vertex(&ws, bl, kx1);
                two_vertex(&ws, br, kx1);
                two_vertex(&ws, tl, kx1);
                two_vertex(&ws, trp, kx1);
                if (inb | dup_bl) /* bm is bl without B: see dup_bl */
                    two_vertex(&ws, bm, kx1);
                dpair clo = inf, chi = ninf;
                two_edge(cb->l, cb->r, X, &clo, &chi);
                two_edge(ct->l, ct->r, X, &clo, &chi);
                if (inb) {
                    two_edge(bl, B, X, &clo, &chi);
                    two_edge(B, tl, X, &clo, &chi);
                } else {
                    two_edge(bl, tl, X, &clo, &chi);
                }
                two_edge(trp, br, X, &clo, &chi);
                dpair lo0 = dp_min(ws.lo0, clo), hi0 = dp_max(ws.hi0, chi);
                dpair lo1 = dp_min(ws.lo1, clo), hi1 = dp_max(ws.hi1, chi);
                /* Cell kx1 has a point right of X iff R's greatest x is beyond it. */
                double mx =
                    maxd(maxd(maxd(bl->p[0], br->p[0]), maxd(tl->p[0], trp->p[0])), bm->p[0]);
                int e0 = dp_hi(hi0) > zb && dp_hi(lo0) < zt;
                int e1 = mx > X && dp_hi(hi1) > zb && dp_hi(lo1) < zt;
                if (rc->fn) {
                    if (e0)
                        rc->fn(rc->fn_ctx, kx0, (int)z, dp_lo(lo0), dp_lo(hi0));
                    if (e1)
                        rc->fn(rc->fn_ctx, kx1, (int)z, dp_lo(lo1), dp_lo(hi1));
                } else {
                    op_heightfield *h = rc->hf;
                    if ((size_t)h->frag_count + 2u > h->frag_cap) {
                        op_status st = op__hf_reserve(h, 2u, rc->err);
                        if (st != OP_OK)
                            return st;
                    }
                    const double oy = h->origin[1], ch = h->ch;
                    dpair t0 = dp_scale(dp_set(dp_lo(lo0), dp_lo(hi0)), oy, ch);
                    dpair t1 = dp_scale(dp_set(dp_lo(lo1), dp_lo(hi1)), oy, ch);
                    const uint32_t col = (uint32_t)z * (uint32_t)w + (uint32_t)kx0;
                    op__hf_cursor c = op__hf_cursor_open(h);
                    if (e0)
                        emit_rows(&c, h->rows, col, rc->area, t0);
                    if (e1)
                        emit_rows(&c, h->rows, col + 1u, rc->area, t1);
                    op__hf_cursor_close(h, &c);
                }
            } else if (kx1 == kx0 + 2 && kx0 >= tr->tx0 && kx1 <= tr->tx1) {
                /* Three cells, all in the triangle's range: the sums in registers. */
                const double X1 = rc->xl[kx0 + 1], X2 = rc->xl[kx1];
                three_sums ws = {inf, ninf, inf, ninf, inf, ninf};
                three_vertex(&ws, bl, kx0);
                three_vertex(&ws, br, kx0);
                three_vertex(&ws, tl, kx0);
                three_vertex(&ws, trp, kx0);
                if (inb | dup_bl) /* as the two-cell row */
                    three_vertex(&ws, bm, kx0);
                dpair l1lo = inf, l1hi = ninf, l2lo = inf, l2hi = ninf;
                three_edge(cb->l, cb->r, X1, X2, &l1lo, &l1hi, &l2lo, &l2hi);
                three_edge(ct->l, ct->r, X1, X2, &l1lo, &l1hi, &l2lo, &l2hi);
                if (inb) {
                    three_edge(bl, B, X1, X2, &l1lo, &l1hi, &l2lo, &l2hi);
                    three_edge(B, tl, X1, X2, &l1lo, &l1hi, &l2lo, &l2hi);
                } else {
                    three_edge(bl, tl, X1, X2, &l1lo, &l1hi, &l2lo, &l2hi);
                }
                three_edge(trp, br, X1, X2, &l1lo, &l1hi, &l2lo, &l2hi);
                /* Cell j's points: its vertices and the crossings on its two lines. */
                dpair lo0 = dp_min(ws.lo0, l1lo), hi0 = dp_max(ws.hi0, l1hi);
                dpair lo1 = dp_min(dp_min(ws.lo1, l1lo), l2lo);
                dpair hi1 = dp_max(dp_max(ws.hi1, l1hi), l2hi);
                dpair lo2 = dp_min(ws.lo2, l2lo), hi2 = dp_max(ws.hi2, l2hi);
                /* Cell kx1 has a point right of X2 iff R's greatest x is beyond it. */
                double mx =
                    maxd(maxd(maxd(bl->p[0], br->p[0]), maxd(tl->p[0], trp->p[0])), bm->p[0]);
                int e0 = dp_hi(hi0) > zb && dp_hi(lo0) < zt;
                int e1 = dp_hi(hi1) > zb && dp_hi(lo1) < zt;
                int e2 = mx > X2 && dp_hi(hi2) > zb && dp_hi(lo2) < zt;
                if (rc->fn) {
                    if (e0)
                        rc->fn(rc->fn_ctx, kx0, (int)z, dp_lo(lo0), dp_lo(hi0));
                    if (e1)
                        rc->fn(rc->fn_ctx, kx0 + 1, (int)z, dp_lo(lo1), dp_lo(hi1));
                    if (e2)
                        rc->fn(rc->fn_ctx, kx1, (int)z, dp_lo(lo2), dp_lo(hi2));
                } else {
                    op_heightfield *h = rc->hf;
                    if ((size_t)h->frag_count + 3u > h->frag_cap) {
                        op_status st = op__hf_reserve(h, 3u, rc->err);
                        if (st != OP_OK)
                            return st;
                    }
                    const double oy = h->origin[1], ch = h->ch;
                    dpair t0 = dp_scale(dp_set(dp_lo(lo0), dp_lo(hi0)), oy, ch);
                    dpair t1 = dp_scale(dp_set(dp_lo(lo1), dp_lo(hi1)), oy, ch);
                    dpair t2 = dp_scale(dp_set(dp_lo(lo2), dp_lo(hi2)), oy, ch);
                    const uint32_t col = (uint32_t)z * (uint32_t)w + (uint32_t)kx0;
                    op__hf_cursor c = op__hf_cursor_open(h);
                    if (e0)
                        emit_rows(&c, h->rows, col, rc->area, t0);
                    if (e1)
                        emit_rows(&c, h->rows, col + 1u, rc->area, t1);
                    if (e2)
                        emit_rows(&c, h->rows, col + 2u, rc->area, t2);
                    op__hf_cursor_close(h, &c);
                }
            } else {
                int x0 = kx0 < tr->tx0 ? tr->tx0 : kx0, x1 = kx1 > tr->tx1 ? tr->tx1 : kx1;
                if (rc->hf &&
                    (size_t)rc->hf->frag_count + (size_t)(x1 - x0 + 1) > rc->hf->frag_cap) {
                    op_status st = op__hf_reserve(rc->hf, (size_t)(x1 - x0 + 1), rc->err);
                    if (st != OP_OK)
                        return st;
                }
                int k0 = x0 - tr->tx0 + 1, k1 = x1 - tr->tx0 + 1;
                if (!slots_empty) {
                    for (int k = 0; k <= tr->t + 1; k++) {
                        s.lo[k] = inf;
                        s.hi[k] = ninf;
                    }
                    slots_empty = 1;
                    /* The vertices' slots, at the first row that reads them: most
                     * triangles have no row of four or more cells (terrain:256 spent
                     * 2 % of its span stage setting slots for 5.8M vertices, 0.7M of
                     * them in a triangle with such a row). */
                    set_slots(tr->tx0, tr->t, tr->clipped, tr->a);
                    set_slots(tr->tx0, tr->t, tr->clipped, tr->b);
                    set_slots(tr->tx0, tr->t, tr->clipped, tr->c);
                }
                cap_slots(tr, cb);
                cap_slots(tr, ct);
                sums_cap(tr, &s, cb);
                sums_cap(tr, &s, ct);
                if (inb) {
                    sums_vertex(&s, B);
                    sums_edge(tr, &s, bl, B);
                    sums_edge(tr, &s, B, tl);
                } else {
                    sums_edge(tr, &s, bl, tl);
                }
                sums_edge(tr, &s, trp, br);
                /* The row's points are in slots k0 - 1 .. kend: the cells' slots are
                 * emptied as they are read, the others after. */
                const int kend = k1 + 1;
                /* Cell kx1 has a point right of its left line iff a vertex of R in
                 * it is not on that line, iff R's greatest x is beyond the line. */
                if (x1 == kx1) {
                    double mx =
                        maxd(maxd(maxd(bl->p[0], br->p[0]), maxd(tl->p[0], trp->p[0])), bm->p[0]);
                    if (!(mx > rc->xl[kx1]))
                        k1--;
                }
                /* Every point has zb <= z <= zt: the cell's set is not on one of the
                 * row's lines iff some z > zb and some z < zt (an empty set has none). */
                if (rc->fn) {
                    for (int k = k0; k <= k1; k++) {
                        dpair lo = s.lo[k], hi = s.hi[k];
                        s.lo[k] = inf;
                        s.hi[k] = ninf;
                        if (dp_hi(hi) > zb && dp_hi(lo) < zt)
                            rc->fn(rc->fn_ctx, k - 1 + tr->tx0, (int)z, dp_lo(lo), dp_lo(hi));
                    }
                } else {
                    op_heightfield *h = rc->hf;
                    const double oy = h->origin[1], ch = h->ch;
                    const int rows = h->rows, area = rc->area;
                    const uint32_t base = (uint32_t)z * (uint32_t)w + (uint32_t)tr->tx0 - 1u;
                    /* Each cell's division is issued before the previous cell's push:
                     * a mispredicted fold test in the push then no longer discards
                     * (and waits again for) the next division. Slot k1 + 1 exists
                     * (its quotient is not used). */
                    dpair tn = dp_scale(dp_set(dp_lo(s.lo[k0]), dp_lo(s.hi[k0])), oy, ch);
                    op__hf_cursor c = op__hf_cursor_open(h);
                    for (int k = k0; k <= k1; k++) {
                        dpair t = tn, lo = s.lo[k], hi = s.hi[k];
                        s.lo[k] = inf;
                        s.hi[k] = ninf;
                        tn = dp_scale(dp_set(dp_lo(s.lo[k + 1]), dp_lo(s.hi[k + 1])), oy, ch);
                        if (dp_hi(hi) > zb && dp_hi(lo) < zt)
                            emit_rows(&c, rows, base + (uint32_t)k, area, t);
                    }
                    op__hf_cursor_close(h, &c);
                }
                s.lo[k0 - 1] = s.lo[kend - 1] = s.lo[kend] = inf;
                s.hi[k0 - 1] = s.hi[kend - 1] = s.hi[kend] = ninf;
            }
        }
        cap *t = cb; /* the top line is the next row's bottom line */
        cb = ct;
        ct = cn;
        cn = t;
    }
    return OP_OK;
}

/* ---- a triangle in one column (a third of dungeon's rasterizations, half of stairs') ----
 *
 * Every point of R is in the column's cell kx (a crossing's x lies between its edge's
 * ends' x, CellOf is monotone), so each row is raster_rows' one-cell row: its fragment
 * is the y range of R's points unless they all lie on the column's left line xl. A
 * line's points are what cap_at gives (the same crossings), kept as their y range and
 * whether both lie on xl; their cells are kx, found without z_point's search. */
typedef struct col_line {
    double ylo, yhi;
    int on;
} col_line;

/* The crossing of edge (a, b) with the line z = L (z_point's lerp2): its y, and 1 when
 * its x is xl. */
static inline double col_cross(const rvtx *a, const rvtx *b, double L, double xl, int *on)
{
    double va = a->p[2], vb = b->p[2];
    dpair q =
        lerp2(dp_load2(&a->p[0], &a->p[1]), dp_load2(&b->p[0], &b->p[1]), vb - L, L - va, vb - va);
    *on = dp_lo(q) == xl;
    return dp_hi(q);
}

/* R's points on the line z = L (cap_at's), vertices a, b, c by z. */
static inline void col_at(const rvtx *a, const rvtx *b, const rvtx *c, double L, double xl,
                          col_line *k)
{
    if (!(a->p[2] < L)) {
        k->ylo = k->yhi = a->p[1];
        k->on = a->on;
    } else if (!(L < c->p[2])) {
        k->ylo = k->yhi = c->p[1];
        k->on = c->on;
    } else {
        int onr, onl;
        double yr = col_cross(c, a, L, xl, &onr), yl;
        double zb = b->p[2];
        if (L == zb) {
            yl = b->p[1];
            onl = b->on;
        } else {
            int below = L < zb; /* on AB, else on BC */
            yl = col_cross(below ? a : b, below ? b : c, L, xl, &onl);
        }
        k->ylo = mind(yl, yr);
        k->yhi = maxd(yl, yr);
        k->on = onl & onr;
    }
}

/* Rows kz0 .. kz1 of a triangle whose vertices a, b, c (by z) lie in column kx of the
 * grid (lines from the tables). */
static op_status raster_column(raster_ctx *rc, const rvtx *a, const rvtx *b, const rvtx *c, int kx,
                               int64_t kz0, int64_t kz1, double zhi)
{
    const double xl = rc->xl[kx], zbv = b->p[2];
    col_line lb, lt, ln = {0.0, 0.0, 0}; /* set before it is read (gcc cannot tell) */
    /* A line's points a row ahead, as in raster_rows. */
    col_at(a, b, c, rc->zl[kz0], xl, &lb);
    col_at(a, b, c, rc->zl[kz0 + 1], xl, &lt);
    for (int64_t z = kz0; z <= kz1; z++) {
        double zb = rc->zl[z], zt = rc->zl[z + 1];
        if (zhi == zb)
            break; /* the row's polygon lies on its bottom line (the last row) */
        if (z < kz1)
            col_at(a, b, c, rc->zl[z + 2], xl, &ln); /* the next row's top line */
        double ylo = mind(lb.ylo, lt.ylo), yhi = maxd(lb.yhi, lt.yhi);
        int on = lb.on & lt.on;
        if ((zbv >= zb) & (zbv <= zt)) { /* B is a vertex of R */
            ylo = mind(ylo, b->p[1]);
            yhi = maxd(yhi, b->p[1]);
            on &= b->on;
        }
        if (!on) {
            op_status st = emit_one(rc, kx, (int)z, ylo, yhi);
            if (st != OP_OK)
                return st;
        }
        lb = lt; /* the top line is the next row's bottom line */
        lt = ln;
    }
    return OP_OK;
}

/* The cells of hf's grid where the triangle leaves a fragment, in row-major order
 * (§3.2, §3.3). Only rows the triangle's z range meets are tried, and in a row only
 * the cells its polygon's x range meets: elsewhere the clip is empty or lies on one
 * boundary line. Flattened: every helper is inlined here whatever gcc's growth limits
 * say. The function sits at those limits, so any change to a helper moved some other
 * hot helper (raster_rows, emit_rows, op__hf_push) out of line at random, for 1-7 %
 * more span-stage Ir; flattened, the inlining no longer depends on the sizes. */
static __attribute__((flatten)) op_status raster_tri(const op_heightfield *hf, const float *v0,
                                                     const float *v1, const float *v2,
                                                     raster_ctx *rc, const int *ix)
{
    const double cs = hf->cs, oz = hf->line_origin[1];
    const int64_t gz0 = hf->cell0[1];
    vtx tri[3];
    vtx_put(&tri[0], v0);
    vtx_put(&tri[1], v1);
    vtx_put(&tri[2], v2);
    int64_t wall_cell;
    int wall = wall_on_line(hf, tri, rc->inv_cs, &wall_cell);
    if (wall >= 0)
        return raster_wall(hf, rc, tri, wall, wall_cell);
    double zlo = mind(mind(tri[0].p[2], tri[1].p[2]), tri[2].p[2]);
    double zhi = maxd(maxd(tri[0].p[2], tri[1].p[2]), tri[2].p[2]);
    int64_t kz0 = op__cell_of(zlo, oz, cs, rc->inv_cs) - gz0;
    int64_t kz1 = op__cell_of(zhi, oz, cs, rc->inv_cs) - gz0;
    if (kz1 < 0 || kz0 >= hf->depth)
        return OP_OK;
    const int one_row = kz0 == kz1; /* then that row is in the grid */
    kz0 = kz0 < 0 ? 0 : kz0;
    kz1 = kz1 >= hf->depth ? hf->depth - 1 : kz1;
#pragma GCC unroll 3
    for (int i = 0; i < 3; i++) {
        if (!ix) {
            set_cell(hf, rc, &tri[i]);
            continue;
        }
        const int slot = ix[i] & (VCACHE - 1);
        vcache *vc = rc->vc;
        if (vc->key[slot] == ix[i]) {
            tri[i].cell = vc->val[slot].cell;
            tri[i].on = vc->val[slot].on;
        } else {
            set_cell(hf, rc, &tri[i]);
            vc->key[slot] = ix[i];
            vc->val[slot].cell = tri[i].cell;
            vc->val[slot].on = tri[i].on;
        }
    }
    int tx0 = min2i(min2i(tri[0].cell, tri[1].cell), tri[2].cell);
    int tx1 = max2i(max2i(tri[0].cell, tri[1].cell), tri[2].cell);
    if (tx1 < 0 || tx0 >= hf->width)
        return OP_OK; /* every point's x is beyond the grid (CellOf is monotone) */
    if (one_row & (tx0 == tx1)) {
        /* The triangle lies in one cell of the grid, zb <= z < zt and xl <= x < xr for
         * its three vertices: no edge crosses a line, so R is the triangle and P its
         * vertices; P lies on xl iff every vertex does, on zb iff zhi == zb, and never
         * on xr or zt. The rows path would give the same fragment after sorting the
         * vertices, setting slots and caps (11 % of dungeon's rasterizations, 2 % of
         * stairs'); its y range is the same three values' (taken in another order, which
         * could change only a zero's sign, and §3.4's rows do not see that). */
        if (zhi == line_at(hf, rc, 1, kz0) || (tri[0].on & tri[1].on & tri[2].on))
            return OP_OK;
        return emit_one(rc, tx0, (int)kz0, mind(mind(tri[0].p[1], tri[1].p[1]), tri[2].p[1]),
                        maxd(maxd(tri[0].p[1], tri[1].p[1]), tri[2].p[1]));
    }
    int clipped = tx0 < 0 || tx1 >= hf->width;
    tx0 = tx0 < 0 ? 0 : tx0;
    tx1 = tx1 >= hf->width ? hf->width - 1 : tx1;
    if (rc->xl && tx1 - tx0 < TRI_CELLS) {
        rvtx *a = &tri[0], *b = &tri[1], *c = &tri[2], *p;
        if (b->p[2] < a->p[2])
            p = a, a = b, b = p;
        if (c->p[2] < b->p[2]) {
            p = b, b = c, c = p;
            if (b->p[2] < a->p[2])
                p = a, a = b, b = p;
        }
        if (!clipped && tx0 == tx1)
            return raster_column(rc, a, b, c, tx0, kz0, kz1, zhi);
        int t = tx1 - tx0 + 1;
        tri_rows tr = {.hf = hf,
                       .rc = rc,
                       .a = a,
                       .b = b,
                       .c = c,
                       .xs = rc->xl + tx0,
                       .tx0 = tx0,
                       .tx1 = tx1,
                       .t = t,
                       .clipped = clipped,
                       .xl = rc->xl,
                       .ox = hf->line_origin[0],
                       .inv_cs = rc->inv_cs,
                       .cell0 = (double)hf->cell0[0],
                       .wlim = hf->width + 2};
        return raster_rows(&tr, kz0, kz1, zhi);
    }
    vtx qa[3], qc[3]; /* crossings with the row's bottom and top lines */
    int ha[3], hc[3];
    vtx *qb = qa, *qt = qc;
    int *hb = ha, *ht = hc;
    double zb = line_at(hf, rc, 1, kz0);
    z_crossings(hf, rc, tri, zlo, zhi, zb, qb, hb);
    for (int64_t z = kz0; z <= kz1; z++) {
        double zt = line_at(hf, rc, 1, z + 1);
        z_crossings(hf, rc, tri, zlo, zhi, zt, qt, ht);
        const vtx *rp[MAX_POLY];
        int n = row_polygon(tri, qb, hb, qt, ht, zb, zt, rp);
        rp[n] = rp[0]; /* closes the polygon for raster_chunk's edge loop (n < MAX_POLY) */
        if (n) {
            op_status st = raster_row(hf, rc, rp, n, (int)z, zb, zt, zhi);
            if (st != OP_OK)
                return st;
        }
        vtx *tq = qb; /* the top line is the next row's bottom line */
        qb = qt;
        qt = tq;
        int *th = hb;
        hb = ht;
        ht = th;
        zb = zt;
    }
    return OP_OK;
}

void op_triangle_fragments(const op_heightfield *hf, const float *v0, const float *v1,
                           const float *v2, op_fragment_fn fn, void *ctx)
{
    raster_ctx rc = {NULL, 0, fn, ctx, 1.0 / hf->cs, NULL, NULL, NULL, NULL};
    double lines[LINE_BUF];
    raster_lines(&rc, hf, lines);
    (void)raster_tri(hf, v0, v1, v2, &rc, NULL);
}

static op_status check_vertex(const float *verts, size_t vi, op_err *err)
{
    for (int a = 0; a < 3; a++) {
        float v = verts[3 * vi + (size_t)a];
        if (!isfinite(v))
            return op_err_set(err, OP_EINVAL, "rasterize: vertex %zu %c = %g is not finite", vi,
                              "xyz"[a], (double)v);
        if (fabs((double)v) > OP_MAX_COORD)
            return op_err_set(err, OP_ERANGE, "rasterize: vertex %zu %c = %.9g is beyond +-2^21",
                              vi, "xyz"[a], (double)v);
    }
    return OP_OK;
}

/* Validate first, then act: nothing is added unless every triangle is valid. */
static op_status validate_tris(const float *verts, size_t nverts, const int *tris,
                               const uint8_t *areas, size_t ntris, op_err *err)
{
    if (ntris && (!verts || !tris || !areas))
        return op_err_set(err, OP_EINVAL, "rasterize: NULL array with %zu triangles", ntris);
    for (size_t t = 0; t < ntris; t++) {
        if (areas[t] > OP_MAX_AREA)
            return op_err_set(err, OP_ERANGE, "rasterize: triangle %zu area %u is above %d", t,
                              (unsigned)areas[t], OP_MAX_AREA);
        for (int k = 0; k < 3; k++) {
            int ix = tris[3 * t + (size_t)k];
            if (ix < 0 || (size_t)ix >= nverts)
                return op_err_set(err, OP_ERANGE,
                                  "rasterize: triangle %zu index %d is outside [0, %zu)", t, ix,
                                  nverts);
            op_status st = check_vertex(verts, (size_t)ix, err);
            if (st != OP_OK)
                return st;
        }
    }
    return OP_OK;
}

op_status op_rasterize(op_heightfield *hf, const float *verts, size_t nverts, const int *tris,
                       const uint8_t *areas, size_t ntris, int merge_threshold, op_err *err)
{
    if (!hf || !hf->heads)
        return op_err_set(err, OP_EINVAL, "rasterize: NULL or uninitialised heightfield");
    op_status st = validate_tris(verts, nverts, tris, areas, ntris, err);
    if (st == OP_OK)
        st = op__hf_threshold(hf, merge_threshold, err);
    if (st != OP_OK)
        return st;
    uint32_t first = op__hf_begin(hf);
    int old_threshold = hf->merge_threshold;
    hf->merge_threshold = merge_threshold;
    raster_ctx rc = {hf, 0, NULL, NULL, 1.0 / hf->cs, err, NULL, NULL, NULL};
    double lines[LINE_BUF];
    raster_lines(&rc, hf, lines);
    vcache vc;
    vcache_reset(&vc);
    rc.vc = &vc;
    for (size_t t = 0; t < ntris && st == OP_OK; t++) {
        const int *ix = &tris[3 * t];
        rc.area = areas[t];
        st = raster_tri(hf, &verts[3 * (size_t)ix[0]], &verts[3 * (size_t)ix[1]],
                        &verts[3 * (size_t)ix[2]], &rc, ix);
    }
    if (st == OP_OK)
        st = op__hf_commit(hf, first, err);
    else
        op__hf_rollback(hf, first);
    if (st != OP_OK) {
        hf->merge_threshold = old_threshold;
        return st;
    }
    op_err_clear(err);
    return OP_OK;
}

op_status op_rasterize_ids(op_heightfield *hf, const op_soup *soup, const uint32_t *ids, size_t n,
                           const uint8_t *areas, int merge_threshold, op_err *err)
{
    if (!hf || !hf->heads || !soup || (n && (!ids || !areas)))
        return op_err_set(err, OP_EINVAL, "rasterize: NULL argument");
    size_t ntris = soup->tris_len / 3;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= ntris)
            return op_err_set(err, OP_ERANGE, "rasterize: triangle id %u is outside [0, %zu)",
                              (unsigned)ids[i], ntris);
        if (areas[i] > OP_MAX_AREA)
            return op_err_set(err, OP_ERANGE, "rasterize: triangle %u area %u is above %d",
                              (unsigned)ids[i], (unsigned)areas[i], OP_MAX_AREA);
    }
    op_status st = op__hf_threshold(hf, merge_threshold, err);
    if (st != OP_OK)
        return st;
    uint32_t first = op__hf_begin(hf);
    int old_threshold = hf->merge_threshold;
    hf->merge_threshold = merge_threshold;
    raster_ctx rc = {hf, 0, NULL, NULL, 1.0 / hf->cs, err, NULL, NULL, NULL};
    double lines[LINE_BUF];
    raster_lines(&rc, hf, lines);
    vcache vc;
    vcache_reset(&vc);
    rc.vc = &vc;
    for (size_t i = 0; i < n && st == OP_OK; i++) {
        const int *ix = &soup->tris[3 * (size_t)ids[i]];
        rc.area = areas[i];
        st = raster_tri(hf, &soup->verts[3 * (size_t)ix[0]], &soup->verts[3 * (size_t)ix[1]],
                        &soup->verts[3 * (size_t)ix[2]], &rc, ix);
    }
    if (st == OP_OK)
        st = op__hf_commit(hf, first, err);
    else
        op__hf_rollback(hf, first);
    if (st != OP_OK) {
        hf->merge_threshold = old_threshold;
        return st;
    }
    op_err_clear(err);
    return OP_OK;
}
