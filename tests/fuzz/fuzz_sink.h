/* A growing byte buffer for the fuzz targets' writers (malloc'd; the caller frees buf). */
#ifndef OP_FUZZ_SINK_H
#define OP_FUZZ_SINK_H

#include <stdlib.h>
#include <string.h>

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

#endif
