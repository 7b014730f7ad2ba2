/*
 * Query properties on seeded random meshes: a 3 x 3 tile world of square cells, each
 * tile at its own resolution (cells of 1, 2 or 5 units, so tile borders have
 * T-junctions) with random holes. Oracle: a breadth-first search over the unit cells
 * the polygons cover (4-neighbourhood), independent of stitching and A*. Checked:
 * a complete corridor exists exactly when the oracle connects the two cells; corridor
 * polygons are consecutive neighbours; every straight segment's sample points lie in
 * some corridor polygon; tile crossings lie on tile lines; results repeat exactly.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "onepath/query.h"
#include "op_handmesh.h"
#include "op_test.h"

#define TILES 3
#define TS    10
#define W     (TILES * TS)

typedef struct world {
    unsigned char unit[W][W]; /* covered unit cells [x][z] */
    int res[TILES][TILES];
    op_mesh *m;
} world;

static op_arena *arena, *out, *scratch;

static void setup(void)
{
    arena = op_arena_create(0);
    out = op_arena_create(0);
    scratch = op_arena_create(0);
}
static void teardown(void)
{
    op_arena_destroy(arena);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
}

/* One tile at resolution r: grid vertices, a square polygon per kept cell. */
static int make_tile(world *w, op_test_rng *rng, int tx, int tz, op_tile *t)
{
    static const int resolutions[3] = {1, 2, 5};
    int r = resolutions[op_test_rand_int(rng, 0, 2)], n = TS / r, nv = (n + 1) * (n + 1);
    w->res[tx][tz] = r;
    float *v = malloc(sizeof(float) * 3 * (size_t)nv);
    int *p = malloc(sizeof(int) * HM_NVP * (size_t)(n * n)), np = 0;
    for (int j = 0; j <= n; j++)
        for (int i = 0; i <= n; i++) {
            float *q = &v[3 * (j * (n + 1) + i)];
            q[0] = (float)(i * r);
            q[1] = 0.0f;
            q[2] = (float)(j * r);
        }
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            if (op_test_rand_int(rng, 0, 99) < 22)
                continue; /* a hole */
            int a = j * (n + 1) + i, *o = &p[HM_NVP * np++];
            o[0] = a;
            o[1] = a + 1;
            o[2] = a + n + 2;
            o[3] = a + n + 1;
            o[4] = o[5] = -1;
            for (int x = 0; x < r; x++)
                for (int z = 0; z < r; z++)
                    w->unit[tx * TS + i * r + x][tz * TS + j * r + z] = 1;
        }
    int rc = np > 0 ? hm_tile(arena, tx, tz, 0, TS, 0.0, v, nv, p, np, NULL, t) : 1;
    free(v);
    free(p);
    return rc;
}

static void make_world(world *w, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    op_test_rng rng = {seed};
    op_settings s;
    hm_settings(&s);
    op_err e;
    cr_assert_eq(op_mesh_create(&s, &w->m, &e), OP_OK);
    for (int tz = 0; tz < TILES; tz++)
        for (int tx = 0; tx < TILES; tx++) {
            op_tile t;
            if (make_tile(w, &rng, tx, tz, &t) == 0)
                cr_assert_eq(op_mesh_add_tile(w->m, &t, &e), OP_OK, "%s", e.msg);
        }
    cr_assert_eq(op_mesh_stitch(w->m, &e), OP_OK, "%s", e.msg);
}

/* Oracle: unit cells reachable from (x, z). */
static void flood(const world *w, int x, int z, unsigned char seen[W][W])
{
    static int stack[W * W][2];
    memset(seen, 0, W * W);
    int n = 0;
    stack[n][0] = x;
    stack[n++][1] = z;
    seen[x][z] = 1;
    while (n > 0) {
        n--;
        int cx = stack[n][0], cz = stack[n][1];
        const int d[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
        for (int k = 0; k < 4; k++) {
            int nx = cx + d[k][0], nz = cz + d[k][1];
            if (nx < 0 || nz < 0 || nx >= W || nz >= W || !w->unit[nx][nz] || seen[nx][nz])
                continue;
            seen[nx][nz] = 1;
            stack[n][0] = nx;
            stack[n++][1] = nz;
        }
    }
}

static int in_poly_eps(const op_mesh *m, op_polyref r, double x, double z)
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    int n = op_tile_poly_nverts(t, r.poly);
    for (int k = 0; k < n; k++) {
        double a[3], b[3];
        op_tile_world_vert(t, t->polys[(size_t)r.poly * t->nvp + k], a);
        op_tile_world_vert(t, t->polys[(size_t)r.poly * t->nvp + (k + 1) % n], b);
        if ((b[0] - a[0]) * (z - a[2]) - (b[2] - a[2]) * (x - a[0]) < -1e-9)
            return 0;
    }
    return 1;
}

