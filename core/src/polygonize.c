/*
 * Polygons (build3d-polys.md §3, Polygonizer): contour set -> polygon mesh.
 *
 * Input: op_contour_set (cells of the tile's build grid, counter-clockwise loops,
 * holes joined by bridges). Output: op_poly_mesh (welded vertices in order of first
 * appearance, convex counter-clockwise polygons of at most nvp vertices in contour
 * order, per edge the neighbour value it came from).
 * Per contour: straight wall vertices are removed, the loop is ear-clipped
 * (polys_earclip.c), its vertices welded into the mesh, triangles with a repeated
 * vertex dropped, and the triangles merged (polys_merge.c). Every kept contour
 * vertex becomes (or joins) a mesh vertex, even if no polygon ends up using it
 * (a degenerate triangle was not emitted, or merging removed a wall-collinear
 * joint); later stages select the vertices their polygons use.
 * Invariants: cell coordinates below 2^20 in magnitude, so every long cross product
 * is exact; float32 tests are exact (polys_exact.c). Typical tile: 10–200 contours
 * of 4–100 vertices; everything temporary comes from the scratch arena.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/limits.h"
#include "polys_internal.h"

/* Cell coordinates must stay below this magnitude (exact long products). */
#define MAX_CELL_COORD (1 << 20)

float op_tile_local_at(const op_tile_frame *f, double c)
{
    if (c == (double)f->border)
        return 0.0f;
    if (c == (double)(f->border + f->tile_cells))
        return (float)f->tile_size;
    return (float)((c - (double)f->border) * f->cs);
}

float op_tile_local_y_at(const op_tile_frame *f, double row, int min_row)
{
    return (float)((row - (double)min_row) * f->ch);
}

/* At whole cells and rows the double forms are exact: (double)c - B = (double)(c - B). */
float op_tile_local(const op_tile_frame *f, int c)
{
    return op_tile_local_at(f, (double)c);
}

float op_tile_local_y(const op_tile_frame *f, int row, int min_row)
{
    return op_tile_local_y_at(f, (double)row, min_row);
}

/* The mesh while it is built (scratch), copied to the output arena at the end. */
typedef struct build {
    const op_tile_frame *frame;
    int nvp;
    op_arena *scratch;
    int nverts;
    int32_t *verts; /* x, row, z */
    int weld_mask;
    int *weld_head, *weld_next;
    int npolys;
    int *pv, *pnv;
    int32_t *pnb;
    uint16_t *regs;
    uint8_t *areas;
    int degenerate;
    /* Reuse (build3d-runtime.md §5.12): the base to copy from and this build's record. */
    const op__poly_base *base;
    op__poly_base *rec;
    int *stamp, *first; /* per mesh vertex: the contour (index + 1) that last saw it, and
                           there its smallest kept index */
    int reused;
} build;

static op_status validate(const op_contour_set *cset, const op_tile_frame *frame, int nvp,
                          op_err *err)
{
    if (!cset || !frame || (cset->count > 0 && !cset->contours))
        return op_err_set(err, OP_EINVAL, "polys: NULL argument");
    if (nvp < OP_MIN_VERTS_PER_POLY || nvp > OP_MAX_VERTS_PER_POLY)
        return op_err_set(err, OP_ERANGE, "polys: %d vertices per polygon is outside [%d, %d]", nvp,
                          OP_MIN_VERTS_PER_POLY, OP_MAX_VERTS_PER_POLY);
    if (!(frame->cs > 0.0) || frame->tile_cells < 1)
        return op_err_set(err, OP_EINVAL, "polys: bad tile frame (cs %g, %d cells)", frame->cs,
                          frame->tile_cells);
    for (int i = 0; i < cset->count; i++) {
        const op_contour *c = &cset->contours[i];
        if (c->nverts < 3 || !c->verts)
            return op_err_set(err, OP_EINVAL, "polys: contour %d has %d vertices", i, c->nverts);
        if (c->region < 0 || c->region > OP_MAX_REGIONS + 1 || c->area < 0 || c->area > OP_MAX_AREA)
            return op_err_set(err, OP_ERANGE, "polys: contour %d region %d area %d out of range", i,
                              c->region, c->area);
        for (int k = 0; k < c->nverts; k++) {
            const op_contour_vert *v = &c->verts[k];
            if (v->x <= -MAX_CELL_COORD || v->x >= MAX_CELL_COORD || v->z <= -MAX_CELL_COORD ||
                v->z >= MAX_CELL_COORD || v->y < -OP_MAX_ROWS || v->y > OP_MAX_ROWS)
                return op_err_set(err, OP_ERANGE,
                                  "polys: contour %d vertex %d (%d, %d, %d) beyond the grid range",
                                  i, k, (int)v->x, (int)v->y, (int)v->z);
        }
    }
    return OP_OK;
}

