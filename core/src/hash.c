/* Hashing sink for canonical dumps. */
#include "onepath/hash.h"

int op_hash_sink_write(void *ctx, const char *data, size_t len)
{
    uint64_t *h = (uint64_t *)ctx;
    *h = op_hash_update(*h, data, len);
    return 0;
}
