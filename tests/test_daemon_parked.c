/*
 * onepathd parked calls (protocol §1.6, issue 16): a thousand changes.since long polls
 * parked at once take none of the --contexts that receive requests: ping and reads are
 * answered with a low latency meanwhile, and every poll is answered, on a change or at
 * its deadline.
 */
#include <msgpack.h>
#include <stdatomic.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "op_daemon_test.h"
#include "op_rpc_test.h"
#include "onepath/rpc.h"

#define NPOLL 1000

static void poll_request(nng_msg **out, uint64_t id, const char *level, uint64_t version,
                         int wait_ms)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    opt_pack_head(&pk, 4, id, "changes.since");
    op_rpc_pack_key(&pk, "params");
    msgpack_pack_map(&pk, 3);
    op_rpc_pack_key(&pk, "level");
    op_rpc_pack_key(&pk, level);
    op_rpc_pack_key(&pk, "version");
    msgpack_pack_uint64(&pk, version);
    op_rpc_pack_key(&pk, "wait_ms");
    msgpack_pack_int(&pk, wait_ms);
    cr_assert_eq(nng_msg_alloc(out, 0), 0);
    cr_assert_eq(nng_msg_append(*out, sb.data, sb.size), 0);
    msgpack_sbuffer_destroy(&sb);
}

/* The reply's ok, id and number of tiles listed. */
static void poll_reply(nng_msg *m, int *ok, uint64_t *id, size_t *ntiles, uint64_t *version)
{
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    cr_assert_eq(msgpack_unpack_next(&u, nng_msg_body(m), nng_msg_len(m), &off),
                 MSGPACK_UNPACK_SUCCESS);
    *ok = op_rpc_get(&u.data, "ok")->via.boolean;
    *id = op_rpc_get(&u.data, "id")->via.u64;
    const msgpack_object *res = op_rpc_get(&u.data, "result");
    const msgpack_object *t = op_rpc_get(res, "tiles");
    *ntiles = t ? t->via.array.size : 0;
    const msgpack_object *v = op_rpc_get(res, "version");
    *version = v ? v->via.u64 : 0;
    msgpack_unpacked_destroy(&u);
}

/* Counts an aio's completions: 1 once its request is sent, 2 once the reply is in. */
static atomic_int done[NPOLL];

