/* OBJ reader and writer: every refusal by name with its line, index forms, fan
 * triangulation, the shared levels, number conversion against the C library (in the
 * C locale) as an independent oracle, write -> parse round trips, and a replay of
 * nasty inputs (tests/fuzz/corpus plus random mutations), inputs ending at a guard page. */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS for the guard-page test */
#include <criterion/criterion.h>
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "onepath/levelgen.h"
#include "onepath/obj.h"
#include "op_test.h"

static op_arena *arena;

static void setup(void)
{
    arena = op_arena_create(0);
}

static void teardown(void)
{
    op_arena_destroy(arena);
}

static op_status parse_str(const char *text, op_soup *soup, op_err *err)
{
    return op_obj_parse(text, strlen(text), arena, soup, err);
}

/* A refusal: the status, the line number and a fragment saying what was wrong. */
static void expect_refusal(const char *text, size_t len, op_status want, int line, const char *what)
{
    op_soup soup;
    op_err err;
    op_status st = op_obj_parse(text, len, arena, &soup, &err);
    cr_assert_eq(st, want, "status %s, want %s (%s)", op_status_name(st), op_status_name(want),
                 err.msg);
    char tag[32];
    snprintf(tag, sizeof tag, "line %d", line);
    cr_assert(strstr(err.msg, tag), "message '%s' does not name %s", err.msg, tag);
    cr_assert(strstr(err.msg, what), "message '%s' does not say '%s'", err.msg, what);
    cr_assert_eq(soup.verts_len + soup.tris_len, 0, "a refused parse left a soup");
}

static void refuse(const char *text, op_status want, int line, const char *what)
{
    expect_refusal(text, strlen(text), want, line, what);
}

#define V3 "v 0 0 0\nv 1 0 0\nv 0 0 1\n"

TestSuite(obj, .init = setup, .fini = teardown);

Test(obj, refuses_a_nul_byte)
{
    static const char text[] = "v 0 0 0\nv 1 \0 0\n";
    expect_refusal(text, sizeof text - 1, OP_EINVAL, 2, "NUL byte at column 5");
}

Test(obj, refuses_a_line_longer_than_the_limit)
{
    /* OP_OBJ_MAX_LINE bytes are accepted, one more is refused (a comment line). */
    size_t n = OP_OBJ_MAX_LINE;
    char *text = malloc(n + 16);
    memcpy(text, "v 0 0 0\n", 8);
    text[8] = '#';
    memset(text + 9, 'x', n - 1);
    text[8 + n] = '\n';
    op_soup soup;
    op_err err;
    cr_assert_eq(op_obj_parse(text, 8 + n + 1, arena, &soup, &err), OP_OK, "%s", err.msg);
    text[8 + n] = 'x';
    text[8 + n + 1] = '\n';
    expect_refusal(text, 8 + n + 2, OP_EINVAL, 2, "longer than");
    /* Without a final newline too. */
    expect_refusal(text, 8 + n + 1, OP_EINVAL, 2, "longer than");
    free(text);
}

Test(obj, refuses_bad_numbers)
{
    refuse("v 0 0 0\nv 1 abc 0\n", OP_EINVAL, 2, "vertex y 'abc' is not a number");
    refuse("v 1.2.3 0 0\n", OP_EINVAL, 1, "vertex x '1.2.3'");
    refuse("v 1e 0 0\n", OP_EINVAL, 1, "not a number");
    refuse("v 1e+ 0 0\n", OP_EINVAL, 1, "not a number");
    refuse("v . 0 0\n", OP_EINVAL, 1, "not a number");
    refuse("v - 0 0\n", OP_EINVAL, 1, "not a number");
    refuse("v 0x10 0 0\n", OP_EINVAL, 1, "not a number");
    refuse("v 0 0 1,5\n", OP_EINVAL, 1, "vertex z '1,5'");
    refuse("v 0 0 0 w\n", OP_EINVAL, 1, "vertex w 'w'");
}

