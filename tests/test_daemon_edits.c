/*
 * onepathd edits: a sequence of mesh.put / mesh.drop ends with tiles equal to a fresh
 * offline bake of the final level, byte for byte, and after every edit changes.since
 * lists exactly the tiles whose bytes differ between the bakes before and after it.
 */
#include <pthread.h>

#include "op_daemon_test.h"

#define NMESH 4

typedef struct level_state {
    const char *name[NMESH]; /* sorted by name */
    opt_soup *soup[NMESH];   /* NULL: absent */
} level_state;

/* The soup of protocol §3.2: present meshes in name order, indices offset. */
static void concat(const level_state *ls, opt_soup *out)
{
    memset(out, 0, sizeof *out);
    for (int m = 0; m < NMESH; m++) {
        const opt_soup *s = ls->soup[m];
        if (!s)
            continue;
        int base = (int)out->nv;
        for (size_t i = 0; i < s->nv; i++)
            opt_soup_vert(out, s->v[3 * i], s->v[3 * i + 1], s->v[3 * i + 2]);
        for (size_t i = 0; i < s->nt; i++)
            opt_soup_tri(out, s->t[3 * i] + base, s->t[3 * i + 1] + base, s->t[3 * i + 2] + base);
    }
}

static void bake_with(const level_state *ls, const op_settings *s, opt_ref *ref)
{
    opt_soup all;
    concat(ls, &all);
    op_soup soup = {all.v, 3 * all.nv, all.t, 3 * all.nt, NULL};
    opt_ref_bake(&soup, s, ref);
    opt_soup_free(&all);
}

static void bake_state(const level_state *ls, opt_ref *ref)
{
    op_settings s;
    op_settings_default(&s);
    bake_with(ls, &s, ref);
}

static void check_changes(op_client *c, uint64_t prev, const opt_ref *a, const opt_ref *b)
{
    opt_check_changes(c, "edits", prev, a, b);
}

