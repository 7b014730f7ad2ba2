/*
 * Regions stage, private: the raw labelling the partitions produce before §5, and the
 * helpers the partition files share. Not installed; tests include it by relative path
 * to reach the switch that forces the general layer merge.
 */
#ifndef ONEPATH_REGIONS_INTERNAL_H
#define ONEPATH_REGIONS_INTERNAL_H

#include <stdint.h>

#include "onepath/regions.h"

/* Raw labels: label per span (0 = none), labels 1..count (some may hold no span after
 * merges), area per label. Labels are uint32 so that an unfiltered partition never
 * overflows; only the numbered result is limited to OP_MAX_REGIONS. */
typedef struct op__labels {
    uint32_t *reg;  /* span_count entries */
    uint32_t count; /* largest label */
    uint8_t *area;  /* count + 1 entries */
} op__labels;

/* A graph over labels in compressed rows: neighbours of label r are
 * nb[start[r] .. start[r + 1]), ascending, each with a weight (link count). */
typedef struct op__graph {
    uint32_t *start; /* count + 2 entries */
    uint32_t *nb;
    uint32_t *w;
} op__graph;

/* Builds a graph from npairs directed pairs (a << 32 | b), sorting them in place;
 * duplicate pairs add up in w. */
op_status op__graph_build(uint64_t *pairs, size_t npairs, uint32_t count, op_arena *scratch,
                          op__graph *g, op_err *err);

/* A set of label ids (the layer merge's adjacency and overlap lists, §5.2's overlap
 * lists): ids as recorded, resolved through a merge union-find before use. */
typedef struct op__idset {
    uint32_t *v;
    uint32_t n, cap;
} op__idset;

/* Whether sorted set s holds x (binary search; s resolved). */
int op__idset_has(const op__idset *s, uint32_t x);
/* Root of r in the union-find parent[] (path compression). */
uint32_t op__find_root(uint32_t *parent, uint32_t r);
/* Maps every id to its root, drops self, sorts, deduplicates. */
void op__idset_resolve(op__idset *s, uint32_t *parent, uint32_t self);
/* Moves b's ids into a (b is emptied); the longer list's storage is kept. */
op_status op__idset_absorb(op__idset *a, op__idset *b, op_arena *scratch, op_err *err);
/* sets[0..count]: the neighbours of each label in the graph of npairs directed pairs
 * (sorted in place), as sets pointing into scratch. */
op_status op__idset_graph(uint64_t *pairs, size_t npairs, uint32_t count, op_arena *scratch,
                          op__idset *sets, op_err *err);

/* Links between different labels (same area only when same_area), as directed pairs
 * r << 32 | q, one per link. */
op_status op__link_pairs(const op_chf *chf, const uint32_t *reg, const uint8_t *area, int same_area,
                         op_arena *scratch, uint64_t **adj, size_t *nadj, op_err *err);

/* sets[0..count]: for each label the other labels (same area only when same_area) that
 * share a column with it, ascending, no repeats (cap may exceed n: the slack is the
 * set's own); labels in reg are at most count. Storage from scratch. */
op_status op__overlap_sets(const op_chf *chf, const uint32_t *reg, const uint8_t *area,
                           int same_area, uint32_t count, op_arena *scratch, op__idset *sets,
                           op_err *err);

/* OP_ENOMEM naming the step and the bytes. */
OP_COLD op_status op__regions_nomem(op_err *err, const char *step, size_t bytes);

/* Number of walkable (area != 0) spans. */
uint32_t op__walkable_count(const op_chf *chf);

/* §2 and §3 without the filter. */
op_status op__watershed(const op_chf *chf, op_arena *scratch, op__labels *lab, op_err *err);
op_status op__monotone(const op_chf *chf, op_arena *scratch, op__labels *lab, op_err *err);

/* §4 without the filter. force_general skips the connected-components shortcut (tests
 * compare both). min_region_area decides whether the shortcut applies. */
op_status op__layers(const op_chf *chf, int min_region_area, int force_general, op_arena *scratch,
                     op__labels *lab, op_err *err);

/* Components of "linked, same area and same key" over walkable spans (key NULL: area
 * only), labels in order of first span. */
op_status op__components(const op_chf *chf, const uint16_t *key, op_arena *scratch, op__labels *lab,
                         op_err *err);

/* §5 on lab (modified): island removal with min_area, merging with merge_area
 * (merge_area <= 0: none, as for layers), numbering into res (arrays from out). */
op_status op__filter(const op_chf *chf, op__labels *lab, int min_area, int merge_area,
                     op_arena *out, op_arena *scratch, op_regions *res, op_err *err);

/* op_regions_build for Partition = Layers with the shortcut disabled (tests). */
op_status op__regions_build_layers_general(const op_chf *chf, const op_region_settings *rs,
                                           op_arena *out, op_arena *scratch, op_regions *res,
                                           op_err *err);

/* op_regions_build_from_layers as the two steps it was written from, op__components with
 * the span layers as key and then op__filter without merging (the oracle tests compare
 * the one-flood labelling with). */
op_status op__regions_build_from_layers_two_step(const op_chf *chf, const uint16_t *span_layer,
                                                 int min_region_area, op_arena *out,
                                                 op_arena *scratch, op_regions *res,
                                                 uint16_t **region_layer, op_err *err);

