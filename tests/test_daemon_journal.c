/*
 * onepathd persistence without a daemon (protocol §7): a level written as a snapshot and
 * a journal of edits, then loaded back through opd_store_load_level, as start-up does.
 *  - a torn or corrupt last record, cut or flipped at every byte offset, loads the level as
 *    it was before that record, and the journal is cut back so the next append is sound;
 *  - the states a crash can leave (records the snapshot holds, a journal of another life
 *    of the level, a journal without a snapshot, leftover temporaries) load right;
 *  - files are 0600, links and FIFOs in the data directory are neither followed nor read.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

static char dir[64];

static void mkdir_tmp(void)
{
    snprintf(dir, sizeof dir, "/tmp/opd-journal-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void rm_tmp(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* A mesh of one quad at (x, 0, 0), named name; areas when with_areas. */
static opd_mesh *quad(const char *name, float x, int with_areas)
{
    float v[12] = {x, 0, 0, x + 4, 0, 0, x + 4, 0, 4, x, 0, 4};
    static const int32_t t[6] = {0, 2, 1, 0, 3, 2};
    static const uint8_t a[2] = {7, 9};
    opd_mesh *m;
    op_err e;
    cr_assert_eq(opd_mesh_make(name, (const uint8_t *)v, sizeof v, (const uint8_t *)t, sizeof t,
                               with_areas ? a : NULL, with_areas ? 2 : 0, &m, &e),
                 OP_OK, "%s", e.msg);
    return m;
}

/* The content as a test tracks it: meshes by name, the version. */
typedef struct model {
    opd_level_data ld;
} model;

static void model_init(model *m, uint64_t epoch)
{
    memset(m, 0, sizeof *m);
    snprintf(m->ld.name, sizeof m->ld.name, "lvl");
    m->ld.version = 1;
    m->ld.epoch = epoch;
    op_settings_default(&m->ld.settings);
}

static void model_edit(model *m, opd_mesh *put, const char *drop)
{
    opd_mesh **l;
    int n;
    op_err e;
    cr_assert_eq(opd_mesh_list_edit(m->ld.meshes, m->ld.nmeshes, put, drop, &l, &n, &e), OP_OK);
    opd_mesh_list_free(m->ld.meshes, m->ld.nmeshes);
    m->ld.meshes = l;
    m->ld.nmeshes = n;
    m->ld.version++;
}

static void model_copy(const model *m, model *out)
{
    *out = *m;
    out->ld.meshes = calloc((size_t)m->ld.nmeshes + 1, sizeof *out->ld.meshes);
    for (int i = 0; i < m->ld.nmeshes; i++)
        out->ld.meshes[i] = opd_mesh_ref(m->ld.meshes[i]);
}

static void expect_same(const opd_level_data *got, const opd_level_data *want, const char *what)
{
    cr_assert_eq(got->version, want->version, "%s: version %llu, want %llu", what,
                 (unsigned long long)got->version, (unsigned long long)want->version);
    cr_assert_eq(got->epoch, want->epoch, "%s: epoch", what);
    cr_assert(opd_settings_equal(&got->settings, &want->settings), "%s: settings", what);
    cr_assert_eq(got->nmeshes, want->nmeshes, "%s: %d meshes, want %d", what, got->nmeshes,
                 want->nmeshes);
    for (int i = 0; i < got->nmeshes; i++) {
        cr_assert_str_eq(got->meshes[i]->name, want->meshes[i]->name, "%s", what);
        cr_assert(opd_mesh_equal(got->meshes[i], want->meshes[i]), "%s: mesh %s", what,
                  got->meshes[i]->name);
    }
}

static void no_log(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;
}

static void count_log(void *ctx, const char *msg)
{
    char *last = ctx;
    snprintf(last, 512, "%s", msg);
}

static void write_snapshot(const opd_level_data *ld)
{
    int renamed;
    size_t bytes;
    op_err e;
    cr_assert_eq(opd_store_write(dir, ld, NULL, 1, &renamed, &bytes, &e), OP_OK, "%s", e.msg);
    cr_assert(renamed);
}

static opd_journal *new_journal(uint64_t epoch)
{
    opd_journal *j;
    op_err e;
    cr_assert_eq(opd_journal_create(dir, "lvl", epoch, 1, &j, &e), OP_OK, "%s", e.msg);
    return j;
}

