/*
 * Building a whole level into a mesh: every tile of the level's range through
 * op_level_build_stages (up to OP_STAGE_TILE) on a worker pool, the layers copied out
 * of the per-worker arenas into one arena per tile cell, then added to a mesh in
 * row-major order and stitched. Shared by the CLI (path, render, export), the
 * quality benchmark and the tests. Memory: the per-cell arenas hold one copy of the
 * level's tiles until the mesh has copied them.
 */
#include <stdlib.h>

#include "onepath/build.h"
#include "onepath/mesh.h"
#include "onepath/parallel.h"

typedef struct cell_out {
    op_arena *arena; /* NULL when the cell has no layer */
    int ntiles;
    op_tile *tiles;
} cell_out;

typedef struct level_job {
    const op_level *lvl;
    op_tile_rect rect;
    cell_out *cells;
} level_job;

static op_status build_cell(void *user, int i, op_arena *out, op_arena *scratch, op_err *err)
{
    level_job *j = user;
    int w = j->rect.tx1 - j->rect.tx0 + 1;
    int tx = j->rect.tx0 + i % w, tz = j->rect.tz0 + i / w;
    op_tile_stages st;
    op_status s = op_level_build_stages(j->lvl, tx, tz, OP_STAGE_TILE, 0, out, scratch, &st, err);
    if (s != OP_OK || st.skipped || st.ntiles == 0)
        return s;
    cell_out *c = &j->cells[i];
    c->arena = op_arena_create(64 * 1024);
    if (!c->arena)
        return op_err_set(err, OP_ENOMEM, "mesh: out of memory (tile (%d, %d) copy)", tx, tz);
    c->tiles = op_arena_alloc(c->arena, (size_t)st.ntiles * sizeof *c->tiles);
    if (!c->tiles)
        return op_err_set(err, OP_ENOMEM, "mesh: out of memory (tile (%d, %d) copy)", tx, tz);
    for (int k = 0; k < st.ntiles; k++)
        if ((s = op_tile_copy(&st.tiles[k], c->arena, &c->tiles[k], err)) != OP_OK)
            return s;
    c->ntiles = st.ntiles;
    return OP_OK;
}

static op_status add_cells(op_mesh *m, const cell_out *cells, int n, op_err *err)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < cells[i].ntiles; k++) {
            op_status s = op_mesh_add_tile(m, &cells[i].tiles[k], err);
            if (s != OP_OK)
                return s;
        }
    return op_mesh_stitch(m, err);
}

op_status op_mesh_build_level(const op_level *lvl, int threads, op_mesh **out, op_err *err)
{
    *out = NULL;
    int n = op_level_tile_count(lvl);
    level_job j = {lvl, op_level_tiles(lvl), calloc((size_t)(n > 0 ? n : 1), sizeof(cell_out))};
    if (!j.cells)
        return op_err_set(err, OP_ENOMEM, "mesh: out of memory (%d tile cells)", n);
    op_mesh *m = NULL;
    op_parallel_opts po = {threads, NULL, NULL, NULL};
    op_status s = op_parallel_for(n, &po, build_cell, &j, err);
    if (s == OP_OK)
        s = op_mesh_create(op_level_settings(lvl), &m, err);
    if (s == OP_OK)
        s = add_cells(m, j.cells, n, err);
    for (int i = 0; i < n; i++)
        op_arena_destroy(j.cells[i].arena);
    free(j.cells);
    if (s != OP_OK) {
        op_mesh_destroy(m);
        return s;
    }
    *out = m;
    return OP_OK;
}
