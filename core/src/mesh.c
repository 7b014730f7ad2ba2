/*
 * The mesh (docs/spec/navmesh-format.md §5, §6): tile layers kept in key order (tz, tx,
 * layer), each a private copy in the mesh's arena, portal stitching across tile cells and
 * seam stitching between the layers of one cell. Input: tiles (op_tile, validated on
 * entry); output: per polygon edge, its ordered links to polygons of neighbouring tile
 * cells or other layers. Invariants: keys distinct, tiles sorted, links mutual (the §5.3
 * and §6 rules are symmetric and both sides are computed by the same code), the layers of
 * one cell share their origin x and z. Typical sizes: a few hundred tiles of a few hundred
 * polygons, a few links per portal edge.
 */
#include <stdlib.h>
#include <string.h>

#include "onepath/hash.h"
#include "onepath/mesh.h"
#include "predicates.h"

/* Portal edges of one tile on one side, or its seam edges, in (poly, edge) order. */
typedef struct side_edges {
    int n;
    int *pe; /* n * 2: poly, edge */
} side_edges;

typedef struct tile_aux {
    long poly_base;
    int *edge_first; /* npolys * nvp + 1 offsets into links */
    op_link *links;
    side_edges side[4];
    side_edges seams;
} tile_aux;

struct op_mesh {
    op_settings s;
    op_arena *tiles_arena; /* tile copies */
    op_arena *link_arena;  /* stitching results; reset on every stitch */
    int ntiles, cap;
    op_tile *tiles; /* sorted by key */
    tile_aux *aux;  /* one per tile, valid when stitched */
    int stitched;
    long npolys, nlinks;
};

static const int side_dx[4] = {-1, 0, 1, 0};
static const int side_dz[4] = {0, 1, 0, -1};

/* ---- tiles ---- */

int op_tile_poly_nverts(const op_tile *t, int p)
{
    const uint16_t *pv = &t->polys[(size_t)p * t->nvp];
    int n = 0;
    while (n < t->nvp && pv[n] != OP_POLY_NULL)
        n++;
    return n;
}

void op_tile_world_vert(const op_tile *t, int v, double out[3])
{
    for (int i = 0; i < 3; i++)
        out[i] = t->origin[i] + (double)t->verts[3 * v + i];
}

static void *copy_array(op_arena *a, const void *src, size_t bytes, int *fail)
{
    void *d = op_arena_alloc(a, bytes ? bytes : 1);
    if (!d) {
        *fail = 1;
        return NULL;
    }
    if (bytes)
        memcpy(d, src, bytes);
    return d;
}

op_status op_tile_copy(const op_tile *src, op_arena *a, op_tile *dst, op_err *err)
{
    size_t np = (size_t)src->npolys, nvp = (size_t)src->nvp;
    int fail = 0;
    *dst = *src;
    dst->verts = copy_array(a, src->verts, (size_t)src->nverts * 3 * sizeof(float), &fail);
    dst->polys = copy_array(a, src->polys, np * nvp * sizeof(uint16_t), &fail);
    dst->neis = copy_array(a, src->neis, np * nvp * sizeof(uint16_t), &fail);
    dst->areas = copy_array(a, src->areas, np, &fail);
    dst->flags = copy_array(a, src->flags, np * sizeof(uint16_t), &fail);
    dst->regs = src->regs ? copy_array(a, src->regs, np * sizeof(uint16_t), &fail) : NULL;
    dst->dmeshes = copy_array(a, src->dmeshes, np * 4 * sizeof(uint32_t), &fail);
    dst->dverts = copy_array(a, src->dverts, (size_t)src->ndverts * 3 * sizeof(float), &fail);
    dst->dtris = copy_array(a, src->dtris, (size_t)src->ndtris * 4, &fail);
    if (fail)
        return op_err_set(err, OP_ENOMEM, "mesh: out of memory copying tile (%d, %d, %d)", src->tx,
                          src->tz, src->layer);
    return OP_OK;
}

