/*
 * The path, render and export commands, run as a user would (the built `onepath`
 * binary), on a flat generated floor where the answers are known: a straight line
 * from corner to corner that crosses tile lines, an SVG with one polygon element per
 * polygon, an OBJ with one face per polygon plus the detail triangles, all facing up, and
 * the Detour navmesh set with its tiles one file each.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEVEL "gen:flat:32:1"

static char *run(const char *args, int *status)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/onepath %s 2>&1", OP_BIN_DIR, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - 1 - n, p)) > 0) {
        n += got;
        if (n + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    buf[n] = '\0';
    *status = pclose(p);
    return buf;
}

/* For every face ("f a b c ...", 1-based indices into the "v" lines): its normal by
 * Newell's rule; counts the faces and those whose normal points up (y > 0). */
static void obj_normals(const char *text, long *up, long *faces)
{
    size_t nv = 0, cap = 1024;
    double *v = malloc(cap * 3 * sizeof *v);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (l[0] == 'v' && l[1] == ' ') {
            if (nv == cap)
                v = realloc(v, (cap *= 2) * 3 * sizeof *v);
            cr_assert_eq(sscanf(l + 2, "%lf %lf %lf", &v[3 * nv], &v[3 * nv + 1], &v[3 * nv + 2]),
                         3);
            nv++;
        } else if (l[0] == 'f' && l[1] == ' ') {
            long idx[16];
            int k = 0, used;
            const char *p = l + 1;
            while (k < 16 && sscanf(p, " %ld%n", &idx[k], &used) == 1) {
                cr_assert(idx[k] >= 1 && (size_t)idx[k] <= nv);
                p += used;
                k++;
            }
            double ny = 0.0;
            for (int i = 0; i < k; i++) {
                const double *a = &v[3 * (idx[i] - 1)], *b = &v[3 * (idx[(i + 1) % k] - 1)];
                ny += (a[2] - b[2]) * (a[0] + b[0]);
            }
            (*faces)++;
            *up += ny > 0.0;
        }
    }
    free(v);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

Test(cli_query, path_on_a_flat_floor)
{
    int st;
    char *out = run("path " LEVEL " --from 2,0,3 --to 30,0,29 --json --threads 2", &st);
    cr_assert_eq(st, 0, "%s", out);
    cr_expect(strstr(out, "\"partial\": false") != NULL, "%s", out);
    /* On an open floor the straight path is the segment itself: start, crossings, end. */
    cr_expect_eq(count(out, "\"start\""), 1, "%s", out);
    cr_expect_eq(count(out, "\"end\""), 1, "%s", out);
    cr_expect_geq(count(out, "\"tile\""), 3, "the diagonal crosses tile lines: %s", out);
    free(out);
}

Test(cli_query, path_refusals)
{
    int st;
    char *out = run("path " LEVEL " --from 2,0 --to 30,0,30", &st);
    cr_expect_eq(WEXITSTATUS(st), 2, "%s", out);
    free(out);
    out = run("path " LEVEL " --from 200,0,200 --to 30,0,30", &st);
    cr_expect_eq(WEXITSTATUS(st), 1, "%s", out);
    cr_expect(strstr(out, "no polygon") != NULL, "%s", out);
    free(out);
}

Test(cli_query, render_and_export)
{
    char svg[256], obj[256];
    snprintf(svg, sizeof svg, "/tmp/op_cli_query_%d.svg", (int)getpid());
    snprintf(obj, sizeof obj, "/tmp/op_cli_query_%d.obj", (int)getpid());
    char args[1024];
    int st;
    snprintf(args, sizeof args, "render " LEVEL " --out %s --path 2,0,3:30,0,29 --color area", svg);
    char *out = run(args, &st);
    cr_assert_eq(st, 0, "%s", out);
    long polys = 0;
    cr_assert_eq(sscanf(strstr(out, "layers, ") + 8, "%ld", &polys), 1, "%s", out);
    free(out);
    FILE *f = fopen(svg, "r");
    cr_assert_not_null(f);
    static char text[1 << 22];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    cr_expect(strncmp(text, "<svg", 4) == 0);
    cr_expect(strstr(text, "<polyline") != NULL, "the path is drawn");
    /* mesh polygons + corridor polygons */
    cr_expect_gt(count(text, "<polygon"), polys);
    snprintf(args, sizeof args, "export " LEVEL " --obj %s", obj);
    out = run(args, &st);
    cr_assert_eq(st, 0, "%s", out);
    free(out);
    f = fopen(obj, "r");
    cr_assert_not_null(f);
    n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    int objects = count(text, "\no tile_"), detail = count(text, "_detail\n");
    cr_expect_gt(objects, 0);
    cr_expect_eq(objects, 2 * detail, "one polygon object and one detail object per tile");
    cr_expect_gt(count(text, "\nf "), polys, "polygon faces plus detail triangles");
    long up = 0, faces = 0;
    obj_normals(text, &up, &faces);
    cr_expect_gt(faces, polys);
    cr_expect_eq(up, faces, "every face of the flat floor points up (+y): %ld of %ld", up, faces);
    remove(svg);
    remove(obj);
}

