/*
 * Height detail, sampling steps (build3d-polys.md §4): NearestRow, edge points with
 * Douglas–Peucker over rows, the hull ring, interior grid samples.
 *
 * Input: a polygon of op_poly_mesh (cell coordinates x, row, z), the compact
 * heightfield and its region ids. Output: vertices and samples as float32 tile-local
 * positions widened to double (op__dt, op__samples).
 * Geometry of the walk is in cells (double); each point is converted to tile-local
 * float32 once (op_tile_local_at), so two polygons sharing an edge compute bitwise equal
 * edge points: both walk from the lexicographically smaller end and sample every region.
 * Typical sizes: a few edge points per edge; tens to hundreds of interior samples.
 */
#include <math.h>

#include "detail_internal.h"

int op__detail_nearest_row(const op_chf *chf, const uint16_t *reg, double x, double z,
                           double expected, int region, int climb, int *row)
{
    double fx = floor(x), fz = floor(z);
    if (!(fx > -1e9 && fx < 1e9 && fz > -1e9 && fz < 1e9))
        return 0;
    int x1 = (int)fx, z1 = (int)fz;
    int x0 = (x == fx) ? x1 - 1 : x1; /* on a cell line: the cell before it as well */
    int z0 = (z == fz) ? z1 - 1 : z1;
    double reach = (double)((climb > 1 ? climb : 1) + 1);
    int found = 0;
    double best = 0.0;
    /* z outer, x inner: ascending cell index, so the first strict minimum wins ties. */
    for (int cz = z0; cz <= z1; cz++) {
        if (cz < 0 || cz >= chf->depth)
            continue;
        for (int cx = x0; cx <= x1; cx++) {
            if (cx < 0 || cx >= chf->width)
                continue;
            int c = cx + cz * chf->width;
            for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
                if (region >= 0 && (int)reg[s] != region)
                    continue;
                double d = fabs((double)chf->y[s] - expected);
                if (d <= reach && (!found || d < best)) {
                    found = 1;
                    best = d;
                    *row = chf->y[s];
                }
            }
        }
    }
    return found;
}

static const int32_t *pvert(const op_poly_mesh *mesh, int p, int k)
{
    return &mesh->verts[3 * (size_t)mesh->polys[(size_t)p * (size_t)mesh->nvp + (size_t)k]];
}

/* Douglas–Peucker over rows on points 0..ns (ends kept): deviation in rows from the
 * straight row line between the kept ends, by step index. */
static void simplify_rows(op__edge_work *w, int ns, double limit)
{
    for (int k = 0; k <= ns; k++)
        w->keep[k] = (uint8_t)(k == 0 || k == ns);
    int top = 0;
    w->stack[top][0] = 0;
    w->stack[top][1] = ns;
    top++;
    while (top > 0) {
        top--;
        int a = w->stack[top][0], b = w->stack[top][1];
        int best = -1;
        double bestd = 0.0;
        for (int k = a + 1; k < b; k++) {
            double line = w->row[a] + (w->row[b] - w->row[a]) * (double)(k - a) / (double)(b - a);
            double d = fabs(w->row[k] - line);
            if (best < 0 || d > bestd) {
                best = k;
                bestd = d;
            }
        }
        if (best < 0 || !(bestd > limit))
            continue;
        w->keep[best] = 1;
        w->stack[top][0] = best;
        w->stack[top][1] = b;
        top++;
        w->stack[top][0] = a;
        w->stack[top][1] = best;
        top++;
    }
}

int op__detail_edge_steps(const op_poly_mesh *mesh, int p, int k, int nverts, double sd)
{
    const int32_t *va = pvert(mesh, p, k), *vb = pvert(mesh, p, (k + 1) % nverts);
    /* The same differences walk_edge takes from the smaller end: |d| is symmetric, but the
     * walk's own arithmetic is kept so the count cannot differ by a rounding. */
    int rev = (vb[0] < va[0]) || (vb[0] == va[0] && vb[2] < va[2]);
    const int32_t *s = rev ? vb : va, *e = rev ? va : vb;
    double dx = (double)e[0] - (double)s[0], dz = (double)e[2] - (double)s[2];
    double len = sqrt(dx * dx + dz * dz);
    if (!(len > sd))
        return 0;
    double steps = ceil(len / sd);
    if (steps > (double)OP__DT_MAX_STEPS)
        return 0;
    return (int)steps;
}

