/*
 * onepath render, what is drawn and in which colour (render.h): per polygon its mean
 * height, area, bounds and connected part (union-find over in-tile neighbours and stitched
 * links, so a part is what an agent can walk without leaving it); the view (--bounds, or
 * the mesh's bounds padded); the shown polygons (in the --y-range and the view) sorted
 * lowest first so that upper floors cover lower ones (islands last in connectivity mode).
 * Memory: plain malloc, one array per quantity, freed by render_scene_free.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/limits.h"
#include "render.h"

static long find(long *up, long i)
{
    while (up[i] != i)
        i = up[i] = up[up[i]];
    return i;
}

static void join(long *up, long a, long b)
{
    a = find(up, a);
    b = find(up, b);
    if (a != b) /* the lower index is the root, so roots are the parts' first polygons */
        up[a > b ? a : b] = a < b ? a : b;
}

int render_edge_is_wall(const op_mesh *m, op_polyref r, int k)
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    unsigned nei = t->neis[(size_t)r.poly * t->nvp + k];
    const op_link *l;
    if (nei != OP_NEI_WALL && !(nei & OP_NEI_PORTAL))
        return 0;
    return op_mesh_edge_links(m, r.tile, r.poly, k, &l) == 0;
}

static void poly_info(const op_mesh *m, op_polyref r, render_poly *p)
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    int n = op_tile_poly_nverts(t, r.poly);
    double w[OP_MAX_VERTS_PER_POLY][3];
    if (n > OP_MAX_VERTS_PER_POLY) /* op_mesh_add_tile validated nvp; keep the bound local */
        n = OP_MAX_VERTS_PER_POLY;
    p->ref = r;
    p->y = p->area = 0;
    p->box[0] = p->box[1] = INFINITY;
    p->box[2] = p->box[3] = -INFINITY;
    for (int k = 0; k < n; k++) {
        op_tile_world_vert(t, t->polys[(size_t)r.poly * t->nvp + k], w[k]);
        p->y += w[k][1] / n;
        p->box[0] = fmin(p->box[0], w[k][0]);
        p->box[1] = fmin(p->box[1], w[k][2]);
        p->box[2] = fmax(p->box[2], w[k][0]);
        p->box[3] = fmax(p->box[3], w[k][2]);
    }
    for (int k = 0; k < n; k++) { /* counter-clockwise with x right, z up */
        const double *a = w[k], *b = w[(k + 1) % n];
        p->area += (a[0] * b[2] - b[0] * a[2]) / 2;
    }
}

/* Parts over in-tile neighbours and links; part ids in order of first polygon. */
static int find_parts(render_scene *sc, long *up)
{
    const op_mesh *m = sc->m;
    for (long i = 0; i < sc->npolys; i++)
        up[i] = i;
    for (long i = 0; i < sc->npolys; i++) {
        op_polyref r = sc->polys[i].ref;
        const op_tile *t = op_mesh_tile(m, r.tile);
        for (int k = 0; k < op_tile_poly_nverts(t, r.poly); k++) {
            unsigned nei = t->neis[(size_t)r.poly * t->nvp + k];
            if (nei != OP_NEI_WALL && !(nei & OP_NEI_PORTAL))
                join(up, i, op_mesh_poly_index(m, (op_polyref){r.tile, (int)nei - 1}));
            const op_link *l;
            int nl = op_mesh_edge_links(m, r.tile, r.poly, k, &l);
            for (int q = 0; q < nl; q++)
                join(up, i, op_mesh_poly_index(m, (op_polyref){l[q].nei_tile, l[q].nei_poly}));
        }
    }
    sc->nparts = 0;
    for (long i = 0; i < sc->npolys; i++) /* roots come first in index order */
        sc->polys[i].part = find(up, i) == i ? sc->nparts++ : sc->polys[find(up, i)].part;
    sc->part_area = calloc((size_t)sc->nparts + 1, sizeof *sc->part_area);
    sc->part_polys = calloc((size_t)sc->nparts + 1, sizeof *sc->part_polys);
    if (!sc->part_area || !sc->part_polys)
        return 1;
    for (long i = 0; i < sc->npolys; i++) {
        sc->part_area[sc->polys[i].part] += sc->polys[i].area;
        sc->part_polys[sc->polys[i].part]++;
    }
    sc->largest = 0;
    for (int c = 1; c < sc->nparts; c++)
        if (sc->part_area[c] > sc->part_area[sc->largest])
            sc->largest = c;
    return 0;
}

