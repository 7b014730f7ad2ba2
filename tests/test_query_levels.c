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

/* ---- amendment R3: a ramp onto a deck inside one tile ----
 *
 * One tile (default settings: tile (0, 0) covers x, z in [0, 9.6)): ground [0.3, 9.3]^2
 * at y 0; a deck over z 6 .. 9.3 at y 2.4 (12 rows above the ground, clear for the 2 m
 * agent); a ramp x 3.5 .. 6.5 from the ground at z 1.5 up to the deck's edge at z 6. The
 * ground, the ramp, the deck and the ground under it form a cycle no layer assignment
 * keeps on one layer, so the layers partition cuts one joint of it inside the tile
 * (clarifications.md, polys 18). With R3 that joint is a layer seam, linked by the mesh:
 * a path from the deck down to the ground under it is complete. Without it every route
 * crosses the cut (there is no other tile to go round through) and the path is partial. */
static void quad(float *v, int *t, int *nv, int *nt, const float p[12])
{
    memcpy(&v[3 * *nv], p, 12 * sizeof(float));
    int b = *nv;
    const int ix[6] = {b, b + 2, b + 1, b, b + 3, b + 2}; /* upward-facing */
    memcpy(&t[3 * *nt], ix, sizeof ix);
    *nv += 4;
    *nt += 2;
}

static op_mesh *ramp_deck_mesh(double detail_sample_distance, int *nseams)
{
    static float v[3 * 12];
    static int t[3 * 6];
    int nv = 0, nt = 0;
    const float ground[12] = {0.3f, 0, 0.3f, 9.3f, 0, 0.3f, 9.3f, 0, 9.3f, 0.3f, 0, 9.3f};
    const float deck[12] = {0.3f, 2.4f, 6, 9.3f, 2.4f, 6, 9.3f, 2.4f, 9.3f, 0.3f, 2.4f, 9.3f};
    const float ramp[12] = {3.5f, 0, 1.5f, 6.5f, 0, 1.5f, 6.5f, 2.4f, 6, 3.5f, 2.4f, 6};
    quad(v, t, &nv, &nt, ground);
    quad(v, t, &nv, &nt, deck);
    quad(v, t, &nv, &nt, ramp);
    op_soup soup = {v, (size_t)nv * 3, t, (size_t)nt * 3, NULL};
    op_settings s;
    op_settings_default(&s);
    s.partition = OP_PARTITION_LAYERS;
    s.detail_sample_distance = detail_sample_distance;
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_tile_rect r = op_level_tiles(lvl);
    cr_assert(r.tx0 == 0 && r.tx1 == 0 && r.tz0 == 0 && r.tz1 == 0, "one tile");
    op_mesh *m;
    cr_assert_eq(op_mesh_build_level(lvl, 1, &m, &e), OP_OK, "%s", e.msg);
    op_level_destroy(lvl);
    *nseams = 0;
    for (int i = 0; i < op_mesh_tile_count(m); i++) {
        const op_tile *tl = op_mesh_tile(m, i);
        for (int k = 0; k < tl->npolys * tl->nvp; k++)
            *nseams += OP_NEI_IS_SEAM(tl->neis[k]);
    }
    return m;
}

