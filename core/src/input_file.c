/* The bounded input file reader (input_file.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onepath/input_file.h"

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

op_status op_input_file_read(const char *path, const char *what, size_t max, op_arena *out,
                             uint8_t **data, size_t *len, op_err *err)
{
    *data = NULL;
    *len = 0;
    if (!path)
        return op_err_set(err, OP_EINVAL, "%s: NULL path", what);
    /* O_NONBLOCK: opening a FIFO must not wait for a writer. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return op_err_set(err, OP_EIO, "%s: cannot open %s: %s", what, path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return op_err_set(err, OP_EIO, "%s: cannot stat %s: %s", what, path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return op_err_set(err, OP_EINVAL, "%s: %s is %s, not a regular file", what, path,
                          kind_of(sb.st_mode));
    }
    if (sb.st_size < 0 || (unsigned long long)sb.st_size > max) {
        close(fd);
        return op_err_set(err, OP_ERANGE, "%s: %s is %llu bytes, more than the limit of %zu", what,
                          path, (unsigned long long)sb.st_size, max);
    }
    /* Its size plus one: reaching end of file needs no second block; a file that grew since
     * fstat is read up to max + 1 bytes and refused. */
    size_t cap = (size_t)sb.st_size + 1;
    uint8_t *buf = op_arena_alloc(out, cap + 1);
    if (!buf) {
        close(fd);
        return op_err_set(err, OP_ENOMEM, "%s: out of memory reading %s (%zu bytes)", what, path,
                          cap);
    }
    size_t n = 0;
    op_status st = OP_OK;
    for (;;) {
        if (n == cap) {
            if (cap > max) {
                st = op_err_set(err, OP_ERANGE, "%s: %s is more than the limit of %zu bytes", what,
                                path, max);
                break;
            }
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            uint8_t *nb = op_arena_grow(out, buf, cap + 1, ncap + 1);
            if (!nb) {
                st = op_err_set(err, OP_ENOMEM, "%s: out of memory reading %s (%zu bytes)", what,
                                path, ncap);
                break;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            st = op_err_set(err, OP_EIO, "%s: cannot read %s: %s", what, path, strerror(errno));
            break;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    if (st == OP_OK && n > max)
        st = op_err_set(err, OP_ERANGE, "%s: %s is more than the limit of %zu bytes", what, path,
                        max);
    if (st != OP_OK)
        return st;
    buf[n] = 0;
    *data = buf;
    *len = n;
    return OP_OK;
}