static op_status build_init(build *b, const op_contour_set *cset, op_err *err)
{
    size_t maxv = 0, maxp = 0;
    for (int i = 0; i < cset->count; i++) {
        maxv += (size_t)cset->contours[i].nverts;
        maxp += (size_t)cset->contours[i].nverts - 2;
    }
    /* The weld never holds more than OP_MAX_TILE_MESH_VERTS vertices (it refuses the next):
     * its arrays need no more, whatever the contours hold. The table's size decides no
     * result (the lowest matching index wins). */
    if (maxv > OP_MAX_TILE_MESH_VERTS)
        maxv = OP_MAX_TILE_MESH_VERTS;
    b->weld_mask = 15;
    while ((size_t)b->weld_mask + 1 < 2 * maxv)
        b->weld_mask = 2 * b->weld_mask + 1;
    size_t nvp = (size_t)b->nvp;
    size_t bytes = maxv * 3 * sizeof(int32_t) + ((size_t)b->weld_mask + 1 + maxv) * sizeof(int) +
                   maxp * (nvp * (sizeof(int) + sizeof(int32_t)) + sizeof(int) + sizeof(uint16_t) +
                           sizeof(uint8_t)) +
                   64;
    unsigned char *m = op_arena_alloc(b->scratch, bytes);
    if (!m)
        return op_err_set(err, OP_ENOMEM, "polys: mesh scratch needs %zu bytes", bytes);
    b->verts = (int32_t *)m;
    b->weld_head = (int *)(b->verts + 3 * maxv);
    b->weld_next = b->weld_head + b->weld_mask + 1;
    b->pv = b->weld_next + maxv;
    b->pnv = b->pv + maxp * nvp;
    b->pnb = (int32_t *)(b->pnv + maxp);
    b->regs = (uint16_t *)(b->pnb + maxp * nvp);
    b->areas = (uint8_t *)(b->regs + maxp);
    b->stamp = b->first = NULL;
    if (b->base || b->rec) {
        b->stamp = op_arena_calloc(b->scratch, 2 * maxv + 1, sizeof(int));
        if (!b->stamp)
            return op_err_set(err, OP_ENOMEM, "polys: reuse marks of %zu vertices", maxv);
        b->first = b->stamp + maxv;
    }
    for (int i = 0; i <= b->weld_mask; i++)
        b->weld_head[i] = -1;
    b->nverts = b->npolys = b->degenerate = 0;
    return OP_OK;
}

static uint32_t weld_hash(int32_t x, int32_t z)
{
    return (uint32_t)x * 0x8da6b343u ^ (uint32_t)z * 0xcb1ab31fu;
}

/* The first mesh vertex at (x, z) whose row is within 1 of y, or a new one. */
static op_status weld(build *b, int32_t x, int32_t y, int32_t z, int *out, op_err *err)
{
    uint32_t h = weld_hash(x, z) & (uint32_t)b->weld_mask;
    int found = -1;
    for (int i = b->weld_head[h]; i >= 0; i = b->weld_next[i]) {
        const int32_t *v = &b->verts[3 * i];
        if (v[0] == x && v[2] == z && v[1] - y <= 1 && y - v[1] <= 1 && (found < 0 || i < found))
            found = i;
    }
    if (found < 0) {
        if (b->nverts >= OP_MAX_TILE_MESH_VERTS)
            return op_err_set(err, OP_ELIMIT,
                              "polys: more than %d vertices in one polygon mesh "
                              "(OP_MAX_TILE_MESH_VERTS)",
                              OP_MAX_TILE_MESH_VERTS);
        found = b->nverts++;
        b->verts[3 * found] = x;
        b->verts[3 * found + 1] = y;
        b->verts[3 * found + 2] = z;
        b->weld_next[found] = b->weld_head[h];
        b->weld_head[h] = found;
    }
    *out = found;
    return OP_OK;
}

