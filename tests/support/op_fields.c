#include <stdlib.h>
#include <string.h>

#include "onepath/limits.h"
#include "op_fields.h"

static int qualifies(const op_chf *chf, uint32_t a, uint32_t b)
{
    int ya = chf->y[a], yb = chf->y[b];
    int ta = ya + chf->h[a], tb = yb + chf->h[b];
    int bot = ya > yb ? ya : yb;
    int top = ta < tb ? ta : tb;
    return top - bot >= chf->walkable_height && abs(yb - ya) <= chf->walkable_climb;
}

static uint32_t lowest_qualifying(const op_chf *chf, uint32_t s, int x, int z, int d)
{
    int nx = x + op_dir_dx(d), nz = z + op_dir_dz(d);
    if (nx < 0 || nz < 0 || nx >= chf->width || nz >= chf->depth)
        return OP_NO_LINK;
    int nc = nx + nz * chf->width;
    for (uint32_t j = chf->cells[nc]; j < chf->cells[nc + 1]; j++)
        if (qualifies(chf, s, j))
            return j;
    return OP_NO_LINK;
}

static void compute_links(op_chf *chf)
{
    for (int z = 0; z < chf->depth; z++)
        for (int x = 0; x < chf->width; x++) {
            int c = x + z * chf->width;
            for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
                for (int d = 0; d < 4; d++)
                    chf->links[s][d] = lowest_qualifying(chf, s, x, z, d);
        }
    /* Keep mutual links only. Decide all from the one-way links first. */
    uint32_t n = chf->span_count;
    uint8_t *keep = calloc(n ? n * 4 : 1, 1);
    for (int z = 0; z < chf->depth; z++)
        for (int x = 0; x < chf->width; x++) {
            int c = x + z * chf->width;
            for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
                for (int d = 0; d < 4; d++) {
                    uint32_t b = chf->links[s][d];
                    keep[s * 4 + d] = (b != OP_NO_LINK && chf->links[b][(d + 2) & 3] == s);
                }
        }
    for (uint32_t s = 0; s < n; s++)
        for (int d = 0; d < 4; d++)
            if (!keep[s * 4 + d])
                chf->links[s][d] = OP_NO_LINK;
    free(keep);
}

op_chf *op_test_field(op_arena *a, int width, int depth, const int *counts,
                      const op_test_span *spans, int walkable_height, int walkable_climb)
{
    op_chf *chf = op_arena_calloc(a, 1, sizeof *chf);
    int ncells = width * depth;
    uint32_t total = 0;
    for (int c = 0; c < ncells; c++)
        total += (uint32_t)counts[c];
    chf->width = width;
    chf->depth = depth;
    chf->walkable_height = walkable_height;
    chf->walkable_climb = walkable_climb;
    chf->rows = OP_MAX_ROWS;
    chf->cs = 0.3;
    chf->ch = 0.2;
    chf->span_count = total;
    chf->cells = op_arena_calloc(a, (size_t)ncells + 1, sizeof *chf->cells);
    chf->y = op_arena_calloc(a, total + 1, sizeof *chf->y);
    chf->h = op_arena_calloc(a, total + 1, sizeof *chf->h);
    chf->areas = op_arena_calloc(a, total + 1, 1);
    chf->links = op_arena_calloc(a, total + 1, sizeof *chf->links);
    uint32_t k = 0;
    for (int c = 0; c < ncells; c++) {
        chf->cells[c] = k;
        for (int i = 0; i < counts[c]; i++, k++) {
            chf->y[k] = (uint16_t)spans[k].y;
            chf->h[k] = (uint16_t)spans[k].h;
            chf->areas[k] = (uint8_t)spans[k].area;
        }
    }
    chf->cells[ncells] = k;
    compute_links(chf);
    return chf;
}

