/*
 * libFuzzer target for the voxel-chunk file reader (docs/spec/input-formats.md §3):
 *   build-fuzz/bin/fuzz_chunk tests/fuzz/corpus/chunk
 * Any input ends as a refusal naming an offset, or as a chunk that validates and
 * that the writer turns back into exactly the input bytes (the encoding is unique).
 * Memory is capped at 64 MiB (a refusal with OP_ENOMEM is then fine).
 */
#include "fuzz_sink.h"
#include "onepath/hfio.h"

FUZZ_ROUNDTRIP_TARGET(op_voxel_chunk, op_chunk_parse, op_voxel_chunk_validate, op_chunk_write)