/* op_regions_build_from_layers with its labels in a uint32 array (the path it takes when
 * a field has more than 0xffff components; tests compare it with the uint16 one). */
op_status op__regions_build_from_layers_wide(const op_chf *chf, const uint16_t *span_layer,
                                             int min_region_area, op_arena *out, op_arena *scratch,
                                             op_regions *res, uint16_t **region_layer, op_err *err);

/* What a capture build's regions stage read and produced, kept in a rebuild entry so that
 * a rebuild whose regions input is the capture's takes its regions instead of computing
 * them (docs/spec/build3d-runtime.md §5.9). Every pointer is the entry's. */
typedef struct op__region_base {
    const uint32_t *cells; /* the field the capture partitioned: a rebuild's chf holds these */
    const uint16_t *y;     /* very arrays (rule 1 compares the pointers) */
    const uint32_t (*links)[4];
    const uint16_t *span_layer; /* partition = layers: the entry's span layers, else NULL */
    uint32_t span_count;
    int width, depth, border, tile_cells; /* the frame of the field and of the border cut */
    const uint8_t *areas;                 /* span_count: the areas the regions stage read */
    const uint16_t *reg;                  /* span_count region ids after the border cut */
    int region_count;                     /* after the cut: the border region's id */
    const uint8_t *region_area;           /* region_count + 1 */
    int border_region;                    /* the border cut's id (= region_count) */
    const uint16_t *region_layer;         /* partition = layers: nregion_layer entries, else NULL */
    int nregion_layer;
    op_region_settings rs;
    /* §5.11 (partition = layers; NULL / 0 otherwise): each region's first span (entries
     * 1 .. border_region - 1) and, per span layer 0 .. nlayers - 1, whether it is settled. */
    const uint32_t *first;
    const uint8_t *settled;
    int nlayers;
    /* §5.11 (with first; NULL when not kept): the spans of each span layer, layer L's
     * layer_spans[layer_start[L] .. layer_start[L + 1]) in index order (op__region_layers_spans;
     * 16-bit indices, kept for tiles of at most 65536 spans). */
    const uint32_t *layer_start;
    const uint16_t *layer_spans;
} op__region_base;

/* §5.9 rules 1-3: whether a regions stage on chf (after step 2.3) with span_layer, rs and
 * a border cut of tile_cells core cells would read exactly what base's read. */
int op__regions_base_fits(const op__region_base *base, const op_chf *chf,
                          const uint16_t *span_layer, const op_region_settings *rs, int tile_cells);

/* §5.11, recorded by a capture: from the capture's field (areas = its regions input), its
 * span layers and its regions after the cut, each region's first span (*first, entries
 * 1 .. border_region - 1) and each span layer's settled flag (*settled, *nlayers entries),
 * from scratch. *first is NULL when the regions are not the labelling's (nothing kept). */
op_status op__region_layers_record(const op_chf *chf, const uint16_t *span_layer,
                                   const op_regions *cut, int border_region, int min_area,
                                   op_arena *scratch, uint32_t **first, uint8_t **settled,
                                   int *nlayers, op_err *err);

/* §5.11, recorded by a capture: the spans of each span layer 0 .. nlayers - 1, grouped by
 * layer in layer order and ascending inside a group: layer L's are
 * (*spans)[(*start)[L] .. (*start)[L + 1]) (*start has nlayers + 1 entries, *start[nlayers]
 * the spans with a layer); spans without a layer are in none. From scratch. Both NULL when
 * n > 65536 (the indices are 16 bits): none kept, a rebuild scans every span. */
op_status op__region_layers_spans(const uint16_t *span_layer, uint32_t n, int nlayers,
                                  op_arena *scratch, uint32_t **start, uint16_t **spans,
                                  op_err *err);

/* §5.11 rules 9.1 and 9.2 (not 9.3) and the entry holds rule 11's data. */
int op__regions_layers_fit(const op__region_base *base, const op_chf *chf,
                           const uint16_t *span_layer, const op_region_settings *rs,
                           int tile_cells);

/* §5.11 on chf (fitting base by op__regions_layers_fit): *kept = the span layers kept, and
 * when > 0 the regions after the border cut in res (arrays from out), *region_layer,
 * *border_region and *skipped, and (kept_from not NULL) *kept_from[r] for r = 0 ..
 * res->region_count: the base region whose spans region r has when r is a region of a kept
 * layer, else 0 (from out; §5.6 rule 3a reads it). *kept = 0: nothing written, compute the
 * regions. */
op_status op__regions_layers_local(const op__region_base *base, const op_chf *chf, int min_area,
                                   int tile_cells, op_arena *out, op_arena *scratch,
                                   op_regions *res, uint16_t **region_layer, int *border_region,
                                   int *skipped, int *kept, uint16_t **kept_from, op_err *err);

/* The regions of base after the border cut, copied into out: res, *region_layer (or NULL)
 * and *border_region. OP_ENOMEM when out is full (nothing usable written). */
op_status op__regions_from_base(const op__region_base *base, op_arena *out, op_regions *res,
                                uint16_t **region_layer, int *border_region);

#endif
