/*
 * libFuzzer target for onepathd's level file loader (daemon/store.c, record.c, journal.c;
 * protocol.md §7): the snapshot decoder (OPLEVEL2/OPLEVEL1) and the journal's records
 * replayed onto it, as opd_store_load_level does, without the file system.
 *
 * The input is framed so that the fuzzer reaches past the checksums:
 *   byte 0        mode: bit 0 set = raw (the rest is the snapshot file as is, no journal);
 *                 clear = the harness adds magic and content hash to the snapshot body and
 *                 frames the journal records (length, hash) itself
 *   bytes 1..2    little-endian length n of the snapshot body (clamped to what is left)
 *   n bytes       the snapshot body (msgpack)
 *   then          journal records, each a 2-byte little-endian length and its payload
 * Properties: every refusal carries a message; an accepted snapshot encodes to bytes that
 * decode to a level that encodes to the same bytes again (also after the records applied).
 *
 *   OP_FUZZ_WRITE_SEEDS=tests/fuzz/corpus/level_file build-fuzz/bin/fuzz_level_file
 * writes the seed corpus (a level with a mesh and a volume, records of every kind).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/hash.h"
#include "onepath/mpscan.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int b = 0; b < n; b++)
        p[b] = (uint8_t)(v >> (8 * b));
}

/* The snapshot file around body: magic, body, content hash. */
static uint8_t *wrap(const uint8_t *body, size_t n, size_t *len)
{
    uint8_t *f = malloc(8 + n + 8);
    if (!f)
        abort();
    memcpy(f, "OPLEVEL2", 8);
    if (n)
        memcpy(f + 8, body, n);
    put_le(f + 8 + n, op_hash_bytes(body, n), 8);
    *len = 8 + n + 8;
    return f;
}

static void check_refusal(op_status st, const op_err *err)
{
    if (st != OP_OK && err->msg[0] == '\0')
        abort(); /* a refusal must say what was wrong */
}

/* encode(ld) -> decode -> encode: the same bytes. */
static void roundtrip(const opd_level_data *ld)
{
    msgpack_sbuffer a, b;
    msgpack_sbuffer_init(&a);
    msgpack_sbuffer_init(&b);
    op_err err;
    if (opd_store_encode(ld, &a, &err) != OP_OK)
        abort();
    opd_level_data back;
    if (opd_store_decode((const uint8_t *)a.data, a.size, &back, &err) != OP_OK)
        abort();
    if (opd_store_encode(&back, &b, &err) != OP_OK || a.size != b.size ||
        memcmp(a.data, b.data, a.size) != 0 || back.version != ld->version ||
        back.epoch != ld->epoch || strcmp(back.name, ld->name) != 0)
        abort();
    opd_level_data_fini(&back);
    msgpack_sbuffer_destroy(&a);
    msgpack_sbuffer_destroy(&b);
}

typedef struct replay {
    opd_level_data *ld;
    int applied;
} replay;

static int replay_one(void *ctx, const uint8_t *payload, size_t len)
{
    replay *r = ctx;
    uint64_t v;
    int skipped;
    op_err err = {OP_OK, {0}};
    op_status st = opd_record_apply(r->ld, payload, len, &v, &skipped, &err);
    check_refusal(st, &err);
    if (st != OP_OK)
        return 1;
    if (!skipped && r->ld->version != v)
        abort(); /* an applied record makes its version the level's */
    r->applied += !skipped;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    int raw = data[0] & 1;
    size_t n = (size_t)data[1] | (size_t)data[2] << 8;
    const uint8_t *rest = data + 3;
    size_t left = size - 3;
    if (raw)
        n = left;
    if (n > left)
        n = left;
    size_t flen;
    uint8_t *file = NULL;
    const uint8_t *snap = rest;
    if (raw)
        flen = n;
    else
        snap = file = wrap(rest, n, &flen);
    opd_level_data ld;
    op_err err = {OP_OK, {0}};
    op_status st = opd_store_decode(snap, flen, &ld, &err);
    free(file);
    check_refusal(st, &err);
    if (st != OP_OK)
        return 0;
    roundtrip(&ld);
    if (!raw) {
        /* The journal: header of the snapshot's epoch, then the records as framed here. */
        const uint8_t *p = rest + n;
        size_t m = left - n;
        uint8_t *j = malloc(OPD_JOURNAL_HEADER + m / 2 * OPD_JOURNAL_RECORD_HEAD + m + 16);
        if (!j)
            abort();
        opd_journal_header(ld.epoch, j);
        uint64_t epoch = 0;
        if (opd_journal_header_check(j, OPD_JOURNAL_HEADER, &epoch) != 0 || epoch != ld.epoch)
            abort();
        size_t at = OPD_JOURNAL_HEADER;
        while (m >= 2) {
            size_t rl = (size_t)p[0] | (size_t)p[1] << 8;
            p += 2;
            m -= 2;
            if (rl > m)
                rl = m;
            if (rl == 0)
                continue;
            put_le(j + at, rl, 4);
            put_le(j + at + 4, op_hash_update(op_hash_bytes(j + at, 4), p, rl), 8);
            memcpy(j + at + OPD_JOURNAL_RECORD_HEAD, p, rl);
            at += OPD_JOURNAL_RECORD_HEAD + rl;
            p += rl;
            m -= rl;
        }
        replay r = {&ld, 0};
        size_t end = opd_journal_scan(j, at, replay_one, &r);
        if (end < OPD_JOURNAL_HEADER || end > at)
            abort();
        free(j);
        roundtrip(&ld);
    }
    opd_level_data_fini(&ld);
    return 0;
}

/* ---- seeds ---- */

