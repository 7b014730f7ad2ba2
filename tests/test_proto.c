/* proto: the bounded pre-scan and RPC request parsing, each refusal by name. */
#include <criterion/criterion.h>
#include <string.h>

#include "onepath/mpscan.h"
#include "onepath/rpc.h"

static op_status scan(const char *bytes, size_t len)
{
    op_err e;
    return op_mp_scan(bytes, len, NULL, &e);
}

Test(mpscan, accepts_well_formed_values)
{
    cr_assert_eq(scan("\xc0", 1), OP_OK);
    cr_assert_eq(scan("\x93\x01\x02\x03", 4), OP_OK);
    cr_assert_eq(scan("\x81\xa1k\xc4\x02xy", 7), OP_OK);
    cr_assert_eq(scan("\xcb\0\0\0\0\0\0\0\0", 9), OP_OK);
}

Test(mpscan, huge_declared_map_is_refused_without_reserving)
{
    /* The 5-byte message that made msgpack-c reserve 8.4 GB (toolchain.md). */
    op_err e;
    cr_assert_eq(op_mp_scan("\xdd\x10\x00\x00\x00", 5, NULL, &e), OP_EPROTO);
    cr_assert(strstr(e.msg, "elements"), "%s", e.msg);
    cr_assert_eq(scan("\xdf\xff\xff\xff\xff", 5), OP_EPROTO);
    cr_assert_eq(scan("\xc6\xff\xff\xff\xff", 5), OP_EPROTO); /* bin32 longer than the bytes */
}

Test(mpscan, truncated_trailing_and_never_used)
{
    cr_assert_eq(scan("", 0), OP_EINCOMPLETE);
    /* A container count beyond the bytes present is refused as a lie (every element takes
     * at least a byte); a fixed-size scalar cut short is incomplete. */
    cr_assert_eq(scan("\x92\x01", 2), OP_EPROTO);
    cr_assert_eq(scan("\xcd\x01", 2), OP_EINCOMPLETE);
    cr_assert_eq(scan("\x01\x02", 2), OP_EPROTO);
    cr_assert_eq(scan("\xc1", 1), OP_EPROTO);
}

Test(mpscan, nesting_and_item_caps)
{
    char deep[64];
    memset(deep, 0x91, sizeof deep); /* 63 nested one-element arrays, then nil */
    deep[63] = (char)0xc0;
    cr_assert_eq(scan(deep, sizeof deep), OP_ELIMIT);
    op_mp_limits lim;
    op_mp_limits_default(&lim);
    lim.max_items = 3;
    op_err e;
    cr_assert_eq(op_mp_scan("\x93\x01\x02\x03", 4, &lim, &e), OP_ELIMIT);
    lim.max_items = 4;
    cr_assert_eq(op_mp_scan("\x93\x01\x02\x03", 4, &lim, &e), OP_OK);
    lim.max_bytes = 3;
    cr_assert_eq(op_mp_scan("\x93\x01\x02\x03", 4, &lim, &e), OP_ELIMIT);
}

/* Builds a request with msgpack-c. */
static size_t make_request(char *out, size_t cap, int version, const char *method, int with_params,
                           const char *extra_key)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3 + (with_params ? 1 : 0) + (extra_key ? 1 : 0));
    op_rpc_pack_key(&pk, "v");
    msgpack_pack_int(&pk, version);
    op_rpc_pack_key(&pk, "id");
    msgpack_pack_uint64(&pk, 77);
    op_rpc_pack_key(&pk, "method");
    op_rpc_pack_key(&pk, method);
    if (with_params) {
        op_rpc_pack_key(&pk, "params");
        msgpack_pack_map(&pk, 2);
        op_rpc_pack_key(&pk, "level");
        op_rpc_pack_key(&pk, "town-1");
        op_rpc_pack_key(&pk, "tx");
        msgpack_pack_int(&pk, -3);
    }
    if (extra_key) {
        op_rpc_pack_key(&pk, extra_key);
        msgpack_pack_nil(&pk);
    }
    cr_assert(sb.size <= cap);
    memcpy(out, sb.data, sb.size);
    size_t n = sb.size;
    msgpack_sbuffer_destroy(&sb);
    return n;
}