static void count_cb(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

static void put(op_client *c, const char *level, float size)
{
    opt_soup floor = {0};
    opt_soup_quad(&floor, 0, 0, size, size, 0);
    op_client_mesh fm = opt_mesh("floor", &floor);
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(op_client_level_put(c, level, NULL, 0, &fm, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK, "%s", e.msg);
    opt_soup_free(&floor);
}

Test(daemon_parked, a_thousand_long_polls_leave_ping_answered, .timeout = 120)
{
    opt_daemon d;
    opt_daemon_init(&d);
    const char *extra[] = {"--contexts", "64", NULL};
    opt_daemon_start(&d, extra);
    op_client *c = opt_connect(&d);
    put(c, "woken", 20);   /* half the polls wait for its change */
    put(c, "expires", 20); /* half reach their deadline */
    op_client_changes ch;
    op_err e;
    cr_assert_eq(op_client_changes_since(c, "woken", 0, 0, OPT_TIMEOUT_MS, &ch, &e), OP_OK, "%s",
                 e.msg);
    uint64_t vw = ch.version;
    op_client_changes_free(&ch);
    cr_assert_eq(op_client_changes_since(c, "expires", 0, 0, OPT_TIMEOUT_MS, &ch, &e), OP_OK, "%s",
                 e.msg);
    uint64_t ve = ch.version;
    op_client_changes_free(&ch);

    /* One REQ socket, a context per poll: a thousand requests on one connection. */
    nng_socket s;
    cr_assert_eq(nng_req0_open(&s), 0);
    nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, 600000);
    cr_assert_eq(nng_dial(s, d.url, NULL, 0), 0);
    static nng_ctx ctx[NPOLL];
    static nng_aio *aio[NPOLL];
    const int expire_ms = 3000;
    double t_first = opt_now_ms();
    for (int i = 0; i < NPOLL; i++) {
        cr_assert_eq(nng_ctx_open(&ctx[i], s), 0);
        cr_assert_eq(nng_aio_alloc(&aio[i], count_cb, &done[i]), 0);
        nng_aio_set_timeout(aio[i], 60000);
        nng_msg *m;
        int woken = i % 2 == 0;
        poll_request(&m, (uint64_t)i, woken ? "woken" : "expires", woken ? vw : ve,
                     woken ? 60000 : expire_ms);
        nng_aio_set_msg(aio[i], m);
        nng_ctx_send(ctx[i], aio[i]);
        nng_aio_wait(aio[i]);
        cr_assert_eq(nng_aio_result(aio[i]), 0, "send %d", i);
        nng_ctx_recv(ctx[i], aio[i]);
    }
    /* While all are parked: ping and a read, each answered within a fraction of a
     * second (with the 64 contexts held, ping waited for a poll's deadline). */
    op_client_ping_result p;
    double worst = 0;
    for (int k = 0; k < 20; k++) {
        double t0 = opt_now_ms();
        cr_assert_eq(op_client_ping(c, 2000, &p, &e), OP_OK, "ping %d with %d polls parked: %s", k,
                     NPOLL, e.msg);
        op_client_level_info li;
        cr_assert_eq(op_client_level_info_get(c, "woken", 2000, &li, &e), OP_OK, "%s", e.msg);
        double ms = opt_now_ms() - t0;
        worst = ms > worst ? ms : worst;
        opt_sleep_ms(50);
    }
    fprintf(stderr, "daemon_parked: %d polls parked, worst ping + level.info %.2f ms\n", NPOLL,
            worst);
    cr_assert_lt(worst, 500.0, "ping + level.info took %.1f ms", worst);
    for (int i = 0; i < NPOLL; i++)
        cr_assert_eq(atomic_load(&done[i]), 1, "poll %d answered before a change", i);
    /* A change: every poll of "woken" is answered, listing tiles. */
    put(c, "woken", 30);
    int answered = 0;
    for (int i = 0; i < NPOLL; i += 2) {
        nng_aio_wait(aio[i]);
        cr_assert_eq(nng_aio_result(aio[i]), 0, "poll %d: %s", i,
                     nng_strerror(nng_aio_result(aio[i])));
        nng_msg *m = nng_aio_get_msg(aio[i]);
        int ok;
        uint64_t id, v;
        size_t nt;
        poll_reply(m, &ok, &id, &nt, &v);
        nng_msg_free(m);
        cr_assert(ok && id == (uint64_t)i && nt > 0 && v > vw, "poll %d: ok %d id %llu tiles %zu",
                  i, ok, (unsigned long long)id, nt);
        answered++;
    }
    /* ... and every poll of "expires" at its deadline, listing nothing. */
    for (int i = 1; i < NPOLL; i += 2) {
        nng_aio_wait(aio[i]);
        cr_assert_eq(nng_aio_result(aio[i]), 0, "poll %d: %s", i,
                     nng_strerror(nng_aio_result(aio[i])));
        nng_msg *m = nng_aio_get_msg(aio[i]);
        int ok;
        uint64_t id, v;
        size_t nt;
        poll_reply(m, &ok, &id, &nt, &v);
        nng_msg_free(m);
        cr_assert(ok && id == (uint64_t)i && nt == 0 && v == ve, "poll %d: ok %d tiles %zu", i, ok,
                  nt);
        answered++;
    }
    double t_all = opt_now_ms() - t_first;
    cr_assert_geq(t_all, expire_ms - 100.0, "polls expired after %.0f ms", t_all);
    cr_assert_eq(answered, NPOLL);
    for (int i = 0; i < NPOLL; i++) {
        nng_aio_free(aio[i]);
        nng_ctx_close(ctx[i]);
    }
    nng_close(s);
    /* The daemon still answers, and stops cleanly (its extra contexts freed). */
    cr_assert_eq(op_client_ping(c, 2000, &p, &e), OP_OK, "%s", e.msg);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}
