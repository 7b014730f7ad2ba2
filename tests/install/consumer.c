/*
 * An external program of the installed onepath, built by tests/install/install_test.sh
 * once with `pkg-config --cflags --libs onepath onepath-client` and once with
 * find_package(onepath): it sees only the installed headers and libraries.
 *
 * onepath: generates a level, builds every tile, encodes each tile blob and decodes it
 * back (the hash must survive, the re-encoding must be the same bytes), and prints the
 * mesh hash (FNV-1a over the blob hashes in key order, navmesh-format.md §2), which the
 * test compares with `onepath bake --json` of the installed tool.
 * onepath-client: open with a bad URL is OP_EINVAL; a ping to a socket nobody listens
 * on times out with OP_ETIMEDOUT.
 *
 * usage: consumer KIND SIZE SEED; prints "tiles N hash HHHH" and "client ok".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <onepath/build.h>
#include <onepath/client.h>
#include <onepath/hash.h>
#include <onepath/levelgen.h>
#include <onepath/mesh.h>
#include <onepath/tile_codec.h>
#include <onepath/version.h>

static int fail(const char *what, const op_err *e)
{
    fprintf(stderr, "consumer: %s: %s (%s)\n", what, e->msg, op_status_name(e->status));
    return 1;
}

/* Encodes tile t, decodes it, and checks that both agree; adds its hash to *mh. */
static int roundtrip(const op_tile *t, uint64_t *mh)
{
    op_bytes b, b2;
    uint64_t h, h2;
    op_err e;
    if (op_tile_encode(t, &b, &h, &e) != OP_OK)
        return fail("encode", &e);
    op_arena *a = op_arena_create(0);
    op_tile d;
    int rc = 1;
    if (!a) {
        fprintf(stderr, "consumer: out of memory\n");
    } else if (op_tile_decode(b.data, b.len, a, &d, &h2, &e) != OP_OK) {
        rc = fail("decode", &e);
    } else if (h2 != h || d.tx != t->tx || d.tz != t->tz || d.layer != t->layer) {
        fprintf(stderr, "consumer: tile (%d, %d, %d) does not decode to itself\n", t->tx, t->tz,
                t->layer);
    } else if (op_tile_encode(&d, &b2, NULL, &e) != OP_OK) {
        rc = fail("re-encode", &e);
    } else {
        rc = b2.len != b.len || memcmp(b2.data, b.data, b.len) != 0;
        if (rc)
            fprintf(stderr, "consumer: re-encoded tile differs\n");
        op_bytes_free(&b2);
    }
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(h >> (8 * i));
    *mh = op_hash_update(*mh, le, 8);
    op_arena_destroy(a);
    op_bytes_free(&b);
    return rc;
}

static int bake(const char *kind, int size, uint64_t seed)
{
    op_err e;
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_settings s;
    op_level *lvl = NULL;
    op_mesh *m = NULL;
    int rc = 1;
    op_settings_default(&s);
    if (!a)
        return 1;
    if (op_levelgen(kind, size, seed, a, &soup, &e) != OP_OK)
        rc = fail("levelgen", &e);
    else if (op_level_create(&soup, &s, NULL, 0, &lvl, &e) != OP_OK)
        rc = fail("level", &e);
    else if (op_mesh_build_level(lvl, 2, &m, &e) != OP_OK)
        rc = fail("build", &e);
    else {
        uint64_t mh = OP_HASH_INIT;
        int n = op_mesh_tile_count(m);
        rc = n == 0;
        for (int i = 0; i < n && !rc; i++)
            rc = roundtrip(op_mesh_tile(m, i), &mh);
        if (!rc)
            printf("tiles %d hash %016llx\n", n, (unsigned long long)mh);
    }
    op_mesh_destroy(m);
    op_level_destroy(lvl);
    op_arena_destroy(a);
    return rc;
}

static int client(void)
{
    op_client *c = NULL;
    op_err e;
    op_status st = op_client_open("bogus://nowhere", &c, &e);
    if (st != OP_EINVAL || c) {
        fprintf(stderr, "consumer: open bogus:// gave %s, want OP_EINVAL\n", op_status_name(st));
        return 1;
    }
    if (op_client_open("ipc:///nonexistent-onepath-dir/none.sock", &c, &e) != OP_OK)
        return fail("open", &e);
    op_client_ping_result r;
    st = op_client_ping(c, 300, &r, &e);
    op_client_close(c);
    if (st != OP_ETIMEDOUT || strcmp(op_status_name(st), "OP_ETIMEDOUT") != 0) {
        fprintf(stderr, "consumer: ping of nobody gave %s (%s), want OP_ETIMEDOUT\n",
                op_status_name(st), e.msg);
        return 1;
    }
    printf("client ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: consumer KIND SIZE SEED\n");
        return 2;
    }
    if (strcmp(op_version(), OP_VERSION_STRING) != 0) {
        fprintf(stderr, "consumer: built against %s, runs with libonepath %s\n", OP_VERSION_STRING,
                op_version());
        return 1;
    }
    if (bake(argv[1], atoi(argv[2]), strtoull(argv[3], NULL, 10)))
        return 1;
    return client();
}
