/*
 * onepathd snapshots: the build input of one level version, made once per edit and then
 * only read. A snapshot is the level's settings and one part per mesh, in name order
 * (protocol §3.2); a part is a mesh prepared for builds: its vertices and triangles
 * decoded from little endian, and for every tile its triangles can reach (build3d-polys.md
 * §1.5, op_triangle_tiles, not clamped to any range) the list of those triangles in input
 * order: listed per tile for a triangle of a few tiles, found by a scan for a bigger one
 * (so a long sliver costs one entry, not one per tile of its box), with the tiles each may
 * leave a span in (protocol §4.4: the others need no entry and no build). A tile of the
 * level's soup therefore selects exactly the concatenation, over
 * the parts in name order, of the part's list for that tile (builds.c makes the tile's
 * soup from it), and an edit prepares only the mesh it puts: the other parts are shared
 * with the previous snapshot, so the cost of a mesh.put follows the mesh, not the level.
 * A snapshot also holds the level's volume set (shared: a mesh edit keeps it, a volume
 * edit keeps every part and brings a new set).
 * Parts and snapshots are reference counted and immutable: an edit never waits for a
 * build and a build never sees a half-made level.
 * Typical: 1..10^3 parts of 10^2..10^7 triangles; about 40 bytes a triangle.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/tile_lines.h"
#include "level.h"
#include "onepath/limits.h"

static float le_float(const uint8_t *p)
{
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int32_t le_int(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

/* ===== parts ===== */

void opd_part_ref(opd_part *p)
{
    atomic_fetch_add(&p->refs, 1);
}

void opd_part_unref(opd_part *p)
{
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    op_level_destroy(p->whole);
    free(p->verts);
    free(p->tris);
    free(p->cell_keys);
    free(p->cell_off);
    free(p->ids);
    free(p->cell_box);
    free(p->big);
    free(p->big_rect);
    free(p->occ);
    opd_mesh_free(p->mesh);
    free(p);
}

/* The part's soup decoded and checked as a level's soup is (coordinates, areas), once:
 * the part's level without bins (op_level_create_unbinned) holds it checked, for the
 * levels of its tiles. s: valid settings. */
static op_status part_decode(opd_part *p, const opd_mesh *m, const op_settings *s, op_err *err)
{
    p->nv = m->verts_len / 12;
    p->nt = m->tris_len / 12;
    p->verts = malloc((p->nv ? p->nv : 1) * 3 * sizeof(float));
    p->tris = malloc((p->nt ? p->nt : 1) * 3 * sizeof(int));
    if (!p->verts || !p->tris)
        return op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory for %zu vertices", m->name,
                          p->nv);
    const uint32_t one = 1;
    uint8_t low;
    memcpy(&low, &one, 1);
    if (low == 1 && sizeof(float) == 4 && sizeof(int) == 4) {
        /* A little-endian host: the upload's bytes are already the arrays. */
        if (p->nv)
            memcpy(p->verts, m->verts, p->nv * 12);
        if (p->nt)
            memcpy(p->tris, m->tris, p->nt * 12);
    } else {
        for (size_t k = 0; k < 3 * p->nv; k++)
            p->verts[k] = le_float(m->verts + 4 * k);
        for (size_t k = 0; k < 3 * p->nt; k++)
            p->tris[k] = le_int(m->tris + 4 * k);
    }
    p->areas = m->areas;
    p->soup = (op_soup){p->verts, 3 * p->nv, p->tris, 3 * p->nt, p->areas};
    op_err e;
    /* Classified once here (each triangle's area after the slope test, copies marked):
     * the tile levels borrow the classes, so a build neither classifies nor hashes its
     * triangles again, as a tile of op_level_create's level does not. */
    if (op_level_create_unbinned(&p->soup, s, NULL, 0, &p->whole, &e) != OP_OK ||
        op_level_classify(p->whole, &e) != OP_OK)
        return op_err_set(err, e.status, "mesh '%s': %s", m->name, e.msg);
    p->has_box = m->has_box;
    memcpy(p->bmin, m->bmin, sizeof p->bmin);
    memcpy(p->bmax, m->bmax, sizeof p->bmax);
    return OP_OK;
}

/* ===== binning ===== */

