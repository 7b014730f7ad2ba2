/*
 * onepathd's listeners stay open to new clients (protocol §1.7, issue 16): a peer that
 * drops its connection in the middle of nng's SP handshake made an nng 1.5.2 ipc listener
 * deaf to every later connection. Raw sockets send part of the handshake and close, many
 * times, and a fresh client must still get its ping answered within a bound.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "op_daemon_test.h"

#define ROUNDS          6
#define DROPS_PER_ROUND 20
/* A deaf listener is found within --listen-check-ms plus the 2 s test connection, and
 * the client then reconnects and resends: well inside this bound, which catches a hang. */
#define PING_BOUND_MS 15000

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* Connects a plain socket to an ipc:// path or a tcp://127.0.0.1:PORT URL. */
static int raw_connect(const char *url)
{
    int fd;
    if (!strncmp(url, "ipc://", 6)) {
        struct sockaddr_un un = {.sun_family = AF_UNIX};
        snprintf(un.sun_path, sizeof un.sun_path, "%s", url + 6);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        cr_assert_geq(fd, 0);
        cr_assert_eq(connect(fd, (struct sockaddr *)&un, sizeof un), 0, "connect %s", url);
    } else {
        const char *colon = strrchr(url, ':');
        cr_assert_not_null(colon);
        struct sockaddr_in in = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)atoi(colon + 1)),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        fd = socket(AF_INET, SOCK_STREAM, 0);
        cr_assert_geq(fd, 0);
        cr_assert_eq(connect(fd, (struct sockaddr *)&in, sizeof in), 0, "connect %s", url);
    }
    return fd;
}

/* One client that breaks off the handshake: k selects how much of the 8-byte REQ0 header
 * it sends before it closes (none, 3 bytes, 7 bytes). */
static void drop_mid_handshake(const char *url, int k)
{
    static const unsigned char req0[8] = {0, 'S', 'P', 0, 0x00, 0x30, 0, 0};
    static const size_t sent[3] = {0, 3, 7};
    int fd = raw_connect(url);
    size_t n = sent[k % 3];
    if (n)
        cr_assert_eq(send(fd, req0, n, MSG_NOSIGNAL), (ssize_t)n);
    close(fd);
}

static op_status ping_fresh(const char *url, op_err *e)
{
    op_client *c;
    op_status st = op_client_open(url, &c, e);
    if (st != OP_OK)
        return st;
    op_client_ping_result p;
    st = op_client_ping(c, PING_BOUND_MS, &p, e);
    op_client_close(c);
    return st;
}

/* A listener nng 1.5.2 made deaf keeps its endpoint and the pipes it negotiated but never
 * handed on; closing it does not free them (nng's own allocations, from its threads and
 * nng_listener_create), so under LeakSanitizer the daemons of the dropped-handshake tests
 * would exit 1 at teardown. Leak checking is turned off for those daemons only; every other
 * daemon test keeps it. */
static void no_leak_check_for_daemon(void)
{
    const char *old = getenv("LSAN_OPTIONS");
    char v[1024];
    snprintf(v, sizeof v, "%s%sdetect_leaks=0", old ? old : "", old && *old ? ":" : "");
    setenv("LSAN_OPTIONS", v, 1);
}

static void check_listener_survives(const char *url, opt_daemon *d)
{
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < DROPS_PER_ROUND; i++)
            drop_mid_handshake(url, r * DROPS_PER_ROUND + i);
        op_err e = {0};
        double t0 = opt_now_ms();
        op_status st = ping_fresh(url, &e);
        if (st != OP_OK)
            opt_daemon_log_tail(d, 10);
        cr_assert_eq(st, OP_OK, "%s: no ping answer after %d dropped handshakes (%.0f ms): %s", url,
                     (r + 1) * DROPS_PER_ROUND, opt_now_ms() - t0, e.msg);
    }
}

Test(daemon_listen, dropped_handshakes_leave_ipc_listener_answering, .timeout = 240)
{
    opt_daemon d;
    opt_daemon_init(&d);
    no_leak_check_for_daemon();
    opt_daemon_start(&d, NULL);
    check_listener_survives(d.url, &d);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

Test(daemon_listen, dropped_handshakes_leave_tcp_listener_answering, .timeout = 240)
{
    opt_daemon d;
    opt_daemon_init(&d);
    char tcp[64];
    snprintf(tcp, sizeof tcp, "tcp://127.0.0.1:%d", free_port());
    no_leak_check_for_daemon();
    opt_daemon_start(&d, (const char *const[]){"--listen", tcp, NULL});
    check_listener_survives(tcp, &d);
    /* The other listener of the same socket too. */
    op_err e = {0};
    cr_assert_eq(ping_fresh(d.url, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

/* The watchdog's own test connections must not make the daemon restart a healthy
 * listener: an idle daemon checked every 100 ms for 2 s logs no restart. */
Test(daemon_listen, healthy_listener_is_not_restarted, .timeout = 120)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, (const char *const[]){"--listen-check-ms", "100", NULL});
    opt_sleep_ms(2000);
    op_err e = {0};
    cr_assert_eq(ping_fresh(d.url, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "grep -q OP-LISTEN-DEAF '%s'", d.log);
    cr_assert_neq(system(cmd), 0, "a healthy listener was restarted (see %s)", d.log);
    snprintf(cmd, sizeof cmd, "grep -q OP-READY '%s'", d.log);
    cr_assert_eq(system(cmd), 0, "the log %s was not written", d.log);
    opt_daemon_cleanup(&d);
}
