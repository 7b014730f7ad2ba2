/*
 * The mesh and queries on built levels (generated kinds and the shared dungeon):
 * op_mesh_build_level gives the same mesh at 1 and 2 threads; links are mutual and
 * their overlaps lie inside both edges; between seeded points snapped to the mesh,
 * every corridor's consecutive polygons are neighbours, every straight segment's
 * sample points lie on some corridor polygon, a complete path's straight path ends at
 * the snapped end. Hash-matrix scenario build3d/mesh-stitched pins the mesh dumps.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "onepath/build.h"
#include "onepath/hash.h"
#include "onepath/levelgen.h"
#include "onepath/obj.h"
#include "onepath/query.h"
#include "op_test.h"

static op_mesh *build(const char *kind, int size, const char *set_key, const char *set_val,
                      int threads)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    op_settings s;
    op_settings_default(&s);
    if (set_key)
        cr_assert_eq(op_settings_set(&s, set_key, set_val, &e), OP_OK);
    if (size > 0)
        cr_assert_eq(op_levelgen(kind, size, 1, a, &soup, &e), OP_OK, "%s", e.msg);
    else
        cr_assert_eq(op_obj_read_file(op_test_level(kind), a, &soup, &e), OP_OK, "%s", e.msg);
    op_level *lvl;
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_mesh *m;
    cr_assert_eq(op_mesh_build_level(lvl, threads, &m, &e), OP_OK, "%s", e.msg);
    op_level_destroy(lvl);
    op_arena_destroy(a);
    return m;
}

static int in_poly_eps(const op_mesh *m, op_polyref r, double x, double z)
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    int n = op_tile_poly_nverts(t, r.poly);
    for (int k = 0; k < n; k++) {
        double a[3], b[3];
        op_tile_world_vert(t, t->polys[(size_t)r.poly * t->nvp + k], a);
        op_tile_world_vert(t, t->polys[(size_t)r.poly * t->nvp + (k + 1) % n], b);
        double len = hypot(b[0] - a[0], b[2] - a[2]);
        if ((b[0] - a[0]) * (z - a[2]) - (b[2] - a[2]) * (x - a[0]) < -1e-6 * len)
            return 0;
    }
    return 1;
}

static void check_links(const op_mesh *m)
{
    for (int i = 0; i < op_mesh_tile_count(m); i++) {
        const op_tile *t = op_mesh_tile(m, i);
        for (int p = 0; p < t->npolys; p++)
            for (int k = 0; k < t->nvp; k++) {
                const op_link *l, *b;
                int nl = op_mesh_edge_links(m, i, p, k, &l);
                for (int q = 0; q < nl; q++) {
                    int nb = op_mesh_edge_links(m, l[q].nei_tile, l[q].nei_poly, l[q].nei_edge, &b);
                    int found = 0;
                    for (int r = 0; r < nb; r++)
                        found += b[r].nei_tile == i && b[r].nei_poly == p && b[r].nei_edge == k;
                    cr_assert_eq(found, 1, "link (%d %d %d) not mutual", i, p, k);
                    cr_assert(l[q].o0 < l[q].o1);
                }
            }
    }
}

/* Centroid of a seeded random polygon. */
static void random_point(const op_mesh *m, op_test_rng *rng, double p[3])
{
    int ti = op_test_rand_int(rng, 0, op_mesh_tile_count(m) - 1);
    const op_tile *t = op_mesh_tile(m, ti);
    int pi = op_test_rand_int(rng, 0, t->npolys - 1), n = op_tile_poly_nverts(t, pi);
    p[0] = p[1] = p[2] = 0.0;
    for (int k = 0; k < n; k++) {
        double w[3];
        op_tile_world_vert(t, t->polys[(size_t)pi * t->nvp + k], w);
        for (int i = 0; i < 3; i++)
            p[i] += w[i] / n;
    }
}