/* An open-addressing table of tile keys (0: an empty slot; keys are never 0 for tiles
 * within +-2^30) to the index of the tile's bin_cell. It grows as tiles are met (load at
 * most one half), so it is sized by the tiles there are, not by a count of the pairs made
 * before: the binning reads the triangles once. */
typedef struct key_table {
    uint64_t *key;
    uint32_t *cell;
    size_t cap, last;
} key_table;

/* A tile with small triangles while binning: its key, its triangle count (then the next
 * free place of its list in ids) and the bounds of its triangles so far, in input order. */
typedef struct bin_cell {
    uint64_t key;
    uint32_t count;
    float box[6];
} bin_cell;

static inline size_t key_hash(const key_table *h, uint64_t k)
{
    uint64_t x = k ^ k >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & (h->cap - 1);
}

static inline size_t key_slot(const key_table *h, uint64_t k)
{
    if (h->key[h->last] == k) /* neighbouring triangles mostly share tiles */
        return h->last;
    size_t i = key_hash(h, k);
    while (h->key[i] && h->key[i] != k)
        i = (i + 1) & (h->cap - 1);
    return i;
}

/* Doubles h's capacity (its keys moved to their new slots); -1 out of memory. */
static int key_grow(key_table *h)
{
    key_table n = {0};
    n.cap = 2 * h->cap;
    if (!(n.key = calloc(n.cap, sizeof *n.key)) || !(n.cell = malloc(n.cap * sizeof *n.cell))) {
        free(n.key);
        return -1;
    }
    for (size_t i = 0; i < h->cap; i++)
        if (h->key[i]) {
            size_t j = key_hash(&n, h->key[i]);
            while (n.key[j])
                j = (j + 1) & (n.cap - 1);
            n.key[j] = h->key[i];
            n.cell[j] = h->cell[i];
        }
    free(h->key);
    free(h->cell);
    *h = n;
    return 0;
}

/* Makes room for one more element of size sz in *a (holding n of *cap); -1 out of memory. */
static int grow_for(void **a, size_t n, size_t *cap, size_t sz, size_t first)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : first;
    void *g = realloc(*a, c * sz);
    if (!g)
        return -1;
    *a = g;
    *cap = c;
    return 0;
}

static int cmp_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts keys and drops repeats; returns how many are left. */
static size_t sort_unique(uint64_t *k, size_t n)
{
    if (n == 0)
        return 0;
    qsort(k, n, sizeof *k, cmp_key);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || k[m - 1] != k[i])
            k[m++] = k[i];
    return m;
}

typedef struct key_list {
    uint64_t *k;
    size_t n, cap;
} key_list;

static int key_push(key_list *l, uint64_t k)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        uint64_t *g = realloc(l->k, cap * sizeof *g);
        if (!g)
            return -1;
        l->k = g;
        l->cap = cap;
    }
    l->k[l->n++] = k;
    return 0;
}

/* The x extent of triangle (x, z)[3] within the band zlo <= z <= zhi (0: it misses the
 * band): the triangle clipped to the band is convex, so its extent is that of its
 * vertices inside the band and of its edges' crossings of the band's lines. */
static int band_extent(const double x[3], const double z[3], double zlo, double zhi, double *lo,
                       double *hi)
{
    int any = 0;
    double a = 0, b = 0;
    for (int i = 0; i < 3; i++) {
        int j = (i + 1) % 3;
        double px[3];
        int np = 0;
        if (z[i] >= zlo && z[i] <= zhi)
            px[np++] = x[i];
        double lines[2] = {zlo, zhi};
        for (int l = 0; l < 2; l++) {
            double c = lines[l];
            if ((z[i] < c && z[j] > c) || (z[i] > c && z[j] < c))
                px[np++] = x[i] + (x[j] - x[i]) * ((c - z[i]) / (z[j] - z[i]));
        }
        for (int k = 0; k < np; k++) {
            a = (!any || px[k] < a) ? px[k] : a;
            b = (!any || px[k] > b) ? px[k] : b;
            any = 1;
        }
    }
    *lo = a;
    *hi = b;
    return any;
}

/* Adds the tiles of big triangle t (its box's tiles r) whose build grid, widened by
 * OPD_REACH_SLACK cells, its XZ shape meets, row by row. */
