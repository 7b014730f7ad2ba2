/*
 * onepathd refusals: a catalogue of bad messages, each answered with the error of its
 * kind (protocol §2, §8) and the id echoed when it could be read, or, for a message over
 * --max-message, the documented connection drop; the daemon keeps serving after each.
 */
#include <msgpack.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "onepath/nng_close.h"
#include "op_daemon_test.h"
#include "op_rpc_test.h"
#include "onepath/rpc.h"

typedef struct reply {
    int ok;
    int code;
    int has_id;
    uint64_t id;
    char msg[256];
} reply;

static op_status call(op_client *c, const void *buf, size_t len, int timeout_ms, reply *r)
{
    memset(r, 0, sizeof *r);
    uint8_t *raw;
    size_t n;
    op_err e;
    op_status st = op_client_call_raw(c, buf, len, timeout_ms, &raw, &n, &e);
    if (st != OP_OK)
        return st;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    cr_assert_eq(msgpack_unpack_next(&u, (const char *)raw, n, &off), MSGPACK_UNPACK_SUCCESS);
    cr_assert_eq(off, n, "trailing bytes in the reply");
    const msgpack_object *top = &u.data;
    cr_assert_eq(top->type, MSGPACK_OBJECT_MAP);
    /* Key order of protocol §2.2: v, id, ok, result|error. */
    cr_assert_eq(top->via.map.size, 4);
    const char *order[4] = {"v", "id", "ok", NULL};
    for (int i = 0; i < 3; i++)
        cr_assert(top->via.map.ptr[i].key.via.str.size == strlen(order[i]) &&
                  !memcmp(top->via.map.ptr[i].key.via.str.ptr, order[i], strlen(order[i])));
    const msgpack_object *id = op_rpc_get(top, "id");
    r->has_id = id->type == MSGPACK_OBJECT_POSITIVE_INTEGER;
    r->id = r->has_id ? id->via.u64 : 0;
    r->ok = op_rpc_get(top, "ok")->via.boolean;
    if (!r->ok) {
        const msgpack_object *err = op_rpc_get(top, "error");
        cr_assert_not_null(err);
        r->code = (int)op_rpc_get(err, "code")->via.u64;
        const msgpack_object *m = op_rpc_get(err, "message");
        snprintf(r->msg, sizeof r->msg, "%.*s", (int)m->via.str.size, m->via.str.ptr);
        const msgpack_object *name = op_rpc_get(err, "name");
        cr_assert(name && name->type == MSGPACK_OBJECT_STR);
        cr_assert(!strncmp(name->via.str.ptr, op_status_name(r->code), name->via.str.size));
    }
    msgpack_unpacked_destroy(&u);
    free(raw);
    return OP_OK;
}

static void expect(op_client *c, const void *buf, size_t len, int code, const char *what)
{
    reply r;
    cr_assert_eq(call(c, buf, len, OPT_TIMEOUT_MS, &r), OP_OK, "%s: no reply", what);
    cr_assert(!r.ok, "%s: accepted", what);
    cr_assert_eq(r.code, code, "%s: %s (%d), want %s: %s", what, op_status_name(r.code), r.code,
                 op_status_name(code), r.msg);
    /* ... and the daemon still serves. */
    op_client_ping_result p;
    op_err e;
    cr_assert_eq(op_client_ping(c, OPT_TIMEOUT_MS, &p, &e), OP_OK, "after %s: %s", what, e.msg);
}

/* A request {v, id, method, params} whose params map is written by fn. */
typedef void (*params_fn)(msgpack_packer *pk);

