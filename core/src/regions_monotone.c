/*
 * Monotone partition (build3d-regions.md §3), before the §5 filter; also the start of
 * the layer partition (§4).
 *
 * Input: op_chf with mutual links. Output: raw labels. Rows z = 0, 1, ... are swept
 * along +x; a sweep is a maximal chain of same-area walkable spans linked in -x. A sweep
 * continues the region R of the previous row when every same-area -z neighbour of its
 * spans that has a region has R (at least one does) and no other sweep of the row has a
 * same-area -z neighbour in R; otherwise it opens a new region. Ids are given in sweep
 * order. Invariant: a region holds at most one sweep per row, hence at most one span per
 * column. One pass over the spans; O(spans) time and memory.
 */
#include "regions_internal.h"

#define NEI_NONE     0u
#define NEI_CONFLICT 0xffffffffu

typedef struct mono_state {
    const op_chf *chf;
    op__labels *lab;
    uint32_t *sweep_of;  /* per span: its sweep (global sweep number) */
    uint32_t *sweep_nei; /* per sweep: NEI_NONE, the one region seen, or NEI_CONFLICT */
    uint32_t *sweep_id;  /* per sweep: the region it becomes */
    uint8_t *sweep_area; /* per sweep */
    uint32_t *first_sw;  /* per region: first sweep of the current row touching it */
    uint32_t *touch_row; /* per region: row + 1 when first_sw is valid */
    uint8_t *multi;      /* per region: touched by two sweeps of the current row */
    uint32_t nsweeps;    /* sweeps so far (all rows) */
} mono_state;

/* Records that sweep sw has a same-area -z neighbour in region r, in row z. */
static void touch(mono_state *m, uint32_t sw, uint32_t r, int z)
{
    if (m->touch_row[r] != (uint32_t)z + 1) {
        m->touch_row[r] = (uint32_t)z + 1;
        m->first_sw[r] = sw;
        m->multi[r] = 0;
    } else if (m->first_sw[r] != sw) {
        m->multi[r] = 1;
    }
    uint32_t *nei = &m->sweep_nei[sw];
    if (*nei == NEI_NONE)
        *nei = r;
    else if (*nei != r)
        *nei = NEI_CONFLICT;
}

/* Finds the sweeps of row z; returns the number of the row's first sweep. */
static uint32_t find_sweeps(mono_state *m, int z)
{
    const op_chf *chf = m->chf;
    uint32_t first = m->nsweeps;
    for (int x = 0; x < chf->width; x++) {
        int c = x + z * chf->width;
        for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
            if (chf->areas[s] == 0)
                continue;
            uint32_t p = chf->links[s][0], sw;
            if (p != OP_NO_LINK && chf->areas[p] == chf->areas[s]) {
                sw = m->sweep_of[p];
            } else {
                sw = m->nsweeps++;
                m->sweep_nei[sw] = NEI_NONE;
                m->sweep_area[sw] = chf->areas[s];
            }
            m->sweep_of[s] = sw;
            uint32_t q = chf->links[s][3];
            if (q != OP_NO_LINK && chf->areas[q] == chf->areas[s] && m->lab->reg[q] != 0)
                touch(m, sw, m->lab->reg[q], z);
        }
    }
    return first;
}

static void label_row(mono_state *m, int z, uint32_t first)
{
    const op_chf *chf = m->chf;
    op__labels *lab = m->lab;
    for (uint32_t sw = first; sw < m->nsweeps; sw++) {
        uint32_t r = m->sweep_nei[sw];
        if (r != NEI_NONE && r != NEI_CONFLICT && !m->multi[r]) {
            m->sweep_id[sw] = r;
        } else {
            m->sweep_id[sw] = ++lab->count;
            lab->area[lab->count] = m->sweep_area[sw];
        }
    }
    uint32_t s0 = chf->cells[z * chf->width], s1 = chf->cells[(z + 1) * chf->width];
    for (uint32_t s = s0; s < s1; s++)
        if (chf->areas[s] != 0)
            lab->reg[s] = m->sweep_id[m->sweep_of[s]];
}

op_status op__monotone(const op_chf *chf, op_arena *scratch, op__labels *lab, op_err *err)
{
    size_t ns = (size_t)chf->span_count + 1, nw = (size_t)op__walkable_count(chf) + 1;
    mono_state m = {chf, lab, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0};
    lab->reg = op_arena_calloc(scratch, ns, sizeof *lab->reg);
    lab->area = op_arena_alloc(scratch, nw);
    lab->count = 0;
    m.sweep_of = op_arena_alloc(scratch, ns * sizeof *m.sweep_of);
    m.sweep_nei = op_arena_alloc(scratch, nw * sizeof *m.sweep_nei);
    m.sweep_id = op_arena_alloc(scratch, nw * sizeof *m.sweep_id);
    m.sweep_area = op_arena_alloc(scratch, nw);
    /* Regions never outnumber sweeps, and sweeps never outnumber walkable spans. */
    m.first_sw = op_arena_alloc(scratch, nw * sizeof *m.first_sw);
    m.touch_row = op_arena_calloc(scratch, nw, sizeof *m.touch_row);
    m.multi = op_arena_calloc(scratch, nw, 1);
    if (!lab->reg || !lab->area || !m.sweep_of || !m.sweep_nei || !m.sweep_id || !m.sweep_area ||
        !m.first_sw || !m.touch_row || !m.multi)
        return op__regions_nomem(err, "monotone", ns * 8 + nw * 19);
    lab->area[0] = 0;
    for (int z = 0; z < chf->depth; z++) {
        uint32_t first = find_sweeps(&m, z);
        label_row(&m, z, first);
    }
    return OP_OK;
}