static int big_reach(const opd_part *p, size_t t, const op_tile_grid *g, const op_tile_range *r,
                     key_list *out)
{
    double x[3], z[3];
    for (int k = 0; k < 3; k++) {
        const float *v = &p->verts[3 * (size_t)p->tris[3 * t + (size_t)k]];
        x[k] = v[0];
        z[k] = v[2];
    }
    const int64_t tc = g->tile_cells, m = g->border + OPD_REACH_SLACK;
    for (int tz = r->tz0; tz <= r->tz1; tz++) {
        double zlo = g->origin_z + (double)((int64_t)tz * tc - m) * g->cs;
        double zhi = g->origin_z + (double)((int64_t)tz * tc + tc + m) * g->cs;
        double lo, hi;
        if (!band_extent(x, z, zlo, zhi, &lo, &hi))
            continue;
        /* Tile tx's widened grid spans cells tx*TC - m .. tx*TC + TC + m. */
        double c0 = floor((lo - g->origin_x) / g->cs), c1 = floor((hi - g->origin_x) / g->cs);
        double t0 = floor((c0 - (double)m) / (double)tc), t1 = floor((c1 + (double)m) / (double)tc);
        int x0 = t0 < r->tx0 ? r->tx0 : (int)t0, x1 = t1 > r->tx1 ? r->tx1 : (int)t1;
        for (int tx = x0; tx <= x1; tx++)
            if (key_push(out, opd_tile_key(tx, tz)) != 0)
                return -1;
    }
    return 0;
}

/* The index of key k in keys[0 .. n) (increasing), or n. */
static size_t key_find(const uint64_t *keys, size_t n, uint64_t k)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && keys[lo] == k ? lo : n;
}

/* ===== per-tile bounds (opd_part_tile_box) ===== */

static inline float min3(float a, float b, float c)
{
    float m = b < a ? b : a;
    return c < m ? c : m;
}

static inline float max3(float a, float b, float c)
{
    float m = b > a ? b : a;
    return c > m ? c : m;
}

/* Triangle t's box as op_level_create_tile_of's scan makes it: min xyz, max xyz of its
 * three vertices by min3 / max3 (which keep the first of equal values). */
static inline void tri_box(const opd_part *p, uint32_t t, float v[6])
{
    const int *ix = &p->tris[3 * (size_t)t];
    const float *p0 = &p->verts[3 * (size_t)ix[0]], *p1 = &p->verts[3 * (size_t)ix[1]],
                *p2 = &p->verts[3 * (size_t)ix[2]];
    v[0] = min3(p0[0], p1[0], p2[0]);
    v[1] = min3(p0[1], p1[1], p2[1]);
    v[2] = min3(p0[2], p1[2], p2[2]);
    v[3] = max3(p0[0], p1[0], p2[0]);
    v[4] = max3(p0[1], p1[1], p2[1]);
    v[5] = max3(p0[2], p1[2], p2[2]);
}

/* Bounds b of a list in input order, then a box v of a later triangle: the scan's step
 * (a value replaces the kept one only when strictly smaller / greater). Starting from
 * +inf / -inf is the scan's first step, every coordinate being finite. */
static inline void box_step(float *restrict b, const float *restrict v)
{
    /* Written out: six minss / maxss, no loop (a put does this for every pair). */
    b[0] = v[0] < b[0] ? v[0] : b[0];
    b[1] = v[1] < b[1] ? v[1] : b[1];
    b[2] = v[2] < b[2] ? v[2] : b[2];
    b[3] = v[3] > b[3] ? v[3] : b[3];
    b[4] = v[4] > b[4] ? v[4] : b[4];
    b[5] = v[5] > b[5] ? v[5] : b[5];
}

static void box_empty(float b[6])
{
    for (int k = 0; k < 3; k++) {
        b[k] = INFINITY;
        b[3 + k] = -INFINITY;
    }
}

int opd_part_tile_box(const opd_part *p, int tx, int tz, float bmin[3], float bmax[3])
{
    if (p->nt == 0 || tx < p->rect.tx0 || tx > p->rect.tx1 || tz < p->rect.tz0 || tz > p->rect.tz1)
        return 0;
    float b[6];
    int any = 0;
    size_t c = key_find(p->cell_keys, p->ncells, opd_tile_key(tx, tz));
    if (c < p->ncells) {
        memcpy(b, p->cell_box[c], sizeof b);
        any = 1;
    } else {
        box_empty(b);
    }
    /* The big triangles come between the small ones in input order: a value of one equal
     * to the kept one but of other bits (-0 and +0) would need the order of the two, which
     * the kept bounds do not hold; then the caller scans. */
    for (size_t i = 0; i < p->nbig; i++) {
        const op_tile_range *r = &p->big_rect[i];
        if (tx < r->tx0 || tx > r->tx1 || tz < r->tz0 || tz > r->tz1)
            continue;
        float v[6];
        tri_box(p, p->big[i], v);
        for (int k = 0; k < 6; k++)
            if (v[k] == b[k] && signbit(v[k]) != signbit(b[k]))
                return -1;
        box_step(b, v);
        any = 1;
    }
    if (any) {
        memcpy(bmin, b, 3 * sizeof(float));
        memcpy(bmax, b + 3, 3 * sizeof(float));
    }
    return any;
}

