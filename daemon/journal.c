/*
 * onepathd journal (protocol §7.4): one append-only file per level, L.opjournal,
 *
 *   header   "OPJRNL01", epoch (uint64 LE), FNV-1a of those 16 bytes (uint64 LE)
 *   record   len (uint32 LE), FNV-1a of the len bytes and the payload (uint64 LE), payload
 *
 * so that a torn or corrupt record is found by its length or checksum and everything
 * from it on is dropped. An append writes the record at the end of the intact part and
 * fdatasyncs it before the edit is acknowledged; it costs the record, not the level.
 * The payloads are record.c's; this file only frames them.
 * Typical: records of 10^2..10^7 bytes, journals up to --compact-bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onepath/hash.h"
#include "store.h"

struct opd_journal {
    int fd;
    uint64_t size; /* end of the intact part: the next record goes here */
    int no_fsync;
    int dir_dirty; /* renamed into place, the directory fsync not done yet */
    char dir[OPD_PATH_MAX];
    char file[96]; /* L.opjournal */
    char path[OPD_PATH_MAX];
};

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void opd_journal_header(uint64_t epoch, uint8_t out[OPD_JOURNAL_HEADER])
{
    memcpy(out, OPD_JOURNAL_MAGIC, 8);
    put_le(out + 8, epoch, 8);
    put_le(out + 16, op_hash_bytes(out, 16), 8);
}

int opd_journal_header_check(const uint8_t *buf, size_t len, uint64_t *epoch)
{
    if (len < OPD_JOURNAL_HEADER || memcmp(buf, OPD_JOURNAL_MAGIC, 8) != 0 ||
        get_le(buf + 16, 8) != op_hash_bytes(buf, 16))
        return -1;
    *epoch = get_le(buf + 8, 8);
    return 0;
}

static void record_head(const void *payload, size_t len, uint8_t out[OPD_JOURNAL_RECORD_HEAD])
{
    put_le(out, len, 4);
    put_le(out + 4, op_hash_update(op_hash_bytes(out, 4), payload, len), 8);
}

size_t opd_journal_scan(const uint8_t *buf, size_t len, opd_journal_fn fn, void *ctx)
{
    size_t at = OPD_JOURNAL_HEADER;
    if (len < at)
        return at;
    while (len - at >= OPD_JOURNAL_RECORD_HEAD) {
        const uint8_t *h = buf + at;
        size_t n = (size_t)get_le(h, 4);
        if (n == 0 || n > OPD_JOURNAL_MAX_RECORD || n > len - at - OPD_JOURNAL_RECORD_HEAD)
            break;
        const uint8_t *payload = h + OPD_JOURNAL_RECORD_HEAD;
        if (op_hash_update(op_hash_bytes(h, 4), payload, n) != get_le(h + 4, 8) ||
            fn(ctx, payload, n) != 0)
            break;
        at += OPD_JOURNAL_RECORD_HEAD + n;
    }
    return at;
}

static op_status journal_new(const char *dir, const char *level, int no_fsync, opd_journal **out,
                             op_err *err)
{
    opd_journal *j = calloc(1, sizeof *j);
    if (!j)
        return op_err_set(err, OP_ENOMEM, "journal: out of memory");
    j->fd = -1;
    j->no_fsync = no_fsync;
    snprintf(j->dir, sizeof j->dir, "%s", dir);
    snprintf(j->file, sizeof j->file, "%s%s", level, OPD_JOURNAL_SUFFIX);
    op_status st = opd_path(j->path, sizeof j->path, dir, "", j->file, "", err);
    if (st != OP_OK) {
        free(j);
        return st;
    }
    *out = j;
    return OP_OK;
}

/* Commits a temporary as the journal; once renamed, t's file is the journal whatever
 * the directory fsync said (then the next append fsyncs the directory first). */
static op_status commit_temp(opd_journal *j, opd_temp *t, int *renamed, op_err *err)
{
    op_status st = opd_file_temp_commit(t, j->dir, j->file, j->no_fsync, 1, renamed, err);
    if (*renamed)
        j->dir_dirty = st != OP_OK;
    return st;
}

op_status opd_journal_create(const char *dir, const char *level, uint64_t epoch, int no_fsync,
                             opd_journal **out, op_err *err)
{
    *out = NULL;
    opd_journal *j = NULL; /* set by journal_new on OP_OK (gcc -O3 cannot see it) */
    op_status st = journal_new(dir, level, no_fsync, &j, err);
    if (st != OP_OK)
        return st;
    uint8_t h[OPD_JOURNAL_HEADER];
    opd_journal_header(epoch, h);
    opd_temp t;
    int renamed = 0;
    if ((st = opd_file_temp(j->dir, j->file, &t, err)) == OP_OK) {
        if ((st = opd_file_write_at(t.fd, t.path, h, sizeof h, 0, err)) != OP_OK)
            opd_file_temp_abandon(&t);
        else
            st = commit_temp(j, &t, &renamed, err);
    }
    if (!renamed) {
        free(j);
        return st;
    }
    /* Renamed: this is the journal now, even when the directory fsync failed (st). */
    j->fd = t.fd;
    j->size = OPD_JOURNAL_HEADER;
    *out = j;
    return st;
}

