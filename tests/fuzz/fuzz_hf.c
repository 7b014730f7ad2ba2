/*
 * libFuzzer target for the heightfield file reader (docs/spec/input-formats.md §2):
 *   build-fuzz/bin/fuzz_hf tests/fuzz/corpus/hf
 * Any input ends as a refusal naming an offset, or as a heightfield that validates and
 * that the writer turns back into exactly the input bytes (the encoding is unique).
 * Memory is capped at 64 MiB (a refusal with OP_ENOMEM is then fine).
 */
#include "fuzz_sink.h"
#include "onepath/hfio.h"

FUZZ_ROUNDTRIP_TARGET(op_hf_input, op_hf_parse, op_hf_input_validate, op_hf_write)