/* Per-contour working arrays (scratch). */
typedef struct contour_work {
    int n, nk;
    int *keep, *tmp, *vid;
    int32_t *x, *z, *nb;
    float *fx, *fz;
    op__tri *tris;
    op__polyset ps;
} contour_work;

static op_status work_alloc(build *b, int n, contour_work *w, op_err *err)
{
    size_t nvp = (size_t)b->nvp, un = (size_t)n;
    size_t bytes = un * (6 * sizeof(int) + 3 * sizeof(int32_t) + 2 * sizeof(float)) +
                   un * sizeof(op__tri) +
                   un * (nvp * (sizeof(int) + sizeof(int32_t)) + sizeof(int));
    unsigned char *m = op_arena_alloc(b->scratch, bytes);
    if (!m)
        return op_err_set(err, OP_ENOMEM, "polys: contour of %d vertices needs %zu bytes", n,
                          bytes);
    w->n = n;
    w->tris = (op__tri *)m;
    w->keep = (int *)(w->tris + n);
    w->tmp = w->keep + n;
    w->vid = w->tmp + 3 * un;
    w->ps.v = w->vid + n;
    w->ps.nv = w->ps.v + un * nvp;
    w->x = (int32_t *)(w->ps.nv + n);
    w->z = w->x + n;
    w->nb = w->z + n;
    w->ps.nb = w->nb + n;
    w->fx = (float *)(w->ps.nb + un * nvp);
    w->fz = w->fx + n;
    w->ps.nvp = b->nvp;
    w->ps.n = 0;
    return OP_OK;
}

/* Kept vertices (w->keep[0..nk) already chosen): positions, neighbour values, welded mesh
 * indices. */
static op_status load_ring(build *b, const op_contour *c, contour_work *w, op_err *err)
{
    for (int k = 0; k < w->nk; k++) {
        const op_contour_vert *v = &c->verts[w->keep[k]];
        w->x[k] = v->x;
        w->z[k] = v->z;
        w->nb[k] = v->neighbour;
        op_status st = weld(b, v->x, v->y, v->z, &w->vid[k], err);
        if (st != OP_OK)
            return st;
    }
    return OP_OK;
}

/* Float32 local positions of the kept vertices (what ear clipping reads). */
static void load_local(const build *b, contour_work *w)
{
    for (int k = 0; k < w->nk; k++) {
        w->fx[k] = op_tile_local(b->frame, w->x[k]);
        w->fz[k] = op_tile_local(b->frame, w->z[k]);
    }
}

/* Triangles in mesh indices; those with a repeated (welded) vertex are dropped. */
static void load_triangles(contour_work *w, int ntris)
{
    op__polyset *ps = &w->ps;
    ps->n = 0;
    for (int t = 0; t < ntris; t++) {
        const op__tri *tr = &w->tris[t];
        int a = w->vid[tr->v[0]], b = w->vid[tr->v[1]], c = w->vid[tr->v[2]];
        if (a == b || b == c || a == c)
            continue;
        int *v = &ps->v[ps->n * ps->nvp];
        int32_t *nb = &ps->nb[ps->n * ps->nvp];
        v[0] = a;
        v[1] = b;
        v[2] = c;
        for (int k = 0; k < 3; k++)
            nb[k] = tr->nb[k];
        for (int k = 3; k < ps->nvp; k++) {
            v[k] = -1;
            nb[k] = OP_EDGE_INTERNAL;
        }
        ps->nv[ps->n++] = 3;
    }
}