/* Key order: tz, then tx, then layer. */
static int key_cmp(int tz, int tx, int layer, const op_tile *t)
{
    if (tz != t->tz)
        return tz < t->tz ? -1 : 1;
    if (tx != t->tx)
        return tx < t->tx ? -1 : 1;
    if (layer != t->layer)
        return layer < t->layer ? -1 : 1;
    return 0;
}

/* First tile index whose key is >= (tz, tx, layer). */
static int lower_bound(const op_mesh *m, int tz, int tx, int layer)
{
    int lo = 0, hi = m->ntiles;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (key_cmp(tz, tx, layer, &m->tiles[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

op_status op_mesh_create(const op_settings *s, op_mesh **out, op_err *err)
{
    *out = NULL;
    op_status st = op_settings_validate(s, err);
    if (st != OP_OK)
        return st;
    op_mesh *m = calloc(1, sizeof *m);
    if (!m)
        return op_err_set(err, OP_ENOMEM, "mesh: out of memory (%zu bytes)", sizeof *m);
    m->s = *s;
    m->tiles_arena = op_arena_create(256 * 1024);
    m->link_arena = op_arena_create(64 * 1024);
    if (!m->tiles_arena || !m->link_arena) {
        op_mesh_destroy(m);
        return op_err_set(err, OP_ENOMEM, "mesh: out of memory (arenas)");
    }
    *out = m;
    return OP_OK;
}

void op_mesh_destroy(op_mesh *m)
{
    if (!m)
        return;
    op_arena_destroy(m->tiles_arena);
    op_arena_destroy(m->link_arena);
    free(m->tiles);
    free(m->aux);
    free(m);
}

/* The first other layer of t's tile cell, or -1. */
static int cell_sibling(const op_mesh *m, const op_tile *t)
{
    int i = lower_bound(m, t->tz, t->tx, -1);
    if (i < m->ntiles && m->tiles[i].tz == t->tz && m->tiles[i].tx == t->tx &&
        m->tiles[i].layer == t->layer)
        i++;
    return (i < m->ntiles && m->tiles[i].tz == t->tz && m->tiles[i].tx == t->tx) ? i : -1;
}

static op_status check_tile(const op_mesh *m, const op_tile *t, op_err *err)
{
    op_status st = op_tile_validate(t, err);
    if (st != OP_OK)
        return st;
    if (t->npolys <= 0)
        return op_err_set(err, OP_EINVAL, "mesh: tile (%d, %d, %d) has no polygons", t->tx, t->tz,
                          t->layer);
    if (t->tile_size != m->s.tile_size)
        return op_err_set(err, OP_EINVAL, "mesh: tile (%d, %d, %d) tile_size %g != settings %g",
                          t->tx, t->tz, t->layer, t->tile_size, m->s.tile_size);
    if (t->nvp != m->s.max_verts_per_poly)
        return op_err_set(err, OP_EINVAL, "mesh: tile (%d, %d, %d) nvp %d != settings %d", t->tx,
                          t->tz, t->layer, t->nvp, m->s.max_verts_per_poly);
    int sib = cell_sibling(m, t);
    if (sib >= 0 &&
        (m->tiles[sib].origin[0] != t->origin[0] || m->tiles[sib].origin[2] != t->origin[2]))
        return op_err_set(err, OP_EINVAL,
                          "mesh: tile (%d, %d, %d) origin (%.17g, %.17g) differs from layer %d's "
                          "(%.17g, %.17g)",
                          t->tx, t->tz, t->layer, t->origin[0], t->origin[2], m->tiles[sib].layer,
                          m->tiles[sib].origin[0], m->tiles[sib].origin[2]);
    return OP_OK;
}

op_status op_mesh_add_tile(op_mesh *m, const op_tile *t, op_err *err)
{
    op_status st = check_tile(m, t, err);
    if (st != OP_OK)
        return st;
    int at = lower_bound(m, t->tz, t->tx, t->layer);
    if (at < m->ntiles && key_cmp(t->tz, t->tx, t->layer, &m->tiles[at]) == 0)
        return op_err_set(err, OP_EINVAL, "mesh: tile (%d, %d, %d) is already present", t->tx,
                          t->tz, t->layer);
    if (m->ntiles == m->cap) {
        int cap = m->cap ? 2 * m->cap : 16;
        op_tile *nt = realloc(m->tiles, (size_t)cap * sizeof *nt);
        if (!nt)
            return op_err_set(err, OP_ENOMEM, "mesh: out of memory (%d tiles)", cap);
        m->tiles = nt;
        m->cap = cap;
    }
    op_tile copy;
    if ((st = op_tile_copy(t, m->tiles_arena, &copy, err)) != OP_OK)
        return st;
    memmove(&m->tiles[at + 1], &m->tiles[at], (size_t)(m->ntiles - at) * sizeof *m->tiles);
    m->tiles[at] = copy;
    m->ntiles++;
    m->stitched = 0;
    return OP_OK;
}

/* ---- stitching (§5) ---- */

typedef struct world_edge {
    double u0, u1;         /* interval along the boundary, u0 < u1 (or equal: degenerate) */
    double ua, ya, ub, yb; /* the two ends as (u, y) */
} world_edge;

static void edge_world(const op_tile *t, int p, int k, int side, world_edge *e)
{
    const uint16_t *pv = &t->polys[(size_t)p * t->nvp];
    int n = op_tile_poly_nverts(t, p);
    double a[3], b[3];
    op_tile_world_vert(t, pv[k], a);
    op_tile_world_vert(t, pv[(k + 1) % n], b);
    int ax = (side == 0 || side == 2) ? 2 : 0; /* u: z on sides 0 and 2, x on 1 and 3 */
    e->ua = a[ax];
    e->ya = a[1];
    e->ub = b[ax];
    e->yb = b[1];
    e->u0 = e->ua < e->ub ? e->ua : e->ub;
    e->u1 = e->ua < e->ub ? e->ub : e->ua;
}

/* Linear interpolation of y along the edge at u (u within the edge's interval). */
static double edge_y(const world_edge *e, double u)
{
    if (e->ub == e->ua)
        return e->ya;
    return e->ya + (e->yb - e->ya) * ((u - e->ua) / (e->ub - e->ua));
}

/* §5.2-5.3: overlap and height check. Fills o0, o1 on success. */
static int edges_link(const world_edge *a, const world_edge *b, double tol, double *o0, double *o1)
{
    double lo = a->u0 > b->u0 ? a->u0 : b->u0;
    double hi = a->u1 < b->u1 ? a->u1 : b->u1;
    if (!(lo < hi))
        return 0;
    double d0 = edge_y(a, lo) - edge_y(b, lo), d1 = edge_y(a, hi) - edge_y(b, hi);
    if (!(d0 <= tol && -d0 <= tol && d1 <= tol && -d1 <= tol))
        return 0;
    *o0 = lo;
    *o1 = hi;
    return 1;
}

static op_status collect_sides(op_mesh *m, int i, op_err *err)
{
    const op_tile *t = &m->tiles[i];
    tile_aux *x = &m->aux[i];
    size_t cap = (size_t)t->npolys * (size_t)t->nvp;
    for (int s = 0; s < 5; s++) {
        side_edges *se = s < 4 ? &x->side[s] : &x->seams;
        se->n = 0;
        se->pe = op_arena_alloc(m->link_arena, (cap ? cap : 1) * 2 * sizeof(int));
        if (!se->pe)
            return op_err_set(err, OP_ENOMEM, "mesh: out of memory (portal lists)");
    }
    for (int p = 0; p < t->npolys; p++) {
        int n = op_tile_poly_nverts(t, p);
        for (int k = 0; k < n; k++) {
            uint16_t v = t->neis[(size_t)p * t->nvp + k];
            if (!(v & OP_NEI_PORTAL))
                continue;
            side_edges *se = OP_NEI_IS_SEAM(v) ? &x->seams : &x->side[v & 3u];
            se->pe[2 * se->n] = p;
            se->pe[2 * se->n + 1] = k;
            se->n++;
        }
    }
    return OP_OK;
}

/* Seam edge (p, k) of a as a world_edge of u = the tile-local x (z when its ends have the
 * same x) and world y; *ax the axis. Both layers of a cell share x and z origins, so their
 * local coordinates compare exactly (§6). */
static void seam_edge(const op_tile *t, int p, int k, world_edge *e, int *ax)
{
    const uint16_t *pv = &t->polys[(size_t)p * t->nvp];
    int n = op_tile_poly_nverts(t, p);
    const float *a = &t->verts[3 * pv[k]], *b = &t->verts[3 * pv[(k + 1) % n]];
    *ax = a[0] != b[0] ? 0 : 2;
    e->ua = a[*ax];
    e->ub = b[*ax];
    e->ya = t->origin[1] + (double)a[1];
    e->yb = t->origin[1] + (double)b[1];
    e->u0 = e->ua < e->ub ? e->ua : e->ub;
    e->u1 = e->ua < e->ub ? e->ub : e->ua;
}

/* §6: both ends of b's edge on the line of a's, the two running in opposite directions
 * along it, then the overlap and height rule of §5.2-5.3. */
static int seams_link(const op_tile *ta, int pa, int ka, const op_tile *tb, int pb, int kb,
                      double tol, op_link *l)
{
    const uint16_t *va = &ta->polys[(size_t)pa * ta->nvp], *vb = &tb->polys[(size_t)pb * tb->nvp];
    int na = op_tile_poly_nverts(ta, pa), nb = op_tile_poly_nverts(tb, pb);
    const float *a0 = &ta->verts[3 * va[ka]], *a1 = &ta->verts[3 * va[(ka + 1) % na]];
    const float *b0 = &tb->verts[3 * vb[kb]], *b1 = &tb->verts[3 * vb[(kb + 1) % nb]];
    if (op__orient2d(a0[0], a0[2], a1[0], a1[2], b0[0], b0[2]) != 0 ||
        op__orient2d(a0[0], a0[2], a1[0], a1[2], b1[0], b1[2]) != 0)
        return 0;
    world_edge ea, eb;
    int ax, bx;
    seam_edge(ta, pa, ka, &ea, &ax);
    seam_edge(tb, pb, kb, &eb, &bx);
    if (ax != bx || (ea.ua < ea.ub) == (eb.ua < eb.ub))
        return 0;
    double o0, o1;
    if (!edges_link(&ea, &eb, tol, &o0, &o1))
        return 0;
    l->axis = ax;
    l->o0 = ta->origin[ax] + o0;
    l->o1 = ta->origin[ax] + o1;
    return 1;
}

/* The links of seam edge (p, k) of tile i: seam edges of the layer it names in the same
 * cell that name i's layer (§6). */
static int seam_links(const op_mesh *m, int i, int p, int k, op_link *out)
{
    const op_tile *t = &m->tiles[i];
    int j = op_mesh_find_tile(m, t->tx, t->tz, OP_NEI_SEAM_LAYER(t->neis[(size_t)p * t->nvp + k]));
    if (j < 0)
        return 0;
    const op_tile *u = &m->tiles[j];
    const side_edges *se = &m->aux[j].seams;
    double tol = m->s.agent_max_climb + m->s.cell_height;
    int n = 0;
    for (int q = 0; q < se->n; q++) {
        int qp = se->pe[2 * q], qk = se->pe[2 * q + 1];
        op_link l = {p, k, j, qp, qk, 0, 0.0, 0.0};
        if (OP_NEI_SEAM_LAYER(u->neis[(size_t)qp * u->nvp + qk]) != t->layer ||
            !seams_link(t, p, k, u, qp, qk, tol, &l))
            continue;
        if (out)
            out[n] = l;
        n++;
    }
    return n;
}

/* Visits the links of edge (p, k) of tile i in §5.4 order; out == NULL only counts. */
static int edge_links(const op_mesh *m, int i, int p, int k, op_link *out)
{
    const op_tile *t = &m->tiles[i];
    uint16_t v = t->neis[(size_t)p * t->nvp + k];
    if (!(v & OP_NEI_PORTAL))
        return 0;
    if (OP_NEI_IS_SEAM(v))
        return seam_links(m, i, p, k, out);
    int s = (int)(v & 3u), os = (s + 2) % 4;
    int ntx = t->tx + side_dx[s], ntz = t->tz + side_dz[s];
    double tol = m->s.agent_max_climb + m->s.cell_height;
    world_edge a, b;
    edge_world(t, p, k, s, &a);
    int n = 0;
    for (int j = lower_bound(m, ntz, ntx, -1);
         j < m->ntiles && m->tiles[j].tz == ntz && m->tiles[j].tx == ntx; j++) {
        const side_edges *se = &m->aux[j].side[os];
        for (int q = 0; q < se->n; q++) {
            double o0, o1;
            edge_world(&m->tiles[j], se->pe[2 * q], se->pe[2 * q + 1], os, &b);
            if (!edges_link(&a, &b, tol, &o0, &o1))
                continue;
            if (out) {
                op_link l = {p,  k, j, se->pe[2 * q], se->pe[2 * q + 1], (s == 0 || s == 2) ? 2 : 0,
                             o0, o1};
                out[n] = l;
            }
            n++;
        }
    }
    return n;
}

static op_status stitch_tile(op_mesh *m, int i, op_err *err)
{
    const op_tile *t = &m->tiles[i];
    tile_aux *x = &m->aux[i];
    size_t ne = (size_t)t->npolys * (size_t)t->nvp;
    x->edge_first = op_arena_alloc(m->link_arena, (ne + 1) * sizeof(int));
    if (!x->edge_first)
        return op_err_set(err, OP_ENOMEM, "mesh: out of memory (edge links)");
    int total = 0;
    for (int p = 0; p < t->npolys; p++) {
        int n = op_tile_poly_nverts(t, p);
        for (int k = 0; k < t->nvp; k++) {
            x->edge_first[(size_t)p * t->nvp + k] = total;
            if (k < n)
                total += edge_links(m, i, p, k, NULL);
        }
    }
    x->edge_first[ne] = total;
    x->links = op_arena_alloc(m->link_arena, ((size_t)total + 1) * sizeof *x->links);
    if (!x->links)
        return op_err_set(err, OP_ENOMEM, "mesh: out of memory (%d links)", total);
    for (int p = 0; p < t->npolys; p++) {
        int n = op_tile_poly_nverts(t, p);
        for (int k = 0; k < n; k++)
            edge_links(m, i, p, k, &x->links[x->edge_first[(size_t)p * t->nvp + k]]);
    }
    m->nlinks += total;
    return OP_OK;
}

op_status op_mesh_stitch(op_mesh *m, op_err *err)
{
    if (m->stitched)
        return OP_OK;
    op_arena_reset(m->link_arena);
    free(m->aux);
    m->aux = calloc((size_t)(m->ntiles ? m->ntiles : 1), sizeof *m->aux);
    if (!m->aux)
        return op_err_set(err, OP_ENOMEM, "mesh: out of memory (%d tiles)", m->ntiles);
    m->npolys = 0;
    m->nlinks = 0;
    op_status st;
    for (int i = 0; i < m->ntiles; i++) {
        m->aux[i].poly_base = m->npolys;
        m->npolys += m->tiles[i].npolys;
        if ((st = collect_sides(m, i, err)) != OP_OK)
            return st;
    }
    for (int i = 0; i < m->ntiles; i++)
        if ((st = stitch_tile(m, i, err)) != OP_OK)
            return st;
    m->stitched = 1;
    return OP_OK;
}

/* ---- accessors ---- */

int op_mesh_is_stitched(const op_mesh *m)
{
    return m->stitched;
}
const op_settings *op_mesh_settings(const op_mesh *m)
{
    return &m->s;
}
int op_mesh_tile_count(const op_mesh *m)
{
    return m->ntiles;
}

const op_tile *op_mesh_tile(const op_mesh *m, int i)
{
    return (i >= 0 && i < m->ntiles) ? &m->tiles[i] : NULL;
}

int op_mesh_find_tile(const op_mesh *m, int tx, int tz, int layer)
{
    int i = lower_bound(m, tz, tx, layer);
    return (i < m->ntiles && key_cmp(tz, tx, layer, &m->tiles[i]) == 0) ? i : -1;
}

long op_mesh_poly_count(const op_mesh *m)
{
    long n = 0;
    for (int i = 0; i < m->ntiles; i++)
        n += m->tiles[i].npolys;
    return n;
}

long op_mesh_poly_index(const op_mesh *m, op_polyref r)
{
    if (m->stitched)
        return m->aux[r.tile].poly_base + r.poly;
    long n = 0;
    for (int i = 0; i < r.tile; i++)
        n += m->tiles[i].npolys;
    return n + r.poly;
}

int op_mesh_edge_links(const op_mesh *m, int tile, int poly, int edge, const op_link **links)
{
    *links = NULL;
    if (!m->stitched || tile < 0 || tile >= m->ntiles)
        return 0;
    const op_tile *t = &m->tiles[tile];
    if (poly < 0 || poly >= t->npolys || edge < 0 || edge >= t->nvp)
        return 0;
    const tile_aux *x = &m->aux[tile];
    size_t e = (size_t)poly * t->nvp + edge;
    *links = &x->links[x->edge_first[e]];
    return x->edge_first[e + 1] - x->edge_first[e];
}

long op_mesh_link_count(const op_mesh *m)
{
    return m->stitched ? m->nlinks : 0;
}

/* ---- canonical dump hash (tests) ---- */

static uint64_t hash_i(uint64_t h, long v)
{
    int64_t x = v;
    return op_hash_update(h, &x, sizeof x);
}

uint64_t op_mesh_dump_hash(const op_mesh *m)
{
    uint64_t h = OP_HASH_INIT;
    for (int i = 0; i < m->ntiles; i++) {
        const op_tile *t = &m->tiles[i];
        h = hash_i(hash_i(hash_i(h, t->tx), t->tz), t->layer);
        h = op_hash_update(h, t->verts, (size_t)t->nverts * 3 * sizeof(float));
        h = op_hash_update(h, t->polys, (size_t)t->npolys * t->nvp * sizeof(uint16_t));
        h = op_hash_update(h, t->neis, (size_t)t->npolys * t->nvp * sizeof(uint16_t));
        for (int p = 0; m->stitched && p < t->npolys; p++)
            for (int k = 0; k < t->nvp; k++) {
                const op_link *l;
                int n = op_mesh_edge_links(m, i, p, k, &l);
                for (int q = 0; q < n; q++) {
                    h = hash_i(hash_i(hash_i(h, l[q].poly), l[q].edge), l[q].nei_tile);
                    h = hash_i(hash_i(h, l[q].nei_poly), l[q].nei_edge);
                    h = op_hash_update(h, &l[q].o0, sizeof(double));
                    h = op_hash_update(h, &l[q].o1, sizeof(double));
                }
            }
    }
    return h;
}
