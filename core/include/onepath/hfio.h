/*
 * Heightfield and voxel-chunk files (docs/spec/input-formats.md): a strict reader and
 * a deterministic writer for each, and a sniffer that tells them from OBJ text.
 *
 * Both formats are binary, little-endian, with a 4-byte magic ("OPHF" heightfield,
 * "OPVC" voxel chunk), a version (1), a fixed header, a table of per-column counts and
 * the column data. Every field is checked; a file is accepted only when its length is
 * exactly what its header declares. Refusals name the byte offset of the offending
 * field and its value:
 *   OP_EINVAL: bad magic or version; a file shorter or longer than its header says; a
 *              non-finite origin; span/run data that breaks an ordering rule (spans not
 *              ascending and separated, adjacent runs of one area, run lengths not
 *              summing to the column height, column counts not summing to the total).
 *   OP_ERANGE: a size, row count, origin, area id, span row or count beyond its limit
 *              (OP_MAX_GRID_SIDE, OP_MAX_ROWS, OP_MAX_COORD, OP_MAX_AREA,
 *              OP_MAX_CHUNK_VOXELS, OP_MAX_SPANS, OP_MAX_INPUT_FILE).
 *   OP_ENOMEM: the out arena is exhausted (message names the bytes).
 *   OP_EIO:    (read_file) the file cannot be opened or read.
 * A parse allocates only after the header and the file length agree, so memory is
 * bounded by the file length (heightfield: about 2.4 bytes a file byte) or by
 * OP_MAX_CHUNK_VOXELS (chunk). On failure the output struct is zeroed; memory taken
 * from out stays taken (release it with a mark).
 */
#ifndef ONEPATH_HFIO_H
#define ONEPATH_HFIO_H

#include <stddef.h>

#include "onepath/arena.h"
#include "onepath/hash.h"
#include "onepath/input.h"
#include "onepath/status.h"

#define OP_HFIO_VERSION 1
/* Header sizes in bytes (input-formats.md §2, §3). */
#define OP_HF_HEADER_BYTES    48
#define OP_CHUNK_HEADER_BYTES 40

typedef enum op_input_kind {
    OP_INPUT_OTHER = 0,       /* not one of ours: read as OBJ */
    OP_INPUT_HEIGHTFIELD = 1, /* starts with "OPHF" */
    OP_INPUT_CHUNK = 2,       /* starts with "OPVC" */
} op_input_kind;

/* The kind of a file from its first bytes (the magic alone; nothing else is checked). */
op_input_kind op_input_sniff(const void *buf, size_t len);
/* The same from a file's first 4 bytes; OP_EIO when it cannot be opened, OP_EINVAL when it
 * is not a regular file (opened without blocking: a FIFO is refused, not waited on). */
op_status op_input_sniff_file(const char *path, op_input_kind *kind, op_err *err);

/* Parses a heightfield file held in buf[0..len). col_start and spans come from out. */
op_status op_hf_parse(const void *buf, size_t len, op_arena *out, op_hf_input *hf, op_err *err);
/* Parses a voxel-chunk file; the voxel array (sx·sy·sz bytes) comes from out. */
op_status op_chunk_parse(const void *buf, size_t len, op_arena *out, op_voxel_chunk *vc,
                         op_err *err);

/* Read a whole file (at most OP_MAX_INPUT_FILE bytes, into a temporary arena freed
 * before returning) and parse it. */
op_status op_hf_read_file(const char *path, op_arena *out, op_hf_input *hf, op_err *err);
op_status op_chunk_read_file(const char *path, op_arena *out, op_voxel_chunk *vc, op_err *err);
/* The same reading at most min(max, OP_MAX_INPUT_FILE) bytes (op_input_file_read). */
op_status op_hf_read_file_max(const char *path, size_t max, op_arena *out, op_hf_input *hf,
                              op_err *err);
op_status op_chunk_read_file_max(const char *path, size_t max, op_arena *out, op_voxel_chunk *vc,
                                 op_err *err);

/* Write the file of a valid input (validated first: its status and message otherwise).
 * The bytes are a pure function of the input (the origin's exact binary64 bits, -0.0
 * included). A sink returning nonzero gives OP_EIO. Parsing the output gives the input
 * back exactly. */
op_status op_hf_write(const op_hf_input *hf, op_write_fn write, void *ctx, op_err *err);
op_status op_chunk_write(const op_voxel_chunk *vc, op_write_fn write, void *ctx, op_err *err);

#endif
