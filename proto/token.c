/* The shared token: a bounded, private file and a constant-time comparison. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onepath/token.h"

op_status op_token_check(const char *tok, size_t len, const char *what, op_err *err)
{
    if (len < OP_TOKEN_MIN || len > OP_TOKEN_MAX)
        return op_err_set(err, OP_EINVAL, "%s: the token has %zu bytes, not %d..%d", what, len,
                          OP_TOKEN_MIN, OP_TOKEN_MAX);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)tok[i];
        if (c < 0x21 || c > 0x7e)
            return op_err_set(err, OP_EINVAL,
                              "%s: the token has byte 0x%02x at %zu (allowed: printable ASCII, "
                              "no space)",
                              what, c, i);
    }
    return OP_OK;
}

op_status op_token_read_file(const char *path, char *out, size_t *len, op_err *err)
{
    *len = 0;
    out[0] = '\0';
    /* O_NONBLOCK: a FIFO planted at the name must not hang start-up; fstat refuses it. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return op_err_set(err, errno == ELOOP ? OP_EINVAL : OP_EIO, "token file %s: %s", path,
                          errno == ELOOP ? "is a symbolic link" : strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return op_err_set(err, OP_EIO, "token file %s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return op_err_set(err, OP_EINVAL, "token file %s is not a regular file", path);
    }
    if (st.st_mode & 077) {
        close(fd);
        return op_err_set(err, OP_EPERM,
                          "token file %s has mode %04o: the group or others may access it; it "
                          "must be 0600 or stricter (chmod 600 %s)",
                          path, (unsigned)(st.st_mode & 07777), path);
    }
    /* One byte past the largest file accepted tells a long file from a full one. */
    char buf[OP_TOKEN_MAX + 3];
    size_t n = 0;
    while (n < sizeof buf) {
        ssize_t r = read(fd, buf + n, sizeof buf - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            op_token_wipe(buf, sizeof buf);
            return op_err_set(err, OP_EIO, "token file %s: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n == sizeof buf) {
        op_token_wipe(buf, sizeof buf);
        return op_err_set(err, OP_ELIMIT,
                          "token file %s is longer than %d bytes (a token is %d..%d bytes)", path,
                          OP_TOKEN_MAX + 2, OP_TOKEN_MIN, OP_TOKEN_MAX);
    }
    if (n == 0)
        return op_err_set(err, OP_EINVAL, "token file %s is empty (a token is %d..%d bytes)", path,
                          OP_TOKEN_MIN, OP_TOKEN_MAX);
    /* One trailing newline, "\n" or "\r\n", is not part of the token; nothing else is
     * stripped (a second newline or a lone "\r" is refused by op_token_check). */
    if (buf[n - 1] == '\n') {
        n--;
        if (n > 0 && buf[n - 1] == '\r')
            n--;
    }
    char what[160 + 16];
    snprintf(what, sizeof what, "token file %.160s", path);
    op_status s = op_token_check(buf, n, what, err);
    if (s != OP_OK) {
        op_token_wipe(buf, sizeof buf);
        return s;
    }
    memcpy(out, buf, n);
    out[n] = '\0';
    *len = n;
    op_token_wipe(buf, sizeof buf);
    return OP_OK;
}

void op_token_wipe(void *p, size_t n)
{
    /* Through a volatile pointer: a memset of a buffer about to go out of scope may be
     * removed as a dead store. */
    volatile unsigned char *v = p;
    for (size_t i = 0; i < n; i++)
        v[i] = 0;
}

int op_token_equal(const char *a, size_t alen, const char *b, size_t blen)
{
    /* Both sides are padded to OP_TOKEN_MAX so that every comparison reads the same bytes. */
    unsigned char pa[OP_TOKEN_MAX] = {0}, pb[OP_TOKEN_MAX] = {0};
    unsigned diff = (alen != blen) | (alen > OP_TOKEN_MAX) | (blen > OP_TOKEN_MAX);
    if (a && alen)
        memcpy(pa, a, alen < OP_TOKEN_MAX ? alen : OP_TOKEN_MAX);
    if (b && blen)
        memcpy(pb, b, blen < OP_TOKEN_MAX ? blen : OP_TOKEN_MAX);
    volatile unsigned char acc = 0;
    for (size_t i = 0; i < OP_TOKEN_MAX; i++)
        acc |= (unsigned char)(pa[i] ^ pb[i]);
    return (diff | acc) == 0;
}
