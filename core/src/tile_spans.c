/*
 * Span stage, whole tile (build3d-spans.md §1-§8): the filtered tile heightfield
 * (tile_build.c), then compaction, obstacles, erosion, area volumes (each mode in array
 * order) and distance (§1.10).
 *
 * Input: soup, settings, tile, volumes. Output: op_chf in `out` with border B.
 * Kept in its own file so that programs using only the heightfield half do not
 * pull in the compact half.
 */
#include "onepath/spans.h"

op_status op_tile_spans_build(const op_soup *soup, const op_settings *s, int tx, int tz,
                              const op_volume *vols, int nvols, op_arena *out, op_arena *scratch,
                              op_chf *chf, op_err *err)
{
    op_heightfield hf;
    int skipped = 0;
    op_status st = op_tile_heightfield_build(soup, s, tx, tz, scratch, scratch, &hf, &skipped, err);
    if (st != OP_OK)
        return st;
    /* A skipped tile has no spans: its chf is built the same way and is empty. */
    op_span_settings ss;
    op_tile_grid g;
    op_span_settings_derive(s, &ss);
    op_tile_grid_derive(s, &g);
    st = op_chf_build(&hf, ss.walkable_height, ss.walkable_climb, out, chf, err);
    if (st != OP_OK)
        return st;
    chf->border = g.border;
    st = op_volumes_apply(chf, vols, nvols, OP_VOLUME_OBSTACLE, err);
    if (st == OP_OK)
        st = op_erode(chf, ss.walkable_radius, scratch, err);
    if (st == OP_OK)
        st = op_volumes_apply(chf, vols, nvols, OP_VOLUME_AREA, err);
    if (st == OP_OK)
        st = op_distance_build(chf, out, scratch, err);
    return st;
}