static void make_view(render_scene *sc)
{
    const render_opts *o = sc->o;
    if (o->have_bounds) {
        memcpy(sc->view, o->bounds, sizeof sc->view);
        return;
    }
    double v[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
    for (long i = 0; i < sc->npolys; i++)
        for (int k = 0; k < 4; k++)
            v[k] = k < 2 ? fmin(v[k], sc->polys[i].box[k]) : fmax(v[k], sc->polys[i].box[k]);
    if (sc->npolys == 0)
        v[0] = v[1] = 0, v[2] = v[3] = 1;
    double pad = fmax(0.5, 0.02 * fmax(v[2] - v[0], v[3] - v[1]));
    sc->view[0] = v[0] - pad;
    sc->view[1] = v[1] - pad;
    sc->view[2] = v[2] + pad;
    sc->view[3] = v[3] + pad;
}

/* Drawing order: lowest first; with --color connectivity everything unreachable from the
 * largest part comes after it (an island hidden under a floor, such as the ground inside a
 * closed box, must still show). */
typedef struct draw_key {
    int late;
    double y;
    long i;
} draw_key;

static int by_order(const void *a, const void *b)
{
    const draw_key *p = a, *q = b;
    if (p->late != q->late)
        return p->late - q->late;
    return p->y < q->y ? -1 : p->y > q->y ? 1 : (p->i > q->i) - (p->i < q->i);
}

static int choose_shown(render_scene *sc)
{
    const render_opts *o = sc->o;
    const double *v = sc->view;
    draw_key *keys = malloc(((size_t)sc->npolys + 1) * sizeof *keys);
    if (!keys)
        return 1;
    sc->nshown = 0;
    sc->ylo = INFINITY;
    sc->yhi = -INFINITY;
    for (long i = 0; i < sc->npolys; i++) {
        const render_poly *p = &sc->polys[i];
        if (o->have_y && (p->y < o->ymin || p->y > o->ymax))
            continue;
        if (p->box[2] < v[0] || p->box[0] > v[2] || p->box[3] < v[1] || p->box[1] > v[3])
            continue;
        int late = o->colour == RENDER_CONNECTIVITY && p->part != sc->largest;
        keys[sc->nshown++] = (draw_key){late, p->y, i};
        sc->ylo = fmin(sc->ylo, p->y);
        sc->yhi = fmax(sc->yhi, p->y);
    }
    qsort(keys, (size_t)sc->nshown, sizeof *keys, by_order);
    for (long k = 0; k < sc->nshown; k++)
        sc->shown[k] = keys[k].i;
    free(keys);
    return 0;
}

int render_scene_build(render_scene *sc, const op_mesh *m, const render_opts *o)
{
    memset(sc, 0, sizeof *sc);
    sc->m = m;
    sc->o = o;
    sc->npolys = op_mesh_poly_count(m);
    size_t n = (size_t)sc->npolys + 1;
    sc->polys = malloc(n * sizeof *sc->polys);
    sc->shown = malloc(n * sizeof *sc->shown);
    long *up = malloc(n * sizeof *up);
    int rc = 1;
    if (!sc->polys || !sc->shown || !up)
        goto done;
    for (int t = 0; t < op_mesh_tile_count(m); t++)
        for (int p = 0; p < op_mesh_tile(m, t)->npolys; p++) {
            op_polyref r = {t, p};
            poly_info(m, r, &sc->polys[op_mesh_poly_index(m, r)]);
        }
    if (find_parts(sc, up))
        goto done;
    make_view(sc);
    if (choose_shown(sc))
        goto done;
    rc = 0;
done:
    free(up);
    return rc;
}

void render_scene_free(render_scene *sc)
{
    free(sc->polys);
    free(sc->shown);
    free(sc->part_area);
    free(sc->part_polys);
    memset(sc, 0, sizeof *sc);
}
