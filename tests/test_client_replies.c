/*
 * libonepath-client against replies it must not trust: a fake server (a bare nng REP
 * socket, no onepathd) answers each call with a reply made here, and the client either
 * reads exactly what the reply says or fails with OP_EPROTO naming the field, freeing what
 * it had read (the free functions stay safe to call).
 */
#include <msgpack.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/client.h"
#include "onepath/limits.h"
#include "op_daemon_test.h"

/* One exchange: the request's method is recorded, the reply is sent as given. */
typedef struct fake {
    nng_socket s;
    char method[64];
    const char *reply;
    size_t reply_len;
} fake;

static void *fake_serve(void *arg)
{
    fake *f = arg;
    char *buf = NULL;
    size_t len = 0;
    if (nng_recv(f->s, &buf, &len, NNG_FLAG_ALLOC) != 0)
        return NULL;
    msgpack_unpacked un;
    msgpack_unpacked_init(&un);
    size_t off = 0;
    if (msgpack_unpack_next(&un, buf, len, &off) == MSGPACK_UNPACK_SUCCESS &&
        un.data.type == MSGPACK_OBJECT_MAP)
        for (uint32_t i = 0; i < un.data.via.map.size; i++) {
            const msgpack_object_kv *kv = &un.data.via.map.ptr[i];
            if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == 6 &&
                !memcmp(kv->key.via.str.ptr, "method", 6) && kv->val.type == MSGPACK_OBJECT_STR &&
                kv->val.via.str.size < sizeof f->method)
                memcpy(f->method, kv->val.via.str.ptr, kv->val.via.str.size);
        }
    msgpack_unpacked_destroy(&un);
    nng_free(buf, len);
    nng_send(f->s, (void *)f->reply, f->reply_len, 0);
    return NULL;
}

/* A packer over sb, and the packing of str keys and values. */
static void pk_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str_with_body(pk, s, strlen(s));
}

static void pk_ok_result(msgpack_packer *pk, int nfields)
{
    msgpack_pack_map(pk, 3);
    pk_str(pk, "id");
    msgpack_pack_uint64(pk, 1);
    pk_str(pk, "ok");
    msgpack_pack_true(pk);
    pk_str(pk, "result");
    msgpack_pack_map(pk, (size_t)nfields);
}

/* Runs call against a fake answering with sb's bytes; returns the call's status. */
typedef op_status (*call_fn)(op_client *c, void *out, op_err *e);

static op_status exchange(const msgpack_sbuffer *sb, call_fn call, void *out, const char *method,
                          op_err *e)
{
    opt_daemon d; /* only for its temporary directory and url */
    opt_daemon_init(&d);
    fake f;
    memset(&f, 0, sizeof f);
    f.reply = sb->data;
    f.reply_len = sb->size;
    cr_assert_eq(nng_rep0_open(&f.s), 0);
    cr_assert_eq(nng_listen(f.s, d.url, NULL, 0), 0, "listen %s", d.url);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, fake_serve, &f), 0);
    op_client *c;
    cr_assert_eq(op_client_open(d.url, &c, e), OP_OK, "%s", e->msg);
    op_status st = call(c, out, e);
    pthread_join(th, NULL);
    op_client_close(c);
    nng_close(f.s);
    opt_daemon_cleanup(&d);
    cr_assert_str_eq(f.method, method);
    return st;
}

static op_status call_changes(op_client *c, void *out, op_err *e)
{
    return op_client_changes_since(c, "lvl", 3, 0, OPT_TIMEOUT_MS, out, e);
}

static op_status call_detour(op_client *c, void *out, op_err *e)
{
    return op_client_tile_get_detour(c, "lvl", 1, 2, OPT_TIMEOUT_MS, out, e);
}

/* changes.since's result: version 9 and tiles (tx i, tz 10 + i) whose hashes are 100 * i
 * + j for j < nh[i]; bad_at >= 0 makes tile 0's hash bad_at a string. */
static void pack_changes(msgpack_sbuffer *sb, const int *nh, int ntiles, int bad_at)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    pk_ok_result(&pk, 2);
    pk_str(&pk, "version");
    msgpack_pack_uint64(&pk, 9);
    pk_str(&pk, "tiles");
    msgpack_pack_array(&pk, (size_t)ntiles);
    for (int i = 0; i < ntiles; i++) {
        msgpack_pack_map(&pk, 3);
        pk_str(&pk, "tx");
        msgpack_pack_int(&pk, i);
        pk_str(&pk, "tz");
        msgpack_pack_int(&pk, 10 + i);
        pk_str(&pk, "hashes");
        msgpack_pack_array(&pk, (size_t)nh[i]);
        for (int j = 0; j < nh[i]; j++)
            if (i == 0 && j == bad_at)
                pk_str(&pk, "x");
            else
                msgpack_pack_uint64(&pk, (uint64_t)(100 * i + j));
    }
}

Test(client_replies, changes_read_as_sent, .timeout = 30)
{
    int nh[3] = {2, 0, 5};
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_changes(&sb, nh, 3, -1);
    op_client_changes ch;
    op_err e;
    cr_assert_eq(exchange(&sb, call_changes, &ch, "changes.since", &e), OP_OK, "%s", e.msg);
    cr_assert_eq(ch.version, 9);
    cr_assert_eq(ch.ntiles, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(ch.tiles[i].tx, i);
        cr_assert_eq(ch.tiles[i].tz, 10 + i);
        cr_assert_eq(ch.tiles[i].nhashes, nh[i]);
        for (int j = 0; j < nh[i]; j++)
            cr_assert_eq(ch.tiles[i].hashes[j], (uint64_t)(100 * i + j));
    }
    op_client_changes_free(&ch);
    op_client_changes_free(&ch);
    msgpack_sbuffer_destroy(&sb);
}

