/*
 * libFuzzer target for the heightfield file reader (docs/spec/input-formats.md §2):
 *   build-fuzz/bin/fuzz_hf tests/fuzz/corpus/hf
 * Any input ends as a refusal naming an offset, or as a heightfield that validates and
 * that the writer turns back into exactly the input bytes (the encoding is unique).
 * Memory is capped at 64 MiB (a refusal with OP_ENOMEM is then fine).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_sink.h"
#include "onepath/hfio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    op_arena *a = op_arena_create(0);
    if (!a)
        return 0;
    op_arena_set_limit(a, 64u << 20);
    op_hf_input hf;
    op_err err;
    op_status st = op_hf_parse(data, size, a, &hf, &err);
    if (st == OP_OK) {
        if (op_hf_input_validate(&hf, &err) != OP_OK)
            abort();
        fuzz_sink s = {NULL, 0, 0};
        if (op_hf_write(&hf, fuzz_sink_write, &s, &err) != OP_OK || s.len != size ||
            memcmp(s.buf, data, size) != 0)
            abort();
        free(s.buf);
    } else if (st != OP_ENOMEM && !strstr(err.msg, "offset ")) {
        abort();
    }
    op_arena_destroy(a);
    return 0;
}
