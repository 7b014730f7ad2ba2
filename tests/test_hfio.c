/*
 * Heightfield / voxel-chunk files (docs/spec/input-formats.md): files are built here byte by
 * byte from the spec's tables (not by the writer), every refusal is checked by name with its
 * offset, limits at N and N + 1, write → parse round trips on seeded random inputs, the
 * writer's bytes against hand-built ones, single-byte mutations, and a guard page.
 */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS for the guard-page test */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "onepath/hfio.h"
#include "onepath/limits.h"
#include "op_test.h"

/* ==== a byte builder following the spec's tables ==== */

typedef struct bytes {
    uint8_t *p;
    size_t len, cap;
} bytes;

static void put(bytes *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        cr_assert(b->p);
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void u8(bytes *b, unsigned v)
{
    uint8_t x = (uint8_t)v;
    put(b, &x, 1);
}

static void u16(bytes *b, unsigned v)
{
    u8(b, v & 0xff);
    u8(b, (v >> 8) & 0xff);
}

static void u32(bytes *b, uint32_t v)
{
    u16(b, v & 0xffff);
    u16(b, v >> 16);
}

static void f64(bytes *b, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    u32(b, (uint32_t)u);
    u32(b, (uint32_t)(u >> 32));
}

static void hf_header(bytes *b, int w, int d, int rows, uint32_t total, double ox, double oy,
                      double oz)
{
    put(b, "OPHF", 4);
    u32(b, 1);
    u32(b, (uint32_t)w);
    u32(b, (uint32_t)d);
    u32(b, (uint32_t)rows);
    u32(b, total);
    f64(b, ox);
    f64(b, oy);
    f64(b, oz);
}

static void span(bytes *b, unsigned smin, unsigned smax, unsigned area)
{
    u16(b, smin);
    u16(b, smax);
    u8(b, area);
}

/* 2 x 1 columns, 10 rows: column 0 one span [0, 3) area 63; column 1 spans [0, 2) area 5
 * and [4, 6) area 63. Span data start at 48 + 4 = 52. */
static bytes small_hf(void)
{
    bytes b = {0};
    hf_header(&b, 2, 1, 10, 3, 1.5, -2.0, 3.25);
    u16(&b, 1);
    u16(&b, 2);
    span(&b, 0, 3, 63);
    span(&b, 0, 2, 5);
    span(&b, 4, 6, 63);
    return b;
}

static void chunk_header(bytes *b, int sx, int sy, int sz, uint32_t total, double ox, double oz)
{
    put(b, "OPVC", 4);
    u32(b, 1);
    u32(b, (uint32_t)sx);
    u32(b, (uint32_t)sy);
    u32(b, (uint32_t)sz);
    u32(b, total);
    f64(b, ox);
    f64(b, oz);
}

static void run(bytes *b, unsigned len, unsigned area)
{
    u16(b, len);
    u8(b, area);
}

/* 1 x 4 x 2 voxels: column (0, 0) = [63, 63, 0, 7], column (0, 1) = all 0. Runs start at
 * 40 + 4 = 44. */
static bytes small_chunk(void)
{
    bytes b = {0};
    chunk_header(&b, 1, 4, 2, 4, -8.0, 16.0);
    u16(&b, 3);
    u16(&b, 1);
    run(&b, 2, 63);
    run(&b, 1, 0);
    run(&b, 1, 7);
    run(&b, 4, 0);
    return b;
}

/* ==== helpers ==== */

static op_arena *arena;

static void setup(void)
{
    arena = op_arena_create(0);
}

static void teardown(void)
{
    op_arena_destroy(arena);
}

static void hf_refused(const bytes *b, op_status want, const char *needle)
{
    op_hf_input hf;
    op_err e;
    op_status st = op_hf_parse(b->p, b->len, arena, &hf, &e);
    cr_assert_eq(st, want, "status %s, want %s: %s", op_status_name(st), op_status_name(want),
                 e.msg);
    cr_assert(strstr(e.msg, needle), "message '%s' lacks '%s'", e.msg, needle);
    cr_assert(strncmp(e.msg, "heightfield file: ", 18) == 0, "%s", e.msg);
    cr_assert_eq(hf.width, 0, "output zeroed on failure");
    cr_assert_null(hf.col_start);
}

static void chunk_refused(const bytes *b, op_status want, const char *needle)
{
    op_voxel_chunk vc;
    op_err e;
    op_status st = op_chunk_parse(b->p, b->len, arena, &vc, &e);
    cr_assert_eq(st, want, "status %s, want %s: %s", op_status_name(st), op_status_name(want),
                 e.msg);
    cr_assert(strstr(e.msg, needle), "message '%s' lacks '%s'", e.msg, needle);
    cr_assert(strncmp(e.msg, "chunk file: ", 12) == 0, "%s", e.msg);
    cr_assert_eq(vc.sx, 0, "output zeroed on failure");
    cr_assert_null(vc.areas);
}

static void hf_ok(const bytes *b, op_hf_input *hf)
{
    op_err e;
    cr_assert_eq(op_hf_parse(b->p, b->len, arena, hf, &e), OP_OK, "%s", e.msg);
}

static void chunk_ok(const bytes *b, op_voxel_chunk *vc)
{
    op_err e;
    cr_assert_eq(op_chunk_parse(b->p, b->len, arena, vc, &e), OP_OK, "%s", e.msg);
}

/* Overwrites a field of a built file. */
static void set_u16(bytes *b, size_t off, unsigned v)
{
    b->p[off] = (uint8_t)v;
    b->p[off + 1] = (uint8_t)(v >> 8);
}

static void set_u32(bytes *b, size_t off, uint32_t v)
{
    set_u16(b, off, v & 0xffff);
    set_u16(b, off + 2, v >> 16);
}

static void set_f64(bytes *b, size_t off, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    set_u32(b, off, (uint32_t)u);
    set_u32(b, off + 4, (uint32_t)(u >> 32));
}

typedef struct sink {
    uint8_t *p;
    size_t len, cap;
    long fail_at; /* fail the write that reaches this many bytes (-1 never) */
} sink;

static int sink_write(void *ctx, const char *data, size_t len)
{
    sink *s = ctx;
    if (s->fail_at >= 0 && s->len + len >= (size_t)s->fail_at)
        return -1;
    if (s->len + len > s->cap) {
        s->cap = (s->len + len) * 2;
        s->p = realloc(s->p, s->cap);
    }
    memcpy(s->p + s->len, data, len);
    s->len += len;
    return 0;
}

/* ==== heightfield: accepted ==== */

TestSuite(hfio, .init = setup, .fini = teardown);

Test(hfio, hf_small_file_parses_to_its_columns)
{
    bytes b = small_hf();
    op_hf_input hf;
    hf_ok(&b, &hf);
    cr_assert_eq(hf.width, 2);
    cr_assert_eq(hf.depth, 1);
    cr_assert_eq(hf.rows, 10);
    cr_assert(hf.origin_x == 1.5 && hf.origin_y == -2.0 && hf.origin_z == 3.25);
    cr_assert_eq(hf.col_start[0], 0);
    cr_assert_eq(hf.col_start[1], 1);
    cr_assert_eq(hf.col_start[2], 3);
    cr_assert(hf.spans[0].smin == 0 && hf.spans[0].smax == 3 && hf.spans[0].area == 63);
    cr_assert(hf.spans[1].smin == 0 && hf.spans[1].smax == 2 && hf.spans[1].area == 5);
    cr_assert(hf.spans[2].smin == 4 && hf.spans[2].smax == 6 && hf.spans[2].area == 63);
    free(b.p);
}

Test(hfio, hf_writer_emits_the_hand_built_bytes)
{
    bytes b = small_hf();
    op_hf_input hf;
    hf_ok(&b, &hf);
    sink s = {NULL, 0, 0, -1};
    op_err e;
    cr_assert_eq(op_hf_write(&hf, sink_write, &s, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(s.len, b.len);
    cr_assert_eq(memcmp(s.p, b.p, b.len), 0);
    free(s.p);
    free(b.p);
}

Test(hfio, hf_limits_accepted_at_n)
{
    /* width 32768, depth 1, rows 65535, a span [65534, 65535) of area 63, origins at +-2^21. */
    bytes b = {0};
    hf_header(&b, OP_MAX_GRID_SIDE, 1, OP_MAX_ROWS, 1, -OP_MAX_COORD, OP_MAX_COORD, -0.0);
    for (int c = 0; c < OP_MAX_GRID_SIDE; c++)
        u16(&b, c == OP_MAX_GRID_SIDE - 1);
    span(&b, OP_MAX_ROWS - 1, OP_MAX_ROWS, OP_MAX_AREA);
    op_hf_input hf;
    hf_ok(&b, &hf);
    cr_assert_eq(hf.width, OP_MAX_GRID_SIDE);
    cr_assert(signbit(hf.origin_z), "-0.0 kept");
    /* The same along z. */
    bytes c = {0};
    hf_header(&c, 1, OP_MAX_GRID_SIDE, 1, 0, 0, 0, 0);
    for (int k = 0; k < OP_MAX_GRID_SIDE; k++)
        u16(&c, 0);
    hf_ok(&c, &hf);
    cr_assert_eq(hf.depth, OP_MAX_GRID_SIDE);
    free(b.p);
    free(c.p);
}

Test(hfio, hf_span_total_at_n_passes_to_the_length_check)
{
    bytes b = {0};
    hf_header(&b, 1, 1, 1, OP_MAX_SPANS, 0, 0, 0);
    u16(&b, 0);
    hf_refused(&b, OP_EINVAL, "offset 50: truncated: the header declares");
    set_u32(&b, 20, (uint32_t)OP_MAX_SPANS + 1);
    hf_refused(&b, OP_ERANGE, "offset 20: span total 2147483647 is above 2147483646");
    free(b.p);
}

/* ==== heightfield: every refusal ==== */

Test(hfio, hf_refuses_bad_magic)
{
    bytes b = small_hf();
    b.p[3] = 'G';
    hf_refused(&b, OP_EINVAL, "offset 0: magic is not \"OPHF\"");
    bytes e = {0};
    hf_refused(&e, OP_EINVAL, "offset 0: magic");
    put(&e, "OPH", 3);
    hf_refused(&e, OP_EINVAL, "offset 0: magic");
    free(b.p);
    free(e.p);
}

Test(hfio, hf_refuses_truncated_header)
{
    bytes b = small_hf();
    for (size_t n = 4; n < OP_HF_HEADER_BYTES; n++) {
        bytes c = {b.p, n, n};
        char want[64];
        snprintf(want, sizeof want, "offset %zu: truncated header (%zu of 48 bytes)", n, n);
        hf_refused(&c, OP_EINVAL, want);
    }
    free(b.p);
}

Test(hfio, hf_refuses_bad_version)
{
    bytes b = small_hf();
    set_u32(&b, 4, 2);
    hf_refused(&b, OP_EINVAL, "offset 4: version 2 is not 1");
    set_u32(&b, 4, 0);
    hf_refused(&b, OP_EINVAL, "offset 4: version 0 is not 1");
    free(b.p);
}

Test(hfio, hf_refuses_sizes_beyond_limits)
{
    bytes b = small_hf();
    set_u32(&b, 8, 0);
    hf_refused(&b, OP_ERANGE, "offset 8: width 0 is outside 1..32768");
    set_u32(&b, 8, OP_MAX_GRID_SIDE + 1);
    hf_refused(&b, OP_ERANGE, "offset 8: width 32769 is outside");
    set_u32(&b, 8, 0xffffffffu);
    hf_refused(&b, OP_ERANGE, "offset 8: width -1 is outside");
    set_u32(&b, 8, 2);
    set_u32(&b, 12, OP_MAX_GRID_SIDE + 1);
    hf_refused(&b, OP_ERANGE, "offset 12: depth 32769 is outside");
    set_u32(&b, 12, 1);
    set_u32(&b, 16, OP_MAX_ROWS + 1);
    hf_refused(&b, OP_ERANGE, "offset 16: rows 65536 is outside 1..65535");
    set_u32(&b, 16, 0);
    hf_refused(&b, OP_ERANGE, "offset 16: rows 0 is outside");
    free(b.p);
}

Test(hfio, hf_refuses_bad_origins)
{
    bytes b = small_hf();
    set_f64(&b, 24, NAN);
    hf_refused(&b, OP_EINVAL, "offset 24: origin x nan is not finite");
    set_f64(&b, 24, 0.0);
    set_f64(&b, 32, -INFINITY);
    hf_refused(&b, OP_EINVAL, "offset 32: origin y -inf is not finite");
    set_f64(&b, 32, 0.0);
    set_f64(&b, 40, nextafter(OP_MAX_COORD, INFINITY));
    hf_refused(&b, OP_ERANGE, "offset 40: origin z 2097152.0000000005 is beyond +-2^21");
    set_f64(&b, 40, OP_MAX_COORD);
    op_hf_input hf;
    hf_ok(&b, &hf);
    free(b.p);
}

Test(hfio, hf_refuses_wrong_length)
{
    bytes b = small_hf();
    bytes c = {b.p, b.len - 1, b.len};
    hf_refused(&c, OP_EINVAL, "offset 66: truncated: the header declares 67 bytes");
    c.len = 49;
    hf_refused(&c, OP_EINVAL, "offset 49: truncated: the header declares 67 bytes");
    u8(&b, 0);
    hf_refused(&b, OP_EINVAL, "offset 67: 1 bytes after the declared end");
    free(b.p);
}

Test(hfio, hf_refuses_column_counts_beyond_the_total)
{
    bytes b = small_hf();
    set_u16(&b, 48, 4);
    hf_refused(&b, OP_EINVAL,
               "offset 48: column (0, 0) count 4 makes 4 spans, more than the "
               "total 3");
    free(b.p);
}

Test(hfio, hf_refuses_column_counts_below_the_total)
{
    /* Counts 1 + 1 with a total of 3 (length still matches the header). */
    bytes b = small_hf();
    set_u16(&b, 50, 1);
    hf_refused(&b, OP_EINVAL, "offset 20: span total 3, but the columns hold 2");
    free(b.p);
}

Test(hfio, hf_refuses_empty_span)
{
    bytes b = small_hf();
    set_u16(&b, 57, 2); /* column 1 span 0: [2, 2) */
    hf_refused(&b, OP_EINVAL, "offset 57: column (1, 0) span 0 rows [2, 2) is empty");
    set_u16(&b, 57, 3); /* [3, 2) */
    hf_refused(&b, OP_EINVAL, "offset 57: column (1, 0) span 0 rows [3, 2) is empty");
    free(b.p);
}

Test(hfio, hf_refuses_span_above_rows_and_accepts_at_rows)
{
    bytes b = small_hf();
    set_u16(&b, 64, 10); /* column 1 span 1 top = rows: accepted */
    op_hf_input hf;
    hf_ok(&b, &hf);
    set_u16(&b, 64, 11);
    hf_refused(&b, OP_ERANGE, "offset 64: column (1, 0) span 1 top 11 is beyond 10 rows");
    free(b.p);
}

Test(hfio, hf_refuses_touching_and_overlapping_spans)
{
    bytes b = small_hf();
    set_u16(&b, 62, 2); /* span 1 starts at the top of span 0: touching */
    hf_refused(&b, OP_EINVAL,
               "offset 62: column (1, 0) span 1 bottom 2 is not above the "
               "previous top 2");
    set_u16(&b, 62, 1);
    hf_refused(&b, OP_EINVAL, "offset 62: column (1, 0) span 1 bottom 1 is not above");
    set_u16(&b, 62, 3); /* one open row between: accepted */
    op_hf_input hf;
    hf_ok(&b, &hf);
    free(b.p);
}

Test(hfio, hf_refuses_area_above_63)
{
    bytes b = small_hf();
    b.p[56] = 64;
    hf_refused(&b, OP_ERANGE, "offset 56: column (0, 0) span 0 area 64 is above 63");
    b.p[56] = 255;
    hf_refused(&b, OP_ERANGE, "area 255 is above 63");
    free(b.p);
}

/* ==== voxel chunk ==== */

Test(hfio, chunk_small_file_parses_to_its_voxels)
{
    bytes b = small_chunk();
    op_voxel_chunk vc;
    chunk_ok(&b, &vc);
    cr_assert(vc.sx == 1 && vc.sy == 4 && vc.sz == 2);
    cr_assert(vc.origin_x == -8.0 && vc.origin_z == 16.0);
    static const uint8_t want[8] = {63, 63, 0, 7, 0, 0, 0, 0};
    cr_assert_eq(memcmp(vc.areas, want, 8), 0);
    sink s = {NULL, 0, 0, -1};
    op_err e;
    cr_assert_eq(op_chunk_write(&vc, sink_write, &s, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(s.len, b.len);
    cr_assert_eq(memcmp(s.p, b.p, b.len), 0, "writer bytes = hand-built bytes");
    free(s.p);
    free(b.p);
}

Test(hfio, chunk_refuses_bad_magic_version_and_header)
{
    bytes b = small_chunk();
    b.p[0] = 'X';
    chunk_refused(&b, OP_EINVAL, "offset 0: magic is not \"OPVC\"");
    b.p[0] = 'O';
    set_u32(&b, 4, 7);
    chunk_refused(&b, OP_EINVAL, "offset 4: version 7 is not 1");
    set_u32(&b, 4, 1);
    bytes c = {b.p, 39, 39};
    chunk_refused(&c, OP_EINVAL, "offset 39: truncated header (39 of 40 bytes)");
    free(b.p);
}

Test(hfio, chunk_refuses_sizes_beyond_limits)
{
    bytes b = small_chunk();
    set_u32(&b, 8, OP_MAX_GRID_SIDE + 1);
    chunk_refused(&b, OP_ERANGE, "offset 8: sx 32769 is outside 1..32768");
    set_u32(&b, 8, 1);
    set_u32(&b, 12, OP_MAX_ROWS + 1);
    chunk_refused(&b, OP_ERANGE, "offset 12: sy 65536 is outside 1..65535");
    set_u32(&b, 12, 0);
    chunk_refused(&b, OP_ERANGE, "offset 12: sy 0 is outside");
    set_u32(&b, 12, 4);
    set_u32(&b, 16, 0x80000000u);
    chunk_refused(&b, OP_ERANGE, "offset 16: sz -2147483648 is outside");
    free(b.p);
}

Test(hfio, chunk_limits_accepted_at_n)
{
    /* sx 32768 (one empty voxel a column), then sy 65535 in one run, then sz 32768. */
    int sizes[3][3] = {{OP_MAX_GRID_SIDE, 1, 1}, {1, OP_MAX_ROWS, 1}, {1, 1, OP_MAX_GRID_SIDE}};
    for (int t = 0; t < 3; t++) {
        int sx = sizes[t][0], sy = sizes[t][1], sz = sizes[t][2];
        bytes b = {0};
        chunk_header(&b, sx, sy, sz, (uint32_t)(sx * sz), OP_MAX_COORD, -OP_MAX_COORD);
        for (int c = 0; c < sx * sz; c++)
            u16(&b, 1);
        for (int c = 0; c < sx * sz; c++)
            run(&b, (unsigned)sy, c % 2 ? OP_MAX_AREA : 0);
        op_voxel_chunk vc;
        chunk_ok(&b, &vc);
        cr_assert(vc.sx == sx && vc.sy == sy && vc.sz == sz);
        cr_assert_eq(vc.areas[sy - 1], 0);
        if (sx * sz > 1)
            cr_assert_eq(vc.areas[(size_t)sy * 2 - 1], OP_MAX_AREA);
        free(b.p);
    }
}

/* The voxel cap at N (2^30 = 128 x 32768 x 256) passes to the allocation (an arena capped at
 * 4 MiB then fails it, naming the voxels); at 128 x 32769 x 256 it is refused unread. */
Test(hfio, chunk_voxel_cap_at_n_and_n_plus_1)
{
    bytes b = {0};
    chunk_header(&b, 128, 32768, 256, 128 * 256, 0, 0);
    for (int c = 0; c < 128 * 256; c++)
        u16(&b, 1);
    for (int c = 0; c < 128 * 256; c++)
        run(&b, 32768, 0);
    op_arena *small = op_arena_create(0);
    op_arena_set_limit(small, 4u << 20);
    op_voxel_chunk vc;
    op_err e;
    cr_assert_eq(op_chunk_parse(b.p, b.len, small, &vc, &e), OP_ENOMEM, "%s", e.msg);
    cr_assert(strstr(e.msg, "out of memory for 1073741824 voxels"), "%s", e.msg);
    op_arena_destroy(small);
    set_u32(&b, 12, 32769);
    chunk_refused(&b, OP_ERANGE,
                  "offset 8: 128 x 32769 x 256 = 1073774592 voxels is above "
                  "1073741824");
    free(b.p);
}

Test(hfio, chunk_refuses_bad_origins)
{
    bytes b = small_chunk();
    set_f64(&b, 24, INFINITY);
    chunk_refused(&b, OP_EINVAL, "offset 24: origin x inf is not finite");
    set_f64(&b, 24, 0);
    set_f64(&b, 32, -4194304.0);
    chunk_refused(&b, OP_ERANGE, "offset 32: origin z -4194304 is beyond +-2^21");
    free(b.p);
}

Test(hfio, chunk_refuses_wrong_length)
{
    bytes b = small_chunk();
    bytes c = {b.p, b.len - 3, b.len};
    chunk_refused(&c, OP_EINVAL, "offset 53: truncated: the header declares 56 bytes");
    u16(&b, 0);
    chunk_refused(&b, OP_EINVAL, "offset 56: 2 bytes after the declared end");
    free(b.p);
}

Test(hfio, chunk_refuses_a_column_without_runs)
{
    /* Column 0 claims 0 runs, column 1 claims 4 (the total still 4). */
    bytes b = small_chunk();
    set_u16(&b, 40, 0);
    set_u16(&b, 42, 4);
    chunk_refused(&b, OP_EINVAL, "offset 40: column (0, 0) has no runs");
    free(b.p);
}

Test(hfio, chunk_refuses_run_of_length_0)
{
    bytes b = small_chunk();
    set_u16(&b, 47, 0);
    chunk_refused(&b, OP_EINVAL, "offset 47: column (0, 0) run 1 has length 0");
    free(b.p);
}

Test(hfio, chunk_refuses_area_above_63)
{
    bytes b = small_chunk();
    b.p[52] = 64;
    chunk_refused(&b, OP_ERANGE, "offset 52: column (0, 0) run 2 area 64 is above 63");
    free(b.p);
}

Test(hfio, chunk_refuses_runs_that_are_not_maximal)
{
    bytes b = small_chunk();
    b.p[49] = 63; /* run 1 repeats run 0's area */
    chunk_refused(&b, OP_EINVAL,
                  "offset 49: column (0, 0) run 1 has the area 63 of the run "
                  "below (runs must be maximal)");
    free(b.p);
}

Test(hfio, chunk_refuses_runs_beyond_or_short_of_sy)
{
    bytes b = small_chunk();
    set_u16(&b, 50, 2); /* 2 + 1 + 2 = 5 > 4 */
    chunk_refused(&b, OP_EINVAL,
                  "offset 50: column (0, 0) run 2 length 2 ends at row 5, "
                  "beyond sy 4");
    set_u16(&b, 50, 1);
    set_u16(&b, 53, 3); /* column 1 covers 3 of 4 */
    chunk_refused(&b, OP_EINVAL, "offset 42: column (0, 1) runs cover 3 of sy 4 rows");
    free(b.p);
}

Test(hfio, chunk_refuses_run_counts_off_the_total)
{
    bytes b = small_chunk();
    set_u16(&b, 42, 2);
    chunk_refused(&b, OP_EINVAL,
                  "offset 42: column (0, 1) count 2 makes 5 runs, more than the "
                  "total 4");
    /* Total 5 with one extra run appended: counts hold 4. */
    bytes c = small_chunk();
    set_u32(&c, 20, 5);
    run(&c, 1, 1);
    chunk_refused(&c, OP_EINVAL, "offset 20: run total 5, but the columns hold 4");
    free(b.p);
    free(c.p);
}

/* ==== writers ==== */

Test(hfio, writers_refuse_invalid_inputs_and_failed_sinks)
{
    bytes b = small_hf();
    op_hf_input hf;
    hf_ok(&b, &hf);
    op_err e;
    sink s = {NULL, 0, 0, -1};
    op_hf_input bad = hf;
    bad.rows = 0;
    cr_assert_eq(op_hf_write(&bad, sink_write, &s, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "rows = 0"), "%s", e.msg);
    cr_assert_eq(s.len, 0, "nothing written for an invalid input");
    s.fail_at = 10;
    cr_assert_eq(op_hf_write(&hf, sink_write, &s, &e), OP_EIO);
    cr_assert_str_eq(e.msg, "heightfield file: write failed");
    bytes c = small_chunk();
    op_voxel_chunk vc;
    chunk_ok(&c, &vc);
    op_voxel_chunk badc = vc;
    uint8_t areas[8] = {0, 0, 0, 64, 0, 0, 0, 0};
    badc.areas = areas;
    cr_assert_eq(op_chunk_write(&badc, sink_write, &s, &e), OP_ERANGE);
    cr_assert_eq(op_chunk_write(&vc, sink_write, &s, &e), OP_EIO);
    cr_assert_str_eq(e.msg, "chunk file: write failed");
    free(s.p);
    free(b.p);
    free(c.p);
}

/* ==== round trips on seeded random inputs ==== */

static void random_hf(op_test_rng *r, op_hf_input *hf, uint32_t **cs, op_span_in **sp)
{
    hf->width = op_test_rand_int(r, 1, 40);
    hf->depth = op_test_rand_int(r, 1, 40);
    hf->rows = op_test_rand_int(r, 1, 300);
    hf->origin_x = (op_test_rand01(r) - 0.5) * 1e6;
    hf->origin_y = (op_test_rand01(r) - 0.5) * 1e3;
    hf->origin_z = -(op_test_rand01(r) * 7.1);
    size_t ncols = (size_t)hf->width * hf->depth, total = 0, cap = ncols * 8 + 1;
    *cs = malloc((ncols + 1) * sizeof **cs);
    *sp = malloc(cap * sizeof **sp);
    for (size_t c = 0; c < ncols; c++) {
        (*cs)[c] = (uint32_t)total;
        int y = op_test_rand_int(r, 0, 3);
        for (int k = 0; k < 8 && y < hf->rows; k++) {
            int top = y + op_test_rand_int(r, 1, 20);
            if (top > hf->rows)
                top = hf->rows;
            (*sp)[total++] = (op_span_in){(uint16_t)y, (uint16_t)top,
                                          (uint8_t)op_test_rand_int(r, 0, OP_MAX_AREA)};
            y = top + op_test_rand_int(r, 1, 10);
        }
    }
    (*cs)[ncols] = (uint32_t)total;
    hf->col_start = *cs;
    hf->spans = *sp;
}

Test(hfio, hf_round_trip_on_random_inputs)
{
    op_test_rng r = {7};
    for (int it = 0; it < 200; it++) {
        op_hf_input hf, back;
        uint32_t *cs;
        op_span_in *sp;
        random_hf(&r, &hf, &cs, &sp);
        op_err e;
        cr_assert_eq(op_hf_input_validate(&hf, &e), OP_OK, "%s", e.msg);
        sink s = {NULL, 0, 0, -1}, s2 = {NULL, 0, 0, -1};
        cr_assert_eq(op_hf_write(&hf, sink_write, &s, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(op_hf_parse(s.p, s.len, arena, &back, &e), OP_OK, "%s", e.msg);
        cr_assert(back.width == hf.width && back.depth == hf.depth && back.rows == hf.rows);
        cr_assert(memcmp(&back.origin_x, &hf.origin_x, 8) == 0 &&
                  memcmp(&back.origin_y, &hf.origin_y, 8) == 0 &&
                  memcmp(&back.origin_z, &hf.origin_z, 8) == 0);
        size_t ncols = (size_t)hf.width * hf.depth;
        cr_assert_eq(memcmp(back.col_start, cs, (ncols + 1) * 4), 0);
        for (uint32_t i = 0; i < cs[ncols]; i++)
            cr_assert(back.spans[i].smin == sp[i].smin && back.spans[i].smax == sp[i].smax &&
                      back.spans[i].area == sp[i].area);
        cr_assert_eq(op_hf_write(&back, sink_write, &s2, &e), OP_OK);
        cr_assert(s2.len == s.len && memcmp(s2.p, s.p, s.len) == 0, "write(parse(b)) = b");
        free(s.p);
        free(s2.p);
        free(cs);
        free(sp);
        op_arena_reset(arena);
    }
}

Test(hfio, chunk_round_trip_on_random_inputs)
{
    op_test_rng r = {11};
    for (int it = 0; it < 200; it++) {
        op_voxel_chunk vc = {op_test_rand_int(&r, 1, 30),
                             op_test_rand_int(&r, 1, 70),
                             op_test_rand_int(&r, 1, 30),
                             (op_test_rand01(&r) - 0.5) * 100.0,
                             -0.0,
                             NULL};
        size_t n = (size_t)vc.sx * vc.sy * vc.sz;
        uint8_t *a = malloc(n);
        int sparse = op_test_rand_int(&r, 0, 1);
        for (size_t i = 0; i < n; i++)
            a[i] = sparse ? (op_test_rand_int(&r, 0, 9) == 0 ? 63 : 0)
                          : (uint8_t)op_test_rand_int(&r, 0, 3);
        vc.areas = a;
        op_err e;
        sink s = {NULL, 0, 0, -1}, s2 = {NULL, 0, 0, -1};
        cr_assert_eq(op_chunk_write(&vc, sink_write, &s, &e), OP_OK, "%s", e.msg);
        op_voxel_chunk back;
        cr_assert_eq(op_chunk_parse(s.p, s.len, arena, &back, &e), OP_OK, "%s", e.msg);
        cr_assert(back.sx == vc.sx && back.sy == vc.sy && back.sz == vc.sz);
        cr_assert(back.origin_x == vc.origin_x && signbit(back.origin_z));
        cr_assert_eq(memcmp(back.areas, a, n), 0);
        cr_assert_eq(op_chunk_write(&back, sink_write, &s2, &e), OP_OK);
        cr_assert(s2.len == s.len && memcmp(s2.p, s.p, s.len) == 0, "write(parse(b)) = b");
        free(s.p);
        free(s2.p);
        free(a);
        op_arena_reset(arena);
    }
}

/* ==== robustness ==== */

/* Every single-byte change (8 values per position) and every truncation of the small
 * files: a refusal with a message, or an input that validates. */
Test(hfio, single_byte_mutations_never_crash)
{
    bytes files[2] = {small_hf(), small_chunk()};
    static const uint8_t vals[8] = {0, 1, 2, 0x3f, 0x40, 0x7f, 0x80, 0xff};
    for (int f = 0; f < 2; f++) {
        bytes *b = &files[f];
        for (size_t i = 0; i < b->len; i++) {
            uint8_t keep = b->p[i];
            for (int v = 0; v < 8; v++) {
                b->p[i] = vals[v];
                op_err e;
                op_status st;
                if (f == 0) {
                    op_hf_input hf;
                    st = op_hf_parse(b->p, b->len, arena, &hf, &e);
                    if (st == OP_OK)
                        cr_assert_eq(op_hf_input_validate(&hf, &e), OP_OK);
                } else {
                    op_voxel_chunk vc;
                    st = op_chunk_parse(b->p, b->len, arena, &vc, &e);
                    if (st == OP_OK)
                        cr_assert_eq(op_voxel_chunk_validate(&vc, &e), OP_OK);
                }
                cr_assert(st == OP_OK || strstr(e.msg, "offset "), "%s", e.msg);
                op_arena_reset(arena);
            }
            b->p[i] = keep;
        }
        free(b->p);
    }
}

static void parse_at_guard(const bytes *b, int chunk)
{
    long page = sysconf(_SC_PAGESIZE);
    cr_assert((long)b->len <= page);
    uint8_t *m =
        mmap(NULL, (size_t)(2 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(m != MAP_FAILED);
    cr_assert_eq(mprotect(m + page, (size_t)page, PROT_NONE), 0);
    for (size_t n = 0; n <= b->len; n++) {
        uint8_t *at = m + page - n;
        memcpy(at, b->p, n);
        op_err e;
        if (chunk) {
            op_voxel_chunk vc;
            op_status st = op_chunk_parse(at, n, arena, &vc, &e);
            cr_assert_eq(st, n == b->len ? OP_OK : OP_EINVAL, "%zu bytes: %s", n, e.msg);
        } else {
            op_hf_input hf;
            op_status st = op_hf_parse(at, n, arena, &hf, &e);
            cr_assert_eq(st, n == b->len ? OP_OK : OP_EINVAL, "%zu bytes: %s", n, e.msg);
        }
    }
    munmap(m, (size_t)(2 * page));
}

Test(hfio, inputs_ending_at_a_guard_page_are_not_over_read)
{
    bytes h = small_hf(), c = small_chunk();
    parse_at_guard(&h, 0);
    parse_at_guard(&c, 1);
    free(h.p);
    free(c.p);
}

/* ==== files ==== */

static void temp_path(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "/tmp/op_test_hfio_%ld_%s", (long)getpid(), name);
}

static void write_file(const char *path, const bytes *b)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(b->p, 1, b->len, f), b->len);
    cr_assert_eq(fclose(f), 0);
}

Test(hfio, files_read_back_and_sniff)
{
    char ph[256], pc[256], po[256];
    temp_path(ph, sizeof ph, "a.ophf");
    temp_path(pc, sizeof pc, "a.opvc");
    temp_path(po, sizeof po, "a.obj");
    bytes h = small_hf(), c = small_chunk(), o = {0};
    put(&o, "v 0 0 0\n", 8);
    write_file(ph, &h);
    write_file(pc, &c);
    write_file(po, &o);
    op_err e;
    op_input_kind k;
    cr_assert_eq(op_input_sniff_file(ph, &k, &e), OP_OK);
    cr_assert_eq(k, OP_INPUT_HEIGHTFIELD);
    cr_assert_eq(op_input_sniff_file(pc, &k, &e), OP_OK);
    cr_assert_eq(k, OP_INPUT_CHUNK);
    cr_assert_eq(op_input_sniff_file(po, &k, &e), OP_OK);
    cr_assert_eq(k, OP_INPUT_OTHER);
    cr_assert_eq(op_input_sniff("OP", 2), OP_INPUT_OTHER);
    op_hf_input hf;
    cr_assert_eq(op_hf_read_file(ph, arena, &hf, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(hf.col_start[2], 3);
    op_voxel_chunk vc;
    cr_assert_eq(op_chunk_read_file(pc, arena, &vc, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(vc.areas[3], 7);
    /* The wrong reader refuses by magic; a missing file is OP_EIO naming the path. */
    cr_assert_eq(op_hf_read_file(pc, arena, &hf, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "magic"), "%s", e.msg);
    cr_assert_eq(op_chunk_read_file("/nonexistent/x.opvc", arena, &vc, &e), OP_EIO);
    cr_assert(strstr(e.msg, "/nonexistent/x.opvc"), "%s", e.msg);
    cr_assert_eq(op_input_sniff_file("/nonexistent/x", &k, &e), OP_EIO);
    remove(ph);
    remove(pc);
    remove(po);
    free(h.p);
    free(c.p);
    free(o.p);
}

/* OP_MAX_INPUT_FILE + 1 bytes (a sparse file: no disk is used) is refused unread, naming the
 * size; a FIFO (no size known) is refused, not read (input_file.h). */
Test(hfio, files_beyond_the_size_cap_are_refused_unread)
{
    char p[256];
    temp_path(p, sizeof p, "big.ophf");
    FILE *f = fopen(p, "wb");
    cr_assert(f);
    cr_assert_eq(ftruncate(fileno(f), (off_t)OP_MAX_INPUT_FILE + 1), 0);
    cr_assert_eq(fclose(f), 0);
    op_hf_input hf;
    op_err e;
    cr_assert_eq(op_hf_read_file(p, arena, &hf, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "is 1073741825 bytes, more than the limit of 1073741824"), "%s", e.msg);
    cr_assert_lt(op_arena_peak(arena), 1u << 20, "nothing read");
    remove(p);
}

Test(hfio, a_fifo_is_refused_without_waiting_for_a_writer)
{
    char p[256];
    temp_path(p, sizeof p, "fifo.opvc");
    cr_assert_eq(mkfifo(p, 0600), 0);
    op_voxel_chunk vc;
    op_err e;
    cr_assert_eq(op_chunk_read_file(p, arena, &vc, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, p) && strstr(e.msg, "a FIFO"), "%s", e.msg);
    op_input_kind kind;
    cr_assert_eq(op_input_sniff_file(p, &kind, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "a FIFO"), "%s", e.msg);
    remove(p);
}
