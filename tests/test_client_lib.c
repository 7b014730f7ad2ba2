/*
 * libonepath-client on its own: refusals before anything is sent, timeouts without a
 * daemon, a daemon that starts after its client (the dial retries), the daemon's error
 * codes and messages passed through, and results that are freed twice safely.
 */
#include "op_daemon_test.h"

Test(client_lib, refusals_and_timeouts_without_a_daemon, .timeout = 30)
{
    op_client *c;
    op_err e;
    cr_assert_eq(op_client_open("nope://x", &c, &e), OP_EINVAL, "%s", e.msg);
    cr_assert_null(c);
    opt_daemon d;
    opt_daemon_init(&d);
    cr_assert_eq(op_client_open(d.url, &c, &e), OP_OK, "%s", e.msg);
    op_client_ping_result p;
    cr_assert_eq(op_client_ping(c, 0, &p, &e), OP_EINVAL, "a timeout must be > 0");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(op_client_ping(c, 300, &p, &e), OP_ETIMEDOUT, "%s", e.msg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    cr_assert(ms >= 250 && ms < 3000, "timed out after %.0f ms", ms);
    /* The daemon starts after the client: the same client reaches it. */
    opt_daemon_start(&d, NULL);
    cr_assert_eq(op_client_ping(c, OPT_TIMEOUT_MS, &p, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(p.protocol, 1);
    cr_assert_gt(strlen(p.version), 0);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

Test(client_lib, daemon_errors_pass_through_and_results_free_twice, .timeout = 30)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    op_err e;
    op_client_tile t;
    cr_assert_eq(op_client_tile_get(c, "missing", 0, 0, OPT_TIMEOUT_MS, &t, &e), OP_ENOTFOUND);
    cr_assert(strstr(e.msg, "missing"), "%s", e.msg);
    cr_assert_eq(t.nlayers, 0);
    op_client_tile_free(&t);
    op_client_tile_free(&t);
    cr_assert_eq(op_client_tile_get(c, "bad/name", 0, 0, OPT_TIMEOUT_MS, &t, &e), OP_EINVAL);
    /* An empty level: no tiles, every tile is out of range, changes list nothing. */
    uint64_t v;
    int changed;
    cr_assert_eq(
        op_client_level_put(c, "empty", NULL, 0, NULL, 0, OPT_TIMEOUT_MS, &v, &changed, &e), OP_OK,
        "%s", e.msg);
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, "empty", OPT_TIMEOUT_MS, &li, &e), OP_OK);
    cr_assert_eq(li.tiles_total, 0);
    cr_assert_gt(li.tiles[0], li.tiles[2]);
    cr_assert_eq(op_client_tile_get(c, "empty", 0, 0, OPT_TIMEOUT_MS, &t, &e), OP_ERANGE);
    op_client_changes ch;
    cr_assert_eq(op_client_changes_since(c, "empty", 0, 0, OPT_TIMEOUT_MS, &ch, &e), OP_OK);
    cr_assert_eq(ch.ntiles, 0);
    op_client_changes_free(&ch);
    op_client_changes_free(&ch);
    op_client_level_list l;
    cr_assert_eq(op_client_level_list_get(c, OPT_TIMEOUT_MS, &l, &e), OP_OK);
    cr_assert_eq(l.n, 1);
    op_client_level_list_free(&l);
    op_client_level_list_free(&l);
    int started;
    cr_assert_eq(op_client_level_bake(c, "empty", OPT_TIMEOUT_MS, &started, &e), OP_OK);
    cr_assert(!started);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}
