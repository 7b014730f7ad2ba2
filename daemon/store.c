/*
 * onepathd persistence (protocol §7): one file per level, <data-dir>/<level>.oplevel:
 *
 *   "OPLEVEL1"  8 bytes of magic
 *   msgpack     map: name (str), version (uint), settings (map, protocol §3.3),
 *               meshes (array of maps: name, verts (bin), tris (bin), areas (bin|nil))
 *   hash        8 bytes, little-endian FNV-1a (onepath/hash.h) of the msgpack bytes
 *
 * A file is replaced by writing .<level>.oplevel.tmp, fsync, rename over the old file,
 * fsync of the directory: a crash leaves the old or the new file, never a mix. Level
 * names never start with '.', so temporary names cannot collide with levels. Loading
 * trusts nothing: magic, hash, the bounded pre-scan, then strict fields.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "onepath/hash.h"
#include "onepath/mpscan.h"

#define MAGIC     "OPLEVEL1"
#define MAGIC_LEN 8
#define SUFFIX    ".oplevel"

static int pack_mesh(msgpack_packer *pk, const opd_mesh *m)
{
    int rc = msgpack_pack_map(pk, 4);
    rc |= op_rpc_pack_key(pk, "name") | op_rpc_pack_key(pk, m->name);
    rc |= op_rpc_pack_key(pk, "verts") | msgpack_pack_bin_with_body(pk, m->verts, m->verts_len);
    rc |= op_rpc_pack_key(pk, "tris") | msgpack_pack_bin_with_body(pk, m->tris, m->tris_len);
    rc |= op_rpc_pack_key(pk, "areas");
    rc |= m->areas ? msgpack_pack_bin_with_body(pk, m->areas, m->areas_len) : msgpack_pack_nil(pk);
    return rc;
}

op_status opd_store_encode(const opd_level_data *ld, msgpack_sbuffer *sb, op_err *err)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    int rc = msgpack_sbuffer_write(sb, MAGIC, MAGIC_LEN);
    rc |= msgpack_pack_map(&pk, 4);
    rc |= op_rpc_pack_key(&pk, "name") | op_rpc_pack_key(&pk, ld->name);
    rc |= op_rpc_pack_key(&pk, "version") | msgpack_pack_uint64(&pk, ld->version);
    rc |= op_rpc_pack_key(&pk, "settings") | opd_settings_pack(&pk, &ld->settings);
    rc |= op_rpc_pack_key(&pk, "meshes") | msgpack_pack_array(&pk, (size_t)ld->nmeshes);
    for (int i = 0; i < ld->nmeshes; i++)
        rc |= pack_mesh(&pk, ld->meshes[i]);
    uint64_t h = op_hash_bytes(sb->data + MAGIC_LEN, sb->size - MAGIC_LEN);
    uint8_t le[8];
    for (int b = 0; b < 8; b++)
        le[b] = (uint8_t)(h >> (8 * b));
    rc |= msgpack_sbuffer_write(sb, (const char *)le, 8);
    if (rc)
        return op_err_set(err, OP_ENOMEM, "store: out of memory encoding level '%s'", ld->name);
    return OP_OK;
}

static op_status decode_mesh(const msgpack_object *o, opd_mesh **out, op_err *err)
{
    static const char *const keys[] = {"name", "verts", "tris", "areas", NULL};
    const char *name;
    size_t nlen, vlen, tlen, alen = 0;
    const uint8_t *v, *t, *a = NULL;
    char nm[65];
    op_status st;
    if (o->type != MSGPACK_OBJECT_MAP)
        return op_err_set(err, OP_EPROTO, "store: a mesh is not a map");
    if ((st = op_rpc_check_keys(o, keys, err)) != OP_OK ||
        (st = op_rpc_get_str(o, "name", 0, &name, &nlen, err)) != OP_OK ||
        (st = op_rpc_name(name, nlen, "mesh", nm, err)) != OP_OK ||
        (st = op_rpc_get_bin(o, "verts", 0, &v, &vlen, err)) != OP_OK ||
        (st = op_rpc_get_bin(o, "tris", 0, &t, &tlen, err)) != OP_OK)
        return st;
    const msgpack_object *ao = op_rpc_get(o, "areas");
    if (ao && ao->type == MSGPACK_OBJECT_BIN) {
        a = (const uint8_t *)ao->via.bin.ptr;
        alen = ao->via.bin.size;
    } else if (!ao || ao->type != MSGPACK_OBJECT_NIL) {
        return op_err_set(err, OP_EPROTO, "store: mesh '%s' areas is not bin or nil", nm);
    }
    return opd_mesh_make(nm, v, vlen, t, tlen, a, alen, out, err);
}

static op_status decode_top(const msgpack_object *top, opd_level_data *ld, op_err *err)
{
    static const char *const keys[] = {"name", "version", "settings", "meshes", NULL};
    const char *name;
    size_t nlen;
    int64_t version;
    const msgpack_object *settings, *meshes;
    op_status st;
    if (top->type != MSGPACK_OBJECT_MAP)
        return op_err_set(err, OP_EPROTO, "store: not a map");
    if ((st = op_rpc_check_keys(top, keys, err)) != OP_OK ||
        (st = op_rpc_get_str(top, "name", 0, &name, &nlen, err)) != OP_OK ||
        (st = op_rpc_name(name, nlen, "level", ld->name, err)) != OP_OK ||
        (st = op_rpc_get_int(top, "version", 1, INT64_MAX, 0, &version, NULL, err)) != OP_OK ||
        (st = op_rpc_get_type(top, "settings", MSGPACK_OBJECT_MAP, 0, &settings, err)) != OP_OK ||
        (st = opd_settings_from_map(settings, &ld->settings, err)) != OP_OK ||
        (st = op_rpc_get_type(top, "meshes", MSGPACK_OBJECT_ARRAY, 0, &meshes, err)) != OP_OK)
        return st;
    ld->version = (uint64_t)version;
    uint32_t n = meshes->via.array.size;
    ld->meshes = calloc(n ? n : 1, sizeof *ld->meshes);
    if (!ld->meshes)
        return op_err_set(err, OP_ENOMEM, "store: out of memory for %u meshes", n);
    for (uint32_t i = 0; i < n; i++) {
        if ((st = decode_mesh(&meshes->via.array.ptr[i], &ld->meshes[i], err)) != OP_OK)
            return st;
        ld->nmeshes = (int)i + 1;
        if (i > 0 && strcmp(ld->meshes[i - 1]->name, ld->meshes[i]->name) >= 0)
            return op_err_set(err, OP_EPROTO, "store: meshes not in name order at '%s'",
                              ld->meshes[i]->name);
    }
    return OP_OK;
}

op_status opd_store_decode(const uint8_t *buf, size_t len, opd_level_data *ld, op_err *err)
{
    memset(ld, 0, sizeof *ld);
    if (len < MAGIC_LEN + 8 + 1 || memcmp(buf, MAGIC, MAGIC_LEN) != 0)
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
        st = decode_top(&u.data, ld, err);
    msgpack_unpacked_destroy(&u);
    if (st != OP_OK)
        opd_level_data_fini(ld);
    return st;
}

void opd_level_data_fini(opd_level_data *ld)
{
    for (int i = 0; i < ld->nmeshes; i++)
        opd_mesh_free(ld->meshes[i]);
    free(ld->meshes);
    ld->meshes = NULL;
    ld->nmeshes = 0;
}

static op_status fsync_dir(const char *dir, op_err *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return op_err_set(err, OP_EIO, "store: open %s: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0)
        return op_err_set(err, OP_EIO, "store: fsync %s: %s", dir, strerror(e));
    return OP_OK;
}

static op_status write_all(int fd, const char *path, const char *p, size_t n, op_err *err)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return op_err_set(err, OP_EIO, "store: write %s: %s", path, strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return OP_OK;
}

op_status opd_store_write(const char *dir, const opd_level_data *ld, int no_fsync, op_err *err)
{
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/.%s%s.tmp", dir, ld->name, SUFFIX);
    snprintf(path, sizeof path, "%s/%s%s", dir, ld->name, SUFFIX);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    op_status st = opd_store_encode(ld, &sb, err);
    if (st != OP_OK) {
        msgpack_sbuffer_destroy(&sb);
        return st;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        msgpack_sbuffer_destroy(&sb);
        return op_err_set(err, OP_EIO, "store: create %s: %s", tmp, strerror(errno));
    }
    st = write_all(fd, tmp, sb.data, sb.size, err);
    msgpack_sbuffer_destroy(&sb);
    if (st == OP_OK && !no_fsync && fsync(fd) != 0)
        st = op_err_set(err, OP_EIO, "store: fsync %s: %s", tmp, strerror(errno));
    if (close(fd) != 0 && st == OP_OK)
        st = op_err_set(err, OP_EIO, "store: close %s: %s", tmp, strerror(errno));
    if (st == OP_OK && rename(tmp, path) != 0)
        st = op_err_set(err, OP_EIO, "store: rename %s: %s", path, strerror(errno));
    if (st != OP_OK) {
        unlink(tmp);
        return st;
    }
    return no_fsync ? OP_OK : fsync_dir(dir, err);
}

op_status opd_store_remove(const char *dir, const char *name, int no_fsync, op_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, SUFFIX);
    if (unlink(path) != 0) {
        if (errno == ENOENT)
            return OP_OK;
        return op_err_set(err, OP_EIO, "store: remove %s: %s", path, strerror(errno));
    }
    return no_fsync ? OP_OK : fsync_dir(dir, err);
}

static uint8_t *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    struct stat sbuf;
    uint8_t *buf = NULL;
    if (fstat(fd, &sbuf) == 0 && sbuf.st_size >= 0 && (buf = malloc((size_t)sbuf.st_size + 1))) {
        size_t got = 0, want = (size_t)sbuf.st_size;
        while (got < want) {
            ssize_t r = read(fd, buf + got, want - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        if (got != want) {
            free(buf);
            buf = NULL;
        }
        *len = got;
    }
    close(fd);
    return buf;
}

static void load_one(const char *dir, const char *fname, opd_store_load_fn fn, opd_store_log_fn log,
                     void *ctx)
{
    char path[4096], msg[4096 + OP_ERR_MSG_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, fname);
    size_t len = 0;
    uint8_t *buf = read_file(path, &len);
    if (!buf) {
        snprintf(msg, sizeof msg, "OP-STORE-SKIP %s: cannot read: %s", path, strerror(errno));
        log(ctx, msg);
        return;
    }
    opd_level_data ld;
    op_err e;
    op_err_clear(&e);
    op_status st = opd_store_decode(buf, len, &ld, &e);
    free(buf);
    size_t stem = strlen(fname) - strlen(SUFFIX);
    if (st == OP_OK && (strlen(ld.name) != stem || strncmp(ld.name, fname, stem) != 0)) {
        st = op_err_set(&e, OP_EPROTO, "store: file holds level '%s'", ld.name);
        opd_level_data_fini(&ld);
    }
    if (st != OP_OK) {
        snprintf(msg, sizeof msg, "OP-STORE-SKIP %s: corrupt, skipped: %s", path, e.msg);
        log(ctx, msg);
        return;
    }
    fn(ctx, &ld);
}

int opd_store_load_all(const char *dir, opd_store_load_fn fn, opd_store_log_fn log, void *ctx)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return -1;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        const char *n = de->d_name;
        size_t len = strlen(n), sl = strlen(SUFFIX);
        if (n[0] == '.') {
            /* A temporary file left by a crash: the rename never happened, drop it. */
            if (len > 4 && !strcmp(n + len - 4, ".tmp")) {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", dir, n);
                unlink(path);
            }
            continue;
        }
        if (len > sl && !strcmp(n + len - sl, SUFFIX))
            load_one(dir, n, fn, log, ctx);
    }
    closedir(dp);
    return 0;
}
