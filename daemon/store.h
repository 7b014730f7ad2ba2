/*
 * onepathd persistence (protocol §7): the files of the data directory, below the level
 * state and above nothing of the daemon.
 *
 *   store.c    the snapshot file L.oplevel (OPLEVEL2) and loading a level (snapshot,
 *              then its journal's records) at start
 *   record.c   the journal's edit records (msgpack payloads): encoded by edits, applied
 *              in order at load
 *   journal.c  the journal file L.opjournal: header, framed records (length, checksum),
 *              append + fdatasync, the scan that finds the intact part, rewrite
 *   files.c    primitives: O_NOFOLLOW opens, 0600 temporaries created with O_EXCL,
 *              replace by rename, directory fsync, reading regular files only
 */
#ifndef ONEPATHD_STORE_H
#define ONEPATHD_STORE_H

#include "daemon.h"

#define OPD_PATH_MAX        4096
#define OPD_SNAPSHOT_SUFFIX ".oplevel"
#define OPD_JOURNAL_SUFFIX  ".opjournal"

/* ===== files.c ===== */

/* dir "/" prefix name suffix into out (OP_EIO when it does not fit). */
op_status opd_path(char *out, size_t cap, const char *dir, const char *prefix, const char *name,
                   const char *suffix, op_err *err);
op_status opd_dir_fsync(const char *dir, op_err *err);
op_status opd_file_write_at(int fd, const char *path, const void *data, size_t n, uint64_t off,
                            op_err *err);
op_status opd_file_read_at(int fd, const char *path, void *data, size_t n, uint64_t off,
                           op_err *err);
/* Reads a regular file whole (at most max bytes; *buf malloc'd). OP_ENOTFOUND when it
 * is absent, OP_EINVAL when it is not a regular file (a link, a FIFO, a directory). */
op_status opd_file_read(const char *path, size_t max, uint8_t **buf, size_t *len, op_err *err);

/* A temporary .<file>.tmp of dir, open for reading and writing. */
typedef struct opd_temp {
    int fd;
    char path[OPD_PATH_MAX];
} opd_temp;

op_status opd_file_temp(const char *dir, const char *file, opd_temp *t, op_err *err);
/* fsync, rename over dir/file, fsync dir; keep_fd: t->fd stays open (the new file).
 * On failure before the rename the temporary is removed. *renamed says whether the
 * rename happened: a failure after it (the directory fsync) leaves the new file in
 * place, durable or not, which the caller must treat as in doubt. */
op_status opd_file_temp_commit(opd_temp *t, const char *dir, const char *file, int no_fsync,
                               int keep_fd, int *renamed, op_err *err);
void opd_file_temp_abandon(opd_temp *t);
/* Writes dir/file through a temporary (*renamed as opd_file_temp_commit). */
op_status opd_file_replace(const char *dir, const char *file, const void *data, size_t len,
                           int no_fsync, int *renamed, op_err *err);
/* Removes dir/file and fsyncs dir; *removed 0 when there was none. */
op_status opd_file_remove(const char *dir, const char *file, int no_fsync, int *removed,
                          op_err *err);

/* ===== journal.c ===== */

#define OPD_JOURNAL_MAGIC       "OPJRNL01"
#define OPD_JOURNAL_HEADER      24 /* magic, epoch, hash of both */
#define OPD_JOURNAL_RECORD_HEAD 12 /* len (uint32), hash (uint64) */
/* Largest record payload: a mesh.put of the largest message, with room to spare. */
#define OPD_JOURNAL_MAX_RECORD ((size_t)1 << 31)

typedef struct opd_journal opd_journal;

void opd_journal_header(uint64_t epoch, uint8_t out[OPD_JOURNAL_HEADER]);
/* 0 and the epoch when buf starts with an intact header; -1 otherwise. */
int opd_journal_header_check(const uint8_t *buf, size_t len, uint64_t *epoch);
/* Calls fn(ctx, payload, len) for each intact record after the header, in order, until
 * a record is torn or corrupt or fn returns nonzero (that record is not accepted).
 * Returns the offset where the accepted records end (the header's end at least). */
typedef int (*opd_journal_fn)(void *ctx, const uint8_t *payload, size_t len);
size_t opd_journal_scan(const uint8_t *buf, size_t len, opd_journal_fn fn, void *ctx);

/* Creates (or replaces) the level's journal, empty, through a temporary. A journal is
 * returned whenever the rename happened, even with an error (the directory fsync failed:
 * the first append does it again). */