Test(rpc, parses_a_request_and_reads_params)
{
    char buf[256];
    size_t n = make_request(buf, sizeof buf, 1, "tile.get", 1, NULL);
    op_rpc_request req;
    op_err e;
    cr_assert_eq(op_rpc_request_parse(buf, n, NULL, &req, &e), OP_OK, "%s", e.msg);
    cr_assert_str_eq(req.method, "tile.get");
    cr_assert(req.has_id && req.id == 77);
    static const char *const keys[] = {"level", "tx", NULL};
    cr_assert_eq(op_rpc_check_keys(req.params, keys, &e), OP_OK, "%s", e.msg);
    int64_t tx;
    cr_assert_eq(op_rpc_get_int(req.params, "tx", -100, 100, 0, &tx, NULL, &e), OP_OK);
    cr_assert_eq(tx, -3);
    cr_assert_eq(op_rpc_get_int(req.params, "tx", 0, 100, 0, &tx, NULL, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "'tx'"), "%s", e.msg);
    cr_assert_eq(op_rpc_get_int(req.params, "tz", 0, 100, 0, &tx, NULL, &e), OP_EPROTO);
    cr_assert(strstr(e.msg, "missing 'tz'"), "%s", e.msg);
    const char *s;
    size_t sl;
    cr_assert_eq(op_rpc_get_str(req.params, "tx", 0, &s, &sl, &e), OP_EPROTO);
    static const char *const fewer[] = {"level", NULL};
    cr_assert_eq(op_rpc_check_keys(req.params, fewer, &e), OP_EPROTO);
    cr_assert(strstr(e.msg, "unknown key 'tx'"), "%s", e.msg);
    op_rpc_request_fini(&req);
}

Test(rpc, refusals_keep_the_id_for_the_reply)
{
    char buf[256];
    op_rpc_request req;
    op_err e;
    size_t n = make_request(buf, sizeof buf, 2, "ping", 0, NULL);
    cr_assert_eq(op_rpc_request_parse(buf, n, NULL, &req, &e), OP_EPROTO);
    cr_assert(strstr(e.msg, "version"), "%s", e.msg);
    cr_assert(req.has_id && req.id == 77);
    op_rpc_request_fini(&req);
    n = make_request(buf, sizeof buf, 1, "ping", 0, "bogus");
    cr_assert_eq(op_rpc_request_parse(buf, n, NULL, &req, &e), OP_EPROTO);
    cr_assert(strstr(e.msg, "bogus"), "%s", e.msg);
    op_rpc_request_fini(&req);
    /* Truncated: every prefix is refused, never a crash. */
    n = make_request(buf, sizeof buf, 1, "tile.get", 1, NULL);
    for (size_t k = 0; k < n; k++) {
        cr_assert_neq(op_rpc_request_parse(buf, k, NULL, &req, &e), OP_OK, "prefix %zu", k);
        op_rpc_request_fini(&req);
    }
    /* Not a map. */
    cr_assert_eq(op_rpc_request_parse("\x93\x01\x02\x03", 4, NULL, &req, &e), OP_EPROTO);
    op_rpc_request_fini(&req);
}

Test(rpc, names)
{
    char out[65];
    op_err e;
    cr_assert_eq(op_rpc_name("town_1.v2-x", 11, "level", out, &e), OP_OK);
    cr_assert_str_eq(out, "town_1.v2-x");
    cr_assert_eq(op_rpc_name("", 0, "level", out, &e), OP_EINVAL);
    cr_assert_eq(op_rpc_name(".hidden", 7, "level", out, &e), OP_EINVAL);
    cr_assert_eq(op_rpc_name("a/b", 3, "mesh", out, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "0x2f"), "%s", e.msg);
    char long_name[70];
    memset(long_name, 'a', sizeof long_name);
    cr_assert_eq(op_rpc_name(long_name, 65, "level", out, &e), OP_EINVAL);
}

Test(rpc, replies_have_the_fixed_key_order)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    op_rpc_request req;
    memset(&req, 0, sizeof req);
    req.has_id = 1;
    req.id = 5;
    cr_assert_eq(op_rpc_reply_error(&pk, &req, OP_ERANGE, "tile (9, 9) is outside"), 0);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    cr_assert_eq(msgpack_unpack_next(&u, sb.data, sb.size, &off), MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *m = &u.data;
    cr_assert_eq(m->type, MSGPACK_OBJECT_MAP);
    cr_assert_eq(m->via.map.size, 4);
    cr_assert_eq(op_rpc_get(m, "id")->via.u64, 5);
    cr_assert_eq(op_rpc_get(m, "ok")->via.boolean, false);
    const msgpack_object *err = op_rpc_get(m, "error");
    cr_assert_eq(op_rpc_get(err, "code")->via.u64, OP_ERANGE);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&sb);
}
