/* Settings: defaults, derived values (build3d-polys.md §1), range checks naming the field. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "onepath/settings.h"
#include "onepath/status.h"

Test(settings, defaults_validate)
{
    op_settings s;
    op_err e;
    op_settings_default(&s);
    cr_assert_eq(op_settings_validate(&s, &e), OP_OK, "%s", e.msg);
}

Test(settings, cosine_45_degrees_is_exact_taylor_value)
{
    /* The spec's stated value for 45 degrees. */
    float c = op_cos_degrees(45.0);
    cr_assert_eq(c, 0.70710677f, "got %.9g", (double)c);
    /* Independent check: the series agrees with libm's cos to float precision over the range. */
    for (int d = 0; d < 90; d++) {
        double ref = cos(d * 3.14159265358979323846 / 180.0);
        cr_assert(fabs((double)op_cos_degrees(d) - ref) < 1e-6, "degree %d", d);
    }
    cr_assert_eq(op_cos_degrees(0.0), 1.0f);
}

Test(settings, derived_span_settings_follow_the_demo_values)
{
    op_settings s;
    op_span_settings ss;
    op_tile_grid g;
    op_settings_default(&s);
    op_span_settings_derive(&s, &ss);
    op_tile_grid_derive(&s, &g);
    /* 2.0 / 0.2 = 10 rows; 0.9 / 0.2 = 4.5 -> 4; 0.6 / 0.3 = 2 cells (all float32). */
    cr_assert_eq(ss.walkable_height, (int)ceilf(2.0f / 0.2f));
    cr_assert_eq(ss.walkable_climb, (int)floorf(0.9f / 0.2f));
    cr_assert_eq(ss.walkable_radius, (int)ceilf(0.6f / 0.3f));
    cr_assert_eq(ss.merge_threshold, ss.walkable_climb);
    cr_assert_eq(g.tile_cells, 32);
    cr_assert_eq(g.border, ss.walkable_radius + 3);
    cr_assert_eq(g.grid_cells, 32 + 2 * g.border);
    cr_assert_eq(g.cs, 9.6 / 32.0);
}

/* §1 divides the nominal float32 sizes in float32: values where double division lands on the
 * other side of an integer. climb 0.6 / 0.2: 3 in float32 (the spec's example), 2.9999999999999996
 * in double; height 2.1 / 0.3 and radius 2.7 / 0.3: 7 and 9 in float32, 8 and 10 in double. */
Test(settings, span_settings_divide_in_float32)
{
    op_settings s;
    op_span_settings ss;
    op_settings_default(&s);
    s.agent_max_climb = 0.6;
    s.cell_height = 0.2;
    op_span_settings_derive(&s, &ss);
    cr_assert_eq(ss.walkable_climb, 3);
    cr_assert_eq((int)floor(0.6 / 0.2), 2, "the example no longer tells float from double");
    s.agent_height = 2.1;
    s.cell_height = 0.3;
    op_span_settings_derive(&s, &ss);
    cr_assert_eq(ss.walkable_height, (int)ceilf(2.1f / 0.3f));
    cr_assert_neq(ss.walkable_height, (int)ceil(2.1 / 0.3));
    s.agent_radius = 2.7;
    s.cell_size = 0.3;
    op_span_settings_derive(&s, &ss);
    cr_assert_eq(ss.walkable_radius, (int)ceilf(2.7f / 0.3f));
    cr_assert_neq(ss.walkable_radius, (int)ceil(2.7 / 0.3));
}

Test(settings, tile_cells_tolerance)
{
    op_settings s;
    op_tile_grid g;
    op_settings_default(&s);
    s.tile_size = 10.0;
    s.cell_size = 0.3; /* 33.33 -> 34 cells, cs = 10 / 34 <= 0.3 */
    op_tile_grid_derive(&s, &g);
    cr_assert_eq(g.tile_cells, 34);
    cr_assert(g.cs <= s.cell_size + 1e-4);
    s.tile_size = 9.60001; /* within 1e-4 of 32 cells: stays 32 */
    op_tile_grid_derive(&s, &g);
    cr_assert_eq(g.tile_cells, 32);
    s.tile_size = 0.01; /* less than a cell: one cell */
    op_tile_grid_derive(&s, &g);
    cr_assert_eq(g.tile_cells, 1);
}

