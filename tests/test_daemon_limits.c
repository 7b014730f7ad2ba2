/*
 * onepathd memory limits (issue 16): a request of tiny msgpack values may not unpack to
 * many times its size (--max-unpacked). Measured on the daemon process itself: its peak
 * resident size (VmHWM of /proc/PID/status) before and after the attack.
 */
#include <msgpack.h>
#include <pthread.h>

#include "op_daemon_test.h"
#include "onepath/rpc.h"

/* The daemon's VmHWM or VmRSS in bytes (0 if unreadable). */
static size_t proc_kb(pid_t pid, const char *key)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    size_t kb = 0, n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':')
            kb = strtoull(line + n + 1, NULL, 10);
    if (f)
        fclose(f);
    return kb * 1024;
}

/* {v:1, id:7, method:"ping", params:{pad:[nil × n]}}: 16 MiB of nils. */
static uint8_t *nil_request(size_t n, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 4);
    op_rpc_pack_key(&pk, "v");
    msgpack_pack_int(&pk, 1);
    op_rpc_pack_key(&pk, "id");
    msgpack_pack_int(&pk, 7);
    op_rpc_pack_key(&pk, "method");
    op_rpc_pack_key(&pk, "ping");
    op_rpc_pack_key(&pk, "params");
    msgpack_pack_map(&pk, 1);
    op_rpc_pack_key(&pk, "pad");
    msgpack_pack_array(&pk, n);
    for (size_t i = 0; i < n; i++)
        msgpack_pack_nil(&pk);
    *len = sb.size;
    return (uint8_t *)sb.data;
}

typedef struct sender {
    const char *url;
    const uint8_t *req;
    size_t len;
    pthread_barrier_t *go;
    op_status st;
    int ok, code;
    char msg[256];
} sender;

static void *send_one(void *arg)
{
    sender *s = arg;
    op_client *c;
    op_err e;
    s->st = op_client_open(s->url, &c, &e);
    pthread_barrier_wait(s->go);
    uint8_t *raw = NULL;
    size_t n = 0;
    if (s->st == OP_OK)
        s->st = op_client_call_raw(c, s->req, s->len, OPT_TIMEOUT_MS, &raw, &n, &e);
    if (s->st == OP_OK) {
        msgpack_unpacked u;
        msgpack_unpacked_init(&u);
        size_t off = 0;
        if (msgpack_unpack_next(&u, (const char *)raw, n, &off) == MSGPACK_UNPACK_SUCCESS) {
            const msgpack_object *ok = op_rpc_get(&u.data, "ok");
            s->ok = ok && ok->via.boolean;
            const msgpack_object *er = op_rpc_get(&u.data, "error");
            const msgpack_object *code = op_rpc_get(er, "code");
            const msgpack_object *m = op_rpc_get(er, "message");
            s->code = code ? (int)code->via.u64 : -1;
            if (m)
                snprintf(s->msg, sizeof s->msg, "%.*s", (int)m->via.str.size, m->via.str.ptr);
        }
        msgpack_unpacked_destroy(&u);
        free(raw);
    } else {
        snprintf(s->msg, sizeof s->msg, "%s", e.msg);
    }
    if (c)
        op_client_close(c);
    return NULL;
}

/* Four 16 MiB requests of nils at once: each refused with OP_ELIMIT naming
 * --max-unpacked before it is unpacked, and the daemon's peak RSS grows by about the
 * messages themselves, not by 25 times them (it was 1.4 GB). */
Test(daemon_limits, nil_flood_is_refused_before_unpacking, .timeout = 120)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    size_t len, n = ((size_t)16 << 20) - 64;
    uint8_t *req = nil_request(n, &len);
    size_t hwm0 = proc_kb(d.pid, "VmHWM");
    cr_assert_gt(hwm0, 0, "cannot read /proc/%d/status", (int)d.pid);
    enum { N = 4 };
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, N);
    sender s[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        s[i] = (sender){.url = d.url, .req = req, .len = len, .go = &go};
        pthread_create(&th[i], NULL, send_one, &s[i]);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    size_t hwm1 = proc_kb(d.pid, "VmHWM");
    /* Unpacked, 4 × 16 Mi nils are 4 × 400 MB; the messages alone 4 × 16 MiB (nng may
     * hold a copy while receiving). */
    size_t grew = hwm1 > hwm0 ? hwm1 - hwm0 : 0;
    fprintf(stderr, "daemon_limits: VmHWM %zu -> %zu kB (+%zu MB) for %d requests of %zu bytes\n",
            hwm0 / 1024, hwm1 / 1024, grew >> 20, N, len);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(s[i].st, OP_OK, "request %d: no reply: %s", i, s[i].msg);
        cr_assert(!s[i].ok, "request %d was accepted", i);
        cr_assert_eq(s[i].code, OP_ELIMIT, "request %d: %d %s", i, s[i].code, s[i].msg);
        cr_assert(strstr(s[i].msg, "--max-unpacked"), "request %d: %s", i, s[i].msg);
    }
    cr_assert_lt(grew, (size_t)N * len * 3 + ((size_t)32 << 20), "VmHWM grew by %zu MB",
                 grew >> 20);
    op_client *c = opt_connect(&d);
    op_client_ping_result p;
    op_err e;
    cr_assert_eq(op_client_ping(c, OPT_TIMEOUT_MS, &p, &e), OP_OK, "%s", e.msg);
    op_client_close(c);
    free(req);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