Test(client_replies, changes_with_a_bad_hash_name_it, .timeout = 30)
{
    int nh[2] = {4, 1};
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_changes(&sb, nh, 2, 2);
    op_client_changes ch;
    op_err e;
    cr_assert_eq(exchange(&sb, call_changes, &ch, "changes.since", &e), OP_EPROTO);
    cr_assert(strstr(e.msg, "'hashes[2]'"), "%s", e.msg);
    op_client_changes_free(&ch);
    cr_assert_eq(ch.ntiles, 0);
    msgpack_sbuffer_destroy(&sb);
}

Test(client_replies, changes_with_more_hashes_than_layers_refused, .timeout = 30)
{
    int nh[1] = {OP_MAX_LAYERS + 1};
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_changes(&sb, nh, 1, -1);
    op_client_changes ch;
    op_err e;
    cr_assert_eq(exchange(&sb, call_changes, &ch, "changes.since", &e), OP_EPROTO);
    cr_assert(strstr(e.msg, "'hashes'") && strstr(e.msg, "more than 1024"), "%s", e.msg);
    op_client_changes_free(&ch);
    msgpack_sbuffer_destroy(&sb);
}

/* tile.get's Detour result for tile (1, 2): hashes as given (a negative entry packed as a
 * negative integer) and 3 bytes of data. */
static void pack_detour(msgpack_sbuffer *sb, const int64_t *h, int nh)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    pk_ok_result(&pk, 6);
    pk_str(&pk, "version");
    msgpack_pack_uint64(&pk, 4);
    pk_str(&pk, "tx");
    msgpack_pack_int(&pk, 1);
    pk_str(&pk, "tz");
    msgpack_pack_int(&pk, 2);
    pk_str(&pk, "format");
    pk_str(&pk, "detour");
    pk_str(&pk, "hashes");
    msgpack_pack_array(&pk, (size_t)nh);
    for (int i = 0; i < nh; i++)
        msgpack_pack_int64(&pk, h[i]);
    pk_str(&pk, "data");
    msgpack_pack_bin_with_body(&pk, "abc", 3);
}

Test(client_replies, detour_tile_read_as_sent, .timeout = 30)
{
    int64_t h[2] = {77, 78};
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_detour(&sb, h, 2);
    op_client_detour_tile t;
    op_err e;
    cr_assert_eq(exchange(&sb, call_detour, &t, "tile.get", &e), OP_OK, "%s", e.msg);
    cr_assert_eq(t.version, 4);
    cr_assert_eq(t.tx, 1);
    cr_assert_eq(t.tz, 2);
    cr_assert_eq(t.nhashes, 2);
    cr_assert_eq(t.hashes[0], 77);
    cr_assert_eq(t.hashes[1], 78);
    cr_assert_eq(t.len, 3);
    cr_assert_eq(memcmp(t.data, "abc", 3), 0);
    op_client_detour_tile_free(&t);
    op_client_detour_tile_free(&t);
    msgpack_sbuffer_destroy(&sb);
}

Test(client_replies, detour_tile_with_a_negative_hash_names_it, .timeout = 30)
{
    int64_t h[3] = {1, 2, -3};
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    pack_detour(&sb, h, 3);
    op_client_detour_tile t;
    op_err e;
    cr_assert_eq(exchange(&sb, call_detour, &t, "tile.get", &e), OP_EPROTO);
    cr_assert(strstr(e.msg, "'hashes[2]'"), "%s", e.msg);
    cr_assert_null(t.hashes);
    cr_assert_null(t.data);
    op_client_detour_tile_free(&t);
    msgpack_sbuffer_destroy(&sb);
}

Test(client_replies, envelopes_that_are_not_replies, .timeout = 60)
{
    /* Not a map; a map without 'ok'; ok without a result map; an error without a code. */
    const char *want[4] = {"not one msgpack map", "no 'ok'", "no 'result' map", "has no code"};
    for (int k = 0; k < 4; k++) {
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        if (k == 0) {
            msgpack_pack_array(&pk, 0);
        } else if (k == 1) {
            msgpack_pack_map(&pk, 1);
            pk_str(&pk, "id");
            msgpack_pack_uint64(&pk, 1);
        } else {
            msgpack_pack_map(&pk, 2);
            pk_str(&pk, "ok");
            if (k == 2)
                msgpack_pack_true(&pk);
            else
                msgpack_pack_false(&pk);
            pk_str(&pk, k == 2 ? "result" : "error");
            msgpack_pack_array(&pk, 0);
        }
        op_client_changes ch;
        op_err e;
        cr_assert_eq(exchange(&sb, call_changes, &ch, "changes.since", &e), OP_EPROTO, "case %d",
                     k);
        cr_assert(strstr(e.msg, want[k]), "case %d: %s", k, e.msg);
        op_client_changes_free(&ch);
        msgpack_sbuffer_destroy(&sb);
    }
}