static void write_seed(const char *dir, const char *name, const uint8_t *snap, size_t n,
                       msgpack_sbuffer *recs, int nrecs, int raw)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    uint8_t head[3] = {(uint8_t)raw, (uint8_t)(n & 0xff), (uint8_t)(n >> 8)};
    fwrite(head, 1, 3, f);
    fwrite(snap, 1, n, f);
    for (int i = 0; i < nrecs; i++) {
        uint8_t l[2] = {(uint8_t)(recs[i].size & 0xff), (uint8_t)(recs[i].size >> 8)};
        fwrite(l, 1, 2, f);
        fwrite(recs[i].data, 1, recs[i].size, f);
    }
    fclose(f);
}

static void make_seeds(const char *dir)
{
    op_err err;
    float verts[12] = {0, 0, 0, 8, 0, 0, 8, 0, 8, 0, 0, 8};
    int32_t tris[6] = {0, 2, 1, 0, 3, 2};
    uint8_t areas[2] = {1, 2};
    opd_mesh *m = NULL, *m2 = NULL;
    if (opd_mesh_make("floor", (const uint8_t *)verts, sizeof verts, (const uint8_t *)tris,
                      sizeof tris, NULL, 0, &m, &err) != OP_OK ||
        opd_mesh_make("ramp", (const uint8_t *)verts, sizeof verts, (const uint8_t *)tris,
                      sizeof tris, areas, sizeof areas, &m2, &err) != OP_OK) {
        fprintf(stderr, "seeds: %s\n", err.msg);
        exit(1);
    }
    /* A volume through the decoder, from its msgpack map. */
    msgpack_sbuffer vb;
    msgpack_sbuffer_init(&vb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &vb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 5);
    op_rpc_pack_key(&pk, "name");
    op_rpc_pack_key(&pk, "door1");
    op_rpc_pack_key(&pk, "mode");
    op_rpc_pack_key(&pk, "obstacle");
    op_rpc_pack_key(&pk, "kind");
    op_rpc_pack_key(&pk, "box");
    op_rpc_pack_key(&pk, "bmin");
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 1);
    msgpack_pack_double(&pk, -1);
    msgpack_pack_double(&pk, 1);
    op_rpc_pack_key(&pk, "bmax");
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, 2);
    msgpack_pack_double(&pk, 2);
    msgpack_pack_double(&pk, 3);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    opd_volume *vol = NULL;
    if (msgpack_unpack_next(&u, vb.data, vb.size, &off) != MSGPACK_UNPACK_SUCCESS ||
        opd_volume_decode(&u.data, "seed", &vol, &err) != OP_OK) {
        fprintf(stderr, "seeds: volume: %s\n", err.msg);
        exit(1);
    }
    opd_vset *vs = NULL;
    opd_volume **va = malloc(sizeof *va); /* taken by opd_vset_make */
    if (!va)
        exit(1);
    va[0] = vol;
    if (opd_vset_make(va, 1, &vs, &err) != OP_OK) {
        fprintf(stderr, "seeds: vset: %s\n", err.msg);
        exit(1);
    }
    opd_level_data ld;
    memset(&ld, 0, sizeof ld);
    snprintf(ld.name, sizeof ld.name, "lvl");
    ld.version = 3;
    ld.epoch = 77;
    op_settings_default(&ld.settings);
    ld.meshes = &m;
    ld.nmeshes = 1;
    ld.vols = vs;
    msgpack_sbuffer snap, empty;
    msgpack_sbuffer_init(&snap);
    msgpack_sbuffer_init(&empty);
    if (opd_store_encode(&ld, &snap, &err) != OP_OK)
        exit(1);
    opd_level_data bare = ld;
    bare.meshes = NULL;
    bare.nmeshes = 0;
    bare.vols = NULL;
    if (opd_store_encode(&bare, &empty, &err) != OP_OK)
        exit(1);
    msgpack_sbuffer recs[5];
    for (int i = 0; i < 5; i++)
        msgpack_sbuffer_init(&recs[i]);
    opd_record_mesh_put(&recs[0], 4, m2, &err);
    opd_record_volume_put(&recs[1], 5, &vol->v, &err);
    opd_record_mesh_drop(&recs[2], 6, "floor", &err);
    opd_record_volume_drop(&recs[3], 7, "door1", &err);
    opd_record_mesh_put(&recs[4], 2, m, &err); /* at or below the snapshot: skipped */
    /* Bodies without magic and hash (the harness adds them). */
    write_seed(dir, "level_mesh_volume", (const uint8_t *)snap.data + 8, snap.size - 16, NULL, 0,
               0);
    write_seed(dir, "level_empty", (const uint8_t *)empty.data + 8, empty.size - 16, NULL, 0, 0);
    write_seed(dir, "level_journal", (const uint8_t *)snap.data + 8, snap.size - 16, recs + 0, 4,
               0);
    write_seed(dir, "level_journal_skip", (const uint8_t *)snap.data + 8, snap.size - 16, recs + 4,
               1, 0);
    write_seed(dir, "raw_file", (const uint8_t *)snap.data, snap.size, NULL, 0, 1);
    for (int i = 0; i < 5; i++)
        msgpack_sbuffer_destroy(&recs[i]);
    msgpack_sbuffer_destroy(&snap);
    msgpack_sbuffer_destroy(&empty);
    msgpack_sbuffer_destroy(&vb);
    msgpack_unpacked_destroy(&u);
    opd_vset_unref(vs);
    opd_mesh_free(m);
    opd_mesh_free(m2);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("OP_FUZZ_WRITE_SEEDS");
    if (dir && *dir) {
        make_seeds(dir);
        exit(0);
    }
    return 0;
}
