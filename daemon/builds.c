/*
 * onepathd builds: where a tile builds and how. Builds run on the build pool (--threads
 * workers, each with its own arenas), or one at a time on the nng thread that received
 * the tile.get (so an on-demand read crosses no thread hand-off; the other nng threads
 * keep answering cached reads). How: the two calls `onepath bake` makes per tile, so the
 * blobs are byte-identical to an offline bake. What to build and what to do with the
 * result is the caller's (tiles.c): this file knows no level.
 */
#include <stdlib.h>
#include <string.h>

#include "level.h"

struct opd_builder {
    opd_pool *pool;
    /* The one build at a time that runs on the thread that received its tile.get, with
     * its arenas; NULL arenas: none. */
    atomic_int here_busy;
    op_arena *here_out, *here_scratch;
};

opd_builder *opd_builder_create(int threads)
{
    opd_builder *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    atomic_init(&b->here_busy, 0);
    b->pool = opd_pool_create(threads);
    if (!b->pool) {
        free(b);
        return NULL;
    }
    b->here_out = op_arena_create(0);
    b->here_scratch = op_arena_create(0);
    if (!b->here_out || !b->here_scratch) { /* no builds on the receiving thread */
        op_arena_destroy(b->here_out);
        op_arena_destroy(b->here_scratch);
        b->here_out = b->here_scratch = NULL;
    }
    return b;
}

void opd_builder_destroy(opd_builder *b)
{
    if (!b)
        return;
    opd_pool_destroy(b->pool);
    op_arena_destroy(b->here_out);
    op_arena_destroy(b->here_scratch);
    free(b);
}

int opd_builder_submit(opd_builder *b, opd_job_fn fn, void *arg)
{
    return opd_pool_submit(b->pool, fn, arg);
}

int opd_builder_claim_here(opd_builder *b)
{
    return b->here_out && !atomic_exchange(&b->here_busy, 1);
}

void opd_builder_unclaim_here(opd_builder *b)
{
    atomic_store(&b->here_busy, 0);
}

void opd_builder_run_here(opd_builder *b, opd_job_fn fn, void *arg)
{
    fn(arg, b->here_out, b->here_scratch);
    op_arena_reset(b->here_out);
    op_arena_reset(b->here_scratch);
    opd_builder_unclaim_here(b);
}

void opd_build_result_free(opd_build_result *b)
{
    free(b->layers);
    free(b->hashes);
    opd_blobs_free(b->blobs, b->nl);
}

void opd_build_tile(const opd_snap *sn, int tx, int tz, op_arena *out, op_arena *scratch,
                    opd_build_result *b)
{
    op_err e;
    op_err_clear(&e);
    op_tile_stages st;
    memset(b, 0, sizeof *b);
    if (!out || !scratch)
        b->st = op_err_set(&e, OP_ENOMEM, "tile (%d, %d): no arena", tx, tz);
    else
        b->st = op_level_build_stages(sn->lvl, tx, tz, OP_STAGE_TILE, 0, out, scratch, &st, &e);
    int n = b->st == OP_OK ? st.ntiles : 0;
    if (b->st == OP_OK && n > 0) {
        b->layers = calloc((size_t)n, sizeof *b->layers);
        b->hashes = calloc((size_t)n, sizeof *b->hashes);
        b->blobs = calloc((size_t)n, sizeof *b->blobs);
        if (!b->layers || !b->hashes || !b->blobs)
            b->st = op_err_set(&e, OP_ENOMEM, "tile (%d, %d): out of memory", tx, tz);
    }
    for (int k = 0; b->st == OP_OK && k < n; k++) {
        b->st = op_tile_encode(&st.tiles[k], &b->blobs[k], &b->hashes[k], &e);
        b->layers[k] = st.tiles[k].layer;
        b->bytes += b->blobs[k].len;
        b->nl = k + 1;
    }
    if (b->st != OP_OK) {
        opd_build_result_free(b);
        memset(b, 0, sizeof *b);
        b->st = e.status ? e.status : OP_EINTERNAL;
        snprintf(b->msg, sizeof b->msg, "%s", e.msg);
    }
}
