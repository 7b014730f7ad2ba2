/*
 * libFuzzer target for the volumes file reader (docs/spec/input-formats.md §6):
 *   build-fuzz/bin/fuzz_volumes_json tests/fuzz/corpus/volumes
 * Any input ends as a refusal naming a byte offset, or as volumes that validate, have
 * distinct valid names (op_volumes_check passes once sorted), and come back bit for bit
 * through the writer and the reader. Memory is capped at 64 MiB (OP_ENOMEM is a refusal).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_sink.h"
#include "onepath/rebuild.h"
#include "onepath/volumes_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    op_arena *a = op_arena_create(0);
    if (!a)
        return 0;
    op_arena_set_limit(a, 64u << 20);
    op_volume *v, *w;
    int n, m;
    op_err err;
    op_status st = op_volumes_json_parse((const char *)data, size, "f", a, &v, &n, &err);
    if (st == OP_OK) {
        fuzz_sink s = {NULL, 0, 0};
        if (op_volumes_json_write(v, n, fuzz_sink_write, &s, &err) != OP_OK)
            abort();
        if (op_volumes_json_parse(s.buf, s.len, "f", a, &w, &m, &err) != OP_OK || m != n ||
            (n && memcmp(v, w, (size_t)n * sizeof *v) != 0))
            abort();
        if (op_volumes_sort(v, n, &err) != OP_OK || op_volumes_check(v, n, &err) != OP_OK)
            abort();
        free(s.buf);
    } else if (st != OP_ENOMEM && strncmp(err.msg, "f: byte ", 8) != 0) {
        abort();
    }
    op_arena_destroy(a);
    return 0;
}
