/*
 * The volumes file (docs/spec/input-formats.md §6): a JSON array of volume objects, read by a
 * strict reader of its own (bounded size, the schema's nesting only, every error naming the
 * byte offset, the volume's index and name and the key) and written back bit for bit.
 */
#ifndef ONEPATH_VOLUMES_JSON_H
#define ONEPATH_VOLUMES_JSON_H

#include <stddef.h>

#include "onepath/arena.h"
#include "onepath/hash.h"
#include "onepath/spans.h"
#include "onepath/status.h"

/* Parses text[0..len) (need not be terminated). On success *vols (from out; NULL when
 * *nvols is 0) holds the volumes in file order, each valid (op_volume_validate) with a
 * valid distinct name: sort them (op_volumes_sort, rebuild.h) before giving them to a level.
 * `what` starts every message (the file name; NULL: "volumes"). On failure nothing is left
 * allocated in out, *vols is NULL and *nvols 0. */
op_status op_volumes_json_parse(const char *text, size_t len, const char *what, op_arena *out,
                                op_volume **vols, int *nvols, op_err *err);

/* Reads the file at path (at most OP_MAX_VOLUMES_FILE bytes) and parses it. */
op_status op_volumes_json_read_file(const char *path, op_arena *out, op_volume **vols, int *nvols,
                                    op_err *err);

/* Writes vols[0..nvols) as §6.8 says (a valid array: OP_EINVAL / OP_ERANGE from
 * op_volume_validate otherwise, nothing written). Returns OP_EIO when write fails. */
op_status op_volumes_json_write(const op_volume *vols, int nvols, op_write_fn write, void *ctx,
                                op_err *err);

#endif