/* A run: consecutive small triangles t0 .. t0 + m - 1 of the same tiles, whose cells are
 * run_cell[first .. first + n). */
typedef struct bin_run {
    uint32_t t0, m, first, n;
} bin_run;

/* Ends run u of bounds gb: each of its tiles counts its m triangles and takes its bounds.
 * Stepping a tile's bounds by the run's is stepping them by each of its triangles' boxes
 * in turn: min and max keeping the first of equal values (strict compares) are the
 * leftmost extreme of the sequence, however it is grouped, so the bits are the scan's. */
static void run_close(const bin_run *u, const uint32_t *run_cell, bin_cell *cells,
                      const float gb[6])
{
    for (uint32_t k = 0; k < u->n; k++) {
        bin_cell *b = &cells[run_cell[u->first + k]];
        b->count += u->m;
        box_step(b->box, gb);
    }
}

/* Each triangle's tiles, the part's rectangle (their union), the small triangles' per-tile
 * lists and bounds, the big triangles and the tiles they reach. One pass reads the
 * triangles: each one's box (tri_box) gives both its tiles and its share of its tiles'
 * bounds. Triangles come in runs of the same tiles (neighbours in a mesh mostly share
 * them): a run finds its tiles in the table once and steps their bounds once, by the
 * run's; a second pass over the runs, reading no vertex, fills the lists. */