Test(obj, refuses_missing_and_extra_coordinates)
{
    refuse("\n\nv 1 2\n", OP_EINVAL, 3, "vertex has 2 coordinates, needs x y z");
    refuse("v\n", OP_EINVAL, 1, "vertex has 0 coordinates");
    refuse("v 1 2 3 4 5 6 7 8\n", OP_EINVAL, 1, "more than 7 numbers");
    /* A comment ends the numbers. */
    refuse("v 1 2 # 3\n", OP_EINVAL, 1, "2 coordinates");
}

Test(obj, refuses_non_finite_coordinates)
{
    refuse("v inf 0 0\n", OP_EINVAL, 1, "vertex x 'inf' is not finite");
    refuse("v 0 -Infinity 0\n", OP_EINVAL, 1, "vertex y '-Infinity' is not finite");
    refuse("v 0 0 nan\n", OP_EINVAL, 1, "vertex z 'nan' is not finite");
    refuse("# big\nv 0 0 1e39\n", OP_EINVAL, 2, "not finite");
    refuse("v 0 0 3.5e38\n", OP_EINVAL, 1, "not finite");
    refuse("v 0 0 0 nan\n", OP_EINVAL, 1, "vertex w 'nan' is not finite");
}

Test(obj, refuses_coordinates_beyond_max_coord)
{
    refuse("v 2097152.5 0 0\n", OP_ERANGE, 1, "vertex x = 2097152.5 is beyond");
    refuse("v 0 0 -3e6\n", OP_ERANGE, 1, "vertex z");
    op_soup soup;
    op_err err;
    cr_assert_eq(parse_str("v 2097152 -2097152 0\n", &soup, &err), OP_OK, "%s", err.msg);
}

Test(obj, refuses_index_zero)
{
    refuse(V3 "f 1 2 0\n", OP_EINVAL, 4, "corner 3 has index 0");
}

Test(obj, refuses_indices_out_of_range)
{
    refuse(V3 "f 1 2 4\n", OP_EINVAL, 4, "index 4 is outside the 3 vertices");
    refuse(V3 "f -4 1 2\n", OP_EINVAL, 4, "index -4 is outside the 3 vertices");
    refuse(V3 "f 1 2 99999999999999999999\n", OP_EINVAL, 4, "is outside");
    /* No forward references: the face names a vertex that comes later. */
    refuse("v 0 0 0\nv 1 0 0\nf 1 2 3\nv 0 0 1\n", OP_EINVAL, 3, "index 3 is outside the 2");
    refuse("f 1 2 3\n", OP_EINVAL, 1, "outside the 0 vertices");
}

Test(obj, refuses_faces_with_fewer_than_three_corners)
{
    refuse(V3 "f 1 2\n", OP_EINVAL, 4, "face has 2 corners, needs at least 3");
    refuse(V3 "\nf\n", OP_EINVAL, 5, "face has 0 corners");
    refuse(V3 "f 1 # 2 3\n", OP_EINVAL, 4, "1 corner,");
}

Test(obj, refuses_malformed_corners)
{
    static const char *const bad[] = {"1/",  "1//",  "//1", "1/2/3/4", "a",
                                      "1/a", "1/2/", "1x",  "+",       "1 /2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, V3 "f 1 2 %s\n", bad[i]);
        op_soup soup;
        op_err err;
        cr_assert_eq(parse_str(text, &soup, &err), OP_EINVAL, "'%s' accepted", bad[i]);
        cr_assert(strstr(err.msg, "line 4"), "'%s': %s", bad[i], err.msg);
    }
    refuse(V3 "f 1 2 3/x\n", OP_EINVAL, 4, "corner 3 '3/x' is not i, i/t, i//n or i/t/n");
}

Test(obj, messages_clip_long_and_unprintable_tokens)
{
    char text[300];
    memset(text, 'z', sizeof text);
    memcpy(text, "v 1 2 \x01", 7);
    text[sizeof text - 1] = '\n';
    op_soup soup;
    op_err err;
    cr_assert_eq(op_obj_parse(text, sizeof text, arena, &soup, &err), OP_EINVAL);
    cr_assert(strstr(err.msg, "'?zzzzzzzzzzzzzzzzzzzzzzz...'"), "%s", err.msg);
}