static void append_polys(build *b, const op_contour *c, const op__polyset *ps)
{
    size_t nvp = (size_t)b->nvp;
    for (int p = 0; p < ps->n; p++, b->npolys++) {
        memcpy(&b->pv[(size_t)b->npolys * nvp], &ps->v[(size_t)p * nvp], nvp * sizeof(int));
        memcpy(&b->pnb[(size_t)b->npolys * nvp], &ps->nb[(size_t)p * nvp], nvp * sizeof(int32_t));
        b->pnv[b->npolys] = ps->nv[p];
        b->regs[b->npolys] = (uint16_t)c->region;
        b->areas[b->npolys] = (uint8_t)c->area;
    }
}

/* ---- reuse of a base's polygons (build3d-runtime.md §5.12) ---- */

/* Candidates only: a match is checked vertex by vertex. */
static uint32_t contour_hash(const op_contour *c)
{
    uint32_t h = 2166136261u ^ (uint32_t)c->nverts;
    for (int k = 0; k < c->nverts; k++) {
        const op_contour_vert *v = &c->verts[k];
        h = (h ^ (uint32_t)v->x) * 16777619u;
        h = (h ^ (uint32_t)v->y) * 16777619u;
        h = (h ^ (uint32_t)v->z) * 16777619u;
    }
    return h;
}

/* Rules 12.2 and 12.3: the same vertices in order, neighbour values 0 at the same
 * positions, and equal base values at two kept vertices equal in c. */
static int same_input(const op__poly_base *pb, const op__poly_base_contour *q, const op_contour *c)
{
    if (q->nverts != c->nverts)
        return 0;
    for (int k = 0; k < c->nverts; k++) {
        const op_contour_vert *a = &q->verts[k], *v = &c->verts[k];
        if (a->x != v->x || a->y != v->y || a->z != v->z ||
            (a->neighbour == 0) != (v->neighbour == 0))
            return 0;
    }
    const int32_t *keep = pb->keep + q->kept_at, *same = pb->same_nb + q->kept_at;
    for (int j = 0; j < q->nk; j++)
        if (c->verts[keep[j]].neighbour != c->verts[keep[same[j]]].neighbour)
            return 0;
    return 1;
}

/* A base contour c may copy (any one meeting the rules gives the same polygons), or NULL. */
static const op__poly_base_contour *find_base(const op__poly_base *pb, const op_contour *c)
{
    uint32_t h = contour_hash(c);
    int lo = 0, hi = pb->count;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (pb->contours[pb->order[mid]].hash < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < pb->count && pb->contours[pb->order[lo]].hash == h; lo++) {
        const op__poly_base_contour *q = &pb->contours[pb->order[lo]];
        if (same_input(pb, q, c))
            return q;
    }
    return NULL;
}

/* Rule 12.4: the kept vertices fall on mesh vertices as the base's did (same classes). */
static int welds_match(build *b, const op__poly_base_contour *q, const contour_work *w, int tok)
{
    const int32_t *rep = b->base->weld_rep + q->kept_at;
    for (int j = 0; j < w->nk; j++) {
        int m = w->vid[j];
        if (rep[j] == j) {
            if (b->stamp[m] == tok)
                return 0; /* two base classes on one mesh vertex */
            b->stamp[m] = tok;
        } else if (m != w->vid[rep[j]]) {
            return 0; /* one base class on two mesh vertices */
        }
    }
    return 1;
}

/* The base's polygons of q with local vertices read through this build's welding and edge
 * values through c's own neighbour values. */
static void copy_polys(build *b, const op_contour *c, const op__poly_base_contour *q,
                       const contour_work *w)
{
    const op__poly_base *pb = b->base;
    size_t nvp = (size_t)b->nvp;
    for (int p = 0; p < q->npolys; p++, b->npolys++) {
        size_t at = ((size_t)q->polys_at + (size_t)p) * nvp, to = (size_t)b->npolys * nvp;
        for (size_t k = 0; k < nvp; k++) {
            int lv = pb->poly_v[at + k], le = pb->poly_e[at + k];
            b->pv[to + k] = lv < 0 ? -1 : w->vid[lv];
            b->pnb[to + k] = le < 0 ? OP_EDGE_INTERNAL : w->nb[le];
        }
        b->pnv[b->npolys] = pb->poly_nv[q->polys_at + p];
        b->regs[b->npolys] = (uint16_t)c->region;
        b->areas[b->npolys] = (uint8_t)c->area;
    }
    b->degenerate += q->degenerate;
}