Test(daemon_edits, sequence_equals_fresh_bake_and_changes_are_exact, .timeout = 120)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    opt_soup floor = {0}, box_a = {0}, box_a2 = {0}, box_b = {0}, floor2 = {0};
    opt_soup_quad(&floor, 0, 0, 30, 30, 0);
    opt_soup_box(&box_a, 5, 5, 8, 8, 0, 1.5f);
    opt_soup_box(&box_a2, 12, 20, 15, 24, 0, 3);
    opt_soup_box(&box_b, 20, 2, 26, 6, -0.5f, 0.8f);
    opt_soup_quad(&floor2, 0, 0, 42, 30, 0); /* grows the tile range */
    level_state ls = {{"box-a", "box-b", "floor", "ramp"}, {NULL, NULL, &floor, NULL}};
    op_err e;
    uint64_t v;
    int changed;
    op_client_mesh fm = opt_mesh("floor", &floor);
    cr_assert_eq(op_client_level_put(c, "edits", NULL, 0, &fm, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK, "%s", e.msg);
    cr_assert_eq(v, 1);
    opt_ref prev, cur, empty = {0};
    bake_state(&ls, &prev);
    check_changes(c, 0, &empty, &prev);
    opt_check_level(c, "edits", &prev);
    /* (mesh index, new soup or NULL to drop) */
    struct {
        int m;
        opt_soup *s;
    } steps[] = {{0, &box_a}, {1, &box_b}, {0, &box_a2}, {2, &floor2},
                 {1, NULL},   {3, &box_a}, {0, NULL},    {3, NULL}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        ls.soup[steps[i].m] = steps[i].s;
        if (steps[i].s) {
            op_client_mesh m = opt_mesh(ls.name[steps[i].m], steps[i].s);
            cr_assert_eq(op_client_mesh_put(c, "edits", &m, OPT_TIMEOUT_MS, &v, &changed, &e),
                         OP_OK, "%s", e.msg);
        } else {
            cr_assert_eq(op_client_mesh_drop(c, "edits", ls.name[steps[i].m], OPT_TIMEOUT_MS, &v,
                                             &changed, &e),
                         OP_OK, "%s", e.msg);
        }
        cr_assert(changed, "step %zu changed nothing", i);
        cr_assert_eq(v, i + 2);
        bake_state(&ls, &cur);
        check_changes(c, v - 1, &prev, &cur);
        opt_check_level(c, "edits", &cur);
        opt_ref_free(&prev);
        prev = cur;
    }
    /* Idempotent edits (protocol §6): nothing changes, no version is bumped. */
    op_client_mesh m2 = opt_mesh("floor", &floor2);
    cr_assert_eq(op_client_mesh_put(c, "edits", &m2, OPT_TIMEOUT_MS, &v, &changed, &e), OP_OK);
    cr_assert(!changed);
    cr_assert_eq(op_client_mesh_drop(c, "edits", "ramp", OPT_TIMEOUT_MS, &v, &changed, &e), OP_OK);
    cr_assert(!changed);
    cr_assert_eq(v, 1 + sizeof steps / sizeof steps[0]);
    op_client_changes ch;
    cr_assert_eq(op_client_changes_since(c, "edits", v, 0, OPT_TIMEOUT_MS, &ch, &e), OP_OK);
    cr_assert_eq(ch.ntiles, 0);
    op_client_changes_free(&ch);
    /* level.put of what the level holds is idempotent too, whatever the mesh order. */
    uint64_t v0 = v;
    op_client_mesh now[2] = {opt_mesh("ramp", &box_a), opt_mesh("floor", &floor2)};
    cr_assert_eq(
        op_client_level_put(c, "edits", NULL, 0, now + 1, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
        OP_OK);
    cr_assert(!changed && v == v0);
    cr_assert_eq(op_client_level_put(c, "edits", NULL, 0, now, 2, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK);
    cr_assert(changed && v == v0 + 1);
    op_client_mesh swapped[2] = {now[1], now[0]};
    cr_assert_eq(
        op_client_level_put(c, "edits", NULL, 0, swapped, 2, OPT_TIMEOUT_MS, &v, &changed, &e),
        OP_OK);
    cr_assert(!changed && v == v0 + 1);
    op_client_setting other[] = {{"agent_radius", "0.3"}};
    cr_assert_eq(
        op_client_level_put(c, "edits", other, 1, swapped, 2, OPT_TIMEOUT_MS, &v, &changed, &e),
        OP_OK);
    cr_assert(changed && v == v0 + 2, "new settings are a change");
    opt_ref_free(&prev);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    opt_soup_free(&floor);
    opt_soup_free(&box_a);
    opt_soup_free(&box_a2);
    opt_soup_free(&box_b);
    opt_soup_free(&floor2);
}

/* A moved tile grid (settings grid_origin_x, grid_origin_z): the daemon's tiles equal the
 * offline bake with the same origin after every edit, changes.since lists exactly the
 * tiles that differ (an edit invalidates the tiles of the moved grid), level.info reports
 * the origin, and a restart keeps it (the level file holds it). */
Test(daemon_edits, moved_grid_edits_and_restart_keep_the_grid, .timeout = 120)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    opt_soup floor = {0}, box_a = {0}, box_b = {0};
    opt_soup_quad(&floor, 0, 0, 30, 30, 0);
    opt_soup_box(&box_a, 5, 5, 8, 8, 0, 1.5f);
    opt_soup_box(&box_b, 20, 2, 26, 6, -0.5f, 0.8f);
    level_state ls = {{"box-a", "box-b", "floor", "ramp"}, {NULL, NULL, &floor, NULL}};
    op_client_setting grid[] = {{"grid_origin_x", "4.8"}, {"grid_origin_z", "-2.15"}};
    op_settings s;
    op_settings_default(&s);
    s.grid_origin_x = 4.8;
    s.grid_origin_z = -2.15;
    op_err e;
    uint64_t v;
    int changed;
    op_client_mesh fm = opt_mesh("floor", &floor);
    cr_assert_eq(op_client_level_put(c, "edits", grid, 2, &fm, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK, "%s", e.msg);
    opt_ref prev, cur, empty = {0};
    bake_with(&ls, &s, &prev);
    check_changes(c, 0, &empty, &prev);
    opt_check_level(c, "edits", &prev);
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, "edits", OPT_TIMEOUT_MS, &li, &e), OP_OK, "%s", e.msg);
    cr_assert(li.grid_origin[0] == 4.8 && li.grid_origin[1] == -2.15, "grid origin (%g, %g)",
              li.grid_origin[0], li.grid_origin[1]);
    /* The unmoved grid's bake differs: the origin reaches the tiles. */
    op_settings s0;
    op_settings_default(&s0);
    opt_ref plain;
    bake_with(&ls, &s0, &plain);
    int differ = 0;
    for (int tz = prev.rect.tz0; tz <= prev.rect.tz1; tz++)
        for (int tx = prev.rect.tx0; tx <= prev.rect.tx1; tx++)
            differ += opt_ref_differs(&prev, &plain, tx, tz);
    cr_assert_gt(differ, 0);
    opt_ref_free(&plain);
    opt_soup *steps[][2] = {{&box_a, NULL}, {&box_a, &box_b}, {NULL, &box_b}};
    for (int i = 0; i < 3; i++) {
        for (int m = 0; m < 2; m++) {
            if (steps[i][m] == ls.soup[m])
                continue;
            ls.soup[m] = steps[i][m];
            if (steps[i][m]) {
                op_client_mesh bm = opt_mesh(ls.name[m], steps[i][m]);
                cr_assert_eq(op_client_mesh_put(c, "edits", &bm, OPT_TIMEOUT_MS, &v, &changed, &e),
                             OP_OK, "%s", e.msg);
            } else {
                cr_assert_eq(
                    op_client_mesh_drop(c, "edits", ls.name[m], OPT_TIMEOUT_MS, &v, &changed, &e),
                    OP_OK, "%s", e.msg);
            }
            bake_with(&ls, &s, &cur);
            check_changes(c, v - 1, &prev, &cur);
            opt_check_level(c, "edits", &cur);
            opt_ref_free(&prev);
            prev = cur;
        }
    }
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_start(&d, NULL);
    c = opt_connect(&d);
    cr_assert_eq(op_client_level_info_get(c, "edits", OPT_TIMEOUT_MS, &li, &e), OP_OK, "%s", e.msg);
    cr_assert(li.grid_origin[0] == 4.8 && li.grid_origin[1] == -2.15, "after restart (%g, %g)",
              li.grid_origin[0], li.grid_origin[1]);
    opt_check_level(c, "edits", &prev);
    opt_ref_free(&prev);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    opt_soup_free(&floor);
    opt_soup_free(&box_a);
    opt_soup_free(&box_b);
}

