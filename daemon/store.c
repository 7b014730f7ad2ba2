/*
 * onepathd level snapshots and loading (protocol §7): <data-dir>/<level>.oplevel,
 *
 *   "OPLEVEL2"  8 bytes of magic ("OPLEVEL1": the earlier format, without the epoch)
 *   msgpack     map: name (str), version (uint), epoch (uint), settings (map, protocol
 *               §3.3), meshes (array of maps: name, verts (bin), tris (bin), areas (bin|nil)),
 *               volumes (array of volume maps, protocol §3.5; absent in older files: none)
 *   hash        8 bytes, little-endian FNV-1a (onepath/hash.h) of the msgpack bytes
 *
 * written through a temporary (files.c) by level.put and compaction. Loading a level
 * reads its snapshot, then replays its journal (journal.c, record.c) and cuts off a torn
 * tail. Loading trusts nothing: magic, hash, the bounded pre-scan, then strict fields.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onepath/hash.h"
#include "onepath/limits.h"
#include "onepath/mpscan.h"
#include "store.h"

#define MAGIC     "OPLEVEL2"
#define MAGIC_V1  "OPLEVEL1"
#define MAGIC_LEN 8
#define SUFFIX    OPD_SNAPSHOT_SUFFIX
/* Largest level file read at start (beyond: skipped as OP_ELIMIT). */
#define OPD_FILE_MAX ((size_t)1 << 40)

op_status opd_store_encode(const opd_level_data *ld, msgpack_sbuffer *sb, op_err *err)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    int rc = msgpack_sbuffer_write(sb, MAGIC, MAGIC_LEN);
    rc |= msgpack_pack_map(&pk, 6);
    rc |= op_rpc_pack_key(&pk, "name") | op_rpc_pack_key(&pk, ld->name);
    rc |= op_rpc_pack_key(&pk, "version") | msgpack_pack_uint64(&pk, ld->version);
    rc |= op_rpc_pack_key(&pk, "epoch") | msgpack_pack_uint64(&pk, ld->epoch);
    rc |= op_rpc_pack_key(&pk, "settings") | opd_settings_pack(&pk, &ld->settings);
    rc |= op_rpc_pack_key(&pk, "meshes") | msgpack_pack_array(&pk, (size_t)ld->nmeshes);
    for (int i = 0; i < ld->nmeshes; i++)
        rc |= opd_mesh_pack(&pk, ld->meshes[i]);
    rc |= op_rpc_pack_key(&pk, "volumes") | opd_vset_pack(&pk, ld->vols);
    uint64_t h = op_hash_bytes(sb->data + MAGIC_LEN, sb->size - MAGIC_LEN);
    uint8_t le[8];
    for (int b = 0; b < 8; b++)
        le[b] = (uint8_t)(h >> (8 * b));
    rc |= msgpack_sbuffer_write(sb, (const char *)le, 8);
    if (rc)
        return op_err_set(err, OP_ENOMEM, "store: out of memory encoding level '%s'", ld->name);
    return OP_OK;
}

/* The snapshot's volumes, strictly in name order (none when the key is absent). */
static op_status decode_volumes(const msgpack_object *top, opd_level_data *ld, op_err *err)
{
    const msgpack_object *a;
    op_status st = op_rpc_get_type(top, "volumes", MSGPACK_OBJECT_ARRAY, 1, &a, err);
    if (st != OP_OK || !a || a->via.array.size == 0)
        return st;
    uint32_t n = a->via.array.size;
    if (n > OP_MAX_VOLUMES)
        return op_err_set(err, OP_EPROTO, "store: %u volumes > OP_MAX_VOLUMES", n);
    opd_volume **v = calloc(n, sizeof *v);
    if (!v)
        return op_err_set(err, OP_ENOMEM, "store: out of memory for %u volumes", n);
    for (uint32_t i = 0; i < n && st == OP_OK; i++) {
        char what[32];
        snprintf(what, sizeof what, "store: volumes[%u]", i);
        st = opd_volume_decode(&a->via.array.ptr[i], what, &v[i], err);
        if (st == OP_OK && i > 0 && strcmp(v[i - 1]->v.name, v[i]->v.name) >= 0)
            st = op_err_set(err, OP_EPROTO, "store: volumes not in name order at '%s'",
                            v[i]->v.name);
    }
    if (st != OP_OK) {
        for (uint32_t i = 0; i < n; i++)
            opd_volume_free(v[i]);
        free(v);
        return st;
    }
    return opd_vset_make(v, (int)n, &ld->vols, err);
}

