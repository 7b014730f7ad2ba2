/*
 * Heightfield and voxel-chunk files (docs/spec/input-formats.md): bytes → op_hf_input /
 * op_voxel_chunk, and back.
 *
 * Input: untrusted bytes. Output: arrays from the caller's arena that pass
 * op_hf_input_validate / op_voxel_chunk_validate. The parser reads the fixed header,
 * checks every field and that the file length is exactly what the header declares,
 * and only then allocates; then one forward pass over the column table and the column
 * data checks each value where it is read, so the message names its offset. Work and
 * memory are linear in the file length (heightfield) or in sx·sy·sz, capped by
 * OP_MAX_CHUNK_VOXELS (chunk). Typical: 10^4..10^6 columns, a few MB.
 *
 * The writer emits the one encoding the parser accepts for an input (counts are
 * exact, runs of a column are maximal), so parse(write(x)) = x and write(parse(b)) = b.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_internal.h"
#include "onepath/input_file.h"
#include "onepath/hfio.h"
#include "onepath/limits.h"

#define HF_WHAT    "heightfield file"
#define CHUNK_WHAT "chunk file"

/* Byte sizes of one column-table entry, one span and one run. */
#define COUNT_BYTES 2
#define SPAN_BYTES  5
#define RUN_BYTES   3

