/*
 * libonepath-client on its own: refusals before anything is sent, timeouts without a
 * daemon, a daemon that starts after its client (the dial retries), the daemon's error
 * codes and messages passed through, and results that are freed twice safely.
 */
#include <math.h>
#include <msgpack.h>

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

/* The volume functions against a daemon: every kind through level.put (level_put_volumes)
 * and volume.put, read back by volumes_get field for field (an obstacle's omitted area as
 * 0, a 64-point prism whole, odd doubles exactly), volume_drop idempotent, errors passed
 * through, results freed twice. */
Test(client_lib, volume_functions_round_trip, .timeout = 30)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    op_err e;
    opt_soup floor = {0};
    opt_soup_quad(&floor, 0, 0, 20, 20, 0);
    op_client_mesh m = opt_mesh("floor", &floor);
    op_client_volume v[3];
    memset(v, 0, sizeof v);
    snprintf(v[0].name, sizeof v[0].name, "zz.box");
    v[0].mode = OP_CLIENT_VOLUME_OBSTACLE;
    v[0].area = -1; /* not sent: 0 */
    v[0].kind = OP_CLIENT_VOLUME_BOX;
    double bmin[3] = {0.1 + 0.2, -1, 3}, bmax[3] = {4, 2, 1.0 / 3.0 + 3};
    memcpy(v[0].bmin, bmin, sizeof bmin);
    memcpy(v[0].bmax, bmax, sizeof bmax);
    snprintf(v[1].name, sizeof v[1].name, "A-cyl");
    v[1].mode = OP_CLIENT_VOLUME_AREA;
    v[1].area = 63;
    v[1].kind = OP_CLIENT_VOLUME_CYLINDER;
    v[1].center[0] = 10, v[1].center[1] = 10, v[1].radius = 2.5, v[1].y[0] = -1, v[1].y[1] = 1;
    snprintf(v[2].name, sizeof v[2].name, "m.prism");
    v[2].mode = OP_CLIENT_VOLUME_AREA;
    v[2].area = 0;
    v[2].kind = OP_CLIENT_VOLUME_PRISM;
    v[2].npoints = OP_CLIENT_MAX_PRISM_POINTS;
    for (int i = 0; i < v[2].npoints; i++) {
        double t = 6.283185307179586 * i / v[2].npoints;
        v[2].points[i][0] = 15 + 3 * cos(t);
        v[2].points[i][1] = 5 + 3 * sin(t);
    }
    v[2].y[0] = -0.5, v[2].y[1] = 0.5;
    uint64_t ver;
    int changed;
    cr_assert_eq(op_client_level_put_volumes(c, "lv", NULL, 0, &m, 1, v, 2, OPT_TIMEOUT_MS, &ver,
                                             &changed, &e),
                 OP_OK, "%s", e.msg);
    cr_assert(ver == 1 && changed);
    cr_assert_eq(op_client_volume_put(c, "lv", &v[2], OPT_TIMEOUT_MS, &ver, &changed, &e), OP_OK,
                 "%s", e.msg);
    cr_assert(ver == 2 && changed);
    op_client_volumes got;
    cr_assert_eq(op_client_volumes_get(c, "lv", OPT_TIMEOUT_MS, &got, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(got.version, 2);
    cr_assert_eq(got.n, 3);
    /* Name order: "A-cyl" < "m.prism" < "zz.box". */
    op_client_volume want0 = v[0];
    want0.area = 0;
    cr_assert(opt_client_volume_equal(&got.v[0], &v[1]), "cylinder");
    cr_assert(opt_client_volume_equal(&got.v[1], &v[2]), "prism");
    cr_assert(opt_client_volume_equal(&got.v[2], &want0), "box");
    op_client_volumes_free(&got);
    op_client_volumes_free(&got);
    /* Idempotent: the same volume; a drop of what is not there. */
    cr_assert_eq(op_client_volume_put(c, "lv", &want0, OPT_TIMEOUT_MS, &ver, &changed, &e), OP_OK);
    cr_assert(ver == 2 && !changed, "an obstacle with area 0 equals one without");
    cr_assert_eq(op_client_volume_drop(c, "lv", "A-cyl", OPT_TIMEOUT_MS, &ver, &changed, &e),
                 OP_OK);
    cr_assert(ver == 3 && changed);
    cr_assert_eq(op_client_volume_drop(c, "lv", "A-cyl", OPT_TIMEOUT_MS, &ver, &changed, &e),
                 OP_OK);
    cr_assert(ver == 3 && !changed);
    /* The daemon's errors pass through. */
    v[1].radius = 0;
    cr_assert_eq(op_client_volume_put(c, "lv", &v[1], OPT_TIMEOUT_MS, &ver, &changed, &e),
                 OP_ERANGE);
    cr_assert(strstr(e.msg, "radius") && strstr(e.msg, "A-cyl"), "%s", e.msg);
    cr_assert_eq(op_client_volume_put(c, "nope", &v[0], OPT_TIMEOUT_MS, &ver, &changed, &e),
                 OP_ENOTFOUND);
    cr_assert_eq(op_client_volumes_get(c, "nope", OPT_TIMEOUT_MS, &got, &e), OP_ENOTFOUND);
    cr_assert_eq(got.n, 0);
    op_client_volumes_free(&got);
    opt_soup_free(&floor);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

/* A request of `len` bytes: a msgpack bin holding len - 3 zero bytes (not a request map,
 * so the daemon answers it with an error reply once it has it). */
static uint8_t *bin_request(size_t len)
{
    uint8_t *b = calloc(1, len);
    cr_assert_not_null(b);
    b[0] = 0xc5; /* bin 16 */
    b[1] = (uint8_t)((len - 3) >> 8);
    b[2] = (uint8_t)(len - 3);
    return b;
}

/* Issue 16: a request larger than the daemon's --max-message is refused by the client,
 * OP_ELIMIT naming the limit and the size, instead of being dropped with its connection and
 * timing out. At --max-message 2048, a request of 2044 bytes (2048 with nng's 4-byte
 * request id) must still reach the daemon, whose error reply proves it was read; one of
 * 2045 is refused at once, nothing sent. */
Test(client_lib, request_past_max_message_is_elimit_naming_both_sizes, .timeout = 60)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, (const char *const[]){"--max-message", "2048", NULL});
    op_client *c = opt_connect(&d);
    op_err e = {0};
    uint8_t *reply = NULL;
    size_t n = 0;
    uint8_t *fits = bin_request(2044);
    cr_assert_eq(op_client_call_raw(c, fits, 2044, 10000, &reply, &n, &e), OP_OK, "%s", e.msg);
    cr_assert_gt(n, 0);
    free(reply);
    free(fits);
    uint8_t *over = bin_request(2045);
    double t0 = opt_now_ms();
    cr_assert_eq(op_client_call_raw(c, over, 2045, 10000, &reply, &n, &e), OP_ELIMIT, "%s", e.msg);
    cr_assert_lt(opt_now_ms() - t0, 5000, "a refusal, not a timeout");
    cr_assert_null(reply);
    cr_assert(strstr(e.msg, "2049 bytes"), "%s", e.msg);
    cr_assert(strstr(e.msg, "--max-message of 2048"), "%s", e.msg);
    free(over);
    /* The client still works afterwards. */
    op_client_ping_result p;
    cr_assert_eq(op_client_ping(c, 10000, &p, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(p.max_message, 2048);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

/* One client shared by threads (client.h: safe to share). The client keeps one nng context
 * for the next call and a call that finds it taken opens its own, so every reply must
 * still reach the call that sent its request: each thread sends pings with ids of its own
 * (op_client_call_raw) and checks the id of every reply, while another thread's long polls
 * time out before the daemon answers them (a call that fails closes the context it used,
 * and its reply comes later to no one). */
typedef struct shared_arg {
    op_client *c;
    int thread, calls, timeouts;
    int wrong; /* replies whose id was not the request's */
    op_status st;
    char msg[OP_ERR_MSG_MAX];
} shared_arg;

static uint64_t reply_id(const uint8_t *raw, size_t n)
{
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    uint64_t id = 0;
    if (msgpack_unpack_next(&u, (const char *)raw, n, &off) == MSGPACK_UNPACK_SUCCESS &&
        u.data.type == MSGPACK_OBJECT_MAP)
        for (uint32_t i = 0; i < u.data.via.map.size; i++) {
            const msgpack_object_kv *kv = &u.data.via.map.ptr[i];
            if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == 2 &&
                !memcmp(kv->key.via.str.ptr, "id", 2) &&
                kv->val.type == MSGPACK_OBJECT_POSITIVE_INTEGER)
                id = kv->val.via.u64;
        }
    msgpack_unpacked_destroy(&u);
    return id;
}

static void *shared_pinger(void *arg)
{
    shared_arg *a = arg;
    for (int k = 0; k < a->calls; k++) {
        uint32_t id = (uint32_t)(a->thread * 100000 + k + 1);
        /* {"v": 1, "id": id, "method": "ping"} */
        uint8_t req[] = {0x83,
                         0xa1,
                         'v',
                         0x01,
                         0xa2,
                         'i',
                         'd',
                         0xce,
                         (uint8_t)(id >> 24),
                         (uint8_t)(id >> 16),
                         (uint8_t)(id >> 8),
                         (uint8_t)id,
                         0xa6,
                         'm',
                         'e',
                         't',
                         'h',
                         'o',
                         'd',
                         0xa4,
                         'p',
                         'i',
                         'n',
                         'g'};
        uint8_t *raw = NULL;
        size_t n = 0;
        op_err e;
        op_status st = op_client_call_raw(a->c, req, sizeof req, OPT_TIMEOUT_MS, &raw, &n, &e);
        if (st != OP_OK) {
            a->st = st;
            snprintf(a->msg, sizeof a->msg, "%s", e.msg);
            return NULL;
        }
        a->wrong += reply_id(raw, n) != id;
        free(raw);
    }
    return NULL;
}

static void *shared_poller(void *arg)
{
    shared_arg *a = arg;
    for (int k = 0; k < a->calls; k++) {
        op_client_changes ch;
        op_err e;
        /* Version 1 is the level's: the daemon holds the poll 600 ms, the call gives up at 60. */
        op_status st = op_client_changes_since(a->c, "shared", 1, 600, 60, &ch, &e);
        op_client_changes_free(&ch);
        if (st == OP_ETIMEDOUT)
            a->timeouts++;
        else if (st != OP_OK) {
            a->st = st;
            snprintf(a->msg, sizeof a->msg, "%s", e.msg);
            return NULL;
        }
    }
    return NULL;
}

Test(client_lib, shared_client_replies_reach_their_calls, .timeout = 120)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    op_err e;
    uint64_t v;
    int changed;
    cr_assert_eq(
        op_client_level_put(c, "shared", NULL, 0, NULL, 0, OPT_TIMEOUT_MS, &v, &changed, &e), OP_OK,
        "%s", e.msg);
    cr_assert_eq(v, 1);
    enum { PINGERS = 4 };
    shared_arg a[PINGERS + 1];
    pthread_t th[PINGERS + 1];
    for (int i = 0; i <= PINGERS; i++) {
        a[i] = (shared_arg){c, i + 1, i < PINGERS ? 300 : 8, 0, 0, OP_OK, ""};
        pthread_create(&th[i], NULL, i < PINGERS ? shared_pinger : shared_poller, &a[i]);
    }
    for (int i = 0; i <= PINGERS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i <= PINGERS; i++) {
        cr_assert_eq(a[i].st, OP_OK, "thread %d: %s", i, a[i].msg);
        cr_assert_eq(a[i].wrong, 0, "thread %d: %d replies of other requests", i, a[i].wrong);
    }
    cr_assert_eq(a[PINGERS].timeouts, 8, "every long poll outlives its call");
    /* The late replies of the polls reach no later call. */
    opt_sleep_ms(700);
    a[0] = (shared_arg){c, 9, 50, 0, 0, OP_OK, ""};
    shared_pinger(&a[0]);
    cr_assert_eq(a[0].st, OP_OK, "%s", a[0].msg);
    cr_assert_eq(a[0].wrong, 0);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

/* The kept context's resend time follows each call's timeout (it is set again only when
 * the timeout differs): a long poll after a call with a short timeout is sent once, not
 * again when the short call's resend time passes (protocol §1 rule 4). */
Test(client_lib, a_long_poll_after_a_short_call_is_sent_once, .timeout = 60)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    op_err e;
    uint64_t v;
    int changed;
    cr_assert_eq(
        op_client_level_put(c, "empty", NULL, 0, NULL, 0, OPT_TIMEOUT_MS, &v, &changed, &e), OP_OK,
        "%s", e.msg);
    for (int round = 0; round < 2; round++) {
        /* A client whose first call is short; the second round's client had a long call
         * before it. */
        op_client *q;
        cr_assert_eq(op_client_open(d.url, &q, &e), OP_OK, "%s", e.msg);
        op_client_ping_result p;
        if (round)
            cr_assert_eq(op_client_ping(q, OPT_TIMEOUT_MS, &p, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(op_client_ping(q, 150, &p, &e), OP_OK, "%s", e.msg); /* a short call */
        op_client_stats s0, s1;
        cr_assert_eq(op_client_stats_get(c, 150, &s0, &e), OP_OK, "%s", e.msg);
        op_client_changes ch;
        double t0 = opt_now_ms();
        cr_assert_eq(op_client_changes_since(q, "empty", v, 1200, 5000, &ch, &e), OP_OK, "%s",
                     e.msg);
        cr_assert_geq(opt_now_ms() - t0, 1000, "the poll did not wait");
        op_client_changes_free(&ch);
        opt_sleep_ms(600); /* a resent poll, had there been one, has ended by now */
        cr_assert_eq(op_client_stats_get(c, 150, &s1, &e), OP_OK, "%s", e.msg);
        /* The poll and the second stats call, nothing more. */
        cr_assert_eq(s1.requests - s0.requests, 2, "round %d: %llu requests for one poll", round,
                     (unsigned long long)(s1.requests - s0.requests - 1));
        op_client_close(q);
    }
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}