static op_status decode_top(const msgpack_object *top, int v1, opd_level_data *ld, op_err *err)
{
    static const char *const keys[] = {"name",   "version", "epoch", "settings",
                                       "meshes", "volumes", NULL};
    static const char *const keys_v1[] = {"name", "version", "settings", "meshes", NULL};
    const char *name;
    size_t nlen;
    int64_t version;
    const msgpack_object *settings, *meshes, *epoch;
    op_status st;
    if (top->type != MSGPACK_OBJECT_MAP)
        return op_err_set(err, OP_EPROTO, "store: not a map");
    if ((st = op_rpc_check_keys(top, v1 ? keys_v1 : keys, err)) != OP_OK ||
        (st = op_rpc_get_str(top, "name", 0, &name, &nlen, err)) != OP_OK ||
        (st = op_rpc_name(name, nlen, "level", ld->name, err)) != OP_OK ||
        (st = op_rpc_get_int(top, "version", 1, INT64_MAX, 0, &version, NULL, err)) != OP_OK ||
        (st = op_rpc_get_type(top, "settings", MSGPACK_OBJECT_MAP, 0, &settings, err)) != OP_OK ||
        (st = opd_settings_from_map(settings, &ld->settings, err)) != OP_OK ||
        (st = op_rpc_get_type(top, "meshes", MSGPACK_OBJECT_ARRAY, 0, &meshes, err)) != OP_OK)
        return st;
    if (!v1) {
        if ((st = op_rpc_get_type(top, "epoch", MSGPACK_OBJECT_POSITIVE_INTEGER, 0, &epoch, err)) !=
            OP_OK)
            return st;
        ld->epoch = epoch->via.u64;
    }
    ld->version = (uint64_t)version;
    uint32_t n = meshes->via.array.size;
    ld->meshes = calloc(n ? n : 1, sizeof *ld->meshes);
    if (!ld->meshes)
        return op_err_set(err, OP_ENOMEM, "store: out of memory for %u meshes", n);
    for (uint32_t i = 0; i < n; i++) {
        if ((st = opd_mesh_decode(&meshes->via.array.ptr[i], &ld->meshes[i], err)) != OP_OK)
            return st;
        ld->nmeshes = (int)i + 1;
        if (i > 0 && strcmp(ld->meshes[i - 1]->name, ld->meshes[i]->name) >= 0)
            return op_err_set(err, OP_EPROTO, "store: meshes not in name order at '%s'",
                              ld->meshes[i]->name);
    }
    return v1 ? OP_OK : decode_volumes(top, ld, err);
}

op_status opd_store_decode(const uint8_t *buf, size_t len, opd_level_data *ld, op_err *err)
{
    memset(ld, 0, sizeof *ld);
    int v1 = len >= MAGIC_LEN && memcmp(buf, MAGIC_V1, MAGIC_LEN) == 0;
    if (len < MAGIC_LEN + 8 + 1 || (!v1 && memcmp(buf, MAGIC, MAGIC_LEN) != 0))
        return op_err_set(err, OP_EPROTO, "store: no level file magic (%zu bytes)", len);
    const uint8_t *body = buf + MAGIC_LEN;
    size_t blen = len - MAGIC_LEN - 8;
    uint64_t want = 0;
    for (int b = 0; b < 8; b++)
        want |= (uint64_t)body[blen + (size_t)b] << (8 * b);
    if (op_hash_bytes(body, blen) != want)
        return op_err_set(err, OP_EPROTO, "store: content hash mismatch (%zu bytes)", blen);
    op_mp_limits lim;
    op_mp_limits_default(&lim);
    lim.max_bytes = blen;
    op_status st = op_mp_scan(body, blen, &lim, err);
    if (st != OP_OK)
        return st;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    if (msgpack_unpack_next(&u, (const char *)body, blen, &off) != MSGPACK_UNPACK_SUCCESS ||
        off != blen)
        st = op_err_set(err, OP_EPROTO, "store: not one msgpack value");
    else
        st = decode_top(&u.data, v1, ld, err);
    msgpack_unpacked_destroy(&u);
    if (st != OP_OK)
        opd_level_data_fini(ld);
    return st;
}