static op_status part_bin(opd_part *p, const op_settings *s, const char *name, op_err *err)
{
    op_tile_range own;
    op_err e;
    /* The mesh alone must fit in the tile limit (a level holding it spans at least as many
     * tiles); this also checks the grid's cell size. The soup's bounds are the mesh's box
     * (content.c takes the same vertices in the same order as op_soup_bounds): a soup of
     * its two corners has them, so the check and its message are op_soup_tile_range's
     * without reading every vertex again. */
    float corners[6] = {p->bmin[0], p->bmin[1], p->bmin[2], p->bmax[0], p->bmax[1], p->bmax[2]};
    const int corner_tri[3] = {0, 1, 1};
    const op_soup box = {corners, 6, corner_tri, 3, NULL};
    if (op_soup_tile_range(&box, s, &own, &e) != OP_OK)
        return op_err_set(err, e.status, "mesh '%s': %s", name, e.msg);
    op_tile_grid g;
    op_tile_grid_derive(s, &g);
    /* op_triangle_tiles' own axis lines, set up once for the part: a triangle's tiles are
     * floor((cell(min) - B) / TC) .. floor((cell(max) + B) / TC) of its box's x and z, the
     * box's min and max being its vertices' as that function takes them (the first of
     * equal values; only the value counts here). Not clamped: a valid soup's coordinates
     * are within +-2^21 and its cells at least OP_MIN_CELL_SIZE, so its tiles are far
     * within the int range. */
    op_axis_grid ax, az;
    op_axis_grid_init(&ax, &g, g.origin_x);
    op_axis_grid_init(&az, &g, g.origin_z);
    key_table h = {0};
    h.cap = 64;
    bin_cell *cells = NULL;
    bin_run *runs = NULL;
    uint32_t *run_cell = NULL; /* each run's tiles' cells, run after run */
    size_t cells_cap = 0, runs_cap = 0, nruns = 0, rc_cap = 0, nrc = 0, big_cap = 0;
    uint64_t pairs = 0;
    op_tile_range cq = {0};
    float gb[6]; /* the open run's bounds: its triangles' boxes stepped in input order */
    int open = 0;
    op_status st = OP_OK;
    if (!(h.key = calloc(h.cap, sizeof *h.key)) || !(h.cell = malloc(h.cap * sizeof *h.cell)))
        st = op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory", name);
    for (size_t t = 0; st == OP_OK && t < p->nt; t++) {
        float v[6];
        tri_box(p, (uint32_t)t, v);
        const op_tile_range q = {op_last_tile_at(&ax, v[0], 0), op_last_tile_at(&az, v[2], 0),
                                 op_last_tile_at(&ax, v[3], 1), op_last_tile_at(&az, v[5], 1)};
        if (open && q.tx0 == cq.tx0 && q.tz0 == cq.tz0 && q.tx1 == cq.tx1 && q.tz1 == cq.tz1) {
            /* The run goes on: neighbouring triangles mostly share their tiles. */
            box_step(gb, v);
            runs[nruns - 1].m++;
            pairs += runs[nruns - 1].n;
            continue;
        }
        if (open)
            run_close(&runs[nruns - 1], run_cell, cells, gb);
        open = 0;
        op_tile_range *r = &p->rect;
        if (t == 0)
            *r = q;
        r->tx0 = q.tx0 < r->tx0 ? q.tx0 : r->tx0;
        r->tz0 = q.tz0 < r->tz0 ? q.tz0 : r->tz0;
        r->tx1 = q.tx1 > r->tx1 ? q.tx1 : r->tx1;
        r->tz1 = q.tz1 > r->tz1 ? q.tz1 : r->tz1;
        uint64_t n = (uint64_t)(q.tx1 - q.tx0 + 1) * (uint64_t)(q.tz1 - q.tz0 + 1);
        if (n > OPD_PART_SMALL) {
            if (p->nbig == big_cap) {
                big_cap = big_cap ? 2 * big_cap : 64;
                uint32_t *b = realloc(p->big, big_cap * sizeof *b);
                if (b)
                    p->big = b;
                op_tile_range *br = b ? realloc(p->big_rect, big_cap * sizeof *br) : NULL;
                if (!br) {
                    st = op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory", name);
                    break;
                }
                p->big_rect = br;
            }
            p->big[p->nbig] = (uint32_t)t;
            p->big_rect[p->nbig++] = q;
            continue;
        }
        pairs += n;
        if (pairs > UINT32_MAX)
            continue; /* counted on for the message; nothing more is binned */
        if (grow_for((void **)&runs, nruns, &runs_cap, sizeof *runs, 256) != 0) {
            st = op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory", name);
            break;
        }
        runs[nruns++] = (bin_run){(uint32_t)t, 1, (uint32_t)nrc, (uint32_t)n};
        for (int z = q.tz0; st == OP_OK && z <= q.tz1; z++)
            for (int x = q.tx0; x <= q.tx1; x++) {
                uint64_t k = opd_tile_key(x, z);
                size_t i = key_slot(&h, k);
                if (!h.key[i]) {
                    if (2 * (p->ncells + 1) > h.cap && key_grow(&h) == 0)
                        i = key_slot(&h, k);
                    if (2 * (p->ncells + 1) > h.cap ||
                        grow_for((void **)&cells, p->ncells, &cells_cap, sizeof *cells, 64) != 0) {
                        st = op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory for %zu tiles",
                                        name, p->ncells + 1);
                        break;
                    }
                    h.key[i] = k;
                    h.cell[i] = (uint32_t)p->ncells;
                    cells[p->ncells].key = k;
                    cells[p->ncells].count = 0;
                    box_empty(cells[p->ncells].box);
                    p->ncells++;
                }
                h.last = i;
                if (grow_for((void **)&run_cell, nrc, &rc_cap, sizeof *run_cell, 1024) != 0) {
                    st =
                        op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory for %llu tile entries",
                                   name, (unsigned long long)pairs);
                    break;
                }
                run_cell[nrc++] = h.cell[i];
            }
        memcpy(gb, v, sizeof gb);
        cq = q;
        open = st == OP_OK;
    }
    if (open)
        run_close(&runs[nruns - 1], run_cell, cells, gb);
    if (st == OP_OK && p->nbig < big_cap) { /* to its size, as p->bytes counts it */
        uint32_t *sb = realloc(p->big, p->nbig * sizeof *sb);
        op_tile_range *sr = realloc(p->big_rect, p->nbig * sizeof *sr);
        p->big = sb ? sb : p->big;
        p->big_rect = sr ? sr : p->big_rect;
    }
    if (st == OP_OK && pairs > UINT32_MAX)
        st = op_err_set(err, OP_ELIMIT, "mesh '%s': %llu (triangle, tile) pairs > 2^32 - 1", name,
                        (unsigned long long)pairs);
    if (st == OP_OK && (!(p->cell_keys = malloc((p->ncells + 1) * sizeof *p->cell_keys)) ||
                        !(p->cell_off = malloc((p->ncells + 1) * sizeof *p->cell_off)) ||
                        !(p->cell_box = malloc((p->ncells + 1) * sizeof *p->cell_box)) ||
                        !(p->ids = malloc((pairs ? pairs : 1) * sizeof *p->ids)) ||
                        (!p->big && !(p->big = malloc(sizeof *p->big))) ||
                        (!p->big_rect && !(p->big_rect = malloc(sizeof *p->big_rect)))))
        st = op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory for %llu tile entries", name,
                        (unsigned long long)pairs);
    if (st == OP_OK) {
        /* The tiles in key order with their lists' starts and bounds; each cell's count
         * becomes its list's next free place. */
        for (size_t c = 0; c < p->ncells; c++)
            p->cell_keys[c] = cells[c].key;
        qsort(p->cell_keys, p->ncells, sizeof *p->cell_keys, cmp_key);
        uint32_t at = 0;
        for (size_t c = 0; c < p->ncells; c++) {
            size_t i = key_slot(&h, p->cell_keys[c]);
            bin_cell *b = &cells[h.cell[i]];
            p->cell_off[c] = at;
            memcpy(p->cell_box[c], b->box, sizeof p->cell_box[c]);
            at += b->count;
            b->count = p->cell_off[c];
            h.last = i;
        }
        p->cell_off[p->ncells] = at;
        /* The lists filled run by run, in input order (so each list is in input order). */
        for (size_t g = 0; g < nruns; g++) {
            const bin_run *u = &runs[g];
            for (uint32_t k = 0; k < u->n; k++) {
                bin_cell *b = &cells[run_cell[u->first + k]];
                for (uint32_t i = 0; i < u->m; i++)
                    p->ids[b->count + i] = u->t0 + i;
                b->count += u->m;
            }
        }
    }
    free(h.key);
    free(h.cell);
    free(cells);
    free(runs);
    free(run_cell);
    /* The tiles a span may come from: every small list's tile and the big ones' reach. */
    key_list occ = {0};
    for (size_t c = 0; st == OP_OK && c < p->ncells; c++)
        if (key_push(&occ, p->cell_keys[c]) != 0)
            st = op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory", name);
    for (size_t b = 0; st == OP_OK && b < p->nbig; b++)
        if (big_reach(p, p->big[b], &g, &p->big_rect[b], &occ) != 0)
            st = op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory", name);
    if (st == OP_OK) {
        p->nocc = sort_unique(occ.k, occ.n);
        p->occ = occ.k;
    } else {
        free(occ.k);
    }
    p->bytes = sizeof *p + p->nv * 12 + p->nt * 13 + (p->ncells + 1) * (12 + sizeof *p->cell_box) +
               (size_t)pairs * 4 + p->nbig * (4 + sizeof(op_tile_range)) + occ.cap * 8 +
               7 * OPD_ALLOC_OVERHEAD;
    return st;
}

