/*
 * Level generator of the benchmark (genlevel.h). Output: a soup of quads (two
 * triangles each) and boxes. Sizes: terrain:256 is 131k triangles.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genlevel.h"

typedef struct soup_buf {
    float *v;
    int nv, cap_v;
    int *t;
    int nt, cap_t;
    int oom;
} soup_buf;

static int add_vert(soup_buf *b, float x, float y, float z)
{
    if (b->nv == b->cap_v) {
        int cap = b->cap_v ? b->cap_v * 2 : 4096;
        float *p = realloc(b->v, (size_t)cap * 3 * sizeof *p);
        if (!p) {
            b->oom = 1;
            return 0;
        }
        b->v = p;
        b->cap_v = cap;
    }
    b->v[3 * b->nv] = x;
    b->v[3 * b->nv + 1] = y;
    b->v[3 * b->nv + 2] = z;
    return b->nv++;
}

static void add_tri(soup_buf *b, int a, int c, int d)
{
    if (b->nt == b->cap_t) {
        int cap = b->cap_t ? b->cap_t * 2 : 4096;
        int *p = realloc(b->t, (size_t)cap * 3 * sizeof *p);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->t = p;
        b->cap_t = cap;
    }
    b->t[3 * b->nt] = a;
    b->t[3 * b->nt + 1] = c;
    b->t[3 * b->nt + 2] = d;
    b->nt++;
}

/* Quad p0 p1 p2 p3 counter-clockwise seen from above (+y up): two triangles with
 * upward normals in Recast's winding (a, b, c with (b - a) x (c - a) pointing up). */
static void add_quad(soup_buf *b, const float p[4][3])
{
    int i0 = add_vert(b, p[0][0], p[0][1], p[0][2]);
    int i1 = add_vert(b, p[1][0], p[1][1], p[1][2]);
    int i2 = add_vert(b, p[2][0], p[2][1], p[2][2]);
    int i3 = add_vert(b, p[3][0], p[3][1], p[3][2]);
    add_tri(b, i0, i2, i1);
    add_tri(b, i0, i3, i2);
}

/* Axis-aligned box: top and four sides (no bottom). */
static void add_box(soup_buf *b, float x0, float y0, float z0, float x1, float y1, float z1)
{
    const float top[4][3] = {{x0, y1, z0}, {x1, y1, z0}, {x1, y1, z1}, {x0, y1, z1}};
    const float s0[4][3] = {{x0, y0, z0}, {x0, y1, z0}, {x1, y1, z0}, {x1, y0, z0}};
    const float s1[4][3] = {{x1, y0, z1}, {x1, y1, z1}, {x0, y1, z1}, {x0, y0, z1}};
    const float s2[4][3] = {{x0, y0, z1}, {x0, y1, z1}, {x0, y1, z0}, {x0, y0, z0}};
    const float s3[4][3] = {{x1, y0, z0}, {x1, y1, z0}, {x1, y1, z1}, {x1, y0, z1}};
    add_quad(b, top);
    add_quad(b, s0);
    add_quad(b, s1);
    add_quad(b, s2);
    add_quad(b, s3);
}

static float terrain_y(int i, int k)
{
    double x = i, z = k;
    return (float)(2.0 * sin(x * 0.11) * cos(z * 0.07) + 0.8 * sin((x + z) * 0.31));
}

static void gen_grid(soup_buf *b, int size, int rolling)
{
    for (int k = 0; k < size; k++) {
        for (int i = 0; i < size; i++) {
            float y00 = rolling ? terrain_y(i, k) : 0.0f,
                  y10 = rolling ? terrain_y(i + 1, k) : 0.0f;
            float y11 = rolling ? terrain_y(i + 1, k + 1) : 0.0f;
            float y01 = rolling ? terrain_y(i, k + 1) : 0.0f;
            const float q[4][3] = {{(float)i, y00, (float)k},
                                   {(float)(i + 1), y10, (float)k},
                                   {(float)(i + 1), y11, (float)(k + 1)},
                                   {(float)i, y01, (float)(k + 1)}};
            add_quad(b, q);
        }
    }
    if (rolling)
        return;
    for (int k = 4; k + 2 < size; k += 8)
        for (int i = 4; i + 2 < size; i += 8)
            add_box(b, (float)i, 0.0f, (float)k, (float)i + 1.5f, 3.0f, (float)k + 1.5f);
}

/* Flights of 12 steps up along +x, one per 4 wu wide lane along z, then a landing. */
static void gen_stairs(soup_buf *b, int size)
{
    for (int lane = 0; lane + 4 <= size; lane += 6) {
        float y = 0.0f, x = 0.0f;
        while (x + 2.0f <= (float)size) {
            for (int s = 0; s < 12 && x + 0.3f <= (float)size; s++, x += 0.3f, y += 0.25f)
                add_box(b, x, -1.0f, (float)lane, x + 0.3f, y, (float)lane + 4.0f);
            float xe = fminf(x + 3.0f, (float)size);
            add_box(b, x, -1.0f, (float)lane, xe, y, (float)lane + 4.0f);
            x = xe;
        }
    }
}

int bench_gen_level(const char *spec, bench_level *lv, char *err, size_t errlen)
{
    memset(lv, 0, sizeof *lv);
    const char *colon = strchr(spec, ':');
    char *end = NULL;
    long size = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || end == colon + 1 || *end != '\0' || size < 8 || size > 4096) {
        snprintf(err, errlen, "gen: '%s': expected KIND:SIZE with SIZE in [8, 4096]", spec);
        return -1;
    }
    size_t klen = (size_t)(colon - spec);
    soup_buf b = {0};
    if (klen == 4 && strncmp(spec, "flat", 4) == 0) {
        gen_grid(&b, (int)size, 0);
    } else if (klen == 7 && strncmp(spec, "terrain", 7) == 0) {
        gen_grid(&b, (int)size, 1);
    } else if (klen == 6 && strncmp(spec, "stairs", 6) == 0) {
        gen_stairs(&b, (int)size);
    } else {
        snprintf(err, errlen, "gen: unknown kind in '%s' (flat, terrain, stairs)", spec);
        return -1;
    }
    if (b.oom || b.nt == 0) {
        free(b.v);
        free(b.t);
        snprintf(err, errlen, "gen: '%s': %s", spec, b.oom ? "out of memory" : "no triangles");
        return -1;
    }
    snprintf(lv->name, sizeof lv->name, "gen:%s", spec);
    lv->verts = b.v;
    lv->nverts = b.nv;
    lv->tris = b.t;
    lv->ntris = b.nt;
    return 0;
}