static void expect_tris(const op_soup *s, const int *want, size_t n)
{
    cr_assert_eq(s->tris_len, n, "%zu indices, want %zu", s->tris_len, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(s->tris[i], want[i], "index %zu: %d, want %d", i, s->tris[i], want[i]);
}

Test(obj, fan_triangulates_polygons_from_the_first_corner)
{
    op_soup s;
    op_err err;
    cr_assert_eq(parse_str(V3 "v 1 0 1\nv 2 0 2\nf 1 2 3 4 5\n", &s, &err), OP_OK, "%s", err.msg);
    static const int want[] = {0, 1, 2, 0, 2, 3, 0, 3, 4};
    expect_tris(&s, want, 9);
    cr_assert_eq(s.verts_len, 15);
    cr_assert_null(s.areas);
}

Test(obj, negative_indices_count_back_from_the_vertices_read_so_far)
{
    op_soup s;
    op_err err;
    cr_assert_eq(parse_str(V3 "f -3 -2 -1\nv 5 0 5\nf -1 -3 -4\nf 1 -1 2\n", &s, &err), OP_OK, "%s",
                 err.msg);
    static const int want[] = {0, 1, 2, 3, 1, 0, 0, 3, 1};
    expect_tris(&s, want, 9);
}

Test(obj, corner_forms_with_texture_and_normal_indices)
{
    op_soup s;
    op_err err;
    cr_assert_eq(parse_str(V3 "vt 0 0\nvn 0 1 0\nf 1/1 2/1 3/1\nf 3//1 2//-1 1//1\n"
                              "f 1/1/1 +2/2/2 -1/-1/-1\n",
                           &s, &err),
                 OP_OK, "%s", err.msg);
    static const int want[] = {0, 1, 2, 2, 1, 0, 0, 1, 2};
    expect_tris(&s, want, 9);
}

Test(obj, other_statements_comments_and_line_ends_are_ignored)
{
    const char *text = "\xef\xbb\xbf# a comment\r\n"
                       "mtllib a.mtl\r\n"
                       "o thing\n"
                       "g group\n"
                       "s off\n"
                       "usemtl stone\n"
                       "vn 0 1 0\n"
                       "vt 0.5 0.5\n"
                       "l 1 2\n"
                       "\n"
                       "   \t\n"
                       "v 1 2 3 # inline\r\n"
                       "v\t4 5 6 1.0\n"
                       "v 7 8 9 0.1 0.2 0.3\n"
                       "  f 1 2 3  \r\n"
                       "vx not a vertex\n"
                       "fo not a face";
    op_soup s;
    op_err err;
    cr_assert_eq(parse_str(text, &s, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(s.verts_len, 9);
    for (int i = 0; i < 9; i++)
        cr_assert_eq(s.verts[i], (float)(i + 1));
    static const int want[] = {0, 1, 2};
    expect_tris(&s, want, 3);
}

Test(obj, empty_input_is_an_empty_soup)
{
    op_soup s;
    op_err err;
    cr_assert_eq(op_obj_parse(NULL, 0, arena, &s, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(s.verts_len + s.tris_len, 0);
    cr_assert_eq(parse_str("# nothing\n", &s, &err), OP_OK);
    cr_assert_eq(op_soup_validate(&s, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(op_obj_parse("v", 1, NULL, &s, &err), OP_EINVAL);
}

static void check_level(const char *name, size_t tris, const float lo[3], const float hi[3])
{
    op_soup s;
    op_err err;
    cr_assert_eq(op_obj_read_file(op_test_level(name), arena, &s, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(s.tris_len / 3, tris, "%s: %zu triangles", name, s.tris_len / 3);
    cr_assert_eq(op_soup_validate(&s, &err), OP_OK, "%s", err.msg);
    float bmin[3], bmax[3];
    op_soup_bounds(&s, bmin, bmax);
    for (int a = 0; a < 3; a++) {
        /* The README rounds to 0.1 (y of dungeon to 0.001). */
        cr_assert(fabsf(bmin[a] - lo[a]) < 0.06f, "%s min %c %g", name, "xyz"[a], bmin[a]);
        cr_assert(fabsf(bmax[a] - hi[a]) < 0.06f, "%s max %c %g", name, "xyz"[a], bmax[a]);
    }
}

Test(obj, reads_the_shared_levels)
{
    static const float dlo[3] = {-25.0f, -0.003f, -90.0f}, dhi[3] = {49.3f, 40.2f, 8.9f};
    static const float ulo[3] = {4999.1f, -4.05f, 4999.6f}, uhi[3] = {5098.0f, 6.81f, 5098.8f};
    check_level("dungeon.obj", 10133, dlo, dhi);
    check_level("undulating.obj", 5202, ulo, uhi);
}

Test(obj, read_file_refusals_name_the_file)
{
    op_soup s;
    op_err err;
    cr_assert_eq(op_obj_read_file("/nonexistent/level.obj", arena, &s, &err), OP_EIO);
    cr_assert(strstr(err.msg, "/nonexistent/level.obj"), "%s", err.msg);
    char path[] = "/tmp/test_obj_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    const char *text = V3 "f 1 2 7\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    cr_assert_eq(op_obj_read_file(path, arena, &s, &err), OP_EINVAL);
    cr_assert(strstr(err.msg, path) && strstr(err.msg, "line 4"), "%s", err.msg);
    unlink(path);
}

Test(obj, refuses_a_fifo_without_waiting_for_a_writer, .timeout = 10)
{
    /* A FIFO is not a regular file: refused at once, naming it (the reader opens without
     * blocking, so a FIFO with no writer cannot hang it), where it once was read to its end. */
    char path[] = "/tmp/test_obj_fifo_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    op_soup piped;
    op_err err;
    op_status st = op_obj_read_file(path, arena, &piped, &err);
    unlink(path);
    cr_assert_neq(st, OP_OK, "a FIFO was read");
    cr_assert(strstr(err.msg, path) && strstr(err.msg, "FIFO"), "%s", err.msg);
}

/* ===== numbers against the C library (the test runs in the C locale) ===== */

static void expect_parse_as_strtof(const char *s)
{
    float got, want = strtof(s, NULL);
    cr_assert_eq(op_obj_parse_float(s, strlen(s), &got), 0, "'%s' refused", s);
    uint32_t a, b;
    memcpy(&a, &got, 4);
    memcpy(&b, &want, 4);
    cr_assert_eq(a, b, "'%s': got %a, strtof %a", s, (double)got, (double)want);
}

Test(obj, numbers_round_correctly_like_strtof)
{
    static const char *const edge[] = {
        "0",
        "-0",
        "1",
        "0.1",
        "3.14159265358979323846",
        "16777217",
        "16777219",
        "1.00000005960464477539", /* halfway between 1 and its successor: ties to even */
        "1.0000000596046447753906250000000000001",
        "1.00000017881393432617187499",
        "340282346638528859811704183484516925440",
        "3.4028235e38",
        "3.40282356e38",
        "1.17549435e-38",
        "1.1754942e-38",
        "1.4e-45",
        "1e-45",
        "7.006492321624085e-46",
        "7.006492321624086e-46",
        "7e-46",
        "2.5e-45",
        "123456789012345678901234567890",
        "0.000000000000000000000000000000000000000000001401298464324817070923729583289916",
        "4951760157141521099596496896",
        "2097152.5",
        "-1234.5678e-2",
        ".5",
        "5.",
        "+7",
        "1E3",
        "00000000000000000000000000000000000000001.5",
        "0.0000000000000000000000000000000000000000000000000000000000000001e64"};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        expect_parse_as_strtof(edge[i]);
    /* A digit string longer than the 128 kept digits, exactly at a halfway point and
     * just above it: 1 + 2^-24 followed by zeros and then a 1. */
    char big[400];
    snprintf(big, sizeof big, "1.000000059604644775390625%0300d", 0);
    expect_parse_as_strtof(big);
    big[strlen(big) - 1] = '1';
    expect_parse_as_strtof(big);
}

Test(obj, random_decimals_round_like_strtof)
{
    op_test_rng r = {42};
    char s[64];
    for (int i = 0; i < 200000; i++) {
        int mode = (int)(op_test_rand(&r) % 3);
        if (mode == 0) { /* random float printed with 6..12 digits */
            uint32_t u = (uint32_t)op_test_rand(&r) & 0x7f7fffff;
            float f;
            memcpy(&f, &u, 4);
            snprintf(s, sizeof s, "%.*g", op_test_rand_int(&r, 6, 12), (double)f);
        } else if (mode == 1) { /* level-like fixed decimals */
            snprintf(s, sizeof s, "%.*f", op_test_rand_int(&r, 0, 10),
                     (op_test_rand01(&r) - 0.5) * pow(10, op_test_rand_int(&r, -3, 7)));
        } else { /* random digits and exponent */
            int n = snprintf(s, sizeof s, "%llu",
                             (unsigned long long)(op_test_rand(&r) >> op_test_rand_int(&r, 0, 60)));
            snprintf(s + n, sizeof s - (size_t)n, "e%d", op_test_rand_int(&r, -70, 30));
        }
        float got, want = strtof(s, NULL);
        if (!isfinite(want))
            continue;
        cr_assert_eq(op_obj_parse_float(s, strlen(s), &got), 0, "'%s'", s);
        cr_assert(memcmp(&got, &want, 4) == 0, "'%s': got %a, strtof %a", s, (double)got,
                  (double)want);
    }
}

/* The formatter's decimal equals glibc's %.8e digits (9 significant, exact rounding),
 * and reads back to the same bits. */
static void expect_format(float f)
{
    char mine[OP_OBJ_FLOAT_MAX], ref[64];
    size_t n = op_obj_format_float(f, mine);
    cr_assert_eq(n, strlen(mine));
    cr_assert(n < OP_OBJ_FLOAT_MAX);
    cr_assert(!strchr(mine, 'e'), "%s", mine);
    snprintf(ref, sizeof ref, "%.8e", (double)f);
    cr_assert_eq(strtod(mine, NULL), strtod(ref, NULL), "%a: '%s' vs '%s'", (double)f, mine, ref);
    float back;
    cr_assert_eq(op_obj_parse_float(mine, n, &back), 0);
    cr_assert(memcmp(&back, &f, 4) == 0 || (f == 0 && back == 0), "'%s' reads back as %a", mine,
              (double)back);
}

Test(obj, floats_format_exactly_and_round_trip)
{
    static const float edge[] = {0.0f,         -0.0f,        1.0f,          0.5f,
                                 -12.0f,       0.1f,         1e-45f,        1.17549435e-38f,
                                 FLT_MAX,      -FLT_MAX,     1000.015625f,  16777216.0f,
                                 123456789.0f, 999999999.0f, 9.99999999e9f, 2097152.0f};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        expect_format(edge[i]);
    char buf[OP_OBJ_FLOAT_MAX];
    op_obj_format_float(0.5f, buf);
    cr_assert_str_eq(buf, "0.5");
    op_obj_format_float(-12.0f, buf);
    cr_assert_str_eq(buf, "-12");
    op_obj_format_float(1000.015625f, buf);
    cr_assert_str_eq(buf, "1000.01562"); /* 9 digits, the tie goes to the even 2 */
    op_obj_format_float(0.1f, buf);
    cr_assert_str_eq(buf, "0.100000001");
    op_obj_format_float(1e-45f, buf);
    cr_assert_str_eq(buf, "0.00000000000000000000000000000000000000000000140129846");
    op_test_rng r = {7};
    for (int i = 0; i < 100000; i++) {
        uint32_t u = (uint32_t)op_test_rand(&r) & 0xff7fffff; /* finite, either sign */
        float f;
        memcpy(&f, &u, 4);
        expect_format(f);
    }
}

/* ===== writing and round trips ===== */

typedef struct mem_sink {
    char *buf;
    size_t len, cap;
    int fail_after; /* calls until failure; -1 never */
} mem_sink;

static int mem_write(void *ctx, const char *data, size_t len)
{
    mem_sink *m = ctx;
    if (m->fail_after == 0)
        return -1;
    if (m->fail_after > 0)
        m->fail_after--;
    if (m->len + len > m->cap) {
        m->cap = (m->len + len) * 2;
        m->buf = realloc(m->buf, m->cap);
    }
    memcpy(m->buf + m->len, data, len);
    m->len += len;
    return 0;
}

static void expect_round_trip(const op_soup *s)
{
    mem_sink m = {NULL, 0, 0, -1};
    op_err err;
    cr_assert_eq(op_obj_write(s, mem_write, &m, &err), OP_OK, "%s", err.msg);
    op_soup back;
    cr_assert_eq(op_obj_parse(m.buf, m.len, arena, &back, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(back.verts_len, s->verts_len);
    cr_assert_eq(back.tris_len, s->tris_len);
    cr_assert(s->verts_len == 0 || memcmp(back.verts, s->verts, s->verts_len * sizeof(float)) == 0,
              "vertices differ");
    cr_assert(s->tris_len == 0 || memcmp(back.tris, s->tris, s->tris_len * sizeof(int)) == 0,
              "triangles differ");
    free(m.buf);
}

Test(obj, write_then_parse_gives_the_same_soup)
{
    op_test_rng r = {99};
    enum { NV = 500, NT = 700 };
    static float verts[3 * NV];
    static int tris[3 * NT];
    for (int i = 0; i < 3 * NV; i++)
        verts[i] = (float)((op_test_rand01(&r) - 0.5) * pow(10, op_test_rand_int(&r, -30, 6)));
    for (int i = 0; i < 3 * NT; i++)
        tris[i] = op_test_rand_int(&r, 0, NV - 1);
    op_soup s = {verts, 3 * NV, tris, 3 * NT, NULL};
    expect_round_trip(&s);
    op_soup empty = {NULL, 0, NULL, 0, NULL};
    expect_round_trip(&empty);
    op_soup level;
    op_err err;
    cr_assert_eq(op_obj_read_file(op_test_level("dungeon.obj"), arena, &level, &err), OP_OK);
    expect_round_trip(&level);
    cr_assert_eq(op_levelgen("multifloor", 32, 5, arena, &level, &err), OP_OK, "%s", err.msg);
    expect_round_trip(&level);
}

Test(obj, writer_output_format)
{
    static const float verts[] = {0, 0.5f, -1, 1024.25f, 2, 3, 4, 5, 6.015625f};
    static const int tris[] = {0, 1, 2};
    op_soup s = {verts, 9, tris, 3, NULL};
    mem_sink m = {NULL, 0, 0, -1};
    op_err err;
    cr_assert_eq(op_obj_write(&s, mem_write, &m, &err), OP_OK, "%s", err.msg);
    const char *want = "# onepath obj: 3 vertices, 1 triangles\n"
                       "v 0 0.5 -1\nv 1024.25 2 3\nv 4 5 6.015625\nf 1 2 3\n";
    cr_assert_eq(m.len, strlen(want));
    cr_assert(memcmp(m.buf, want, m.len) == 0, "%.*s", (int)m.len, m.buf);
    free(m.buf);
}

Test(obj, writer_refusals)
{
    static const float bad[] = {0, NAN, 0};
    static const int tris[] = {0, 0, 0};
    op_soup s = {bad, 3, tris, 3, NULL};
    mem_sink m = {NULL, 0, 0, -1};
    op_err err;
    cr_assert_eq(op_obj_write(&s, mem_write, &m, &err), OP_EINVAL);
    cr_assert(strstr(err.msg, "vertex 0 y"), "%s", err.msg);
    static const float ok[] = {0, 1, 0};
    s.verts = ok;
    m.fail_after = 0;
    cr_assert_eq(op_obj_write(&s, mem_write, &m, &err), OP_EIO);
    free(m.buf);
}

/* ===== memory ===== */

Test(obj, allocation_failures_give_enomem)
{
    const char *text = V3 "f 1 2 3\n";
    for (long n = 0; n < 2; n++) {
        op_arena *a = op_arena_create(0);
        op_arena_fail_after(a, n);
        op_soup s;
        op_err err;
        cr_assert_eq(op_obj_parse(text, strlen(text), a, &s, &err), OP_ENOMEM, "fail after %ld", n);
        cr_assert(strstr(err.msg, "bytes"), "%s", err.msg);
        op_arena_destroy(a);
    }
}

/* ===== nasty inputs ===== */

/* Any outcome but a crash: OK with a valid soup, or a refusal naming a line. */
static void survive(const char *buf, size_t len, const char *what)
{
    op_arena_mark mk = op_arena_get_mark(arena);
    op_soup s;
    op_err err;
    op_status st = op_obj_parse(buf, len, arena, &s, &err);
    if (st == OP_OK) {
        cr_assert_eq(op_soup_validate(&s, &err), OP_OK, "%s: %s", what, err.msg);
    } else {
        cr_assert(st == OP_EINVAL || st == OP_ERANGE, "%s: %s", what, op_status_name(st));
        cr_assert(strstr(err.msg, "obj: line "), "%s: '%s'", what, err.msg);
    }
    op_arena_release(arena, mk);
}

Test(obj, replays_the_corpus_of_nasty_inputs)
{
    /* OP_GOLDEN_DIR is <tests>/golden, which need not exist yet. */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", OP_GOLDEN_DIR);
    char *slash = strrchr(dir, '/');
    cr_assert(slash);
    snprintf(slash, sizeof dir - (size_t)(slash - dir), "/fuzz/corpus");
    DIR *d = opendir(dir);
    cr_assert(d, "no corpus at %s", dir);
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        cr_assert(f, "%s", path);
        static char buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        survive(buf, n, e->d_name);
        files++;
    }
    closedir(d);
    cr_assert(files >= 10, "only %d corpus files", files);
}

Test(obj, random_mutations_never_crash)
{
    static const char seed[] = "# level\nv 0 0 0\nv 1 0.5 0\nv 0 -1e-3 1\nv 1 1 1 1\n"
                               "vt 0 0\nf 1/1 2/1 3/1\nf -1 -2 -3 -4\nf 1//1 2//1 4//1\n";
    static const char alphabet[] = "0123456789-+.eE/ \t\r\n#vfinaINA\0\xff";
    op_test_rng r = {1234};
    char buf[sizeof seed + 64];
    for (int i = 0; i < 20000; i++) {
        size_t n = sizeof seed - 1;
        memcpy(buf, seed, n);
        int edits = op_test_rand_int(&r, 1, 6);
        for (int k = 0; k < edits; k++) {
            size_t at = (size_t)op_test_rand_int(&r, 0, (int)n - 1);
            char c = alphabet[op_test_rand_int(&r, 0, (int)sizeof alphabet - 2)];
            int op = op_test_rand_int(&r, 0, 2);
            if (op == 0) {
                buf[at] = c;
            } else if (op == 1 && n + 1 < sizeof buf) {
                memmove(buf + at + 1, buf + at, n - at);
                buf[at] = c;
                n++;
            } else if (n > 1) {
                memmove(buf + at, buf + at + 1, n - at - 1);
                n--;
            }
        }
        survive(buf, (size_t)op_test_rand_int(&r, 0, (int)n), "mutation");
    }
}

Test(obj, inputs_ending_at_a_guard_page_are_not_over_read)
{
    static const char *const texts[] = {V3 "f 1 2 3", "v 1 2 3",     "v 1 2 3e",
                                        "v 1 2 -",    V3 "f 1 2 3/", V3 "f 1 2 -",
                                        "#",          "v",           "\xef\xbb"};
    long page = sysconf(_SC_PAGESIZE);
    char *mem =
        mmap(NULL, (size_t)(2 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(mem != MAP_FAILED);
    cr_assert_eq(mprotect(mem + page, (size_t)page, PROT_NONE), 0);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        size_t n = strlen(texts[i]);
        char *at = mem + page - n;
        memcpy(at, texts[i], n);
        survive(at, n, texts[i]);
    }
    munmap(mem, (size_t)(2 * page));
}