/* Walks polygon edge k from its lexicographically smaller end; fills w and returns ns
 * (0 when the edge gets no points). *reversed tells whether the walk runs against the
 * polygon's direction. */
static int walk_edge(const op_poly_mesh *mesh, int p, int k, int nverts, const op_chf *chf,
                     const op_detail_settings *ds, double sd, op__edge_work *w, int *reversed)
{
    const int32_t *va = pvert(mesh, p, k), *vb = pvert(mesh, p, (k + 1) % nverts);
    int rev = (vb[0] < va[0]) || (vb[0] == va[0] && vb[2] < va[2]);
    const int32_t *s = rev ? vb : va, *e = rev ? va : vb;
    *reversed = rev;
    double dx = (double)e[0] - (double)s[0], dz = (double)e[2] - (double)s[2];
    int ns = w->psteps ? w->psteps[k] : op__detail_edge_steps(mesh, p, k, nverts, sd);
    if (ns == 0)
        return 0;
    double dy = (double)e[1] - (double)s[1];
    for (int i = 0; i <= ns; i++) {
        w->x[i] = (double)s[0] + dx * (double)i / (double)ns;
        w->z[i] = (double)s[2] + dz * (double)i / (double)ns;
        double interp = (double)s[1] + dy * (double)i / (double)ns;
        int row;
        if (i == 0 || i == ns)
            w->row[i] = interp; /* the end vertices' own rows */
        else if (op__detail_nearest_row(chf, NULL, w->x[i], w->z[i], interp, -1, ds->walkable_climb,
                                        &row))
            w->row[i] = (double)row;
        else
            w->row[i] = interp;
    }
    simplify_rows(w, ns, ds->max_error / mesh->frame.ch);
    return ns;
}

static void add_vertex(op__dt *dt, const op_tile_frame *f, double x, double row, double z,
                       int min_row)
{
    dt->x[dt->nv] = (double)op_tile_local_at(f, x);
    dt->y[dt->nv] = (double)op_tile_local_y_at(f, row, min_row);
    dt->z[dt->nv] = (double)op_tile_local_at(f, z);
    dt->nv++;
}

/* The cache slot of edge k of polygon p: its own (key found) or the empty one to fill. */
static uint32_t cache_slot(const op__edge_work *w, const op_poly_mesh *mesh, int p, int k,
                           int nverts, uint64_t *key)
{
    uint64_t a = mesh->polys[(size_t)p * (size_t)mesh->nvp + (size_t)k];
    uint64_t b = mesh->polys[(size_t)p * (size_t)mesh->nvp + (size_t)((k + 1) % nverts)];
    *key = (a < b ? a << 32 | b : b << 32 | a) + 1;
    uint64_t h = *key * 0x9e3779b97f4a7c15ull;
    uint32_t i = (uint32_t)(h >> 32) & w->cmask;
    while (w->ckey[i] != 0 && w->ckey[i] != *key)
        i = (i + 1) & w->cmask;
    return i;
}

/* Appends edge k's kept points (polygon direction) to dt and ring; returns how many kept
 * points the edge has (all are counted even when they do not fit). */