/* Returns 1 when the pair was connected. */
static int check_pair(const op_mesh *m, const double a[3], const double b[3], op_arena *out,
                      op_arena *scratch)
{
    const double half[3] = {2, 4, 2};
    op_polyref ra, rb;
    double sa[3], sb[3];
    op_err e;
    cr_assert_eq(op_query_nearest(m, a, half, NULL, &ra, sa, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_query_nearest(m, b, half, NULL, &rb, sb, &e), OP_OK, "%s", e.msg);
    op_path p;
    cr_assert_eq(op_query_path(m, NULL, ra, sa, rb, sb, out, scratch, &p, &e), OP_OK, "%s", e.msg);
    double r[3], l[3];
    for (int i = 1; i < p.npolys; i++)
        cr_assert(op_query_portal(m, p.polys[i - 1], p.polys[i], r, l),
                  "corridor %d not neighbours", i);
    op_straight_path sp;
    cr_assert_eq(op_query_straight(m, p.polys, p.npolys, sa, sb, out, scratch, &sp, &e), OP_OK,
                 "%s", e.msg);
    for (int i = 0; i + 1 < sp.npoints; i++)
        for (int k = 0; k <= 8; k++) {
            const double *u = sp.points[i].pos, *v = sp.points[i + 1].pos;
            double s = k / 8.0, x = u[0] + (v[0] - u[0]) * s, z = u[2] + (v[2] - u[2]) * s;
            int on = 0;
            for (int q = 0; q < p.npolys && !on; q++)
                on = in_poly_eps(m, p.polys[q], x, z);
            cr_assert(on, "straight segment %d sample %d (%g, %g) is off the corridor", i, k, x, z);
        }
    if (!p.partial) {
        const double *end = sp.points[sp.npoints - 1].pos;
        cr_expect(end[0] == sb[0] && end[2] == sb[2], "end (%g, %g) != (%g, %g)", end[0], end[2],
                  sb[0], sb[2]);
        cr_expect(sp.points[sp.npoints - 1].flags & OP_STRAIGHT_END);
    }
    return !p.partial;
}

static void check_level(const char *kind, int size, const char *key, const char *val)
{
    op_mesh *m = build(kind, size, key, val, 1), *m2 = build(kind, size, key, val, 2);
    cr_assert_gt(op_mesh_tile_count(m), 0);
    cr_assert_eq(op_mesh_dump_hash(m), op_mesh_dump_hash(m2), "%s: threads change the mesh", kind);
    check_links(m);
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_test_rng rng = {7};
    int connected = 0;
    double a[3], b[3];
    random_point(m, &rng, a);
    for (int k = 0; k < 40; k++) {
        random_point(m, &rng, b);
        connected += check_pair(m, a, b, out, scratch);
        memcpy(a, b, sizeof a);
        op_arena_reset(out);
        op_arena_reset(scratch);
    }
    cr_expect_gt(connected, 0, "%s: no pair connected", kind);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    op_mesh_destroy(m);
    op_mesh_destroy(m2);
}

Test(query_levels, rooms)
{
    check_level("rooms", 64, NULL, NULL);
}
Test(query_levels, multifloor)
{
    check_level("multifloor", 48, NULL, NULL);
}
Test(query_levels, stairs_monotone)
{
    check_level("stairs", 48, "partition", "monotone");
}
Test(query_levels, ramp_layers)
{
    check_level("ramp", 48, "partition", "layers");
}
Test(query_levels, dungeon)
{
    check_level("dungeon.obj", 0, NULL, NULL);
}

/* build3d/mesh-stitched: the dumps (tiles and links) of generated levels at three settings. */
Test(query_levels, golden_mesh_levels)
{
    static const char *const kinds[] = {"rooms", "multifloor", "terrain"};
    static const char *const keys[3][2] = {
        {NULL, NULL}, {"partition", "monotone"}, {"partition", "layers"}};
    uint64_t h = OP_HASH_INIT, h2 = OP_HASH_INIT;
    for (int k = 0; k < 3; k++)
        for (int v = 0; v < 3; v++) {
            for (int rep = 0; rep < 2; rep++) {
                op_mesh *m = build(kinds[k], 32, keys[v][0], keys[v][1], 1 + rep);
                uint64_t d = op_mesh_dump_hash(m);
                if (rep == 0)
                    h = op_hash_update(h, &d, sizeof d);
                else
                    h2 = op_hash_update(h2, &d, sizeof d);
                op_mesh_destroy(m);
            }
        }
    cr_assert_eq(h, h2);
    op_test_golden("build3d/mesh-stitched", h);
}