op_chf *op_test_field_from_text(op_arena *a, const char *const *lines, int depth)
{
    int width = 0;
    for (int z = 0; z < depth; z++) {
        int l = (int)strlen(lines[z]);
        if (l > width)
            width = l;
    }
    int *counts = calloc((size_t)(width * depth), sizeof *counts);
    op_test_span *spans = calloc((size_t)(width * depth) + 1, sizeof *spans);
    int k = 0;
    for (int z = 0; z < depth; z++)
        for (int x = 0; x < width; x++) {
            char ch = x < (int)strlen(lines[z]) ? lines[z][x] : '.';
            if (ch == '.' || ch == ' ')
                continue;
            int area = ch == '#' ? 63 : ch - '0';
            counts[x + z * width] = 1;
            spans[k++] = (op_test_span){0, 100, area};
        }
    op_chf *chf = op_test_field(a, width, depth, counts, spans, 10, 4);
    free(counts);
    free(spans);
    return chf;
}

op_chf *op_test_field_random(op_arena *a, op_test_rng *rng, int width, int depth, int max_floors,
                             int nareas)
{
    int ncells = width * depth;
    int *counts = calloc((size_t)ncells, sizeof *counts);
    op_test_span *spans = calloc((size_t)ncells * (size_t)max_floors + 1, sizeof *spans);
    int k = 0;
    /* Smooth-ish heights so that links exist: a random walk per row. */
    int base = 20;
    for (int z = 0; z < depth; z++)
        for (int x = 0; x < width; x++) {
            if (op_test_rand_int(rng, 0, 9) == 0)
                continue; /* hole */
            int n = op_test_rand_int(rng, 1, max_floors);
            int y = base + op_test_rand_int(rng, 0, 2);
            for (int f = 0; f < n; f++) {
                int h = f == n - 1 ? 200 : op_test_rand_int(rng, 6, 30);
                int r = op_test_rand_int(rng, 0, 19);
                int area = r == 0 ? 0 : op_test_rand_int(rng, 1, nareas);
                spans[k++] = (op_test_span){y, h, area};
                y += h + op_test_rand_int(rng, 1, 3);
            }
            counts[x + z * width] = n;
        }
    op_chf *chf = op_test_field(a, width, depth, counts, spans, 4, 2);
    free(counts);
    free(spans);
    return chf;
}

static int is_boundary(const op_chf *chf, uint32_t s)
{
    if (chf->areas[s] == 0)
        return 1;
    for (int d = 0; d < 4; d++) {
        uint32_t n = chf->links[s][d];
        if (n == OP_NO_LINK || chf->areas[n] == 0)
            return 1;
    }
    return 0;
}

void op_test_brute_distance(const op_chf *chf, uint32_t *out)
{
    /* Plain O(n^2) Dijkstra: slow and obviously right. Diagonal step: from s via its
     * link in d to m, then m's link in (d+1)&3; or via (d+1)&3 then d. */
    uint32_t n = chf->span_count;
    uint8_t *done = calloc(n + 1, 1);
    for (uint32_t s = 0; s < n; s++)
        out[s] = is_boundary(chf, s) ? 0 : UINT32_MAX;
    for (;;) {
        uint32_t best = OP_NO_SPAN, bd = UINT32_MAX;
        for (uint32_t s = 0; s < n; s++)
            if (!done[s] && out[s] < bd) {
                bd = out[s];
                best = s;
            }
        if (best == OP_NO_SPAN)
            break;
        done[best] = 1;
        for (int d = 0; d < 4; d++) {
            uint32_t m = chf->links[best][d];
            if (m == OP_NO_LINK)
                continue;
            if (bd + 2 < out[m])
                out[m] = bd + 2;
            for (int e = 0; e < 2; e++) {
                int d2 = e == 0 ? (d + 1) & 3 : (d + 3) & 3;
                uint32_t q = chf->links[m][d2];
                if (q != OP_NO_LINK && bd + 3 < out[q])
                    out[q] = bd + 3;
            }
        }
    }
    free(done);
}
