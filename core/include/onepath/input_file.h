/*
 * The one bounded reader of input files (levels, heightfields, voxel chunks, volumes files,
 * anything a tool reads whole). A file is opened without blocking, must be a regular file
 * (a directory, character device, FIFO or socket is refused naming the file and its kind)
 * and is read whole only when its size is at most max bytes: memory stays bounded by max
 * whatever the path names.
 */
#ifndef ONEPATH_INPUT_FILE_H
#define ONEPATH_INPUT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "onepath/arena.h"
#include "onepath/status.h"

/* Default input size bound of the tools (--max-input-bytes): 2 GiB. */
#define OP_DEFAULT_MAX_INPUT_BYTES ((size_t)2 << 30)

/* Reads the regular file at path into out (*data, *len; *data is NUL-terminated one byte
 * past *len). Errors (messages start with "what: " and name path): OP_EIO when it cannot
 * be opened or read, OP_EINVAL when it is not a regular file, OP_ERANGE when it holds more
 * than max bytes (checked before reading, and again while reading, for a file that grows),
 * OP_ENOMEM. */
op_status op_input_file_read(const char *path, const char *what, size_t max, op_arena *out,
                             uint8_t **data, size_t *len, op_err *err);

#endif