static void *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *d = malloc((size_t)len + 1);
    cr_assert_eq(fread(d, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return d;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* --detour writes the navmesh set, --detour-tiles the same tiles one file each (named by
 * the tile's header) and the set's params (docs/spec/detour-export.md §5). */
Test(cli_query, export_detour)
{
    char set[256], dir[256], args[1024], path[512];
    snprintf(set, sizeof set, "/tmp/op_cli_detour_%d.bin", (int)getpid());
    snprintf(dir, sizeof dir, "/tmp/op_cli_detour_%d", (int)getpid());
    int st;
    snprintf(args, sizeof args, "export " LEVEL " --detour %s --detour-tiles %s", set, dir);
    char *out = run(args, &st);
    cr_assert_eq(st, 0, "%s", out);
    free(out);
    size_t n, pn;
    unsigned char *b = slurp(set, &n);
    cr_assert_geq(n, 40);
    cr_expect_eq(le32(b), 0x4d534554u, "MSET");
    snprintf(path, sizeof path, "%s/navmesh.params", dir);
    unsigned char *params = slurp(path, &pn);
    cr_assert_eq(pn, 28);
    cr_expect_arr_eq(params, b + 12, 28);
    int ntiles = (int)le32(b + 8);
    size_t off = 40;
    for (int i = 0; i < ntiles; i++) {
        cr_assert_leq(off + 8, n);
        size_t size = le32(b + off + 4);
        const unsigned char *d = b + off + 8;
        cr_assert_leq(off + 8 + size, n);
        snprintf(path, sizeof path, "%s/tile_%d_%d.dtile", dir, (int)le32(d + 8),
                 (int)le32(d + 12));
        size_t tn;
        unsigned char *t = slurp(path, &tn);
        cr_expect_eq(tn, size, "%s", path);
        cr_expect_arr_eq(t, d, size < tn ? size : tn, "%s", path);
        free(t);
        off += 8 + size;
    }
    cr_expect_eq(off, n, "the set ends after its last tile");
    free(b);
    free(params);
    /* a missing file name is a usage error */
    out = run("export " LEVEL " --detour", &st);
    cr_expect_eq(WEXITSTATUS(st), 2, "%s", out);
    free(out);
    snprintf(args, sizeof args, "rm -rf %s %s", dir, set);
    cr_expect_eq(system(args), 0);
}

/* Baked blobs read back with --tiles give the same mesh as the level build. */
Test(cli_query, tiles_dir_matches_the_level_build)
{
    char dir[256], args[1024];
    snprintf(dir, sizeof dir, "/tmp/op_cli_query_tiles_%d", (int)getpid());
    int st;
    snprintf(args, sizeof args, "bake " LEVEL " --out %s --threads 2", dir);
    char *out = run(args, &st);
    cr_assert_eq(st, 0, "%s", out);
    free(out);
    char *a = run("path " LEVEL " --from 2,0,3 --to 30,0,29 --json", &st);
    cr_assert_eq(st, 0, "%s", a);
    snprintf(args, sizeof args, "path --tiles %s --from 2,0,3 --to 30,0,29 --json", dir);
    char *b = run(args, &st);
    cr_assert_eq(st, 0, "%s", b);
    cr_expect_str_eq(a, b);
    free(a);
    free(b);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    cr_expect_eq(system(args), 0);
}
