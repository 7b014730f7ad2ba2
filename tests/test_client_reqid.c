/*
 * The client across nng 1.5.2's request-id wrap (client/lib/transport.c). A REQ socket
 * numbers its requests from a random start in [2^31, 2^32) and, past 0xffffffff, goes on
 * from 0: the REP then takes each request's first four bytes for a hop of its backtrace,
 * the daemon refuses what is left (logged as `unknown ... OP_EPROTO`) and the reply comes
 * back behind those four bytes, which the client cannot decode ("msgpack: message ends at
 * byte 106 inside a value" for onepathd-bench's tile.range page). The start is drawn with
 * getrandom: this process's getrandom below hands out a chosen value while a test opens its
 * client, so the socket starts a few ids short of the wrap, and every call must still
 * succeed and return the reference's bytes: the one request per socket that reaches the
 * daemon cut short (refused, never run) is sent again on a fresh socket.
 */
#define _DEFAULT_SOURCE /* syscall() beside the build's _POSIX_C_SOURCE */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/random.h>
#include <sys/syscall.h>

#include "op_daemon_test.h"

/* While forced is set, this process's getrandom of 4 bytes (nng's nni_random) gives
 * forced_val; everything else gets the kernel's bytes. */
static atomic_int forced;
static uint32_t forced_val;

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
    if (atomic_load(&forced) && len == sizeof forced_val) {
        memcpy(buf, &forced_val, sizeof forced_val);
        return (ssize_t)len;
    }
    return syscall(SYS_getrandom, buf, len, flags);
}

/* A client whose socket's first request id is first (nng: random % 2^31 + 2^31). */
static op_client *client_from(const opt_daemon *d, uint32_t first)
{
    forced_val = first - 0x80000000u;
    atomic_store(&forced, 1);
    op_client *c = opt_connect(d);
    atomic_store(&forced, 0);
    return c;
}

/* A small level of several tiles (two floors and a box), its reference bake in *ref. */
static void put_level(op_client *c, const char *name, opt_ref *ref)
{
    opt_soup s = {0};
    opt_soup_quad(&s, 0, 0, 40, 40, 0);
    opt_soup_box(&s, 10, 10, 14, 16, 0, 1.5f);
    op_client_mesh m = opt_mesh("floor", &s);
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(op_client_level_put(c, name, NULL, 0, &m, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK, "%s", e.msg);
    op_soup soup = {s.v, 3 * s.nv, s.t, 3 * s.nt, NULL};
    op_settings st;
    op_settings_default(&st);
    opt_ref_bake(&soup, &st, ref);
    opt_soup_free(&s);
}

/* Lines of the daemon's log that match the grep pattern. */
static int log_lines(const opt_daemon *d, const char *pattern)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "grep -c '%s' '%s'", pattern, d->log);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    int n = -1;
    if (fscanf(p, "%d", &n) != 1)
        n = -1;
    pclose(p);
    return n;
}

/* The requests the daemon refused as malformed: those cut by the wrap, logged as
 * `unknown level=- ... OP_EPROTO`, each named by an OP-REQ-ID-WRAP line. */
static int refused_requests(const opt_daemon *d)
{
    int n = log_lines(d, "unknown level=- .*OP_EPROTO");
    cr_assert_eq(log_lines(d, "OP-REQ-ID-WRAP"), n, "each cut request is named in the log");
    return n;
}

/* One client, calls one after another from three ids before the wrap: pings, then
 * level.info and tile.range pages (plain and waiting: the 4th call, the first past the
 * wrap, is a level.info), tile.get, an edit, pages again. Exactly one request reaches the
 * daemon cut: the fresh socket's ids are far from the wrap. */
Test(client_reqid, sequential_calls_across_the_request_id_wrap_succeed, .timeout = 120)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *setup = opt_connect(&d);
    opt_ref ref;
    put_level(setup, "wrap", &ref);
    op_client_close(setup);

    op_client *c = client_from(&d, 0xfffffffdu);
    op_err e;
    op_client_ping_result p;
    for (int i = 0; i < 3; i++)
        cr_assert_eq(op_client_ping(c, OPT_TIMEOUT_MS, &p, &e), OP_OK, "ping %d: %s", i, e.msg);
    int pages = 0;
    cr_assert_gt(opt_check_level_paged(c, "wrap", &ref, 0, &pages), 0);
    cr_assert_gt(opt_check_level_paged(c, "wrap", &ref, 2000, &pages), 0);
    op_client_tile t;
    cr_assert_eq(op_client_tile_get(c, "wrap", ref.t[0].tx, ref.t[0].tz, OPT_TIMEOUT_MS, &t, &e),
                 OP_OK, "%s", e.msg);
    op_client_tile_free(&t);
    opt_ref ref2;
    put_level(c, "wrap2", &ref2);
    cr_assert_gt(opt_check_level(c, "wrap2", &ref2), 0);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(op_client_ping(c, OPT_TIMEOUT_MS, &p, &e), OP_OK, "ping %d: %s", i, e.msg);
    op_client_close(c);
    int refused = refused_requests(&d);
    if (refused != 1)
        opt_daemon_log_tail(&d, 20);
    cr_assert_eq(refused, 1, "%d requests refused as malformed, the one past the wrap expected",
                 refused);
    opt_ref_free(&ref);
    opt_ref_free(&ref2);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

