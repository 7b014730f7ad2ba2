/*
 * Per-build arenas: bump allocation in blocks, reset between tiles.
 *
 * Stages never call malloc; they take memory from an arena given by the caller
 * (output arena for what they return, scratch arena for what they throw away).
 * The arena is the only place in the core that calls malloc/free.
 * An arena is used by one thread at a time.
 */
#ifndef ONEPATH_ARENA_H
#define ONEPATH_ARENA_H

#include <stddef.h>

typedef struct op_arena op_arena;

/* A position to return to: everything allocated after it is released. */
typedef struct op_arena_mark {
    void *block;
    size_t used;
} op_arena_mark;

/* Creates an arena whose blocks are at least block_size bytes (0: 1 MiB).
 * Returns NULL when memory is exhausted. Free with op_arena_destroy. */
op_arena *op_arena_create(size_t block_size);
void op_arena_destroy(op_arena *a);

/* size bytes aligned to 16; NULL when memory or the limit is exhausted (size 0
 * returns a valid unique pointer). Contents are undefined. */
void *op_arena_alloc(op_arena *a, size_t size);
/* n * size zeroed bytes; NULL on overflow or exhaustion. */
void *op_arena_calloc(op_arena *a, size_t n, size_t size);
/* Resizes p (the arena's most recent allocation is extended in place when the
 * block has room; otherwise a new region is allocated and old_size bytes copied).
 * NULL on exhaustion, p stays valid then. */
void *op_arena_grow(op_arena *a, void *p, size_t old_size, size_t new_size);
/* Resizes p in place only: p when p is the arena's most recent allocation and its
 * block has room for new_size bytes, else NULL (nothing changes). Lets a growing array
 * take small steps while it stays in place, where a copy would waste the old one. */
void *op_arena_extend(op_arena *a, void *p, size_t new_size);

op_arena_mark op_arena_get_mark(const op_arena *a);
void op_arena_release(op_arena *a, op_arena_mark m);
/* Releases everything; keeps one block big enough for the peak so far. */
void op_arena_reset(op_arena *a);

size_t op_arena_used(const op_arena *a); /* bytes handed out and not released */
size_t op_arena_peak(const op_arena *a); /* highest op_arena_used so far */
/* Caps the bytes reserved from the system (0 = no cap). */
void op_arena_set_limit(op_arena *a, size_t limit);
/* Test hook: the allocation after the next n succeeds fails (n < 0: never). */
void op_arena_fail_after(op_arena *a, long n);

#endif