/* Edit k of a stream: puts of three names in turn, every fourth edit a drop. */
static void stream_edit(int k, model *m, opd_journal *j)
{
    char name[8];
    snprintf(name, sizeof name, "m%d", k % 3);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    op_err e;
    if (k % 4 == 3 && opd_mesh_list_find(m->ld.meshes, m->ld.nmeshes, name) >= 0) {
        cr_assert_eq(opd_record_mesh_drop(&sb, m->ld.version + 1, name, &e), OP_OK);
        model_edit(m, NULL, name);
    } else {
        opd_mesh *q = quad(name, (float)(k * 3), k % 2);
        cr_assert_eq(opd_record_mesh_put(&sb, m->ld.version + 1, q, &e), OP_OK);
        model_edit(m, q, NULL);
        opd_mesh_free(q);
    }
    cr_assert_eq(opd_journal_append(j, sb.data, sb.size, &e), OP_OK, "%s", e.msg);
    msgpack_sbuffer_destroy(&sb);
}

static uint8_t *read_all(const char *path, size_t *len)
{
    uint8_t *buf;
    op_err e;
    cr_assert_eq(opd_file_read(path, (size_t)1 << 30, &buf, len, &e), OP_OK, "%s", e.msg);
    return buf;
}

static void write_all(const char *path, const uint8_t *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
}

static void load(opd_loaded *l)
{
    op_err e;
    cr_assert_eq(opd_store_load_level(dir, "lvl", 1, no_log, NULL, l, &e), OP_OK, "%s", e.msg);
}

Test(daemon_journal, torn_or_corrupt_last_record_at_every_offset_loads_the_level_before_it)
{
    mkdir_tmp();
    model m, before;
    model_init(&m, 0x1234abcdULL);
    opd_mesh *floor = quad("floor", -10, 0);
    model_edit(&m, floor, NULL);
    m.ld.version = 1;
    opd_mesh_free(floor);
    write_snapshot(&m.ld);
    opd_journal *j = new_journal(m.ld.epoch);
    for (int k = 0; k < 6; k++)
        stream_edit(k, &m, j);
    model_copy(&m, &before);
    uint64_t start = opd_journal_size(j);
    stream_edit(6, &m, j); /* the last record: a mesh.put with areas */
    uint64_t end = opd_journal_size(j);
    opd_journal_close(j);
    char path[256];
    snprintf(path, sizeof path, "%s/lvl.opjournal", dir);
    size_t len;
    uint8_t *whole = read_all(path, &len);
    cr_assert_eq(len, end);
    /* Intact, the journal loads everything. */
    opd_loaded l;
    load(&l);
    expect_same(&l.ld, &m.ld, "intact");
    cr_assert_eq(l.applied, 7);
    opd_loaded_fini(&l);
    char what[64];
    for (size_t cut = start; cut < end; cut++) {
        write_all(path, whole, cut);
        load(&l);
        snprintf(what, sizeof what, "cut at %zu", cut);
        expect_same(&l.ld, &before.ld, what);
        cr_assert_eq(l.dropped, cut - start, "%s: %llu bytes dropped", what,
                     (unsigned long long)l.dropped);
        opd_loaded_fini(&l);
        struct stat sb;
        cr_assert_eq(stat(path, &sb), 0);
        cr_assert_eq((uint64_t)sb.st_size, start, "%s: the journal was not cut back", what);
    }
    for (size_t at = start; at < end; at++) {
        for (int bit = 0; bit < 8; bit += 7) {
            whole[at] ^= (uint8_t)(1u << bit);
            write_all(path, whole, len);
            load(&l);
            snprintf(what, sizeof what, "bit %d of byte %zu flipped", bit, at);
            expect_same(&l.ld, &before.ld, what);
            opd_loaded_fini(&l);
            whole[at] ^= (uint8_t)(1u << bit);
        }
    }
    /* A corrupt tail with more after it: the load cuts it off and the next append is
     * read back after the intact part (not after the garbage). */
    whole[start + 20] ^= 0xff;
    write_all(path, whole, len);
    load(&l);
    expect_same(&l.ld, &before.ld, "corrupt tail");
    opd_mesh *again = quad("m9", 99, 0);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    op_err e;
    cr_assert_eq(opd_record_mesh_put(&sb, before.ld.version + 1, again, &e), OP_OK);
    cr_assert_eq(opd_journal_append(l.journal, sb.data, sb.size, &e), OP_OK, "%s", e.msg);
    msgpack_sbuffer_destroy(&sb);
    opd_loaded_fini(&l);
    model_edit(&before, again, NULL);
    opd_mesh_free(again);
    load(&l);
    expect_same(&l.ld, &before.ld, "appended after a cut tail");
    opd_loaded_fini(&l);
    free(whole);
    opd_level_data_fini(&m.ld);
    opd_level_data_fini(&before.ld);
    rm_tmp();
}

