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

/* Finds the sweeps of row z; returns the number of the row's first sweep. The field and
 * the state are read through locals: without strict aliasing, every store would reload
 * them. */
static uint32_t find_sweeps(mono_state *m, int z)
{
    const op_chf *chf = m->chf;
    const uint32_t(*const links)[4] = chf->links;
    const uint8_t *const areas = chf->areas;
    const uint32_t *const reg = m->lab->reg;
    uint32_t *const sweep_of = m->sweep_of, *const sweep_nei = m->sweep_nei;
    uint8_t *const sweep_area = m->sweep_area;
    const uint32_t first = m->nsweeps;
    uint32_t nsweeps = first;
    const uint32_t s0 = chf->cells[z * chf->width], s1 = chf->cells[(z + 1) * chf->width];
    /* A row's cells are one span range: its spans in x order, as the cells give them. */
    for (uint32_t s = s0; s < s1; s++) {
        uint8_t a = areas[s];
        if (a == 0)
            continue;
        uint32_t p = links[s][0], sw;
        if (p != OP_NO_LINK && areas[p] == a) {
            sw = sweep_of[p];
        } else {
            sw = nsweeps++;
            sweep_nei[sw] = NEI_NONE;
            sweep_area[sw] = a;
        }
        sweep_of[s] = sw;
        uint32_t q = links[s][3];
        if (q != OP_NO_LINK && areas[q] == a && reg[q] != 0)
            touch(m, sw, reg[q], z);
    }
    m->nsweeps = nsweeps;
    return first;
}

static void label_row(mono_state *m, int z, uint32_t first)
{
    const op_chf *chf = m->chf;
    op__labels *lab = m->lab;
    uint32_t *const sweep_id = m->sweep_id;
    const uint32_t *const sweep_nei = m->sweep_nei, *const sweep_of = m->sweep_of;
    const uint8_t *const multi = m->multi, *const areas = chf->areas;
    uint32_t count = lab->count;
    for (uint32_t sw = first, n = m->nsweeps; sw < n; sw++) {
        uint32_t r = sweep_nei[sw];
        if (r != NEI_NONE && r != NEI_CONFLICT && !multi[r]) {
            sweep_id[sw] = r;
        } else {
            sweep_id[sw] = ++count;
            lab->area[count] = m->sweep_area[sw];
        }
    }
    lab->count = count;
    uint32_t *const reg = lab->reg;
    uint32_t s0 = chf->cells[z * chf->width], s1 = chf->cells[(z + 1) * chf->width];
    for (uint32_t s = s0; s < s1; s++)
        if (areas[s] != 0)
            reg[s] = sweep_id[sweep_of[s]];
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