op_status opd_journal_open(const char *dir, const char *level, uint64_t end, int no_fsync,
                           opd_journal **out, op_err *err)
{
    *out = NULL;
    opd_journal *j = NULL; /* set by journal_new on OP_OK (gcc -O3 cannot see it) */
    op_status st = journal_new(dir, level, no_fsync, &j, err);
    if (st != OP_OK)
        return st;
    j->fd = open(j->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (j->fd < 0) {
        st = op_err_set(err, OP_EIO, "journal: open %s: %s", j->path, strerror(errno));
        free(j);
        return st;
    }
    off_t size = lseek(j->fd, 0, SEEK_END);
    /* A tail past the intact part must go before anything is appended: a later record of
     * the same length would otherwise make the rest of the old tail valid again. */
    if (size < 0 || ((uint64_t)size > end && ftruncate(j->fd, (off_t)end) != 0) ||
        ((uint64_t)size > end && !no_fsync && fsync(j->fd) != 0)) {
        st = op_err_set(err, OP_EIO, "journal: cut %s at %llu: %s", j->path,
                        (unsigned long long)end, strerror(errno));
        close(j->fd);
        free(j);
        return st;
    }
    j->size = end;
    *out = j;
    return OP_OK;
}

op_status opd_journal_append(opd_journal *j, const void *payload, size_t len, op_err *err)
{
    if (len == 0 || len > OPD_JOURNAL_MAX_RECORD)
        return op_err_set(err, OP_ELIMIT, "journal: a record of %zu bytes", len);
    if (j->dir_dirty && !j->no_fsync) {
        op_status ds = opd_dir_fsync(j->dir, err);
        if (ds != OP_OK)
            return ds;
        j->dir_dirty = 0;
    }
    uint8_t h[OPD_JOURNAL_RECORD_HEAD];
    record_head(payload, len, h);
    op_status st = opd_file_write_at(j->fd, j->path, h, sizeof h, j->size, err);
    if (st == OP_OK)
        st = opd_file_write_at(j->fd, j->path, payload, len, j->size + sizeof h, err);
    if (st == OP_OK && !j->no_fsync && fdatasync(j->fd) != 0)
        st = op_err_set(err, OP_EIO, "journal: fdatasync %s: %s", j->path, strerror(errno));
    if (st != OP_OK) {
        /* Not acknowledged: cut it off (best effort; the next append overwrites it and a
         * load drops whatever of it is left, as a torn tail). */
        if (ftruncate(j->fd, (off_t)j->size) != 0) {
            /* nothing more to do: the error above is what the edit reports */
        }
        return st;
    }
    j->size += sizeof h + len;
    return OP_OK;
}

/* Bytes copied per read while rewriting. */
#define OPD_JOURNAL_COPY ((size_t)1 << 20)

op_status opd_journal_rewrite(opd_journal *j, uint64_t from, op_err *err)
{
    if (from < OPD_JOURNAL_HEADER || from > j->size)
        return op_err_set(err, OP_EINTERNAL, "journal: rewrite from %llu of %llu",
                          (unsigned long long)from, (unsigned long long)j->size);
    uint8_t h[OPD_JOURNAL_HEADER];
    op_status st = opd_file_read_at(j->fd, j->path, h, sizeof h, 0, err);
    if (st != OP_OK)
        return st;
    opd_temp t;
    if ((st = opd_file_temp(j->dir, j->file, &t, err)) != OP_OK)
        return st;
    st = opd_file_write_at(t.fd, t.path, h, sizeof h, 0, err);
    uint8_t *buf = st == OP_OK ? malloc(OPD_JOURNAL_COPY) : NULL;
    if (st == OP_OK && !buf)
        st = op_err_set(err, OP_ENOMEM, "journal: out of memory");
    uint64_t out = OPD_JOURNAL_HEADER;
    for (uint64_t at = from; st == OP_OK && at < j->size;) {
        size_t n = j->size - at < OPD_JOURNAL_COPY ? (size_t)(j->size - at) : OPD_JOURNAL_COPY;
        if ((st = opd_file_read_at(j->fd, j->path, buf, n, at, err)) == OP_OK)
            st = opd_file_write_at(t.fd, t.path, buf, n, out, err);
        at += n;
        out += n;
    }
    free(buf);
    if (st != OP_OK) {
        opd_file_temp_abandon(&t);
        return st;
    }
    int renamed = 0;
    st = commit_temp(j, &t, &renamed, err);
    if (!renamed)
        return st; /* the old file is still the journal */
    close(j->fd);
    j->fd = t.fd;
    j->size = out;
    return st;
}

uint64_t opd_journal_size(const opd_journal *j)
{
    return j->size;
}

void opd_journal_close(opd_journal *j)
{
    if (!j)
        return;
    if (j->fd >= 0)
        close(j->fd);
    free(j);
}
