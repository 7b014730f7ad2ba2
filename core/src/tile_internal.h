/*
 * Tile data internals shared with the tests (tile.c).
 */
#ifndef OP_TILE_INTERNAL_H
#define OP_TILE_INTERNAL_H

#include "onepath/tile.h"

/* The check op_tile_assemble runs on the tiles it makes: op_tile_validate's verdict, always
 * (OP_OK exactly when op_tile_validate gives OP_OK), reached by a pass without early exits on
 * the common path; a tile it refuses goes through op_tile_validate, which names the error,
 * so the status and message are op_tile_validate's. */
op_status op__tile_check(const op_tile *t, op_err *err);

#endif
