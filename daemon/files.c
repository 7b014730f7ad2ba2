/*
 * onepathd data-directory files: the primitives the snapshot and journal code build on.
 * Every file is opened with O_NOFOLLOW (a symbolic link planted in the data directory is
 * never followed) and created with mode 0600; a temporary is created with O_EXCL under
 * a name starting with '.' (which no level name can), and a file is replaced by writing
 * the temporary, fsyncing it, renaming it over the file and fsyncing the directory, so a
 * crash leaves the old or the new file. Reading takes regular files only (O_NONBLOCK and
 * fstat first: a FIFO never blocks start-up).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

op_status opd_path(char *out, size_t cap, const char *dir, const char *prefix, const char *name,
                   const char *suffix, op_err *err)
{
    int n = snprintf(out, cap, "%s/%s%s%s", dir, prefix, name, suffix);
    if (n < 0 || (size_t)n >= cap)
        return op_err_set(err, OP_EIO, "store: path %s/%s%s%s is too long", dir, prefix, name,
                          suffix);
    return OP_OK;
}

op_status opd_dir_fsync(const char *dir, op_err *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return op_err_set(err, OP_EIO, "store: open %s: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0)
        return op_err_set(err, OP_EIO, "store: fsync %s: %s", dir, strerror(e));
    return OP_OK;
}

op_status opd_file_write_at(int fd, const char *path, const void *data, size_t n, uint64_t off,
                            op_err *err)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return op_err_set(err, OP_EIO, "store: write %s: %s", path,
                              w < 0 ? strerror(errno) : "no progress");
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return OP_OK;
}

op_status opd_file_read_at(int fd, const char *path, void *data, size_t n, uint64_t off,
                           op_err *err)
{
    char *p = data;
    while (n > 0) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return op_err_set(err, OP_EIO, "store: read %s: %s", path,
                              r < 0 ? strerror(errno) : "short file");
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return OP_OK;
}

op_status opd_file_temp(const char *dir, const char *file, opd_temp *t, op_err *err)
{
    op_status st = opd_path(t->path, sizeof t->path, dir, ".", file, ".tmp", err);
    if (st != OP_OK)
        return st;
    /* A leftover of a crash (or anything planted there, a link included) goes first: the
     * exclusive create never writes through it. */
    for (int attempt = 0; attempt < 2; attempt++) {
        t->fd = open(t->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (t->fd >= 0)
            return OP_OK;
        if (errno != EEXIST || unlink(t->path) != 0)
            break;
    }
    return op_err_set(err, OP_EIO, "store: create %s: %s", t->path, strerror(errno));
}

void opd_file_temp_abandon(opd_temp *t)
{
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
    unlink(t->path);
}

op_status opd_file_temp_commit(opd_temp *t, const char *dir, const char *file, int no_fsync,
                               int keep_fd, int *renamed, op_err *err)
{
    char path[OPD_PATH_MAX];
    *renamed = 0;
    op_status st = opd_path(path, sizeof path, dir, "", file, "", err);
    if (st == OP_OK && !no_fsync && fsync(t->fd) != 0)
        st = op_err_set(err, OP_EIO, "store: fsync %s: %s", t->path, strerror(errno));
    if (st == OP_OK && rename(t->path, path) != 0)
        st = op_err_set(err, OP_EIO, "store: rename %s: %s", path, strerror(errno));
    if (st != OP_OK) {
        opd_file_temp_abandon(t);
        return st;
    }
    *renamed = 1;
    if (!keep_fd) {
        if (close(t->fd) != 0)
            st = op_err_set(err, OP_EIO, "store: close %s: %s", path, strerror(errno));
        t->fd = -1;
    }
    /* Renamed: from here on the file is the new one even if the fsync below fails (the
     * caller reports OP_EIO, the rename may or may not survive a crash). */
    if (st == OP_OK && !no_fsync)
        st = opd_dir_fsync(dir, err);
    return st;
}

op_status opd_file_replace(const char *dir, const char *file, const void *data, size_t len,
                           int no_fsync, int *renamed, op_err *err)
{
    opd_temp t;
    *renamed = 0;
    op_status st = opd_file_temp(dir, file, &t, err);
    if (st != OP_OK)
        return st;
    if ((st = opd_file_write_at(t.fd, t.path, data, len, 0, err)) != OP_OK) {
        opd_file_temp_abandon(&t);
        return st;
    }
    return opd_file_temp_commit(&t, dir, file, no_fsync, 0, renamed, err);
}

op_status opd_file_remove(const char *dir, const char *file, int no_fsync, int *removed,
                          op_err *err)
{
    char path[OPD_PATH_MAX];
    op_status st = opd_path(path, sizeof path, dir, "", file, "", err);
    *removed = 0;
    if (st != OP_OK)
        return st;
    if (unlink(path) != 0) {
        if (errno == ENOENT)
            return OP_OK;
        return op_err_set(err, OP_EIO, "store: remove %s: %s", path, strerror(errno));
    }
    *removed = 1;
    return no_fsync ? OP_OK : opd_dir_fsync(dir, err);
}

op_status opd_file_read(const char *path, size_t max, uint8_t **buf, size_t *len, op_err *err)
{
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return op_err_set(err, OP_ENOTFOUND, "store: no file %s", path);
        if (errno == ELOOP)
            return op_err_set(err, OP_EINVAL, "store: %s is a symbolic link", path);
        return op_err_set(err, OP_EIO, "store: open %s: %s", path, strerror(errno));
    }
    struct stat sb;
    op_status st = OP_OK;
    if (fstat(fd, &sb) != 0)
        st = op_err_set(err, OP_EIO, "store: stat %s: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = op_err_set(err, OP_EINVAL, "store: %s is not a regular file", path);
    else if (sb.st_size < 0 || (uint64_t)sb.st_size > max)
        st = op_err_set(err, OP_ELIMIT, "store: %s has %lld bytes > %zu", path,
                        (long long)sb.st_size, max);
    else if (!(*buf = malloc((size_t)sb.st_size + 1)))
        st = op_err_set(err, OP_ENOMEM, "store: out of memory for %s", path);
    else if ((st = opd_file_read_at(fd, path, *buf, (size_t)sb.st_size, 0, err)) == OP_OK)
        *len = (size_t)sb.st_size;
    close(fd);
    if (st != OP_OK) {
        free(*buf);
        *buf = NULL;
    }
    return st;
}