static void check_straight(const op_mesh *m, const op_path *p, const op_straight_path *sp)
{
    for (int i = 0; i + 1 < sp->npoints; i++) {
        const double *a = sp->points[i].pos, *b = sp->points[i + 1].pos;
        for (int k = 0; k <= 16; k++) {
            double s = k / 16.0, x = a[0] + (b[0] - a[0]) * s, z = a[2] + (b[2] - a[2]) * s;
            int on = 0;
            for (int q = 0; q < p->npolys && !on; q++)
                on = in_poly_eps(m, p->polys[q], x, z);
            cr_assert(on, "segment %d sample %d (%g, %g) is off the corridor", i, k, x, z);
        }
    }
    for (int i = 0; i < sp->npoints; i++)
        if (sp->points[i].flags & OP_STRAIGHT_TILE) {
            const double *q = sp->points[i].pos;
            double fx = fmod(q[0], TS), fz = fmod(q[2], TS);
            cr_expect(fabs(fx) < 1e-9 || fabs(fz) < 1e-9,
                      "tile crossing (%g, %g) is not on a tile line", q[0], q[2]);
        }
}

/* Returns 1 when the pair is connected. */
static int one_pair(const world *w, op_test_rng *rng, unsigned char seen[W][W])
{
    int ax, az, bx, bz;
    do {
        ax = op_test_rand_int(rng, 0, W - 1);
        az = op_test_rand_int(rng, 0, W - 1);
    } while (!w->unit[ax][az]);
    do {
        bx = op_test_rand_int(rng, 0, W - 1);
        bz = op_test_rand_int(rng, 0, W - 1);
    } while (!w->unit[bx][bz]);
    const double pa[3] = {ax + 0.5, 0.0, az + 0.5}, pb[3] = {bx + 0.5, 0.0, bz + 0.5};
    const double half[3] = {0.25, 1.0, 0.25};
    op_polyref ra, rb;
    op_err e;
    cr_assert_eq(op_query_nearest(w->m, pa, half, NULL, &ra, NULL, &e), OP_OK);
    cr_assert_eq(op_query_nearest(w->m, pb, half, NULL, &rb, NULL, &e), OP_OK);
    op_path p, p2;
    cr_assert_eq(op_query_path(w->m, NULL, ra, pa, rb, pb, out, scratch, &p, &e), OP_OK);
    flood(w, ax, az, seen);
    cr_assert_eq(!p.partial, seen[bx][bz], "(%d, %d) -> (%d, %d): partial %d, oracle %d", ax, az,
                 bx, bz, p.partial, seen[bx][bz]);
    cr_assert(p.polys[0].tile == ra.tile && p.polys[0].poly == ra.poly);
    double r[3], l[3];
    for (int i = 1; i < p.npolys; i++)
        cr_assert(op_query_portal(w->m, p.polys[i - 1], p.polys[i], r, l), "not neighbours");
    cr_assert_eq(op_query_path(w->m, NULL, ra, pa, rb, pb, out, scratch, &p2, &e), OP_OK);
    cr_assert(p2.npolys == p.npolys && p2.cost == p.cost &&
              !memcmp(p2.polys, p.polys, sizeof *p.polys * (size_t)p.npolys));
    op_straight_path sp;
    cr_assert_eq(op_query_straight(w->m, p.polys, p.npolys, pa, pb, out, scratch, &sp, &e), OP_OK,
                 "%s", e.msg);
    check_straight(w->m, &p, &sp);
    if (!p.partial) {
        cr_expect_eq(sp.points[sp.npoints - 1].pos[0], pb[0]);
        cr_expect_eq(sp.points[sp.npoints - 1].pos[2], pb[2]);
    }
    return !p.partial;
}

Test(query_props, random_grids_against_flood_fill, .init = setup, .fini = teardown)
{
    static unsigned char seen[W][W];
    int connected = 0, total = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        world w;
        make_world(&w, seed);
        op_test_rng rng = {seed * 977};
        for (int k = 0; k < 60; k++) {
            connected += one_pair(&w, &rng, seen);
            total++;
            op_arena_reset(out);
            op_arena_reset(scratch);
        }
        op_mesh_destroy(w.m);
    }
    /* Both outcomes occur (the holes cut some worlds apart): the test is not vacuous. */
    cr_expect(connected > total / 4 && connected < total, "%d of %d connected", connected, total);
}

/* Links are mutual and each lies on its tile line, with the overlap inside both edges. */
Test(query_props, random_grid_links_mutual, .init = setup, .fini = teardown)
{
    for (uint64_t seed = 1; seed <= 12; seed++) {
        world w;
        make_world(&w, seed);
        const op_mesh *m = w.m;
        long n = 0;
        for (int i = 0; i < op_mesh_tile_count(m); i++) {
            const op_tile *t = op_mesh_tile(m, i);
            for (int p = 0; p < t->npolys; p++)
                for (int k = 0; k < t->nvp; k++) {
                    const op_link *l, *b;
                    int nl = op_mesh_edge_links(m, i, p, k, &l);
                    for (int q = 0; q < nl; q++, n++) {
                        int nb = op_mesh_edge_links(m, l[q].nei_tile, l[q].nei_poly, l[q].nei_edge,
                                                    &b),
                            found = 0;
                        for (int r = 0; r < nb; r++)
                            found += b[r].nei_tile == i && b[r].nei_poly == p &&
                                     b[r].nei_edge == k && b[r].o0 == l[q].o0 && b[r].o1 == l[q].o1;
                        cr_assert_eq(found, 1);
                        cr_assert(l[q].o0 < l[q].o1);
                    }
                }
        }
        cr_expect_eq(n, op_mesh_link_count(m));
        op_mesh_destroy(w.m);
    }
}