static int edge_points(const op_poly_mesh *mesh, int p, int k, int nverts, const op_chf *chf,
                       const op_detail_settings *ds, double sd, int min_row, op__edge_work *w,
                       op__dt *dt, uint8_t *ring, int *m, int room)
{
    uint64_t key = 0;
    uint32_t slot = 0;
    if (w->ckey) {
        slot = cache_slot(w, mesh, p, k, nverts, &key);
        if (w->ckey[slot] == key) {
            const int32_t *va = pvert(mesh, p, k), *vb = pvert(mesh, p, (k + 1) % nverts);
            int rev = (vb[0] < va[0]) || (vb[0] == va[0] && vb[2] < va[2]);
            int kept = w->ccount[slot];
            if (kept > room)
                return kept;
            const double *pts = &w->cpts[(size_t)w->cfirst[slot] * 3];
            for (int j = 0; j < kept; j++) {
                const double *q = &pts[(size_t)(rev ? kept - 1 - j : j) * 3];
                ring[(*m)++] = (uint8_t)dt->nv;
                add_vertex(dt, &mesh->frame, q[0], q[1], q[2], min_row);
            }
            return kept;
        }
    }
    int rev;
    int ns = walk_edge(mesh, p, k, nverts, chf, ds, sd, w, &rev);
    int kept = 0;
    for (int i = 1; i < ns; i++)
        kept += w->keep[i];
    if (w->ckey && ns > 0 && w->cused + (size_t)kept <= w->ccap) {
        w->ckey[slot] = key;
        w->cfirst[slot] = (int32_t)w->cused;
        w->ccount[slot] = kept;
        for (int i = 1; i < ns; i++)
            if (w->keep[i]) {
                double *q = &w->cpts[w->cused++ * 3];
                q[0] = w->x[i], q[1] = w->row[i], q[2] = w->z[i];
            }
    }
    if (kept > room)
        return kept;
    for (int j = 1; j < ns; j++) {
        int i = rev ? ns - j : j;
        if (!w->keep[i])
            continue;
        ring[(*m)++] = (uint8_t)dt->nv;
        add_vertex(dt, &mesh->frame, w->x[i], w->row[i], w->z[i], min_row);
    }
    return kept;
}

int op__detail_ring(const op_poly_mesh *mesh, int p, int nverts, const op_chf *chf,
                    const uint16_t *reg, const op_detail_settings *ds, double sd, int min_row,
                    int with_points, op__edge_work *w, op__dt *dt, uint8_t *ring)
{
    (void)reg;
    dt->nv = 0;
    dt->npoly = nverts;
    for (int k = 0; k < nverts; k++) {
        const int32_t *v = pvert(mesh, p, k);
        add_vertex(dt, &mesh->frame, (double)v[0], (double)v[1], (double)v[2], min_row);
    }
    int m = 0;
    int total = nverts;
    for (int k = 0; k < nverts && with_points; k++) {
        ring[m++] = (uint8_t)k;
        int room = OP__DT_MAXV - total;
        int kept = edge_points(mesh, p, k, nverts, chf, ds, sd, min_row, w, dt, ring, &m,
                               room < 0 ? 0 : room);
        total += kept;
    }
    if (!with_points || total > OP__DT_MAXV) {
        /* Too many edge points (or detail off): the polygon vertices alone. */
        dt->nv = nverts;
        for (m = 0; m < nverts; m++)
            ring[m] = (uint8_t)m;
    }
    return m;
}

static void bounds(const op_poly_mesh *mesh, int p, int nverts, int32_t lo[2], int32_t hi[2])
{
    const int32_t *v = pvert(mesh, p, 0);
    lo[0] = hi[0] = v[0];
    lo[1] = hi[1] = v[2];
    for (int k = 1; k < nverts; k++) {
        v = pvert(mesh, p, k);
        lo[0] = v[0] < lo[0] ? v[0] : lo[0];
        hi[0] = v[0] > hi[0] ? v[0] : hi[0];
        lo[1] = v[2] < lo[1] ? v[2] : lo[1];
        hi[1] = v[2] > hi[1] ? v[2] : hi[1];
    }
}

int op__detail_sample_bound(const op_poly_mesh *mesh, int p, int nverts, double sd)
{
    int32_t lo[2], hi[2];
    bounds(mesh, p, nverts, lo, hi);
    double nx = floor((double)(hi[0] - lo[0]) / sd) + 1.0;
    double nz = floor((double)(hi[1] - lo[1]) / sd) + 1.0;
    double n = nx * nz;
    return n > 2e9 ? -1 : (int)n;
}

/* Distance from (x, z) to every edge line of the polygon exceeds sd / 2. */
static int far_from_edges(const op_poly_mesh *mesh, int p, int nverts, double x, double z,
                          double sd)
{
    for (int k = 0; k < nverts; k++) {
        const int32_t *a = pvert(mesh, p, k), *b = pvert(mesh, p, (k + 1) % nverts);
        double ex = (double)b[0] - (double)a[0], ez = (double)b[2] - (double)a[2];
        double cross = ex * (z - (double)a[2]) - ez * (x - (double)a[0]);
        double d = fabs(cross) / sqrt(ex * ex + ez * ez);
        if (!(d > sd * 0.5))
            return 0;
    }
    return 1;
}

