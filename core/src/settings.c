/*
 * Settings: defaults, range checks that name the field, --set parsing, and the
 * derived span and tile-grid values of build3d-polys.md §1.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/limits.h"
#include "onepath/settings.h"

void op_settings_default(op_settings *s)
{
    memset(s, 0, sizeof *s);
    s->cell_size = 0.3;
    s->cell_height = 0.2;
    s->tile_size = 9.6;
    s->agent_height = 2.0;
    s->agent_radius = 0.6;
    s->agent_max_climb = 0.9;
    s->agent_max_slope = 45.0;
    s->partition = OP_PARTITION_WATERSHED;
    s->min_region_area = 64;
    s->merge_region_area = 400;
    s->contour_max_error = 1.3;
    s->max_edge_length = 12.0;
    s->straight_region_borders = 1;
    s->max_verts_per_poly = 6;
    s->detail_sample_distance = 1.8;
    s->detail_max_error = 0.2;
    s->area = 63;
    s->flags = 1;
    s->max_local_extent = 4096.0;
    s->grid_origin_x = 0.0;
    s->grid_origin_z = 0.0;
}

/* One table drives validation and --set, so a field cannot be checked in one and
 * forgotten in the other. */
typedef enum { F_DOUBLE, F_INT, F_BOOL, F_PARTITION } field_type;

typedef struct field {
    const char *name;
    field_type type;
    size_t offset;
    double lo, hi; /* inclusive bounds */
    int lo_open;   /* lo is exclusive */
    int hi_open;   /* hi is exclusive */
} field;

#define FD(n, lo, hi, lo_open, hi_open)                                                            \
    {                                                                                              \
#n, F_DOUBLE, offsetof(op_settings, n), lo, hi, lo_open, hi_open                           \
    }
#define FI(n, lo, hi)                                                                              \
    {                                                                                              \
#n, F_INT, offsetof(op_settings, n), lo, hi, 0, 0                                          \
    }

static const field fields[] = {
    FD(cell_size, 0.001, 1000.0, 0, 0),
    FD(cell_height, 0.001, 1000.0, 0, 0),
    FD(tile_size, 0.0, 1e6, 1, 0),
    FD(agent_height, 0.0, 1e4, 0, 0),
    FD(agent_radius, 0.0, 1e4, 0, 0),
    FD(agent_max_climb, 0.0, 1e4, 0, 0),
    FD(agent_max_slope, 0.0, 90.0, 0, 1),
    {"partition", F_PARTITION, offsetof(op_settings, partition), 0, 2, 0, 0},
    FI(min_region_area, 0, 1 << 30),
    FI(merge_region_area, 0, 1 << 30),
    FD(contour_max_error, 0.0, 1e4, 0, 0),
    FD(max_edge_length, 0.0, 1e6, 0, 0),
    {"straight_region_borders", F_BOOL, offsetof(op_settings, straight_region_borders), 0, 1, 0, 0},
    FI(max_verts_per_poly, 3, 6),
    FD(detail_sample_distance, 0.0, 1e6, 0, 0),
    FD(detail_max_error, 0.0, 1e4, 0, 0),
    FI(area, 0, 63),
    FI(flags, 0, 65535),
    FD(max_local_extent, 0.0, 1e7, 1, 0),
    FD(grid_origin_x, -OP_MAX_GRID_ORIGIN, OP_MAX_GRID_ORIGIN, 0, 0),
    FD(grid_origin_z, -OP_MAX_GRID_ORIGIN, OP_MAX_GRID_ORIGIN, 0, 0),
};

#define NFIELDS (sizeof fields / sizeof fields[0])

static const char *const partition_names[] = {"watershed", "monotone", "layers"};

static double get_value(const op_settings *s, const field *f)
{
    const char *base = (const char *)s + f->offset;
    switch (f->type) {
    case F_DOUBLE:
        return *(const double *)base;
    case F_PARTITION:
        return (double)*(const op_partition *)base;
    default:
        return (double)*(const int *)base;
    }
}

op_status op_settings_validate(const op_settings *s, op_err *err)
{
    if (!s)
        return op_err_set(err, OP_EINVAL, "settings: NULL");
    for (size_t i = 0; i < NFIELDS; i++) {
        const field *f = &fields[i];
        double v = get_value(s, f);
        if (!isfinite(v))
            return op_err_set(err, OP_EINVAL, "settings: %s = %g is not finite", f->name, v);
        int below = f->lo_open ? v <= f->lo : v < f->lo;
        int above = f->hi_open ? v >= f->hi : v > f->hi;
        if (below || above)
            return op_err_set(err, OP_ERANGE, "settings: %s = %.17g is outside %c%g, %g%c", f->name,
                              v, f->lo_open ? '(' : '[', f->lo, f->hi, f->hi_open ? ')' : ']');
    }
    /* The detail stage samples at sd = detail_sample_distance / cs cells; between 0 and
     * 0.9 cells it would be off anyway (build3d-polys.md §4), so any value >= 0 is valid. */
    op_tile_grid g;
    op_tile_grid_derive(s, &g);
    if (g.tile_cells > OP_MAX_TILE_CELLS)
        return op_err_set(err, OP_ERANGE, "settings: tile_size / cell_size = %d cells > %d",
                          g.tile_cells, OP_MAX_TILE_CELLS);
    op_span_settings ss;
    op_span_settings_derive(s, &ss);
    if (ss.walkable_height > OP_MAX_ROWS || ss.walkable_climb > OP_MAX_ROWS)
        return op_err_set(err, OP_ERANGE,
                          "settings: agent_height / cell_height = %d rows or agent_max_climb / "
                          "cell_height = %d rows exceeds %d",
                          ss.walkable_height, ss.walkable_climb, OP_MAX_ROWS);
    if (ss.walkable_radius > OP_MAX_TILE_CELLS)
        return op_err_set(err, OP_ERANGE, "settings: agent_radius / cell_size = %d cells > %d",
                          ss.walkable_radius, OP_MAX_TILE_CELLS);
    op_err_clear(err);
    return OP_OK;
}