op_status opd_part_make(const opd_mesh *m, const op_settings *s, opd_part **out, op_err *err)
{
    *out = NULL;
    opd_part *p = calloc(1, sizeof *p);
    if (!p)
        return op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory", m->name);
    atomic_init(&p->refs, 1);
    snprintf(p->name, sizeof p->name, "%s", m->name);
    /* areas point into the mesh, which the part keeps. */
    p->mesh = opd_mesh_ref((opd_mesh *)m);
    op_status st = part_decode(p, m, s, err);
    if (st == OP_OK && p->nt > 0)
        st = part_bin(p, s, m->name, err);
    if (st != OP_OK) {
        opd_part_unref(p);
        return st;
    }
    *out = p;
    return OP_OK;
}

size_t opd_part_tile(const opd_part *p, int tx, int tz, uint32_t *out)
{
    if (p->nt == 0 || tx < p->rect.tx0 || tx > p->rect.tx1 || tz < p->rect.tz0 || tz > p->rect.tz1)
        return 0;
    const uint32_t *small = NULL;
    size_t ns = 0, c = key_find(p->cell_keys, p->ncells, opd_tile_key(tx, tz));
    if (c < p->ncells) {
        small = p->ids + p->cell_off[c];
        ns = p->cell_off[c + 1] - p->cell_off[c];
    }
    size_t n = 0, i = 0;
    if (!out) { /* a count (a build's first call, for the buffer): no merge */
        for (size_t b = 0; b < p->nbig; b++) {
            const op_tile_range *r = &p->big_rect[b];
            n += tx >= r->tx0 && tx <= r->tx1 && tz >= r->tz0 && tz <= r->tz1;
        }
        return ns + n;
    }
    /* Both lists are in input order: merged, so is the tile's. */
    for (size_t b = 0; b < p->nbig; b++) {
        const op_tile_range *r = &p->big_rect[b];
        if (tx < r->tx0 || tx > r->tx1 || tz < r->tz0 || tz > r->tz1)
            continue;
        while (i < ns && small[i] < p->big[b])
            out[n++] = small[i++];
        out[n++] = p->big[b];
    }
    if (i < ns)
        memcpy(out + n, small + i, (ns - i) * sizeof *out);
    return n + (ns - i);
}