/* Records contour `index` (computed: w holds its kept vertices, welding and merged
 * polygons). A contour with a neighbour value OP_EDGE_INTERNAL is left unrecorded: its
 * carried edges could not be told from diagonals. */
static void record(build *b, const op_contour *c, const contour_work *w, int index, int degenerate)
{
    op__poly_base *r = b->rec;
    op__poly_base_contour *q = &r->contours[index];
    int tok = index + 1, ok = 1, nk = w->nk;
    size_t nvp = (size_t)b->nvp;
    *q = (op__poly_base_contour){c->verts,      c->nverts, contour_hash(c), nk,
                                 (int)r->nkept, w->ps.n,   (int)r->npolys,  degenerate};
    int32_t *keep = r->keep + r->nkept, *rep = r->weld_rep + r->nkept,
            *same = r->same_nb + r->nkept;
    for (int j = 0; j < nk; j++) {
        int m = w->vid[j];
        if (b->stamp[m] != tok) {
            b->stamp[m] = tok;
            b->first[m] = j;
        }
        keep[j] = w->keep[j];
        rep[j] = b->first[m];
        int i = 0;
        while (w->nb[i] != w->nb[j])
            i++;
        same[j] = i;
        ok &= w->nb[j] != OP_EDGE_INTERNAL;
    }
    for (int p = 0; p < w->ps.n; p++) {
        size_t at = (r->npolys + (size_t)p) * nvp;
        int nv = w->ps.nv[p];
        r->poly_nv[r->npolys + (size_t)p] = (uint8_t)nv;
        for (size_t k = 0; k < nvp; k++) {
            int32_t lv = -1, le = -1;
            if ((int)k < nv) {
                lv = b->first[w->ps.v[p * w->ps.nvp + (int)k]];
                int32_t e = w->ps.nb[p * w->ps.nvp + (int)k];
                if (e != OP_EDGE_INTERNAL) {
                    le = 0;
                    while (le < nk && w->nb[le] != e)
                        le++;
                    if (le == nk)
                        ok = 0, le = -1;
                }
            }
            r->poly_v[at + k] = lv;
            r->poly_e[at + k] = le;
        }
    }
    if (!ok)
        q->nverts = 0;
    r->nkept += (size_t)nk;
    r->npolys += (size_t)w->ps.n;
}

static op_status polygonize_contour(build *b, const op_contour *c, int index, op_err *err)
{
    op_arena_mark mark = op_arena_get_mark(b->scratch);
    contour_work w;
    int ntris = 0;
    op_status st = work_alloc(b, c->nverts, &w, err);
    const op__poly_base_contour *q = st == OP_OK && b->base ? find_base(b->base, c) : NULL;
    if (st == OP_OK) {
        /* Equal positions and zero neighbours give the base's straight walls (rule 12). */
        if (q) {
            w.nk = q->nk;
            for (int j = 0; j < q->nk; j++)
                w.keep[j] = b->base->keep[q->kept_at + j];
        } else {
            w.nk = op__remove_straight_walls(c->verts, c->nverts, w.keep, w.tmp);
        }
        /* Welding is never skipped: mesh vertices are numbered by first appearance over
         * every contour, copied or not. */
        st = load_ring(b, c, &w, err);
    }
    if (st == OP_OK && q && welds_match(b, q, &w, index + 1)) {
        copy_polys(b, c, q, &w);
        b->reused++;
        op_arena_release(b->scratch, mark);
        return OP_OK;
    }
    int degenerate = b->degenerate;
    if (st == OP_OK) {
        load_local(b, &w);
        st = op__earclip(w.nk, w.x, w.z, w.fx, w.fz, w.nb, b->scratch, w.tris, &ntris,
                         &b->degenerate, err);
    }
    if (st == OP_OK) {
        load_triangles(&w, ntris);
        st = op__merge(&w.ps, b->verts, b->frame, b->scratch, err);
    }
    if (st == OP_OK && b->rec)
        record(b, c, &w, index, b->degenerate - degenerate);
    if (st == OP_OK)
        append_polys(b, c, &w.ps);
    op_arena_release(b->scratch, mark);
    return st;
}