/* ==== little-endian fields ==== */

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static double get_f64(const uint8_t *p)
{
    uint64_t b = (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

/* An i32 field within [lo, hi], else OP_ERANGE naming the offset and value. */
static op_status get_int(const uint8_t *b, size_t off, const char *what, const char *name, int lo,
                         int hi, int *out, op_err *err)
{
    uint32_t u = get_u32(b + off);
    int64_t v = u < 0x80000000u ? (int64_t)u : (int64_t)u - 0x100000000LL;
    if (v < lo || v > hi)
        return op_err_set(err, OP_ERANGE, "%s: offset %zu: %s %lld is outside %d..%d", what, off,
                          name, (long long)v, lo, hi);
    *out = (int)v;
    return OP_OK;
}

/* An origin coordinate: finite (else OP_EINVAL) and within +-OP_MAX_COORD (else OP_ERANGE). */
static op_status get_origin(const uint8_t *b, size_t off, const char *what, const char *name,
                            double *out, op_err *err)
{
    double v = get_f64(b + off);
    if (!isfinite(v))
        return op_err_set(err, OP_EINVAL, "%s: offset %zu: %s %g is not finite", what, off, name,
                          v);
    if (fabs(v) > OP_MAX_COORD)
        return op_err_set(err, OP_ERANGE, "%s: offset %zu: %s %.17g is beyond +-2^21", what, off,
                          name, v);
    *out = v;
    return OP_OK;
}

/* Magic, header length and version (the first checks of both formats). */
static op_status check_head(const uint8_t *b, size_t len, const char *magic, size_t header,
                            const char *what, op_err *err)
{
    if (len < 4 || memcmp(b, magic, 4) != 0)
        return op_err_set(err, OP_EINVAL, "%s: offset 0: magic is not \"%s\"", what, magic);
    if (len < header)
        return op_err_set(err, OP_EINVAL, "%s: offset %zu: truncated header (%zu of %zu bytes)",
                          what, len, len, header);
    uint32_t v = get_u32(b + 4);
    if (v != OP_HFIO_VERSION)
        return op_err_set(err, OP_EINVAL, "%s: offset 4: version %u is not %d", what, v,
                          OP_HFIO_VERSION);
    return OP_OK;
}

/* The file length must be exactly the one the header declares. */
static op_status check_length(size_t len, uint64_t want, const char *what, op_err *err)
{
    if (len < want)
        return op_err_set(err, OP_EINVAL,
                          "%s: offset %zu: truncated: the header declares %llu bytes", what, len,
                          (unsigned long long)want);
    if (len > want)
        return op_err_set(err, OP_EINVAL, "%s: offset %llu: %llu bytes after the declared end",
                          what, (unsigned long long)want, (unsigned long long)(len - want));
    return OP_OK;
}

op_input_kind op_input_sniff(const void *buf, size_t len)
{
    if (!buf || len < 4)
        return OP_INPUT_OTHER;
    if (memcmp(buf, "OPHF", 4) == 0)
        return OP_INPUT_HEIGHTFIELD;
    if (memcmp(buf, "OPVC", 4) == 0)
        return OP_INPUT_CHUNK;
    return OP_INPUT_OTHER;
}

/* ==== heightfield ==== */

/* One column's spans (offset off of the first): ascending, separated, within rows. */
static op_status hf_column(const uint8_t *b, size_t off, int i, int k, unsigned n, int rows,
                           op_span_in *spans, op_err *err)
{
    int prev_top = -1;
    for (unsigned j = 0; j < n; j++, off += SPAN_BYTES) {
        unsigned smin = get_u16(b + off), smax = get_u16(b + off + 2), area = b[off + 4];
        if (smin >= smax)
            return op_err_set(err, OP_EINVAL,
                              HF_WHAT ": offset %zu: column (%d, %d) span %u rows [%u, %u) is "
                                      "empty",
                              off, i, k, j, smin, smax);
        if ((int)smax > rows)
            return op_err_set(err, OP_ERANGE,
                              HF_WHAT ": offset %zu: column (%d, %d) span %u top %u is beyond "
                                      "%d rows",
                              off + 2, i, k, j, smax, rows);
        if ((int)smin <= prev_top)
            return op_err_set(err, OP_EINVAL,
                              HF_WHAT ": offset %zu: column (%d, %d) span %u bottom %u is not "
                                      "above the previous top %d",
                              off, i, k, j, smin, prev_top);
        if (area > OP_MAX_AREA)
            return op_err_set(err, OP_ERANGE,
                              HF_WHAT ": offset %zu: column (%d, %d) span %u area %u is above %d",
                              off + 4, i, k, j, area, OP_MAX_AREA);
        spans[j] = (op_span_in){(uint16_t)smin, (uint16_t)smax, (uint8_t)area};
        prev_top = (int)smax;
    }
    return OP_OK;
}

/* The column table and the spans, after the header and length were checked. */
static op_status hf_columns(const uint8_t *b, op_hf_input *hf, uint32_t total, op_arena *out,
                            op_err *err)
{
    size_t ncols = (size_t)hf->width * (size_t)hf->depth;
    uint32_t *col_start = op_arena_alloc(out, (ncols + 1) * sizeof *col_start);
    op_span_in *spans = op_arena_alloc(out, ((size_t)total + 1) * sizeof *spans);
    if (!col_start || !spans)
        return op_err_set(err, OP_ENOMEM, HF_WHAT ": out of memory for %zu columns, %u spans",
                          ncols, total);
    size_t table = OP_HF_HEADER_BYTES, data = table + COUNT_BYTES * ncols;
    uint64_t sum = 0;
    for (size_t c = 0; c < ncols; c++) {
        unsigned n = get_u16(b + table + COUNT_BYTES * c);
        int i = (int)(c % (size_t)hf->width), k = (int)(c / (size_t)hf->width);
        if (sum + n > total)
            return op_err_set(err, OP_EINVAL,
                              HF_WHAT ": offset %zu: column (%d, %d) count %u makes %llu spans, "
                                      "more than the total %u",
                              table + COUNT_BYTES * c, i, k, n, (unsigned long long)(sum + n),
                              total);
        col_start[c] = (uint32_t)sum;
        op_status st =
            hf_column(b, data + SPAN_BYTES * (size_t)sum, i, k, n, hf->rows, spans + sum, err);
        if (st != OP_OK)
            return st;
        sum += n;
    }
    if (sum != total)
        return op_err_set(err, OP_EINVAL,
                          HF_WHAT ": offset 20: span total %u, but the columns hold %llu", total,
                          (unsigned long long)sum);
    col_start[ncols] = (uint32_t)sum;
    hf->col_start = col_start;
    hf->spans = spans;
    return OP_OK;
}

static op_status hf_parse(const uint8_t *b, size_t len, op_arena *out, op_hf_input *hf, op_err *err)
{
    op_status st;
    if ((st = check_head(b, len, "OPHF", OP_HF_HEADER_BYTES, HF_WHAT, err)) != OP_OK ||
        (st = get_int(b, 8, HF_WHAT, "width", 1, OP_MAX_GRID_SIDE, &hf->width, err)) != OP_OK ||
        (st = get_int(b, 12, HF_WHAT, "depth", 1, OP_MAX_GRID_SIDE, &hf->depth, err)) != OP_OK ||
        (st = get_int(b, 16, HF_WHAT, "rows", 1, OP_MAX_ROWS, &hf->rows, err)) != OP_OK)
        return st;
    uint32_t total = get_u32(b + 20);
    if (total > OP_MAX_SPANS)
        return op_err_set(err, OP_ERANGE, HF_WHAT ": offset 20: span total %u is above %u", total,
                          (unsigned)OP_MAX_SPANS);
    if ((st = get_origin(b, 24, HF_WHAT, "origin x", &hf->origin_x, err)) != OP_OK ||
        (st = get_origin(b, 32, HF_WHAT, "origin y", &hf->origin_y, err)) != OP_OK ||
        (st = get_origin(b, 40, HF_WHAT, "origin z", &hf->origin_z, err)) != OP_OK)
        return st;
    uint64_t ncols = (uint64_t)hf->width * (uint64_t)hf->depth;
    uint64_t want = OP_HF_HEADER_BYTES + COUNT_BYTES * ncols + SPAN_BYTES * (uint64_t)total;
    if ((st = check_length(len, want, HF_WHAT, err)) != OP_OK ||
        (st = hf_columns(b, hf, total, out, err)) != OP_OK)
        return st;
    return op_hf_input_validate(hf, err);
}

op_status op_hf_parse(const void *buf, size_t len, op_arena *out, op_hf_input *hf, op_err *err)
{
    memset(hf, 0, sizeof *hf);
    if (!buf && len)
        return op_err_set(err, OP_EINVAL, HF_WHAT ": NULL buffer of %zu bytes", len);
    op_status st = hf_parse(buf ? buf : "", len, out, hf, err);
    if (st != OP_OK)
        memset(hf, 0, sizeof *hf);
    return st;
}

/* ==== voxel chunk ==== */

/* One column's runs (offset off of the first) into col[0..sy): maximal runs of nonzero
 * length that cover the column exactly. */
static op_status chunk_column(const uint8_t *b, size_t off, size_t table_off, int i, int k,
                              unsigned n, int sy, uint8_t *col, op_err *err)
{
    if (n == 0)
        return op_err_set(err, OP_EINVAL, CHUNK_WHAT ": offset %zu: column (%d, %d) has no runs",
                          table_off, i, k);
    int j = 0, prev = -1;
    for (unsigned r = 0; r < n; r++, off += RUN_BYTES) {
        unsigned len = get_u16(b + off), area = b[off + 2];
        if (len == 0)
            return op_err_set(err, OP_EINVAL,
                              CHUNK_WHAT ": offset %zu: column (%d, %d) run %u has length 0", off,
                              i, k, r);
        if (area > OP_MAX_AREA)
            return op_err_set(err, OP_ERANGE,
                              CHUNK_WHAT ": offset %zu: column (%d, %d) run %u area %u is above "
                                         "%d",
                              off + 2, i, k, r, area, OP_MAX_AREA);
        if ((int)area == prev)
            return op_err_set(err, OP_EINVAL,
                              CHUNK_WHAT ": offset %zu: column (%d, %d) run %u has the area %u of "
                                         "the run below (runs must be maximal)",
                              off + 2, i, k, r, area);
        if ((long)j + (long)len > sy)
            return op_err_set(err, OP_EINVAL,
                              CHUNK_WHAT ": offset %zu: column (%d, %d) run %u length %u ends at "
                                         "row %ld, beyond sy %d",
                              off, i, k, r, len, (long)j + (long)len, sy);
        memset(col + j, (int)area, len);
        j += (int)len;
        prev = (int)area;
    }
    if (j != sy)
        return op_err_set(err, OP_EINVAL,
                          CHUNK_WHAT ": offset %zu: column (%d, %d) runs cover %d of sy %d rows",
                          table_off, i, k, j, sy);
    return OP_OK;
}

static op_status chunk_columns(const uint8_t *b, op_voxel_chunk *vc, uint32_t total, op_arena *out,
                               op_err *err)
{
    size_t ncols = (size_t)vc->sx * (size_t)vc->sz, sy = (size_t)vc->sy;
    uint8_t *areas = op_arena_alloc(out, ncols * sy);
    if (!areas)
        return op_err_set(err, OP_ENOMEM, CHUNK_WHAT ": out of memory for %zu voxels", ncols * sy);
    size_t table = OP_CHUNK_HEADER_BYTES, data = table + COUNT_BYTES * ncols;
    uint64_t sum = 0;
    for (size_t c = 0; c < ncols; c++) {
        unsigned n = get_u16(b + table + COUNT_BYTES * c);
        int i = (int)(c % (size_t)vc->sx), k = (int)(c / (size_t)vc->sx);
        if (sum + n > total)
            return op_err_set(err, OP_EINVAL,
                              CHUNK_WHAT ": offset %zu: column (%d, %d) count %u makes %llu runs, "
                                         "more than the total %u",
                              table + COUNT_BYTES * c, i, k, n, (unsigned long long)(sum + n),
                              total);
        op_status st = chunk_column(b, data + RUN_BYTES * (size_t)sum, table + COUNT_BYTES * c, i,
                                    k, n, vc->sy, areas + c * sy, err);
        if (st != OP_OK)
            return st;
        sum += n;
    }
    if (sum != total)
        return op_err_set(err, OP_EINVAL,
                          CHUNK_WHAT ": offset 20: run total %u, but the columns hold %llu", total,
                          (unsigned long long)sum);
    vc->areas = areas;
    return OP_OK;
}

static op_status chunk_parse(const uint8_t *b, size_t len, op_arena *out, op_voxel_chunk *vc,
                             op_err *err)
{
    op_status st;
    if ((st = check_head(b, len, "OPVC", OP_CHUNK_HEADER_BYTES, CHUNK_WHAT, err)) != OP_OK ||
        (st = get_int(b, 8, CHUNK_WHAT, "sx", 1, OP_MAX_GRID_SIDE, &vc->sx, err)) != OP_OK ||
        (st = get_int(b, 12, CHUNK_WHAT, "sy", 1, OP_MAX_ROWS, &vc->sy, err)) != OP_OK ||
        (st = get_int(b, 16, CHUNK_WHAT, "sz", 1, OP_MAX_GRID_SIDE, &vc->sz, err)) != OP_OK)
        return st;
    uint64_t voxels = (uint64_t)vc->sx * (uint64_t)vc->sy * (uint64_t)vc->sz;
    if (voxels > OP_MAX_CHUNK_VOXELS)
        return op_err_set(err, OP_ERANGE,
                          CHUNK_WHAT ": offset 8: %d x %d x %d = %llu voxels is above %u", vc->sx,
                          vc->sy, vc->sz, (unsigned long long)voxels, OP_MAX_CHUNK_VOXELS);
    uint32_t total = get_u32(b + 20);
    if ((st = get_origin(b, 24, CHUNK_WHAT, "origin x", &vc->origin_x, err)) != OP_OK ||
        (st = get_origin(b, 32, CHUNK_WHAT, "origin z", &vc->origin_z, err)) != OP_OK)
        return st;
    uint64_t ncols = (uint64_t)vc->sx * (uint64_t)vc->sz;
    uint64_t want = OP_CHUNK_HEADER_BYTES + COUNT_BYTES * ncols + RUN_BYTES * (uint64_t)total;
    if ((st = check_length(len, want, CHUNK_WHAT, err)) != OP_OK ||
        (st = chunk_columns(b, vc, total, out, err)) != OP_OK)
        return st;
    return op_voxel_chunk_validate(vc, err);
}

op_status op_chunk_parse(const void *buf, size_t len, op_arena *out, op_voxel_chunk *vc,
                         op_err *err)
{
    memset(vc, 0, sizeof *vc);
    if (!buf && len)
        return op_err_set(err, OP_EINVAL, CHUNK_WHAT ": NULL buffer of %zu bytes", len);
    op_status st = chunk_parse(buf ? buf : "", len, out, vc, err);
    if (st != OP_OK)
        memset(vc, 0, sizeof *vc);
    return st;
}

/* ==== files ==== */

/* The whole file at path into tmp (input_file.h's bounded reader). */
op_status op__read_whole(const char *path, const char *what, size_t max, op_arena *tmp,
                         uint8_t **data, size_t *len, op_err *err)
{
    return op_input_file_read(path, what, max, tmp, data, len, err);
}

op_status op_hf_read_file(const char *path, op_arena *out, op_hf_input *hf, op_err *err)
{
    return op_hf_read_file_max(path, OP_MAX_INPUT_FILE, out, hf, err);
}

op_status op_hf_read_file_max(const char *path, size_t max, op_arena *out, op_hf_input *hf,
                              op_err *err)
{
    memset(hf, 0, sizeof *hf);
    op_arena *tmp = op_arena_create(0);
    if (!tmp)
        return op_err_set(err, OP_ENOMEM, HF_WHAT ": out of memory");
    uint8_t *data;
    size_t len;
    op_status st = op__read_whole(path, HF_WHAT, max < OP_MAX_INPUT_FILE ? max : OP_MAX_INPUT_FILE,
                                  tmp, &data, &len, err);
    if (st == OP_OK)
        st = op_hf_parse(data, len, out, hf, err);
    op_arena_destroy(tmp);
    return st;
}

op_status op_chunk_read_file(const char *path, op_arena *out, op_voxel_chunk *vc, op_err *err)
{
    return op_chunk_read_file_max(path, OP_MAX_INPUT_FILE, out, vc, err);
}

op_status op_chunk_read_file_max(const char *path, size_t max, op_arena *out, op_voxel_chunk *vc,
                                 op_err *err)
{
    memset(vc, 0, sizeof *vc);
    op_arena *tmp = op_arena_create(0);
    if (!tmp)
        return op_err_set(err, OP_ENOMEM, CHUNK_WHAT ": out of memory");
    uint8_t *data;
    size_t len;
    op_status st = op__read_whole(
        path, CHUNK_WHAT, max < OP_MAX_INPUT_FILE ? max : OP_MAX_INPUT_FILE, tmp, &data, &len, err);
    if (st == OP_OK)
        st = op_chunk_parse(data, len, out, vc, err);
    op_arena_destroy(tmp);
    return st;
}

op_status op_input_sniff_file(const char *path, op_input_kind *kind, op_err *err)
{
    *kind = OP_INPUT_OTHER;
    /* O_NONBLOCK and fstat first: a FIFO or device is refused, never waited on. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return op_err_set(err, OP_EIO, "cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        /* The reader's own refusal, naming the file's kind (nothing is read or allocated). */
        uint8_t *d;
        size_t l;
        op_status st = op_input_file_read(path, "input", 0, NULL, &d, &l, err);
        return st != OP_OK ? st : op_err_set(err, OP_EINVAL, "%s is not a regular file", path);
    }
    uint8_t head[4];
    size_t n = 0;
    while (n < sizeof head) {
        ssize_t got = read(fd, head + n, sizeof head - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            close(fd);
            return op_err_set(err, OP_EIO, "cannot read %s", path);
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    *kind = op_input_sniff(head, n);
    op_err_clear(err);
    return OP_OK;
}

/* ==== writers ==== */

/* A small buffer in front of the caller's sink. */
typedef struct wbuf {
    op_write_fn write;
    void *ctx;
    size_t n;
    int failed;
    uint8_t b[4096];
} wbuf;

static void w_flush(wbuf *w)
{
    if (w->n && !w->failed && w->write(w->ctx, (const char *)w->b, w->n) != 0)
        w->failed = 1;
    w->n = 0;
}

static void w_bytes(wbuf *w, const void *p, size_t n)
{
    if (w->n + n > sizeof w->b)
        w_flush(w);
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

static void w_u8(wbuf *w, unsigned v)
{
    uint8_t b = (uint8_t)v;
    w_bytes(w, &b, 1);
}

static void w_u16(wbuf *w, unsigned v)
{
    uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    w_bytes(w, b, 2);
}

static void w_u32(wbuf *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    w_bytes(w, b, 4);
}

static void w_f64(wbuf *w, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    w_u32(w, (uint32_t)u);
    w_u32(w, (uint32_t)(u >> 32));
}

static op_status w_end(wbuf *w, const char *what, op_err *err)
{
    w_flush(w);
    if (w->failed)
        return op_err_set(err, OP_EIO, "%s: write failed", what);
    op_err_clear(err);
    return OP_OK;
}

op_status op_hf_write(const op_hf_input *hf, op_write_fn write, void *ctx, op_err *err)
{
    op_status st = op_hf_input_validate(hf, err);
    if (st != OP_OK)
        return st;
    size_t ncols = (size_t)hf->width * (size_t)hf->depth;
    uint32_t total = hf->col_start[ncols];
    if (total > OP_MAX_SPANS)
        return op_err_set(err, OP_ERANGE, HF_WHAT ": %u spans is above %u", total,
                          (unsigned)OP_MAX_SPANS);
    wbuf w = {write, ctx, 0, 0, {0}};
    w_bytes(&w, "OPHF", 4);
    w_u32(&w, OP_HFIO_VERSION);
    w_u32(&w, (uint32_t)hf->width);
    w_u32(&w, (uint32_t)hf->depth);
    w_u32(&w, (uint32_t)hf->rows);
    w_u32(&w, total);
    w_f64(&w, hf->origin_x);
    w_f64(&w, hf->origin_y);
    w_f64(&w, hf->origin_z);
    /* Spans of a column are separated, so a column holds at most 32768: a u16. */
    for (size_t c = 0; c < ncols; c++)
        w_u16(&w, hf->col_start[c + 1] - hf->col_start[c]);
    for (uint32_t i = 0; i < total; i++) {
        w_u16(&w, hf->spans[i].smin);
        w_u16(&w, hf->spans[i].smax);
        w_u8(&w, hf->spans[i].area);
    }
    return w_end(&w, HF_WHAT, err);
}

/* Maximal runs of one column. */
static unsigned column_runs(const uint8_t *col, int sy)
{
    unsigned n = 1;
    for (int j = 1; j < sy; j++)
        n += col[j] != col[j - 1];
    return n;
}

op_status op_chunk_write(const op_voxel_chunk *vc, op_write_fn write, void *ctx, op_err *err)
{
    op_status st = op_voxel_chunk_validate(vc, err);
    if (st != OP_OK)
        return st;
    size_t ncols = (size_t)vc->sx * (size_t)vc->sz, sy = (size_t)vc->sy;
    if ((uint64_t)ncols * sy > OP_MAX_CHUNK_VOXELS)
        return op_err_set(err, OP_ERANGE, CHUNK_WHAT ": %zu voxels is above %u", ncols * sy,
                          OP_MAX_CHUNK_VOXELS);
    uint64_t total = 0;
    for (size_t c = 0; c < ncols; c++)
        total += column_runs(vc->areas + c * sy, vc->sy);
    wbuf w = {write, ctx, 0, 0, {0}};
    w_bytes(&w, "OPVC", 4);
    w_u32(&w, OP_HFIO_VERSION);
    w_u32(&w, (uint32_t)vc->sx);
    w_u32(&w, (uint32_t)vc->sy);
    w_u32(&w, (uint32_t)vc->sz);
    w_u32(&w, (uint32_t)total); /* at most one run a voxel: below 2^30 */
    w_f64(&w, vc->origin_x);
    w_f64(&w, vc->origin_z);
    for (size_t c = 0; c < ncols; c++)
        w_u16(&w, column_runs(vc->areas + c * sy, vc->sy));
    for (size_t c = 0; c < ncols; c++) {
        const uint8_t *col = vc->areas + c * sy;
        size_t j0 = 0;
        for (size_t j = 1; j <= sy; j++)
            if (j == sy || col[j] != col[j0]) {
                w_u16(&w, (unsigned)(j - j0));
                w_u8(&w, col[j0]);
                j0 = j;
            }
    }
    return w_end(&w, CHUNK_WHAT, err);
}
