/*
 * The shared token of onepathd (docs/security.md, protocol.md §2.7): read from a file with a
 * size bound, compared in constant time. Used by the daemon (--token-file) and the clients.
 */
#ifndef ONEPATH_TOKEN_H
#define ONEPATH_TOKEN_H

#include <stddef.h>

#include "onepath/status.h"

/* A token is OP_TOKEN_MIN..OP_TOKEN_MAX bytes, each printable ASCII other than space
 * (0x21..0x7e): it survives files, environment variables and shells unchanged. */
#define OP_TOKEN_MIN 16
#define OP_TOKEN_MAX 256

/*
 * Reads the token of path: the file's bytes less one trailing "\n" or "\r\n". The file must
 * be a regular file (symbolic links are not followed; else OP_EINVAL) whose mode gives the
 * group and others nothing (0600, 0400: else OP_EPERM naming the file and its mode), not
 * empty (OP_EINVAL), of at most OP_TOKEN_MAX + 2 bytes (else OP_ELIMIT; no more than that is
 * read), and the token valid (op_token_check). out holds OP_TOKEN_MAX + 1 bytes and is
 * NUL-terminated; *len is the token's length. No message quotes the token.
 */
op_status op_token_read_file(const char *path, char *out, size_t *len, op_err *err);

/* OP_OK when tok (len bytes) is a valid token, else OP_EINVAL saying why (what: where it
 * came from, named in the message). */
op_status op_token_check(const char *tok, size_t len, const char *what, op_err *err);

/* 1 when a (alen bytes) equals b (blen bytes). The time taken depends on neither the
 * contents nor the lengths (both buffers are compared over OP_TOKEN_MAX bytes), so a
 * client cannot find the token a byte at a time by timing replies. */
int op_token_equal(const char *a, size_t alen, const char *b, size_t blen);

/* Zeroes n bytes at p in a way the compiler keeps (a token's copy before it is freed or goes
 * out of scope). */
void op_token_wipe(void *p, size_t n);

#endif