op_status opd_journal_create(const char *dir, const char *level, uint64_t epoch, int no_fsync,
                             opd_journal **out, op_err *err);
/* Opens the level's journal for appending after `end` (its intact part): whatever follows
 * is truncated away (and the truncation fsynced). */
op_status opd_journal_open(const char *dir, const char *level, uint64_t end, int no_fsync,
                           opd_journal **out, op_err *err);
/* Appends one record and fdatasyncs it. On failure the file is cut back to where the
 * record began (the next append overwrites what is left). */
op_status opd_journal_append(opd_journal *j, const void *payload, size_t len, op_err *err);
/* Replaces the journal by one holding only its records from byte offset `from` on (a
 * record boundary), through a temporary; appends go on in the new file. */
op_status opd_journal_rewrite(opd_journal *j, uint64_t from, op_err *err);
uint64_t opd_journal_size(const opd_journal *j);
void opd_journal_close(opd_journal *j);

/* ===== record.c ===== */

/* The payload of the journal record of a mesh.put / mesh.drop that made version v. */
op_status opd_record_mesh_put(msgpack_sbuffer *sb, uint64_t v, const opd_mesh *m, op_err *err);
op_status opd_record_mesh_drop(msgpack_sbuffer *sb, uint64_t v, const char *name, op_err *err);
/* The same of a volume.put / volume.drop. */
op_status opd_record_volume_put(msgpack_sbuffer *sb, uint64_t v, const op_volume *vol, op_err *err);
op_status opd_record_volume_drop(msgpack_sbuffer *sb, uint64_t v, const char *name, op_err *err);
/* Applies a record to ld (protocol §7.4): OP_OK when applied or skipped (*skipped: its
 * version, *version, is at or below ld's), an error when the record is not accepted. */
op_status opd_record_apply(opd_level_data *ld, const uint8_t *payload, size_t len,
                           uint64_t *version, int *skipped, op_err *err);

/* ===== store.c ===== */

/* Writes the level's snapshot through a temporary (.<level>.oplevel<temp_tag>.tmp: a
 * compaction, which runs beside edits, has its own): written and fsynced, then renamed
 * into place (*renamed as opd_file_temp_commit); *bytes: the file's size. */
op_status opd_store_write(const char *dir, const opd_level_data *ld, const char *temp_tag,
                          int no_fsync, int *renamed, size_t *bytes, op_err *err);
/* The two halves: the temporary written and fsynced; its rename into place. */
op_status opd_store_write_temp(const char *dir, const opd_level_data *ld, const char *temp_tag,
                               int no_fsync, opd_temp *t, size_t *bytes, op_err *err);
op_status opd_store_commit_temp(opd_temp *t, const char *dir, const char *name, int no_fsync,
                                int *renamed, op_err *err);
/* Removes the level's snapshot, then its journal (each fsynced); *removed: anything was. */
op_status opd_store_remove(const char *dir, const char *name, int no_fsync, int *removed,
                           op_err *err);

/* A level as loading found it: the content (snapshot plus the journal's records), the
 * journal open for appending (NULL: none yet), the snapshot file's size, and what the
 * journal held. */
typedef struct opd_loaded {
    opd_level_data ld;
    uint64_t epoch;
    opd_journal *journal;
    uint64_t snapshot_bytes;
    int applied, skipped; /* records */
    uint64_t dropped;     /* bytes of a torn or corrupt tail cut off */
} opd_loaded;

/* Loads level `name` from dir (its snapshot, then its journal; a torn tail is cut off,
 * a stale journal set aside). log gets the lines about the journal. On success the
 * caller owns out (opd_loaded_fini). */
op_status opd_store_load_level(const char *dir, const char *name, int no_fsync,
                               void (*log)(void *ctx, const char *msg), void *ctx, opd_loaded *out,
                               op_err *err);
void opd_loaded_fini(opd_loaded *l);
/* Calls fn for every level of dir that loads (fn takes what it is given); logs and skips
 * the others; removes leftover temporaries and orphan journals. -1 when dir cannot be read. */
typedef void (*opd_store_load_fn)(void *ctx, opd_loaded *l);
typedef void (*opd_store_log_fn)(void *ctx, const char *msg);
int opd_store_load_all(const char *dir, int no_fsync, opd_store_load_fn fn, opd_store_log_fn log,
                       void *ctx);

#endif
