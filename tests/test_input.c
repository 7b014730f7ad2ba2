/* Input validation (build3d-polys.md §6): each refusal by name, message naming index and value. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "onepath/input.h"

static const float good_verts[] = {0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1};
static const int good_tris[] = {0, 2, 1, 1, 2, 3};

static op_soup soup_of(const float *v, size_t nv, const int *t, size_t nt)
{
    op_soup s = {v, nv, t, nt, NULL};
    return s;
}

Test(input, good_soup_passes)
{
    op_soup s = soup_of(good_verts, 12, good_tris, 6);
    op_err e;
    cr_assert_eq(op_soup_validate(&s, &e), OP_OK, "%s", e.msg);
    float bmin[3], bmax[3];
    op_soup_bounds(&s, bmin, bmax);
    cr_assert(bmin[0] == 0 && bmax[0] == 1 && bmax[2] == 1 && bmin[1] == 0 && bmax[1] == 0);
}

Test(input, lengths_not_multiple_of_three_are_bad_arguments)
{
    op_err e;
    op_soup s = soup_of(good_verts, 11, good_tris, 6);
    cr_assert_eq(op_soup_validate(&s, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "11"), "%s", e.msg);
    s = soup_of(good_verts, 12, good_tris, 5);
    cr_assert_eq(op_soup_validate(&s, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "5"), "%s", e.msg);
}

Test(input, non_finite_coordinate_is_a_bad_argument_naming_the_vertex)
{
    float v[12];
    memcpy(v, good_verts, sizeof v);
    v[7] = NAN; /* vertex 2, y */
    op_soup s = soup_of(v, 12, good_tris, 6);
    op_err e;
    cr_assert_eq(op_soup_validate(&s, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "vertex 2 y"), "%s", e.msg);
    v[7] = INFINITY;
    cr_assert_eq(op_soup_validate(&s, &e), OP_EINVAL);
}

Test(input, coordinate_beyond_2_pow_21_is_out_of_range_naming_vertex_and_value)
{
    float v[12];
    memcpy(v, good_verts, sizeof v);
    v[9] = 2097152.0f; /* exactly 2^21: allowed */
    op_soup s = soup_of(v, 12, good_tris, 6);
    op_err e;
    cr_assert_eq(op_soup_validate(&s, &e), OP_OK, "%s", e.msg);
    v[9] = -2097153.0f;
    cr_assert_eq(op_soup_validate(&s, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "vertex 3 x") && strstr(e.msg, "-2097153"), "%s", e.msg);
}

Test(input, index_out_of_range_names_triangle_and_index)
{
    int t[6] = {0, 2, 1, 1, 2, 4};
    op_soup s = soup_of(good_verts, 12, t, 6);
    op_err e;
    cr_assert_eq(op_soup_validate(&s, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "triangle 1") && strstr(e.msg, "index 4"), "%s", e.msg);
    t[5] = -1;
    cr_assert_eq(op_soup_validate(&s, &e), OP_ERANGE);
}

Test(input, area_above_63_is_out_of_range)
{
    uint8_t areas[2] = {63, 64};
    op_soup s = soup_of(good_verts, 12, good_tris, 6);
    s.areas = areas;
    op_err e;
    cr_assert_eq(op_soup_validate(&s, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "triangle 1 area 64"), "%s", e.msg);
}

Test(input, heightfield_input_checks)
{
    uint32_t cols[5] = {0, 2, 2, 3, 3};
    op_span_in spans[3] = {{0, 2, 63}, {5, 9, 63}, {1, 4, 1}};
    op_hf_input hf = {2, 2, 10, 0, 0, 0, cols, spans};
    op_err e;
    cr_assert_eq(op_hf_input_validate(&hf, &e), OP_OK, "%s", e.msg);
    spans[1].smin = 2; /* touches the span below: not above its top */
    cr_assert_eq(op_hf_input_validate(&hf, &e), OP_EINVAL);
    spans[1].smin = 5;
    spans[1].smax = 11; /* beyond rows */
    cr_assert_eq(op_hf_input_validate(&hf, &e), OP_ERANGE);
    spans[1].smax = 9;
    hf.rows = 70000;
    cr_assert_eq(op_hf_input_validate(&hf, &e), OP_ERANGE);
    hf.rows = 10;
    hf.origin_y = NAN;
    cr_assert_eq(op_hf_input_validate(&hf, &e), OP_EINVAL);
}

Test(input, voxel_chunk_checks)
{
    uint8_t areas[2 * 3 * 2] = {0};
    op_voxel_chunk vc = {2, 3, 2, 0.0, 0.0, areas};
    op_err e;
    cr_assert_eq(op_voxel_chunk_validate(&vc, &e), OP_OK, "%s", e.msg);
    areas[(1 * 2 + 0) * 3 + 2] = 64; /* voxel (0, 2, 1) */
    cr_assert_eq(op_voxel_chunk_validate(&vc, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "(0, 2, 1)"), "%s", e.msg);
    areas[(1 * 2 + 0) * 3 + 2] = 0;
    vc.sy = 0;
    cr_assert_eq(op_voxel_chunk_validate(&vc, &e), OP_ERANGE);
}
