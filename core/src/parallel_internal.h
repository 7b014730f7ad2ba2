/*
 * Inside the core: a pool's spare arena, for a caller's temporaries around its calls
 * on the pool (level preparation's tile rectangles). Kept by the pool, it stays
 * faulted in and warm from one build to the next, where a fresh arena would take
 * page faults on every build (about 7 us each on the VMs we measure on).
 */
#ifndef ONEPATH_PARALLEL_INTERNAL_H
#define ONEPATH_PARALLEL_INTERNAL_H

#include "onepath/parallel.h"

/* The spare arena, or NULL when another caller has it (then use an arena of your own:
 * never wait). Give it back with op__pool_give_arena, which resets it. */
op_arena *op__pool_take_arena(op_pool *pool);
void op__pool_give_arena(op_pool *pool, op_arena *a);

#endif
