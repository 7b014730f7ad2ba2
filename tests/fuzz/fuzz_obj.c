/*
 * libFuzzer target for the OBJ reader (build with -DOP_FUZZ=ON and clang):
 *   build/bin/fuzz_obj tests/fuzz/corpus
 * Any input must end as OK with a soup that validates and survives a write -> parse
 * round trip unchanged, or as a refusal naming a line; never a crash or an over-read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_sink.h"
#include "onepath/obj.h"

static void check_round_trip(const op_soup *soup, op_arena *a)
{
    fuzz_sink s = {NULL, 0, 0};
    op_err err;
    if (op_obj_write(soup, fuzz_sink_write, &s, &err) != OP_OK)
        abort();
    op_soup back;
    if (op_obj_parse(s.buf, s.len, a, &back, &err) != OP_OK)
        abort();
    if (back.verts_len != soup->verts_len || back.tris_len != soup->tris_len)
        abort();
    if (soup->verts_len && memcmp(back.verts, soup->verts, soup->verts_len * sizeof(float)) != 0)
        abort();
    if (soup->tris_len && memcmp(back.tris, soup->tris, soup->tris_len * sizeof(int)) != 0)
        abort();
    free(s.buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    op_arena *a = op_arena_create(0);
    if (!a)
        return 0;
    op_soup soup;
    op_err err;
    op_status st = op_obj_parse((const char *)data, size, a, &soup, &err);
    if (st == OP_OK) {
        if (op_soup_validate(&soup, &err) != OP_OK)
            abort();
        check_round_trip(&soup, a);
    } else if ((st != OP_EINVAL && st != OP_ERANGE) || strncmp(err.msg, "obj: line ", 10) != 0) {
        abort();
    }
    op_arena_destroy(a);
    return 0;
}