typedef struct poller {
    op_client *c;
    uint64_t since;
    op_status st;
    char msg[OP_ERR_MSG_MAX];
} poller;

static void *long_poll(void *arg)
{
    poller *pl = arg;
    op_client_changes ch;
    op_err e;
    pl->st = op_client_changes_since(pl->c, "wrap", pl->since, 1500, OPT_TIMEOUT_MS, &ch, &e);
    snprintf(pl->msg, sizeof pl->msg, "%s", e.msg);
    if (pl->st == OP_OK)
        op_client_changes_free(&ch);
    return NULL;
}

/* The wrap met before any reply showed the top: a long poll holds the socket's last id
 * (0xffffffff) while another thread's call gets id 0. That call's request reaches the
 * daemon cut short and is refused; the client must see it by the reply's id, send it again
 * on a fresh socket and succeed, and the long poll must end well on the old one. */
Test(client_reqid, a_call_past_the_wrap_is_sent_again_on_a_fresh_socket, .timeout = 120)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *setup = opt_connect(&d);
    opt_ref ref;
    put_level(setup, "wrap", &ref);
    op_client_level_info li;
    opt_wait_baked(setup, "wrap", &li);
    op_client_close(setup);

    op_client *c = client_from(&d, 0xffffffffu);
    poller pl = {c, li.version, OP_EINTERNAL, ""};
    pthread_t th;
    pthread_create(&th, NULL, long_poll, &pl);
    opt_sleep_ms(400); /* the poll is parked with id 0xffffffff */
    op_err e;
    op_client_ping_result p;
    cr_assert_eq(op_client_ping(c, OPT_TIMEOUT_MS, &p, &e), OP_OK, "the call after the wrap: %s",
                 e.msg);
    cr_assert_gt(opt_check_level(c, "wrap", &ref), 0);
    pthread_join(th, NULL);
    cr_assert_eq(pl.st, OP_OK, "the long poll: %s", pl.msg);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(op_client_ping(c, OPT_TIMEOUT_MS, &p, &e), OP_OK, "ping %d: %s", i, e.msg);
    op_client_close(c);
    /* The one cut request was refused by the daemon (logged), never run. */
    int refused = refused_requests(&d);
    if (refused != 1)
        opt_daemon_log_tail(&d, 20);
    cr_assert_eq(refused, 1, "%d requests refused as malformed, the one past the wrap expected",
                 refused);
    opt_ref_free(&ref);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

typedef struct pinger {
    op_client *c;
    int fails;
    char msg[OP_ERR_MSG_MAX];
} pinger;

static void *pings(void *arg)
{
    pinger *pg = arg;
    for (int i = 0; i < 40; i++) {
        op_client_ping_result p;
        op_err e;
        if (op_client_ping(pg->c, OPT_TIMEOUT_MS, &p, &e) != OP_OK && pg->fails++ == 0)
            snprintf(pg->msg, sizeof pg->msg, "%s", e.msg);
    }
    return NULL;
}

/* Four threads on one client from 16 ids before the wrap: up to four calls (one on the kept
 * context) are past it at once; each is sent again, the first to see it replaces the socket
 * and the others find it replaced; calls still on the old socket end there. None fails. */
Test(client_reqid, concurrent_calls_across_the_wrap_succeed, .timeout = 120)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = client_from(&d, 0xfffffff0u);
    pinger pg[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        pg[i] = (pinger){c, 0, ""};
        pthread_create(&th[i], NULL, pings, &pg[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pg[i].fails, 0, "thread %d: %d calls failed, the first: %s", i, pg[i].fails,
                     pg[i].msg);
    op_client_close(c);
    int refused = refused_requests(&d);
    cr_assert(refused >= 1 && refused <= 4, "%d requests refused as malformed, 1..4 expected",
              refused);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}