typedef struct edit_arg {
    const char *url;
    const opt_soup *box;
    op_status status;
} edit_arg;

static void *delayed_edit(void *arg)
{
    edit_arg *a = arg;
    opt_sleep_ms(200);
    op_client *c;
    op_err e;
    uint64_t v;
    int changed;
    op_client_mesh bm = opt_mesh("box", a->box);
    a->status = op_client_open(a->url, &c, &e);
    if (a->status == OP_OK) {
        a->status = op_client_mesh_put(c, "poll", &bm, OPT_TIMEOUT_MS, &v, &changed, &e);
        op_client_close(c);
    }
    return NULL;
}

Test(daemon_edits, long_poll_wakes_on_change_and_times_out_empty, .timeout = 60)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    opt_soup floor = {0}, box = {0};
    opt_soup_quad(&floor, 0, 0, 20, 20, 0);
    opt_soup_box(&box, 3, 3, 6, 6, 0, 2);
    op_client_mesh fm = opt_mesh("floor", &floor);
    op_err e;
    uint64_t v;
    int changed;
    cr_assert_eq(op_client_level_put(c, "poll", NULL, 0, &fm, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK, "%s", e.msg);
    /* Nothing after version 1: waits ~300 ms, then lists nothing. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    op_client_changes ch;
    cr_assert_eq(op_client_changes_since(c, "poll", 1, 300, OPT_TIMEOUT_MS, &ch, &e), OP_OK, "%s",
                 e.msg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    cr_assert_eq(ch.ntiles, 0);
    cr_assert_geq(ms, 250.0, "returned after %.0f ms", ms);
    op_client_changes_free(&ch);
    /* A poll parked before an edit is woken by it: the edit comes from another thread
     * (nng does not survive fork). */
    edit_arg ea = {d.url, &box, 0};
    pthread_t th;
    pthread_create(&th, NULL, delayed_edit, &ea);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(op_client_changes_since(c, "poll", 1, 20000, OPT_TIMEOUT_MS + 20000, &ch, &e),
                 OP_OK, "%s", e.msg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    pthread_join(th, NULL);
    cr_assert_eq(ea.status, OP_OK);
    cr_assert_eq(ch.version, 2);
    cr_assert_gt(ch.ntiles, 0);
    cr_assert_lt(ms, 10000.0, "the edit did not wake the poll (%.0f ms)", ms);
    op_client_changes_free(&ch);
    /* A version newer than the level's is refused (the client must start over). */
    cr_assert_eq(op_client_changes_since(c, "poll", 99, 0, OPT_TIMEOUT_MS, &ch, &e), OP_ERANGE);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    opt_soup_free(&floor);
    opt_soup_free(&box);
}