Test(daemon_journal, crash_states_load_every_acknowledged_edit)
{
    mkdir_tmp();
    model m, at4;
    model_init(&m, 77);
    write_snapshot(&m.ld);
    opd_journal *j = new_journal(m.ld.epoch);
    for (int k = 0; k < 3; k++)
        stream_edit(k, &m, j);
    model_copy(&m, &at4);
    uint64_t from = opd_journal_size(j);
    for (int k = 3; k < 8; k++)
        stream_edit(k, &m, j);
    /* A compaction's snapshot renamed into place, its journal not yet rewritten: the
     * records up to version 4 are in the snapshot (skipped), the others applied. */
    write_snapshot(&at4.ld);
    opd_loaded l;
    load(&l);
    expect_same(&l.ld, &m.ld, "snapshot ahead of the journal's start");
    cr_assert_eq(l.skipped, 3);
    cr_assert_eq(l.applied, 5);
    opd_loaded_fini(&l);
    /* The rewrite done: only the records after the snapshot, the same level. */
    op_err e;
    cr_assert_eq(opd_journal_rewrite(j, from, &e), OP_OK, "%s", e.msg);
    load(&l);
    expect_same(&l.ld, &m.ld, "journal rewritten");
    cr_assert_eq(l.skipped, 0);
    cr_assert_eq(l.applied, 5);
    opd_loaded_fini(&l);
    /* Appends go on in the rewritten journal. */
    stream_edit(8, &m, j);
    opd_journal_close(j);
    load(&l);
    expect_same(&l.ld, &m.ld, "appended after the rewrite");
    opd_loaded_fini(&l);
    /* A journal of another life of the level: set aside, the snapshot alone loads. */
    opd_journal *other = NULL;
    cr_assert_eq(opd_journal_create(dir, "lvl", 78, 1, &other, &e), OP_OK);
    opd_journal_close(other);
    char last[512] = "";
    cr_assert_eq(opd_store_load_level(dir, "lvl", 1, count_log, last, &l, &e), OP_OK);
    expect_same(&l.ld, &at4.ld, "stale journal");
    cr_assert_null(l.journal);
    cr_assert(strstr(last, "OP-JOURNAL-STALE"), "%s", last);
    opd_loaded_fini(&l);
    char path[256];
    snprintf(path, sizeof path, "%s/lvl.opjournal.stale", dir);
    cr_assert_eq(access(path, F_OK), 0, "the stale journal was not kept aside");
    opd_level_data_fini(&m.ld);
    opd_level_data_fini(&at4.ld);
    rm_tmp();
}

typedef struct seen {
    int n;
    char names[8][65];
    char log[2048];
} seen;

static void on_level(void *ctx, opd_loaded *l)
{
    seen *s = ctx;
    snprintf(s->names[s->n++], 65, "%s", l->ld.name);
    opd_loaded_fini(l);
}

static void on_log(void *ctx, const char *msg)
{
    seen *s = ctx;
    size_t n = strlen(s->log);
    snprintf(s->log + n, sizeof s->log - n, "%s\n", msg);
}