static void request(msgpack_sbuffer *sb, const char *method, int nparams, params_fn fn)
{
    msgpack_sbuffer_init(sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    opt_pack_head(&pk, 4, 77, method);
    op_rpc_pack_key(&pk, "params");
    msgpack_pack_map(&pk, (size_t)nparams);
    if (fn)
        fn(&pk);
}

static void expect_req(op_client *c, const char *method, int nparams, params_fn fn, int code,
                       const char *what)
{
    msgpack_sbuffer sb;
    request(&sb, method, nparams, fn);
    reply r;
    cr_assert_eq(call(c, sb.data, sb.size, OPT_TIMEOUT_MS, &r), OP_OK);
    cr_assert(r.has_id && r.id == 77, "%s: id not echoed", what);
    expect(c, sb.data, sb.size, code, what);
    msgpack_sbuffer_destroy(&sb);
}

static void kv_str(msgpack_packer *pk, const char *k, const char *v)
{
    op_rpc_pack_key(pk, k);
    op_rpc_pack_key(pk, v);
}

static void kv_int(msgpack_packer *pk, const char *k, int64_t v)
{
    op_rpc_pack_key(pk, k);
    msgpack_pack_int64(pk, v);
}

static void p_tile_str(msgpack_packer *pk)
{
    kv_str(pk, "level", "lv");
    kv_str(pk, "tx", "0");
    kv_int(pk, "tz", 0);
}
static void p_tile_far(msgpack_packer *pk)
{
    kv_str(pk, "level", "lv");
    kv_int(pk, "tx", -2147483647 - 1);
    kv_int(pk, "tz", 2147483647);
}
static void p_tile_huge(msgpack_packer *pk)
{
    kv_str(pk, "level", "lv");
    kv_int(pk, "tx", (int64_t)1 << 40);
    kv_int(pk, "tz", 0);
}
static void p_tile_unknown_key(msgpack_packer *pk)
{
    kv_str(pk, "level", "lv");
    kv_int(pk, "tx", 0);
    kv_int(pk, "tz", 0);
    kv_int(pk, "layer", 0);
}
static void p_tile_missing(msgpack_packer *pk)
{
    kv_str(pk, "level", "lv");
    kv_int(pk, "tx", 0);
}
static void p_bad_name(msgpack_packer *pk)
{
    kv_str(pk, "level", "../etc");
}
static void p_no_level(msgpack_packer *pk)
{
    kv_str(pk, "level", "nope");
}
static void p_wait_absurd(msgpack_packer *pk)
{
    kv_str(pk, "level", "lv");
    kv_int(pk, "version", 0);
    kv_int(pk, "wait_ms", 10000000);
}
static void p_range_wait(msgpack_packer *pk, int64_t wait)
{
    kv_str(pk, "level", "lv");
    kv_int(pk, "tx0", 0);
    kv_int(pk, "tz0", 0);
    kv_int(pk, "tx1", 0);
    kv_int(pk, "tz1", 0);
    kv_int(pk, "wait_ms", wait);
}
static void p_range_wait_absurd(msgpack_packer *pk)
{
    p_range_wait(pk, 600001);
}
static void p_range_wait_negative(msgpack_packer *pk)
{
    p_range_wait(pk, -1);
}
static void p_range_wait_str(msgpack_packer *pk)
{
    kv_str(pk, "level", "lv");
    kv_int(pk, "tx0", 0);
    kv_int(pk, "tz0", 0);
    kv_int(pk, "tx1", 0);
    kv_int(pk, "tz1", 0);
    kv_str(pk, "wait_ms", "10");
}
static void p_version_negative(msgpack_packer *pk)
{
    kv_str(pk, "level", "lv");
    kv_int(pk, "version", -1);
}

static const float quad_v[12] = {0, 0, 0, 10, 0, 0, 10, 0, 10, 0, 0, 10};
static const int32_t quad_t[6] = {0, 2, 1, 0, 3, 2};

static void p_mesh(msgpack_packer *pk, const void *v, size_t vl, const void *t, size_t tl)
{
    kv_str(pk, "level", "lv");
    kv_str(pk, "name", "m");
    op_rpc_pack_key(pk, "verts");
    msgpack_pack_bin_with_body(pk, v, vl);
    op_rpc_pack_key(pk, "tris");
    msgpack_pack_bin_with_body(pk, t, tl);
}
static void p_mesh_bad_index(msgpack_packer *pk)
{
    static const int32_t t[3] = {0, 1, 4};
    p_mesh(pk, quad_v, sizeof quad_v, t, sizeof t);
}
static void p_mesh_ragged(msgpack_packer *pk)
{
    p_mesh(pk, quad_v, sizeof quad_v - 4, quad_t, sizeof quad_t);
}
static void p_mesh_str_verts(msgpack_packer *pk)
{
    kv_str(pk, "level", "lv");
    kv_str(pk, "name", "m");
    kv_str(pk, "verts", "0 0 0");
    op_rpc_pack_key(pk, "tris");
    msgpack_pack_bin_with_body(pk, quad_t, sizeof quad_t);
}
static void p_mesh_inf(msgpack_packer *pk)
{
    float v[12];
    memcpy(v, quad_v, sizeof v);
    v[4] = 1.0f / 0.0f;
    p_mesh(pk, v, sizeof v, quad_t, sizeof quad_t);
}
static void p_put_settings(msgpack_packer *pk, const char *key, double value)
{
    kv_str(pk, "level", "lv2");
    op_rpc_pack_key(pk, "settings");
    msgpack_pack_map(pk, 1);
    op_rpc_pack_key(pk, key);
    msgpack_pack_double(pk, value);
    op_rpc_pack_key(pk, "meshes");
    msgpack_pack_array(pk, 0);
}
static void p_put_bad_cell(msgpack_packer *pk)
{
    p_put_settings(pk, "cell_size", -1.0);
}
static void p_put_unknown_setting(msgpack_packer *pk)
{
    p_put_settings(pk, "cell_sise", 0.3);
}
static void p_put_meshes_not_array(msgpack_packer *pk)
{
    kv_str(pk, "level", "lv2");
    op_rpc_pack_key(pk, "settings");
    msgpack_pack_map(pk, 0);
    kv_int(pk, "meshes", 3);
}

/* A literal message (its length without the terminating NUL). */
#define EXPECT_LIT(c, lit, code, what) expect(c, lit, sizeof lit - 1, code, what)

static opt_daemon d;

static char tcp_url[64];

static void setup(void)
{
    opt_daemon_init(&d);
    /* A loopback tcp listener beside the ipc one for the oversized-message test. */
    snprintf(tcp_url, sizeof tcp_url, "tcp://127.0.0.1:%d", 30000 + (int)(getpid() % 20000));
    const char *const extra[] = {"--max-message", "64K", "--listen", tcp_url, NULL};
    opt_daemon_start(&d, extra);
}

static void teardown(void)
{
    opt_daemon_cleanup(&d);
}

static void put_level(op_client *c)
{
    op_client_mesh m = {"m", quad_v, 4, quad_t, 2, NULL};
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(op_client_level_put(c, "lv", NULL, 0, &m, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK, "%s", e.msg);
}

Test(daemon_bad, malformed_messages, .init = setup, .fini = teardown, .timeout = 60)
{
    op_client *c = opt_connect(&d);
    EXPECT_LIT(c, "", OP_EINCOMPLETE, "empty message");
    EXPECT_LIT(c, "\x84\xa1v\x01\xa6method", OP_EINCOMPLETE, "map cut after two keys");
    EXPECT_LIT(c, "\x84\xa1v\x01\xa6meth", OP_EPROTO, "str longer than the bytes left");
    EXPECT_LIT(c, "\xdd\x10\x00\x00\x00", OP_EPROTO, "huge declared map (dd 10 00 00 00)");
    EXPECT_LIT(c, "\xdc\xff\xff", OP_EPROTO, "array16 of 65535 in 3 bytes");
    EXPECT_LIT(c, "\xdc\xff", OP_EINCOMPLETE, "array16 header cut");
    EXPECT_LIT(c, "\xc6\x7f\xff\xff\xff", OP_EPROTO, "bin32 longer than the message");
    EXPECT_LIT(c, "\x01", OP_EPROTO, "not a map");
    EXPECT_LIT(c, "\xc1", OP_EPROTO, "never-used type byte");
    EXPECT_LIT(c, "\x80\x80", OP_EPROTO, "two values");
    char deep[40];
    memset(deep, 0x91, sizeof deep);
    deep[39] = (char)0xc0;
    expect(c, deep, sizeof deep, OP_ELIMIT, "nesting 39 deep");
    /* {v: "1", method: "ping"} */
    EXPECT_LIT(c, "\x82\xa1v\xa1\x31\xa6method\xa4ping", OP_EPROTO, "v is a str");
    /* {v: 2, method: "ping"} */
    EXPECT_LIT(c, "\x82\xa1v\x02\xa6method\xa4ping", OP_EPROTO, "protocol version 2");
    /* {v: 1, method: "ping", x: 1} */
    EXPECT_LIT(c, "\x83\xa1v\x01\xa6method\xa4ping\xa1x\x01", OP_EPROTO, "unknown top key");
    /* {v: 1} */
    EXPECT_LIT(c, "\x81\xa1v\x01", OP_EPROTO, "no method");
    op_client_close(c);
}

Test(daemon_bad, bad_params, .init = setup, .fini = teardown, .timeout = 60)
{
    op_client *c = opt_connect(&d);
    put_level(c);
    expect_req(c, "level.nuke", 0, NULL, OP_EPROTO, "unknown method");
    expect_req(c, "tile.get", 3, p_tile_str, OP_EPROTO, "tx is a str");
    expect_req(c, "tile.get", 3, p_tile_far, OP_ERANGE, "tile far outside");
    expect_req(c, "tile.get", 3, p_tile_huge, OP_ERANGE, "tx beyond int32");
    expect_req(c, "tile.get", 4, p_tile_unknown_key, OP_EPROTO, "unknown param key");
    expect_req(c, "tile.get", 2, p_tile_missing, OP_EPROTO, "missing tz");
    expect_req(c, "level.info", 1, p_bad_name, OP_EINVAL, "bad level name");
    expect_req(c, "level.info", 1, p_no_level, OP_ENOTFOUND, "no such level");
    expect_req(c, "changes.since", 3, p_wait_absurd, OP_ERANGE, "wait_ms too long");
    expect_req(c, "changes.since", 2, p_version_negative, OP_ERANGE, "negative version");
    expect_req(c, "tile.range", 6, p_range_wait_absurd, OP_ERANGE, "tile.range wait_ms too long");
    expect_req(c, "tile.range", 6, p_range_wait_negative, OP_ERANGE, "tile.range wait_ms < 0");
    expect_req(c, "tile.range", 6, p_range_wait_str, OP_EPROTO, "tile.range wait_ms is a str");
    expect_req(c, "mesh.put", 4, p_mesh_bad_index, OP_ERANGE, "index outside the vertices");
    expect_req(c, "mesh.put", 4, p_mesh_ragged, OP_EINVAL, "verts not a multiple of 12");
    expect_req(c, "mesh.put", 4, p_mesh_str_verts, OP_EPROTO, "verts is a str");
    expect_req(c, "mesh.put", 4, p_mesh_inf, OP_EINVAL, "infinite coordinate");
    expect_req(c, "level.put", 3, p_put_bad_cell, OP_ERANGE, "cell_size -1");
    expect_req(c, "level.put", 3, p_put_unknown_setting, OP_EINVAL, "unknown setting");
    expect_req(c, "level.put", 3, p_put_meshes_not_array, OP_EPROTO, "meshes is an int");
    /* None of the refused edits changed the level. */
    op_client_level_info li;
    op_err e;
    cr_assert_eq(op_client_level_info_get(c, "lv", OPT_TIMEOUT_MS, &li, &e), OP_OK);
    cr_assert_eq(li.version, 1);
    op_client_level_list l;
    cr_assert_eq(op_client_level_list_get(c, OPT_TIMEOUT_MS, &l, &e), OP_OK);
    cr_assert_eq(l.n, 1, "a refused level.put left a level behind");
    op_client_level_list_free(&l);
    op_client_close(c);
}

Test(daemon_bad, oversized_message_drops_the_connection, .init = setup, .fini = teardown,
     .timeout = 60)
{
    /* Over tcp: with nng 1.5.2's ipc transport, closing a client whose oversized request
     * was dropped by the peer can hang in nng_close (seen in about half the runs); over
     * tcp it never did. The daemon side is the same for both transports. */
    op_client *c;
    op_err e;
    cr_assert_eq(op_client_open(tcp_url, &c, &e), OP_OK, "%s", e.msg);
    size_t n = 200 * 1024; /* over --max-message 64K */
    uint8_t *big = calloc(n, 1);
    big[0] = 0xc6; /* bin32 of n - 5 bytes: well-formed, just too big */
    uint32_t len = (uint32_t)(n - 5);
    big[1] = (uint8_t)(len >> 24);
    big[2] = (uint8_t)(len >> 16);
    big[3] = (uint8_t)(len >> 8);
    big[4] = (uint8_t)len;
    /* libonepath-client refuses it before sending, naming the daemon's limit (§1.3)... */
    reply r;
    cr_assert_eq(call(c, big, n, 5000, &r), OP_ELIMIT, "the client sent an oversized message");
    op_client_close(c);
    /* ...so the daemon's side is tried with a plain REQ socket: no reply, ever. */
    nng_socket raw;
    cr_assert_eq(nng_req0_open(&raw), 0);
    cr_assert_eq(nng_dial(raw, tcp_url, NULL, 0), 0);
    nng_msg *m;
    cr_assert_eq(nng_msg_alloc(&m, 0), 0);
    cr_assert_eq(nng_msg_append(m, big, n), 0);
    nng_socket_set_ms(raw, NNG_OPT_SENDTIMEO, 700);
    nng_socket_set_ms(raw, NNG_OPT_RECVTIMEO, 700);
    int rv = nng_sendmsg(raw, m, 0);
    if (rv != 0)
        nng_msg_free(m);
    nng_msg *back = NULL;
    if (rv == 0)
        rv = nng_recvmsg(raw, &back, 0);
    if (back)
        nng_msg_free(back);
    cr_assert_eq(rv, NNG_ETIMEDOUT, "an oversized message got a reply (%s)", nng_strerror(rv));
    op_nng_close_bounded(raw, 1000);
    free(big);
    /* That REQ socket would resend the oversized request on every reconnect (and be
     * dropped again), so the daemon's health is checked from a fresh client. */
    c = opt_connect(&d); /* and on ipc */
    op_client_ping_result p;
    cr_assert_eq(op_client_ping(c, OPT_TIMEOUT_MS, &p, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(p.max_message, 64 * 1024);
    op_client_close(c);
}
