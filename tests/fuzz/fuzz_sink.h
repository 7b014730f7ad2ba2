/* A growing byte buffer for the fuzz targets' writers (malloc'd; the caller frees buf). */
#ifndef OP_FUZZ_SINK_H
#define OP_FUZZ_SINK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/arena.h"
#include "onepath/status.h"

typedef struct fuzz_sink {
    char *buf;
    size_t len, cap;
} fuzz_sink;

static inline int fuzz_sink_write(void *ctx, const char *data, size_t len)
{
    fuzz_sink *s = ctx;
    if (s->len + len > s->cap) {
        size_t cap = (s->len + len) * 2;
        char *nb = realloc(s->buf, cap);
        if (!nb)
            return -1;
        s->buf = nb;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, data, len);
    s->len += len;
    return 0;
}

/* A file reader's target: any input ends as a refusal naming an offset (or OP_ENOMEM at the
 * 64 MiB cap), or as a value that validates and that the writer turns back into exactly the
 * input bytes (the encodings are unique). T is the parsed type; parse, validate and write
 * are the reader's three functions. */
#define FUZZ_ROUNDTRIP_TARGET(T, parse, validate, write)                                           \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                                  \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                   \
    {                                                                                              \
        op_arena *a = op_arena_create(0);                                                          \
        if (!a)                                                                                    \
            return 0;                                                                              \
        op_arena_set_limit(a, 64u << 20);                                                          \
        T v;                                                                                       \
        op_err err;                                                                                \
        op_status st = parse(data, size, a, &v, &err);                                             \
        if (st == OP_OK) {                                                                         \
            if (validate(&v, &err) != OP_OK)                                                       \
                abort();                                                                           \
            fuzz_sink s = {NULL, 0, 0};                                                            \
            if (write(&v, fuzz_sink_write, &s, &err) != OP_OK || s.len != size ||                  \
                memcmp(s.buf, data, size) != 0)                                                    \
                abort();                                                                           \
            free(s.buf);                                                                           \
        } else if (st != OP_ENOMEM && !strstr(err.msg, "offset ")) {                               \
            abort();                                                                               \
        }                                                                                          \
        op_arena_destroy(a);                                                                       \
        return 0;                                                                                  \
    }

#endif