/* ===== snapshots ===== */

void opd_snap_ref(opd_snap *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void opd_snap_unref(opd_snap *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    for (int i = 0; i < s->nparts; i++)
        opd_part_unref(s->parts[i]);
    free(s->parts);
    opd_vset_unref(s->vols);
    free(s);
}

/* The level's tile range: the soup's bounds (the union of the parts' boxes, first one
 * winning ties as op_soup_bounds) through op_soup_tile_range. */
static op_status snap_range(opd_snap *s, op_err *err)
{
    int any = 0;
    for (int i = 0; i < s->nparts; i++) {
        const opd_part *p = s->parts[i];
        if (!p->has_box)
            continue;
        for (int a = 0; a < 3; a++) {
            s->bmin[a] = (!any || p->bmin[a] < s->bmin[a]) ? p->bmin[a] : s->bmin[a];
            s->bmax[a] = (!any || p->bmax[a] > s->bmax[a]) ? p->bmax[a] : s->bmax[a];
        }
        any = 1;
    }
    if (!any)
        return OP_OK;
    float v[6] = {s->bmin[0], s->bmin[1], s->bmin[2], s->bmax[0], s->bmax[1], s->bmax[2]};
    int t[3] = {0, 1, 1};
    op_soup corners = {v, 6, t, 3, NULL};
    op_status st = op_soup_tile_range(&corners, &s->settings, &s->rect, err);
    if (st != OP_OK)
        return st;
    s->has_tiles = 1;
    /* A tile's rows (build3d-spans.md §1.3, as the core counts them) grow with the height
     * of its selection, which the level's height bounds. */
    op_span_settings ss;
    op_span_settings_derive(&s->settings, &ss);
    double ch = s->settings.cell_height, base = (double)s->bmin[1] - ch;
    if (base < -OP_MAX_COORD + 1.0)
        base = -OP_MAX_COORD + 1.0;
    double rows = ceil(((double)s->bmax[1] - base) / ch) + (double)ss.walkable_height + 2.0;
    s->tall = !(rows <= OP_MAX_ROWS);
    return OP_OK;
}

op_status opd_snap_make(const opd_config *cfg, const op_settings *st, opd_part **parts, int n,
                        opd_vset *vols, uint64_t version, opd_snap **out, op_err *err)
{
    *out = NULL;
    opd_snap *s = calloc(1, sizeof *s);
    if (!s) {
        for (int i = 0; i < n; i++)
            opd_part_unref(parts[i]);
        free(parts);
        opd_vset_unref(vols);
        return op_err_set(err, OP_ENOMEM, "level: out of memory");
    }
    atomic_init(&s->refs, 1);
    s->version = version;
    s->settings = *st;
    s->parts = parts;
    s->nparts = n;
    s->vols = vols;
    s->bytes = vols ? vols->bytes : 0;
    for (int i = 0; i < n; i++) {
        s->nv += parts[i]->nv;
        s->nt += parts[i]->nt;
        s->any_areas |= parts[i]->areas != NULL;
        s->bytes += parts[i]->bytes;
    }
    op_status rc = OP_OK;
    if (s->nv > cfg->max_level_verts)
        rc = op_err_set(err, OP_ELIMIT, "level: %zu vertices > --max-level-verts %zu", s->nv,
                        cfg->max_level_verts);
    else if (s->nt > cfg->max_level_tris)
        rc = op_err_set(err, OP_ELIMIT, "level: %zu triangles > --max-level-tris %zu", s->nt,
                        cfg->max_level_tris);
    else if (s->nt > 0xffffffffu)
        rc = op_err_set(err, OP_ERANGE, "level: %zu triangles > 2^32 - 1", s->nt);
    else
        rc = snap_range(s, err);
    if (rc != OP_OK) {
        opd_snap_unref(s);
        return rc;
    }
    *out = s;
    return OP_OK;
}

op_status opd_snap_from_meshes(const opd_config *cfg, const op_settings *st, opd_mesh *const *m,
                               int n, opd_vset *vols, uint64_t version, opd_snap **out, op_err *err)
{
    *out = NULL;
    op_status rc = op_settings_validate(st, err);
    if (rc != OP_OK)
        return rc;
    opd_part **parts = calloc((size_t)n + 1, sizeof *parts);
    if (!parts)
        return op_err_set(err, OP_ENOMEM, "level: out of memory for %d meshes", n);
    for (int i = 0; i < n && rc == OP_OK; i++)
        rc = opd_part_make(m[i], st, &parts[i], err);
    if (rc != OP_OK) {
        for (int i = 0; i < n; i++)
            opd_part_unref(parts[i]);
        free(parts);
        return rc;
    }
    return opd_snap_make(cfg, st, parts, n, opd_vset_ref(vols), version, out, err);
}

op_status opd_snap_edit(const opd_config *cfg, const opd_snap *old, const opd_mesh *m,
                        const char *drop, uint64_t version, opd_snap **out, op_err *err)
{
    *out = NULL;
    opd_part *np = NULL;
    op_status rc = m ? opd_part_make(m, &old->settings, &np, err) : OP_OK;
    if (rc != OP_OK)
        return rc;
    const char *name = m ? m->name : drop;
    opd_part **parts = calloc((size_t)old->nparts + 1, sizeof *parts);
    if (!parts) {
        opd_part_unref(np);
        return op_err_set(err, OP_ENOMEM, "level: out of memory");
    }
    int k = 0;
    for (int i = 0; i < old->nparts; i++) {
        opd_part *p = old->parts[i];
        if (np && strcmp(np->name, p->name) < 0) {
            parts[k++] = np;
            np = NULL;
        }
        if (strcmp(p->name, name) == 0)
            continue;
        opd_part_ref(p);
        parts[k++] = p;
    }
    if (np)
        parts[k++] = np;
    return opd_snap_make(cfg, &old->settings, parts, k, opd_vset_ref(old->vols), version, out, err);
}

op_status opd_snap_volumes(const opd_config *cfg, const opd_snap *old, opd_vset *vols,
                           uint64_t version, opd_snap **out, op_err *err)
{
    *out = NULL;
    opd_part **parts = calloc((size_t)old->nparts + 1, sizeof *parts);
    if (!parts)
        return op_err_set(err, OP_ENOMEM, "level: out of memory");
    for (int i = 0; i < old->nparts; i++) {
        opd_part_ref(old->parts[i]);
        parts[i] = old->parts[i];
    }
    return opd_snap_make(cfg, &old->settings, parts, old->nparts, opd_vset_ref(vols), version, out,
                         err);
}

int opd_snap_in_rect(const opd_snap *s, int tx, int tz)
{
    return s && s->has_tiles && tx >= s->rect.tx0 && tx <= s->rect.tx1 && tz >= s->rect.tz0 &&
           tz <= s->rect.tz1;
}

int opd_snap_tiles(const opd_snap *s)
{
    return s->has_tiles ? (s->rect.tx1 - s->rect.tx0 + 1) * (s->rect.tz1 - s->rect.tz0 + 1) : 0;
}

int opd_snap_occupied(const opd_snap *s, int tx, int tz)
{
    if (!opd_snap_in_rect(s, tx, tz))
        return 0;
    if (s->tall)
        return 1;
    uint64_t k = opd_tile_key(tx, tz);
    for (int i = 0; i < s->nparts; i++)
        if (key_find(s->parts[i]->occ, s->parts[i]->nocc, k) < s->parts[i]->nocc)
            return 1;
    return 0;
}