void opd_level_data_fini(opd_level_data *ld)
{
    opd_mesh_list_free(ld->meshes, ld->nmeshes);
    ld->meshes = NULL;
    ld->nmeshes = 0;
    opd_vset_unref(ld->vols);
    ld->vols = NULL;
}

op_status opd_store_write_temp(const char *dir, const opd_level_data *ld, const char *temp_tag,
                               int no_fsync, opd_temp *t, size_t *bytes, op_err *err)
{
    char tmpname[128];
    snprintf(tmpname, sizeof tmpname, "%s%s%s", ld->name, SUFFIX, temp_tag ? temp_tag : "");
    *bytes = 0;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    op_status st = opd_store_encode(ld, &sb, err);
    if (st == OP_OK && (st = opd_file_temp(dir, tmpname, t, err)) == OP_OK) {
        st = opd_file_write_at(t->fd, t->path, sb.data, sb.size, 0, err);
        if (st == OP_OK && !no_fsync && fsync(t->fd) != 0)
            st = op_err_set(err, OP_EIO, "store: fsync %s: %s", t->path, strerror(errno));
        if (st != OP_OK)
            opd_file_temp_abandon(t);
    }
    *bytes = sb.size;
    msgpack_sbuffer_destroy(&sb);
    return st;
}

op_status opd_store_commit_temp(opd_temp *t, const char *dir, const char *name, int no_fsync,
                                int *renamed, op_err *err)
{
    char file[96];
    snprintf(file, sizeof file, "%s%s", name, SUFFIX);
    return opd_file_temp_commit(t, dir, file, no_fsync, 0, renamed, err);
}

op_status opd_store_write(const char *dir, const opd_level_data *ld, const char *temp_tag,
                          int no_fsync, int *renamed, size_t *bytes, op_err *err)
{
    opd_temp t;
    *renamed = 0;
    op_status st = opd_store_write_temp(dir, ld, temp_tag, no_fsync, &t, bytes, err);
    return st != OP_OK ? st : opd_store_commit_temp(&t, dir, ld->name, no_fsync, renamed, err);
}

op_status opd_store_remove(const char *dir, const char *name, int no_fsync, int *removed,
                           op_err *err)
{
    char file[96];
    int gone = 0;
    snprintf(file, sizeof file, "%s%s", name, SUFFIX);
    op_status st = opd_file_remove(dir, file, no_fsync, removed, err);
    if (st != OP_OK)
        return st;
    /* The snapshot first: a journal left without one is an orphan, removed at start. */
    snprintf(file, sizeof file, "%s%s", name, OPD_JOURNAL_SUFFIX);
    st = opd_file_remove(dir, file, no_fsync, &gone, err);
    *removed |= gone;
    return st;
}

/* ===== loading ===== */

typedef struct replay {
    opd_level_data *ld;
    uint64_t last; /* version of the last accepted record */
    int applied, skipped;
    op_err err; /* why the journal ends where it ends */
} replay;

static int replay_one(void *ctx, const uint8_t *payload, size_t len)
{
    replay *r = ctx;
    uint64_t v;
    int skipped;
    if (opd_record_apply(r->ld, payload, len, &v, &skipped, &r->err) != OP_OK)
        return 1;
    /* Versions only grow along a journal, and the records a snapshot already holds come
     * before the others (an applied record is always version + 1: above the last). */
    if (skipped && (v <= r->last || r->applied)) {
        op_err_set(&r->err, OP_EPROTO, "journal: record of version %llu after version %llu",
                   (unsigned long long)v, (unsigned long long)r->last);
        return 1;
    }
    r->last = v;
    r->applied += !skipped;
    r->skipped += skipped;
    return 0;
}