/* The interior sample points of polygon p in order (§4: rows z = lo.z + j·sd, j = 1, 2, ...
 * while z < hi.z, in each row x = lo.x + i·sd while x < hi.x, those far from every edge
 * line): op__detail_samples and the rebuild's membership check walk the same points. */
typedef struct sample_grid {
    const op_poly_mesh *mesh;
    int p, nverts, i, j;
    double sd;
    int32_t lo[2], hi[2];
} sample_grid;

static void sample_grid_init(sample_grid *g, const op_poly_mesh *mesh, int p, int nverts, double sd)
{
    *g = (sample_grid){.mesh = mesh, .p = p, .nverts = nverts, .i = 1, .j = 1, .sd = sd};
    bounds(mesh, p, nverts, g->lo, g->hi);
}

/* The next sample point into (x, z); 0 when there is none left. */
static int sample_grid_next(sample_grid *g, double *x, double *z)
{
    for (;;) {
        double zz = (double)g->lo[1] + (double)g->j * g->sd;
        if (!(zz < (double)g->hi[1]))
            return 0;
        double xx = (double)g->lo[0] + (double)g->i * g->sd;
        if (!(xx < (double)g->hi[0])) {
            g->j++;
            g->i = 1;
            continue;
        }
        g->i++;
        if (far_from_edges(g->mesh, g->p, g->nverts, xx, zz, g->sd)) {
            *x = xx;
            *z = zz;
            return 1;
        }
    }
}

void op__detail_samples(const op_poly_mesh *mesh, int p, int nverts, const op_chf *chf,
                        const uint16_t *reg, const op_detail_settings *ds, double sd, int min_row,
                        op__samples *s)
{
    double mean = 0.0;
    for (int k = 0; k < nverts; k++)
        mean += (double)pvert(mesh, p, k)[1];
    mean /= (double)nverts;
    int region = (int)mesh->regs[p];
    s->n = 0;
    sample_grid g;
    sample_grid_init(&g, mesh, p, nverts, sd);
    double x, z;
    while (sample_grid_next(&g, &x, &z)) {
        int row;
        if (!op__detail_nearest_row(chf, reg, x, z, mean, region, ds->walkable_climb, &row))
            continue;
        s->x[s->n] = (double)op_tile_local_at(&mesh->frame, x);
        s->y[s->n] = (double)op_tile_local_y_at(&mesh->frame, (double)row, min_row);
        s->z[s->n] = (double)op_tile_local_at(&mesh->frame, z);
        s->tri[s->n] = -1;
        s->err[s->n] = 0.0;
        s->n++;
    }
}

int op__detail_samples_same_membership(const op_poly_mesh *mesh, int p, int nverts,
                                       const op_chf *chf, const uint16_t *reg,
                                       const uint16_t *base_reg, int base_region, double sd)
{
    if (!(sd > 0.9))
        return 1; /* detail off: no samples, no region read */
    int region = (int)mesh->regs[p];
    /* The points are op__detail_samples' (sample_grid) and the cells
     * op__detail_nearest_row's: any cell they read is compared. */
    sample_grid g;
    sample_grid_init(&g, mesh, p, nverts, sd);
    double x, z;
    while (sample_grid_next(&g, &x, &z)) {
        double fx = floor(x), fz = floor(z);
        if (!(fx > -1e9 && fx < 1e9 && fz > -1e9 && fz < 1e9))
            continue;
        int x1 = (int)fx, z1 = (int)fz;
        int x0 = (x == fx) ? x1 - 1 : x1;
        int z0 = (z == fz) ? z1 - 1 : z1;
        for (int cz = z0; cz <= z1; cz++) {
            if (cz < 0 || cz >= chf->depth)
                continue;
            for (int cx = x0; cx <= x1; cx++) {
                if (cx < 0 || cx >= chf->width)
                    continue;
                int c = cx + cz * chf->width;
                for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
                    if (((int)reg[s] == region) != ((int)base_reg[s] == base_region))
                        return 0;
            }
        }
    }
    return 1;
}
