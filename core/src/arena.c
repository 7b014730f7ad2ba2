/*
 * Arena: a chain of blocks with bump allocation. Reset keeps a single block as
 * large as the peak use, so a steady stream of similar tiles allocates from the
 * system only while it warms up. Typical size: a few MiB per tile build.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/arena.h"

#define OP__ALIGN 16

typedef struct op__block {
    struct op__block *prev;
    size_t size; /* usable bytes after the header */
    size_t used;
    /* data follows, aligned */
} op__block;

struct op_arena {
    op__block *head;      /* current block (newest) */
    size_t block_size;    /* minimum block size */
    size_t reserved;      /* bytes reserved from the system */
    size_t limit;         /* 0 = none */
    size_t used_released; /* bytes in full blocks behind head */
    size_t peak;
    void *last;      /* most recent allocation (for grow in place) */
    long fail_after; /* test hook */
};

#define OP__HDR ((sizeof(op__block) + OP__ALIGN - 1) & ~(size_t)(OP__ALIGN - 1))

static unsigned char *block_data(op__block *b)
{
    return (unsigned char *)b + OP__HDR;
}

static size_t used_now(const op_arena *a)
{
    return a->used_released + (a->head ? a->head->used : 0);
}

static void note_peak(op_arena *a)
{
    size_t u = used_now(a);
    if (u > a->peak)
        a->peak = u;
}

static op__block *block_new(op_arena *a, size_t size)
{
    if (size > SIZE_MAX - OP__HDR)
        return NULL;
    if (a->limit && (a->reserved + size + OP__HDR > a->limit))
        return NULL;
    op__block *b = malloc(OP__HDR + size);
    if (!b)
        return NULL;
    b->prev = NULL;
    b->size = size;
    b->used = 0;
    a->reserved += OP__HDR + size;
    return b;
}

op_arena *op_arena_create(size_t block_size)
{
    op_arena *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->block_size = block_size ? block_size : ((size_t)1 << 20);
    a->fail_after = -1;
    return a;
}

void op_arena_destroy(op_arena *a)
{
    if (!a)
        return;
    op__block *b = a->head;
    while (b) {
        op__block *p = b->prev;
        free(b);
        b = p;
    }
    free(a);
}

static int fail_now(op_arena *a)
{
    if (a->fail_after < 0)
        return 0;
    if (a->fail_after == 0)
        return 1;
    a->fail_after--;
    return 0;
}

/* Everything op_arena_alloc does: the hook, the size checks, a new block when the head
 * has no room. */
__attribute__((noinline)) static void *alloc_slow(op_arena *a, size_t size)
{
    if (fail_now(a))
        return NULL;
    if (size > SIZE_MAX - OP__ALIGN)
        return NULL;
    size_t need = (size + OP__ALIGN - 1) & ~(size_t)(OP__ALIGN - 1);
    if (need == 0)
        need = OP__ALIGN;
    op__block *b = a->head;
    if (!b || b->size - b->used < need) {
        size_t bs = need > a->block_size ? need : a->block_size;
        op__block *nb = block_new(a, bs);
        if (!nb)
            return NULL;
        if (b)
            a->used_released += b->used;
        nb->prev = b;
        a->head = b = nb;
    }
    void *p = block_data(b) + b->used;
    b->used += need;
    a->last = p;
    note_peak(a);
    return p;
}

/* A tile build allocates some hundreds of times (a rebuild: about 140 times a tile on
 * dungeon), nearly always from the head block with no test hook set: that case is decided
 * here with the few loads it needs, and the rest goes to alloc_slow, which does the same as
 * it always did. need wraps to 0 for size 0 and for sizes past SIZE_MAX - 15; need - 1 then
 * wraps to SIZE_MAX, which no room exceeds, so both go the slow way (size 0 gets 16 bytes
 * there, the others NULL). The result is the slow path's for every call. */
void *op_arena_alloc(op_arena *a, size_t size)
{
    op__block *b = a->head;
    size_t need = (size + (OP__ALIGN - 1)) & ~(size_t)(OP__ALIGN - 1);
    if (b && a->fail_after < 0 && need - 1 < b->size - b->used) {
        void *p = block_data(b) + b->used;
        b->used += need;
        a->last = p;
        size_t u = a->used_released + b->used;
        if (u > a->peak)
            a->peak = u;
        return p;
    }
    return alloc_slow(a, size);
}

void *op_arena_calloc(op_arena *a, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = op_arena_alloc(a, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void *op_arena_extend(op_arena *a, void *p, size_t new_size)
{
    op__block *b = a->head;
    if (!p || p != a->last || !b || new_size > SIZE_MAX - OP__ALIGN)
        return NULL;
    size_t off = (size_t)((unsigned char *)p - block_data(b));
    size_t need = (new_size + OP__ALIGN - 1) & ~(size_t)(OP__ALIGN - 1);
    if (need == 0)
        need = OP__ALIGN;
    if (off + need > b->size || fail_now(a))
        return NULL;
    b->used = off + need;
    note_peak(a);
    return p;
}

void *op_arena_grow(op_arena *a, void *p, size_t old_size, size_t new_size)
{
    if (!p)
        return op_arena_alloc(a, new_size);
    void *q = op_arena_extend(a, p, new_size);
    if (q)
        return q;
    q = op_arena_alloc(a, new_size);
    if (!q)
        return NULL;
    memcpy(q, p, old_size < new_size ? old_size : new_size);
    return q;
}

op_arena_mark op_arena_get_mark(const op_arena *a)
{
    op_arena_mark m = {a->head, a->head ? a->head->used : 0};
    return m;
}

void op_arena_release(op_arena *a, op_arena_mark m)
{
    /* Blocks newer than the mark's block go back to the system; releasing is rare
     * (scoped scratch), so simplicity wins over keeping them. */
    while (a->head && a->head != m.block) {
        op__block *p = a->head->prev;
        a->reserved -= OP__HDR + a->head->size;
        free(a->head);
        a->head = p;
        if (p)
            a->used_released -= p->used;
    }
    if (a->head)
        a->head->used = m.used;
    a->last = NULL;
}

void op_arena_reset(op_arena *a)
{
    size_t want = a->peak > a->block_size ? a->peak : a->block_size;
    if (a->head && !a->head->prev && a->head->size >= want) {
        a->head->used = 0;
    } else {
        op__block *b = a->head;
        while (b) {
            op__block *p = b->prev;
            free(b);
            b = p;
        }
        a->head = NULL;
        a->reserved = 0;
        /* Best effort: one block for the peak; if it fails, allocation starts small again. */
        a->head = block_new(a, want);
    }
    a->used_released = 0;
    a->last = NULL;
}

size_t op_arena_used(const op_arena *a)
{
    return used_now(a);
}

size_t op_arena_peak(const op_arena *a)
{
    return a->peak;
}

void op_arena_set_limit(op_arena *a, size_t limit)
{
    a->limit = limit;
}

void op_arena_fail_after(op_arena *a, long n)
{
    a->fail_after = n;
}