Test(daemon_journal, orphans_temporaries_links_and_fifos)
{
    mkdir_tmp();
    model m;
    model_init(&m, 5);
    write_snapshot(&m.ld);
    char path[256], target[256];
    /* Data files are 0600. */
    snprintf(path, sizeof path, "%s/lvl.oplevel", dir);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0600, "mode %o", sb.st_mode & 0777);
    /* A journal with no snapshot is an orphan; a temporary is a leftover. */
    opd_journal *j;
    op_err e;
    cr_assert_eq(opd_journal_create(dir, "gone", 9, 1, &j, &e), OP_OK);
    opd_journal_close(j);
    snprintf(path, sizeof path, "%s/gone.opjournal", dir);
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0600, "mode %o", sb.st_mode & 0777);
    snprintf(path, sizeof path, "%s/.lvl.oplevel.tmp", dir);
    write_all(path, (const uint8_t *)"junk", 4);
    /* A FIFO and a link named as level files: neither read nor followed. */
    snprintf(path, sizeof path, "%s/fifo.oplevel", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    snprintf(target, sizeof target, "%s/lvl.oplevel", dir);
    snprintf(path, sizeof path, "%s/link.oplevel", dir);
    cr_assert_eq(symlink(target, path), 0);
    seen s = {0};
    cr_assert_eq(opd_store_load_all(dir, 1, on_level, on_log, &s), 0);
    cr_assert_eq(s.n, 1, "%d levels loaded:\n%s", s.n, s.log);
    cr_assert_str_eq(s.names[0], "lvl");
    cr_assert(strstr(s.log, "fifo.oplevel") && strstr(s.log, "not a regular file"), "%s", s.log);
    cr_assert(strstr(s.log, "link.oplevel") && strstr(s.log, "symbolic link"), "%s", s.log);
    cr_assert(strstr(s.log, "OP-JOURNAL-ORPHAN"), "%s", s.log);
    snprintf(path, sizeof path, "%s/gone.opjournal", dir);
    cr_assert_neq(access(path, F_OK), 0, "the orphan journal is still there");
    snprintf(path, sizeof path, "%s/.lvl.oplevel.tmp", dir);
    cr_assert_neq(access(path, F_OK), 0, "the temporary is still there");
    /* A link planted at the temporary name is replaced, not written through. */
    snprintf(target, sizeof target, "%s/outside", dir);
    write_all(target, (const uint8_t *)"keep", 4);
    cr_assert_eq(symlink(target, path), 0);
    m.ld.version = 2;
    write_snapshot(&m.ld);
    size_t len;
    uint8_t *buf = read_all(target, &len);
    cr_assert(len == 4 && !memcmp(buf, "keep", 4), "the link's target was written");
    free(buf);
    opd_level_data_fini(&m.ld);
    rm_tmp();
}

Test(daemon_journal, earlier_snapshot_format_loads_with_epoch_0)
{
    mkdir_tmp();
    model m;
    model_init(&m, 0);
    opd_mesh *q = quad("a", 0, 1);
    model_edit(&m, q, NULL);
    opd_mesh_free(q);
    /* OPLEVEL1: the same map without the epoch. */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_sbuffer_write(&sb, "OPLEVEL1", 8);
    msgpack_pack_map(&pk, 4);
    op_rpc_pack_key(&pk, "name");
    op_rpc_pack_key(&pk, "lvl");
    op_rpc_pack_key(&pk, "version");
    msgpack_pack_uint64(&pk, m.ld.version);
    op_rpc_pack_key(&pk, "settings");
    opd_settings_pack(&pk, &m.ld.settings);
    op_rpc_pack_key(&pk, "meshes");
    msgpack_pack_array(&pk, 1);
    opd_mesh_pack(&pk, m.ld.meshes[0]);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 8; i < sb.size; i++) {
        h ^= (uint8_t)sb.data[i];
        h *= 0x100000001b3ULL;
    }
    uint8_t le[8];
    for (int b = 0; b < 8; b++)
        le[b] = (uint8_t)(h >> (8 * b));
    msgpack_sbuffer_write(&sb, (const char *)le, 8);
    char path[256];
    snprintf(path, sizeof path, "%s/lvl.oplevel", dir);
    write_all(path, (const uint8_t *)sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
    opd_loaded l;
    load(&l);
    expect_same(&l.ld, &m.ld, "OPLEVEL1");
    cr_assert_eq(l.epoch, 0);
    opd_loaded_fini(&l);
    opd_level_data_fini(&m.ld);
    rm_tmp();
}