/* The cap is the flag's: under a raised --max-unpacked an 8 Mi-nil request is unpacked
 * (and refused later, for its unknown key); under the default 128M it is over. */
Test(daemon_limits, max_unpacked_is_the_flag, .timeout = 60)
{
    opt_daemon d;
    opt_daemon_init(&d);
    const char *extra[] = {"--max-unpacked", "256M", NULL};
    opt_daemon_start(&d, extra);
    size_t len;
    uint8_t *req = nil_request((size_t)8 << 20, &len);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 1);
    sender s = {.url = d.url, .req = req, .len = len, .go = &go};
    send_one(&s);
    cr_assert_eq(s.st, OP_OK, "%s", s.msg);
    cr_assert_eq(s.code, OP_EPROTO, "%d %s", s.code, s.msg);
    cr_assert(strstr(s.msg, "pad"), "%s", s.msg);
    free(req);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    /* ... and under the default 128M it is over (8 Mi values × 24 bytes = 192 MiB). */
    opt_daemon_start(&d, NULL);
    s = (sender){
        .url = d.url, .req = req = nil_request((size_t)8 << 20, &len), .len = len, .go = &go};
    send_one(&s);
    cr_assert_eq(s.code, OP_ELIMIT, "%d %s", s.code, s.msg);
    pthread_barrier_destroy(&go);
    free(req);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

/* One sliver triangle 9,800 m long: 134 bytes of level.put, a million tiles. */
static op_status put_sliver(op_client *c, const char *level, op_err *e)
{
    float v[9] = {0, 0, 0, 9800, 0, 9800, 9800, 0, 9800.01f};
    int32_t t[3] = {0, 1, 2};
    op_client_mesh m = {"sliver", v, 3, t, 1, NULL};
    uint64_t ver;
    int changed;
    return op_client_level_put(c, level, NULL, 0, &m, 1, OPT_TIMEOUT_MS, &ver, &changed, e);
}

/* --max-memory: a level.put whose tile range would pass it is OP_ELIMIT naming the flag,
 * and the levels already accepted are unchanged (version, tiles). */
Test(daemon_limits, max_memory_refuses_a_huge_grid, .timeout = 60)
{
    opt_daemon d;
    opt_daemon_init(&d);
    const char *extra[] = {"--max-memory", "64M", NULL};
    opt_daemon_start(&d, extra);
    op_client *c = opt_connect(&d);
    opt_soup floor = {0};
    opt_soup_quad(&floor, 0, 0, 20, 20, 0);
    op_client_mesh fm = opt_mesh("floor", &floor);
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(op_client_level_put(c, "small", NULL, 0, &fm, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK, "%s", e.msg);
    op_client_level_info before, after;
    cr_assert_eq(op_client_level_info_get(c, "small", OPT_TIMEOUT_MS, &before, &e), OP_OK, "%s",
                 e.msg);
    size_t rss0 = proc_kb(d.pid, "VmRSS");
    op_status st = put_sliver(c, "sliver", &e);
    cr_assert_eq(st, OP_ELIMIT, "%s: %s", op_status_name(st), e.msg);
    cr_assert(strstr(e.msg, "--max-memory") && strstr(e.msg, "sliver"), "%s", e.msg);
    /* ... also as a replacement of the accepted level. */
    st = put_sliver(c, "small", &e);
    cr_assert_eq(st, OP_ELIMIT, "%s: %s", op_status_name(st), e.msg);
    size_t rss1 = proc_kb(d.pid, "VmRSS");
    fprintf(stderr, "daemon_limits: refused sliver: VmRSS %zu -> %zu kB\n", rss0 / 1024,
            rss1 / 1024);
    cr_assert_lt(rss1, rss0 + ((size_t)32 << 20), "VmRSS grew by %zu MB", (rss1 - rss0) >> 20);
    cr_assert_eq(op_client_level_info_get(c, "small", OPT_TIMEOUT_MS, &after, &e), OP_OK, "%s",
                 e.msg);
    cr_assert_eq(after.version, before.version);
    cr_assert_eq(after.tiles_total, before.tiles_total);
    cr_assert(!memcmp(after.tiles, before.tiles, sizeof after.tiles));
    cr_assert_eq(op_client_level_info_get(c, "sliver", OPT_TIMEOUT_MS, &after, &e), OP_ENOTFOUND);
    op_client_close(c);
    opt_soup_free(&floor);
    /* Restarted, the refused edits are not there either. */
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_start(&d, extra);
    c = opt_connect(&d);
    cr_assert_eq(op_client_level_info_get(c, "small", OPT_TIMEOUT_MS, &after, &e), OP_OK, "%s",
                 e.msg);
    cr_assert_eq(after.version, before.version);
    cr_assert_eq(op_client_level_info_get(c, "sliver", OPT_TIMEOUT_MS, &after, &e), OP_ENOTFOUND);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}