static op_status copy_out(const build *b, op_arena *out, op_poly_mesh *mesh, op_err *err)
{
    size_t nv = (size_t)b->nverts, np = (size_t)b->npolys, nvp = (size_t)b->nvp;
    mesh->verts = op_arena_alloc(out, nv * 3 * sizeof(int32_t));
    mesh->polys = op_arena_alloc(out, np * nvp * sizeof(uint32_t));
    mesh->edge_neighbour = op_arena_alloc(out, np * nvp * sizeof(int32_t));
    mesh->regs = op_arena_alloc(out, np * sizeof(uint16_t));
    mesh->areas = op_arena_alloc(out, np);
    if (!mesh->verts || !mesh->polys || !mesh->edge_neighbour || !mesh->regs || !mesh->areas)
        return op_err_set(err, OP_ENOMEM, "polys: output of %zu vertices and %zu polygons", nv, np);
    memcpy(mesh->verts, b->verts, nv * 3 * sizeof(int32_t));
    for (size_t i = 0; i < np * nvp; i++) {
        int v = b->pv[i];
        mesh->polys[i] = v < 0 ? OP_POLY_MESH_NULL : (uint32_t)v;
        mesh->edge_neighbour[i] = v < 0 ? OP_EDGE_INTERNAL : b->pnb[i];
    }
    memcpy(mesh->regs, b->regs, np * sizeof(uint16_t));
    memcpy(mesh->areas, b->areas, np);
    mesh->nverts = b->nverts;
    mesh->npolys = b->npolys;
    mesh->nvp = b->nvp;
    mesh->degenerate_ears = b->degenerate;
    mesh->frame = *b->frame;
    return OP_OK;
}

static int same_frame(const op_tile_frame *a, const op_tile_frame *b)
{
    return a->border == b->border && a->tile_cells == b->tile_cells && a->cs == b->cs &&
           a->tile_size == b->tile_size && a->ch == b->ch;
}