Test(daemon_journal, records_refused_name_why)
{
    opd_level_data ld = {0};
    snprintf(ld.name, sizeof ld.name, "lvl");
    ld.version = 4;
    op_settings_default(&ld.settings);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    op_err e;
    uint64_t v;
    int skipped;
    /* A gap in the versions, a drop of what is not there, a put that changes nothing. */
    cr_assert_eq(opd_record_mesh_drop(&sb, 6, "a", &e), OP_OK);
    cr_assert_eq(opd_record_apply(&ld, (const uint8_t *)sb.data, sb.size, &v, &skipped, &e),
                 OP_EPROTO);
    cr_assert(strstr(e.msg, "version 6"), "%s", e.msg);
    msgpack_sbuffer_clear(&sb);
    cr_assert_eq(opd_record_mesh_drop(&sb, 5, "a", &e), OP_OK);
    cr_assert_eq(opd_record_apply(&ld, (const uint8_t *)sb.data, sb.size, &v, &skipped, &e),
                 OP_EPROTO);
    cr_assert(strstr(e.msg, "'a'"), "%s", e.msg);
    msgpack_sbuffer_clear(&sb);
    opd_mesh *q = quad("a", 0, 0);
    cr_assert_eq(opd_record_mesh_put(&sb, 5, q, &e), OP_OK);
    cr_assert_eq(opd_record_apply(&ld, (const uint8_t *)sb.data, sb.size, &v, &skipped, &e), OP_OK);
    cr_assert(!skipped && ld.version == 5 && ld.nmeshes == 1);
    msgpack_sbuffer_clear(&sb);
    cr_assert_eq(opd_record_mesh_put(&sb, 6, q, &e), OP_OK);
    cr_assert_eq(opd_record_apply(&ld, (const uint8_t *)sb.data, sb.size, &v, &skipped, &e),
                 OP_EPROTO);
    cr_assert(strstr(e.msg, "changes nothing"), "%s", e.msg);
    /* A record the snapshot already holds is skipped, not applied. */
    msgpack_sbuffer_clear(&sb);
    cr_assert_eq(opd_record_mesh_drop(&sb, 3, "a", &e), OP_OK);
    cr_assert_eq(opd_record_apply(&ld, (const uint8_t *)sb.data, sb.size, &v, &skipped, &e), OP_OK);
    cr_assert(skipped && v == 3 && ld.nmeshes == 1);
    /* Not msgpack at all. */
    cr_assert_neq(opd_record_apply(&ld, (const uint8_t *)"\xc1", 1, &v, &skipped, &e), OP_OK);
    opd_mesh_free(q);
    msgpack_sbuffer_destroy(&sb);
    opd_level_data_fini(&ld);
}

Test(daemon_journal, volume_records_apply_in_order_and_refusals_name_why)
{
    opd_level_data ld = {0};
    snprintf(ld.name, sizeof ld.name, "lvl");
    ld.version = 4;
    op_settings_default(&ld.settings);
    op_volume v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "door");
    v.kind = OP_VOLUME_CYLINDER;
    v.mode = OP_VOLUME_OBSTACLE;
    v.bmin[0] = 1, v.bmin[1] = 0, v.bmin[2] = 2, v.bmax[0] = 0.5, v.bmax[1] = 3;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    op_err e;
    uint64_t ver;
    int skipped;
    /* A drop of what is not there; then a put, the same put again, a drop. */
    cr_assert_eq(opd_record_volume_drop(&sb, 5, "door", &e), OP_OK);
    cr_assert_eq(opd_record_apply(&ld, (const uint8_t *)sb.data, sb.size, &ver, &skipped, &e),
                 OP_EPROTO);
    cr_assert(strstr(e.msg, "'door'"), "%s", e.msg);
    msgpack_sbuffer_clear(&sb);
    cr_assert_eq(opd_record_volume_put(&sb, 5, &v, &e), OP_OK);
    cr_assert_eq(opd_record_apply(&ld, (const uint8_t *)sb.data, sb.size, &ver, &skipped, &e),
                 OP_OK, "%s", e.msg);
    cr_assert(!skipped && ld.version == 5 && opd_vset_count(ld.vols) == 1);
    cr_assert(opd_volume_equal(&ld.vols->v[0]->v, &v));
    msgpack_sbuffer_clear(&sb);
    cr_assert_eq(opd_record_volume_put(&sb, 6, &v, &e), OP_OK);
    cr_assert_eq(opd_record_apply(&ld, (const uint8_t *)sb.data, sb.size, &ver, &skipped, &e),
                 OP_EPROTO);
    cr_assert(strstr(e.msg, "changes nothing"), "%s", e.msg);
    /* A record whose volume is invalid ends the journal there. */
    op_volume bad = v;
    bad.bmax[0] = -1;
    msgpack_sbuffer_clear(&sb);
    cr_assert_eq(opd_record_volume_put(&sb, 6, &bad, &e), OP_OK);
    cr_assert_eq(opd_record_apply(&ld, (const uint8_t *)sb.data, sb.size, &ver, &skipped, &e),
                 OP_ERANGE);
    cr_assert(strstr(e.msg, "radius"), "%s", e.msg);
    msgpack_sbuffer_clear(&sb);
    cr_assert_eq(opd_record_volume_drop(&sb, 6, "door", &e), OP_OK);
    cr_assert_eq(opd_record_apply(&ld, (const uint8_t *)sb.data, sb.size, &ver, &skipped, &e),
                 OP_OK, "%s", e.msg);
    cr_assert(ld.version == 6 && opd_vset_count(ld.vols) == 0);
    msgpack_sbuffer_destroy(&sb);
    opd_level_data_fini(&ld);
}
