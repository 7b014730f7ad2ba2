/* Reading a whole input file, for the core's file readers (hfio.c, volumes_json.c). */
#ifndef ONEPATH_FILE_INTERNAL_H
#define ONEPATH_FILE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "onepath/arena.h"
#include "onepath/status.h"

/* The whole file at path into tmp, at most max bytes (a larger file: OP_ERANGE naming the
 * size, unread when its size is known). OP_EIO when it cannot be opened or read, OP_ENOMEM.
 * Messages start with "what: ". */
op_status op__read_whole(const char *path, const char *what, size_t max, op_arena *tmp,
                         uint8_t **data, size_t *len, op_err *err);

#endif