static op_status rec_init(build *b, const op_contour_set *cset, op_arena *arena, op_err *err)
{
    op__poly_base *r = b->rec;
    size_t nk = 0, np = 0, n = (size_t)cset->count, nvp = (size_t)b->nvp;
    for (int i = 0; i < cset->count; i++) {
        nk += (size_t)cset->contours[i].nverts;
        np += (size_t)cset->contours[i].nverts - 2;
    }
    memset(r, 0, sizeof *r);
    r->frame = *b->frame;
    r->nvp = b->nvp;
    r->count = cset->count;
    r->contours = op_arena_alloc(arena, (n + 1) * sizeof *r->contours);
    r->order = op_arena_alloc(arena, (n + 1) * sizeof *r->order);
    r->keep = op_arena_alloc(arena, (3 * nk + 1) * sizeof *r->keep);
    r->poly_nv = op_arena_alloc(arena, np + 1);
    r->poly_v = op_arena_alloc(arena, (2 * np * nvp + 1) * sizeof *r->poly_v);
    if (!r->contours || !r->order || !r->keep || !r->poly_nv || !r->poly_v)
        return op_err_set(err, OP_ENOMEM, "polys: record of %d contours", cset->count);
    r->weld_rep = r->keep + nk;
    r->same_nb = r->weld_rep + nk;
    r->poly_e = r->poly_v + np * nvp;
    return OP_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The record's contours by (hash, index), what find_base searches. */
static op_status rec_order(build *b, op_err *err)
{
    op__poly_base *r = b->rec;
    uint64_t *keys = op_arena_alloc(b->scratch, ((size_t)r->count + 1) * sizeof *keys);
    if (!keys)
        return op_err_set(err, OP_ENOMEM, "polys: record of %d contours", r->count);
    for (int i = 0; i < r->count; i++)
        keys[i] = (uint64_t)r->contours[i].hash << 32 | (uint32_t)i;
    qsort(keys, (size_t)r->count, sizeof *keys, cmp_u64);
    for (int i = 0; i < r->count; i++)
        r->order[i] = (int)(keys[i] & 0xffffffffu);
    return OP_OK;
}

op_status op__polys_build_reuse(const op_contour_set *cset, const op_tile_frame *frame, int nvp,
                                const op__poly_base *base, int *reused, op__poly_base *rec,
                                op_arena *rec_arena, op_arena *out, op_arena *scratch,
                                op_poly_mesh *mesh, op_err *err)
{
    if (reused)
        *reused = 0;
    if (!mesh || !out || !scratch || (rec && !rec_arena))
        return op_err_set(err, OP_EINVAL, "polys: NULL argument");
    memset(mesh, 0, sizeof *mesh);
    op_status st = validate(cset, frame, nvp, err);
    if (st != OP_OK)
        return st;
    /* Rule 12.1; a recording build computes every contour. */
    if (rec || (base && (base->nvp != nvp || !same_frame(&base->frame, frame))))
        base = NULL;
    build b = {.frame = frame, .nvp = nvp, .scratch = scratch, .base = base, .rec = rec};
    /* The record first: rec_arena may be scratch, released below to this mark. */
    if (rec && (st = rec_init(&b, cset, rec_arena, err)) != OP_OK)
        return st;
    op_arena_mark mark = op_arena_get_mark(scratch);
    st = build_init(&b, cset, err);
    for (int i = 0; st == OP_OK && i < cset->count; i++)
        st = polygonize_contour(&b, &cset->contours[i], i, err);
    if (st == OP_OK && rec)
        st = rec_order(&b, err);
    if (st == OP_OK)
        st = copy_out(&b, out, mesh, err);
    op_arena_release(scratch, mark);
    if (st != OP_OK) {
        memset(mesh, 0, sizeof *mesh);
        return st;
    }
    if (reused)
        *reused = b.reused;
    op_err_clear(err);
    return OP_OK;
}

op_status op_polys_build(const op_contour_set *cset, const op_tile_frame *frame, int nvp,
                         op_arena *out, op_arena *scratch, op_poly_mesh *mesh, op_err *err)
{
    return op__polys_build_reuse(cset, frame, nvp, NULL, NULL, NULL, NULL, out, scratch, mesh, err);
}

/* ---- canonical dump ---- */

static int put(op_write_fn write, void *ctx, const char *buf, int len)
{
    if (len < 0)
        return 1;
    return write(ctx, buf, (size_t)len);
}

int op_polys_dump(const op_poly_mesh *mesh, op_write_fn write, void *ctx)
{
    char buf[256];
    int rc = put(write, ctx, buf,
                 snprintf(buf, sizeof buf, "polys nvp %d verts %d polys %d degenerate %d\n",
                          mesh->nvp, mesh->nverts, mesh->npolys, mesh->degenerate_ears));
    for (int i = 0; rc == 0 && i < mesh->nverts; i++) {
        const int32_t *v = &mesh->verts[3 * i];
        rc = put(write, ctx, buf,
                 snprintf(buf, sizeof buf, "v %d %d %d %d\n", i, (int)v[0], (int)v[1], (int)v[2]));
    }
    for (int p = 0; rc == 0 && p < mesh->npolys; p++) {
        int len = snprintf(buf, sizeof buf, "p %d reg %u area %u :", p, (unsigned)mesh->regs[p],
                           (unsigned)mesh->areas[p]);
        for (int k = 0; k < mesh->nvp; k++) {
            uint32_t v = mesh->polys[p * mesh->nvp + k];
            if (v == OP_POLY_MESH_NULL)
                break;
            len += snprintf(buf + len, sizeof buf - (size_t)len, " %u/%d", (unsigned)v,
                            (int)mesh->edge_neighbour[p * mesh->nvp + k]);
        }
        len += snprintf(buf + len, sizeof buf - (size_t)len, "\n");
        rc = put(write, ctx, buf, len);
    }
    return rc;
}