static void logf_(void (*log)(void *, const char *), void *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void logf_(void (*log)(void *, const char *), void *ctx, const char *fmt, ...)
{
    char msg[OPD_PATH_MAX + OP_ERR_MSG_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log(ctx, msg);
}

/* The journal of a loaded snapshot: replayed onto out->ld, its tail cut off, kept open. */
static op_status load_journal(const char *dir, const char *name, int no_fsync,
                              void (*log)(void *, const char *), void *ctx, opd_loaded *out,
                              op_err *err)
{
    char path[OPD_PATH_MAX], aside[OPD_PATH_MAX];
    op_status st = opd_path(path, sizeof path, dir, "", name, OPD_JOURNAL_SUFFIX, err);
    if (st != OP_OK)
        return st;
    uint8_t *buf;
    size_t len;
    op_err e;
    if ((st = opd_file_read(path, OPD_FILE_MAX, &buf, &len, &e)) == OP_ENOTFOUND)
        return OP_OK; /* none yet: made by the first edit */
    uint64_t epoch = 0;
    if (st == OP_OK && opd_journal_header_check(buf, len, &epoch) == 0 && epoch == out->epoch) {
        replay r = {&out->ld, 0, 0, 0, {OP_OK, {0}}};
        size_t end = opd_journal_scan(buf, len, replay_one, &r);
        free(buf);
        out->applied = r.applied;
        out->skipped = r.skipped;
        out->dropped = len - end;
        if (end < len)
            logf_(log, ctx, "OP-JOURNAL-TAIL %s: %zu bytes from offset %zu dropped: %s", path,
                  len - end, end, r.err.msg[0] ? r.err.msg : "torn record");
        return opd_journal_open(dir, name, end, no_fsync, &out->journal, err);
    }
    free(buf);
    /* Not this life's journal (or not a journal at all): set it aside, never replay it. */
    if ((st = opd_path(aside, sizeof aside, dir, "", name, OPD_JOURNAL_SUFFIX ".stale", err)) !=
        OP_OK)
        return st;
    if (rename(path, aside) != 0)
        return op_err_set(err, OP_EIO, "store: rename %s: %s", path, strerror(errno));
    logf_(log, ctx, "OP-JOURNAL-STALE %s: %s, set aside as %s", path,
          st != OP_OK ? e.msg : "not of this level's epoch", aside);
    return no_fsync ? OP_OK : opd_dir_fsync(dir, err);
}

op_status opd_store_load_level(const char *dir, const char *name, int no_fsync,
                               void (*log)(void *ctx, const char *msg), void *ctx, opd_loaded *out,
                               op_err *err)
{
    memset(out, 0, sizeof *out);
    char path[OPD_PATH_MAX];
    op_status st = opd_path(path, sizeof path, dir, "", name, SUFFIX, err);
    uint8_t *buf = NULL;
    size_t len = 0;
    if (st == OP_OK)
        st = opd_file_read(path, OPD_FILE_MAX, &buf, &len, err);
    if (st == OP_OK) {
        st = opd_store_decode(buf, len, &out->ld, err);
        free(buf);
    }
    if (st == OP_OK && strcmp(out->ld.name, name) != 0) {
        st = op_err_set(err, OP_EPROTO, "store: file holds level '%s'", out->ld.name);
        opd_level_data_fini(&out->ld);
    }
    if (st != OP_OK)
        return st;
    out->epoch = out->ld.epoch;
    out->snapshot_bytes = len;
    if ((st = load_journal(dir, name, no_fsync, log, ctx, out, err)) != OP_OK)
        opd_loaded_fini(out);
    return st;
}

void opd_loaded_fini(opd_loaded *l)
{
    opd_level_data_fini(&l->ld);
    opd_journal_close(l->journal);
    l->journal = NULL;
}

/* Whether n ends in suffix; the stem's length. */
static int has_suffix(const char *n, const char *suffix, size_t *stem)
{
    size_t len = strlen(n), sl = strlen(suffix);
    *stem = len - sl;
    return len > sl && !strcmp(n + len - sl, suffix);
}

/* A file that does not decode is renamed aside to NAME.corrupt-N (the first N free), never
 * overwritten by a later level.put of the same name nor removed as an orphan: whoever looks
 * into it finds the bytes as they were. */
static void quarantine(const char *dir, const char *fname, opd_store_log_fn log, void *ctx)
{
    char path[OPD_PATH_MAX], aside[OPD_PATH_MAX], suffix[32];
    struct stat sb;
    op_err e;
    if (opd_path(path, sizeof path, dir, "", fname, "", &e) != OP_OK || lstat(path, &sb) != 0)
        return;
    for (int n = 1; n < 1000; n++) {
        snprintf(suffix, sizeof suffix, ".corrupt-%d", n);
        if (opd_path(aside, sizeof aside, dir, "", fname, suffix, &e) != OP_OK)
            return;
        if (lstat(aside, &sb) == 0 || errno != ENOENT)
            continue;
        if (rename(path, aside) == 0)
            logf_(log, ctx, "OP-STORE-QUARANTINE %s: set aside as %s", path, aside);
        else
            logf_(log, ctx, "OP-STORE-QUARANTINE %s: rename to %s failed: %s", path, aside,
                  strerror(errno));
        return;
    }
    logf_(log, ctx, "OP-STORE-QUARANTINE %s: 999 copies set aside already, left in place", path);
}

static void load_one(const char *dir, const char *fname, size_t stem, int no_fsync,
                     opd_store_load_fn fn, opd_store_log_fn log, void *ctx)
{
    char name[96];
    op_err e;
    op_err_clear(&e);
    if (stem == 0 || stem > 64) {
        logf_(log, ctx, "OP-STORE-SKIP %s/%s: not a level name", dir, fname);
        return;
    }
    memcpy(name, fname, stem);
    name[stem] = '\0';
    opd_loaded l;
    op_status st = opd_store_load_level(dir, name, no_fsync, log, ctx, &l, &e);
    if (st != OP_OK) {
        logf_(log, ctx, "OP-STORE-SKIP %s/%s: %s, skipped: %s", dir, fname,
              st == OP_EPROTO ? "corrupt" : op_status_name(st), e.msg);
        if (st == OP_EPROTO) {
            quarantine(dir, fname, log, ctx);
            char journal[96 + sizeof OPD_JOURNAL_SUFFIX];
            snprintf(journal, sizeof journal, "%s%s", name, OPD_JOURNAL_SUFFIX);
            quarantine(dir, journal, log, ctx);
            if (!no_fsync)
                opd_dir_fsync(dir, &e);
        }
        return;
    }
    fn(ctx, &l);
}

/* A journal whose snapshot is gone: the leftover of a level.drop cut short. */
static void remove_orphan(const char *dir, const char *fname, size_t stem, opd_store_log_fn log,
                          void *ctx)
{
    char snap[OPD_PATH_MAX], path[OPD_PATH_MAX];
    struct stat sb;
    op_err e;
    if (opd_path(snap, sizeof snap, dir, "", fname, "", &e) != OP_OK)
        return;
    snap[strlen(snap) - strlen(OPD_JOURNAL_SUFFIX)] = '\0';
    (void)stem;
    if (strlen(snap) + strlen(SUFFIX) >= sizeof snap)
        return;
    strcat(snap, SUFFIX);
    if (lstat(snap, &sb) == 0 || errno != ENOENT)
        return;
    if (opd_path(path, sizeof path, dir, "", fname, "", &e) == OP_OK && unlink(path) == 0)
        logf_(log, ctx, "OP-JOURNAL-ORPHAN %s: no snapshot, removed", path);
}

int opd_store_load_all(const char *dir, int no_fsync, opd_store_load_fn fn, opd_store_log_fn log,
                       void *ctx)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return -1;
    struct dirent *de;
    size_t stem;
    while ((de = readdir(dp)) != NULL) {
        const char *n = de->d_name;
        if (n[0] == '.') {
            /* A temporary file left by a crash: the rename never happened, drop it. */
            if (has_suffix(n, ".tmp", &stem)) {
                char path[OPD_PATH_MAX];
                op_err e;
                if (opd_path(path, sizeof path, dir, "", n, "", &e) == OP_OK)
                    unlink(path);
            }
            continue;
        }
        if (has_suffix(n, SUFFIX, &stem))
            load_one(dir, n, stem, no_fsync, fn, log, ctx);
        else if (has_suffix(n, OPD_JOURNAL_SUFFIX, &stem))
            remove_orphan(dir, n, stem, log, ctx);
    }
    closedir(dp);
    return 0;
}