static void expect_range_error(const char *key, const char *value)
{
    op_settings s;
    op_err e;
    op_settings_default(&s);
    cr_assert_eq(op_settings_set(&s, key, value, &e), OP_OK, "%s", e.msg);
    op_status st = op_settings_validate(&s, &e);
    cr_assert(st == OP_ERANGE || st == OP_EINVAL, "%s=%s accepted", key, value);
    cr_assert(strstr(e.msg, key) != NULL, "message '%s' does not name %s", e.msg, key);
}

Test(settings, out_of_range_values_name_the_field)
{
    expect_range_error("cell_size", "0");
    expect_range_error("cell_size", "-1");
    expect_range_error("cell_height", "nan");
    expect_range_error("agent_max_slope", "90");
    expect_range_error("max_verts_per_poly", "7");
    expect_range_error("max_verts_per_poly", "2");
    expect_range_error("area", "64");
    expect_range_error("min_region_area", "-1");
    expect_range_error("tile_size", "inf");
    expect_range_error("grid_origin_x", "32768.5");
    expect_range_error("grid_origin_z", "-40000");
    expect_range_error("grid_origin_x", "nan");
    expect_range_error("grid_origin_z", "inf");
}

Test(settings, grid_origin_defaults_to_zero_and_bounds_are_inclusive)
{
    op_settings s;
    op_err e;
    op_settings_default(&s);
    cr_assert(s.grid_origin_x == 0.0 && s.grid_origin_z == 0.0);
    cr_assert_eq(op_settings_set(&s, "grid_origin_x", "-32768", &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_settings_set(&s, "grid_origin_z", "32768", &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_settings_validate(&s, &e), OP_OK, "%s", e.msg);
    cr_assert(s.grid_origin_x == -32768.0 && s.grid_origin_z == 32768.0);
    op_tile_grid g;
    op_tile_grid_derive(&s, &g);
    cr_assert(g.origin_x == -32768.0 && g.origin_z == 32768.0);
}

Test(settings, set_refuses_bad_text)
{
    op_settings s, before;
    op_err e;
    op_settings_default(&s);
    before = s;
    cr_assert_eq(op_settings_set(&s, "no_such_key", "1", &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "no_such_key"));
    cr_assert_eq(op_settings_set(&s, "cell_size", "0.3x", &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "cell_size"));
    cr_assert_eq(op_settings_set(&s, "min_region_area", "1.5", &e), OP_EINVAL);
    cr_assert_eq(op_settings_set(&s, "partition", "voronoi", &e), OP_EINVAL);
    cr_assert_eq(memcmp(&s, &before, sizeof s), 0, "a failed set changed the settings");
    cr_assert_eq(op_settings_set(&s, "partition", "layers", &e), OP_OK);
    cr_assert_eq(s.partition, OP_PARTITION_LAYERS);
}

Test(status, names_and_texts_cover_the_map)
{
    cr_assert_str_eq(op_status_name(OP_OK), "OP_OK");
    cr_assert_str_eq(op_status_name(OP_ELIMIT), "OP_ELIMIT");
    cr_assert_str_eq(op_status_name(9999), "OP_UNKNOWN");
    cr_assert_str_eq(op_strerror(OP_ERANGE), "value out of range");
    cr_assert_str_eq(op_strerror(-5), "unknown status");
    op_err e;
    cr_assert_eq(op_err_set(&e, OP_EIO, "x %d", 5), OP_EIO);
    cr_assert_str_eq(e.msg, "x 5");
    cr_assert_eq(op_err_set(NULL, OP_EINVAL, "ignored"), OP_EINVAL);
}