Test(query_levels, ramp_onto_a_deck_connects_across_the_layer_seam)
{
    /* Both build paths of the layers partition: all layers together (detail sampled) and
     * layer by layer (detail sample distance 0, build3d-runtime.md §2.3). */
    static const double sample_distance[2] = {1.8, 0.0};
    for (int v = 0; v < 2; v++) {
        int nseams;
        op_mesh *m = ramp_deck_mesh(sample_distance[v], &nseams);
        cr_assert_geq(op_mesh_tile_count(m), 2, "the cycle needs two layers");
        cr_assert_gt(nseams, 0, "detail %g: no seam", sample_distance[v]);
        check_links(m);
        static const double half[3] = {0.5, 0.5, 0.5};
        const double on_deck[3] = {1.5, 2.4, 8.0}, under[3] = {1.5, 0.0, 8.0};
        op_polyref a, b;
        double pa[3], pb[3];
        op_err e;
        cr_assert_eq(op_query_nearest(m, on_deck, half, NULL, &a, pa, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(op_query_nearest(m, under, half, NULL, &b, pb, &e), OP_OK, "%s", e.msg);
        cr_assert_neq(op_mesh_tile(m, a.tile)->layer, op_mesh_tile(m, b.tile)->layer);
        op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
        op_path p;
        cr_assert_eq(op_query_path(m, NULL, a, pa, b, pb, out, scratch, &p, &e), OP_OK, "%s",
                     e.msg);
        cr_assert(!p.partial,
                  "detail %g: the path from the deck to the ground under it is "
                  "partial (%d polygons)",
                  sample_distance[v], p.npolys);
        /* The straight path crosses from one tile layer into another. */
        op_straight_path sp;
        cr_assert_eq(op_query_straight(m, p.polys, p.npolys, pa, pb, out, scratch, &sp, &e), OP_OK,
                     "%s", e.msg);
        int crossings = 0;
        for (int i = 0; i < sp.npoints; i++)
            crossings += (sp.points[i].flags & OP_STRAIGHT_TILE) != 0;
        cr_assert_gt(crossings, 0);
        op_arena_destroy(out);
        op_arena_destroy(scratch);
        op_mesh_destroy(m);
    }
}

/* What navmesh-format.md §6 says the builder guarantees: on a generated multi-storey level,
 * under both build paths of the layers partition, every seam edge has exactly one link, to
 * a seam edge with the same two ends in x and z (the other side of the same contour
 * border). */
Test(query_levels, seams_of_generated_levels_meet_one_edge_end_to_end, .timeout = 120)
{
    static const char *const sd[2] = {"1.8", "0"};
    for (int v = 0; v < 2; v++) {
        op_arena *a = op_arena_create(0);
        op_soup soup;
        op_err e;
        cr_assert_eq(op_levelgen("multifloor", 128, 1, a, &soup, &e), OP_OK, "%s", e.msg);
        op_settings s;
        op_settings_default(&s);
        s.partition = OP_PARTITION_LAYERS;
        cr_assert_eq(op_settings_set(&s, "detail_sample_distance", sd[v], &e), OP_OK);
        op_level *lvl;
        cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
        op_mesh *m;
        cr_assert_eq(op_mesh_build_level(lvl, 2, &m, &e), OP_OK, "%s", e.msg);
        int seams = 0;
        for (int i = 0; i < op_mesh_tile_count(m); i++) {
            const op_tile *t = op_mesh_tile(m, i);
            for (int p = 0; p < t->npolys; p++) {
                int n = op_tile_poly_nverts(t, p);
                for (int k = 0; k < n; k++) {
                    if (!OP_NEI_IS_SEAM(t->neis[(size_t)p * t->nvp + k]))
                        continue;
                    seams++;
                    const op_link *l;
                    cr_assert_eq(op_mesh_edge_links(m, i, p, k, &l), 1,
                                 "detail %s: tile (%d, %d, %d) polygon %d edge %d", sd[v], t->tx,
                                 t->tz, t->layer, p, k);
                    const op_tile *u = op_mesh_tile(m, l->nei_tile);
                    int un = op_tile_poly_nverts(u, l->nei_poly);
                    const float *a0 = &t->verts[3 * t->polys[(size_t)p * t->nvp + k]];
                    const float *a1 = &t->verts[3 * t->polys[(size_t)p * t->nvp + (k + 1) % n]];
                    const float *b0 =
                        &u->verts[3 *
                                  u->polys[(size_t)l->nei_poly * u->nvp + (l->nei_edge + 1) % un]];
                    const float *b1 =
                        &u->verts[3 * u->polys[(size_t)l->nei_poly * u->nvp + l->nei_edge]];
                    cr_assert(a0[0] == b0[0] && a0[2] == b0[2] && a1[0] == b1[0] && a1[2] == b1[2],
                              "detail %s: tile (%d, %d, %d) polygon %d edge %d meets another "
                              "stretch",
                              sd[v], t->tx, t->tz, t->layer, p, k);
                }
            }
        }
        cr_assert_gt(seams, 50, "detail %s: %d seams", sd[v], seams);
        check_links(m);
        op_mesh_destroy(m);
        op_level_destroy(lvl);
        op_arena_destroy(a);
    }
}