static op_status parse_double(const char *key, const char *text, double *out, op_err *err)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE)
        return op_err_set(err, OP_EINVAL, "settings: %s: '%.64s' is not a number", key, text);
    *out = v;
    return OP_OK;
}

op_status op_settings_set(op_settings *s, const char *key, const char *value, op_err *err)
{
    for (size_t i = 0; i < NFIELDS; i++) {
        const field *f = &fields[i];
        if (strcmp(f->name, key) != 0)
            continue;
        char *base = (char *)s + f->offset;
        if (f->type == F_PARTITION) {
            for (int p = 0; p < 3; p++) {
                if (strcmp(value, partition_names[p]) == 0) {
                    *(op_partition *)base = (op_partition)p;
                    return OP_OK;
                }
            }
            return op_err_set(err, OP_EINVAL,
                              "settings: partition: '%.64s' is not watershed, monotone or layers",
                              value);
        }
        if (f->type == F_BOOL) {
            if (!strcmp(value, "1") || !strcmp(value, "true") || !strcmp(value, "on")) {
                *(int *)base = 1;
                return OP_OK;
            }
            if (!strcmp(value, "0") || !strcmp(value, "false") || !strcmp(value, "off")) {
                *(int *)base = 0;
                return OP_OK;
            }
            return op_err_set(err, OP_EINVAL, "settings: %s: '%.64s' is not a boolean", key, value);
        }
        double v = 0.0;
        op_status st = parse_double(key, value, &v, err);
        if (st != OP_OK)
            return st;
        if (f->type == F_DOUBLE) {
            *(double *)base = v;
            return OP_OK;
        }
        if (v != floor(v) || v < -2147483648.0 || v > 2147483647.0)
            return op_err_set(err, OP_EINVAL, "settings: %s: '%.64s' is not an integer", key,
                              value);
        *(int *)base = (int)v;
        return OP_OK;
    }
    return op_err_set(err, OP_EINVAL, "settings: unknown key '%.64s'", key);
}

const char *op_partition_name(op_partition p)
{
    return ((unsigned)p < 3) ? partition_names[p] : "unknown";
}

float op_cos_degrees(double degrees)
{
    /* Taylor series of cos with 14 terms, summed from the smallest term up so that the
     * rounding is the same everywhere (build3d-polys.md §1). */
    const double pi = 3.14159265358979323846;
    double x = degrees * (pi / 180.0);
    double x2 = x * x;
    double t[14];
    t[0] = 1.0;
    for (int k = 1; k < 14; k++)
        t[k] = -t[k - 1] * x2 / ((double)(2 * k - 1) * (double)(2 * k));
    double sum = 0.0;
    for (int k = 13; k >= 0; k--)
        sum += t[k];
    return (float)sum;
}

static int clamp_rows(float v)
{
    if (!(v >= 0.0f))
        return 0;
    if (v > 1e9f)
        return 1000000000;
    return (int)v;
}

void op_span_settings_derive(const op_settings *s, op_span_settings *o)
{
    o->cs = (float)s->cell_size;
    o->ch = (float)s->cell_height;
    /* Clamped before the int conversion so that out-of-range settings stay defined
     * behaviour; op_settings_validate rejects them. */
    o->walkable_height = clamp_rows(ceilf((float)s->agent_height / o->ch));
    if (o->walkable_height < 1)
        o->walkable_height = 1;
    o->walkable_climb = clamp_rows(floorf((float)s->agent_max_climb / o->ch));
    o->walkable_radius = clamp_rows(ceilf((float)s->agent_radius / o->cs));
    o->slope_cos = op_cos_degrees(s->agent_max_slope);
    o->merge_threshold = o->walkable_climb;
}

void op_tile_grid_derive(const op_settings *s, op_tile_grid *g)
{
    double c = ceil(s->tile_size / s->cell_size - 1e-4);
    if (!(c >= 1.0))
        c = 1.0;
    if (c > (double)OP_MAX_TILE_CELLS + 1.0)
        c = (double)OP_MAX_TILE_CELLS + 1.0; /* validate reports it */
    g->tile_cells = (int)c;
    g->cs = s->tile_size / (double)g->tile_cells;
    op_span_settings ss;
    op_span_settings_derive(s, &ss);
    g->border = ss.walkable_radius + 3;
    g->grid_cells = g->tile_cells + 2 * g->border;
    g->origin_x = s->grid_origin_x;
    g->origin_z = s->grid_origin_z;
}
