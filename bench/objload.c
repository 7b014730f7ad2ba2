/*
 * Minimal OBJ loader (objload.h). Input: a text file; output: float vertices and
 * int triangles in file order. Growth by doubling; a level of 10^5 triangles
 * loads in a few milliseconds, which the benchmark never times.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objload.h"

typedef struct grow_buf {
    void *p;
    size_t len, cap; /* in elements */
} grow_buf;

static int buf_reserve(grow_buf *b, size_t more, size_t elem)
{
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + more)
        cap *= 2;
    void *p = realloc(b->p, cap * elem);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int parse_vertex(const char *s, grow_buf *v)
{
    float xyz[3];
    char *end;
    for (int i = 0; i < 3; i++) {
        xyz[i] = strtof(s, &end);
        if (end == s)
            return -1;
        s = end;
    }
    if (buf_reserve(v, 3, sizeof(float)))
        return -2;
    memcpy((float *)v->p + v->len, xyz, sizeof xyz);
    v->len += 3;
    return 0;
}

/* One face index token ("7", "7/1", "-2//3"); returns a 0-based vertex index or -1. */
static long parse_index(const char **sp, long nverts)
{
    char *end;
    long i = strtol(*sp, &end, 10);
    if (end == *sp)
        return -1;
    while (*end && *end != ' ' && *end != '\t' && *end != '\r' && *end != '\n')
        end++; /* skip /vt/vn */
    *sp = end;
    if (i < 0)
        i = nverts + i;
    else
        i = i - 1;
    return (i >= 0 && i < nverts) ? i : -1;
}

static int parse_face(const char *s, long nverts, grow_buf *t)
{
    long first = -1, prev = -1;
    for (int n = 0;; n++) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '\0' || *s == '\r' || *s == '\n' || *s == '#')
            return n >= 3 ? 0 : -1;
        long i = parse_index(&s, nverts);
        if (i < 0)
            return -1;
        if (n == 0)
            first = i;
        if (n >= 2) {
            if (buf_reserve(t, 3, sizeof(int)))
                return -2;
            int *d = (int *)t->p + t->len;
            d[0] = (int)first;
            d[1] = (int)prev;
            d[2] = (int)i;
            t->len += 3;
        }
        prev = i;
    }
}

int bench_obj_load(const char *path, bench_level *lv, char *err, size_t errlen)
{
    memset(lv, 0, sizeof *lv);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "obj: cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    grow_buf v = {0}, t = {0};
    char line[4096];
    long lineno = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == 'v' && (line[1] == ' ' || line[1] == '\t'))
            rc = parse_vertex(line + 2, &v);
        else if (line[0] == 'f' && (line[1] == ' ' || line[1] == '\t'))
            rc = parse_face(line + 2, (long)(v.len / 3), &t);
    }
    fclose(f);
    if (rc != 0) {
        snprintf(err, errlen, "obj: %s line %ld: %s", path, lineno,
                 rc == -2 ? "out of memory" : "malformed v/f line");
        free(v.p);
        free(t.p);
        return -1;
    }
    snprintf(lv->name, sizeof lv->name, "%s", path);
    lv->verts = v.p;
    lv->nverts = (int)(v.len / 3);
    lv->tris = t.p;
    lv->ntris = (int)(t.len / 3);
    return 0;
}

void bench_level_free(bench_level *lv)
{
    free(lv->verts);
    free(lv->tris);
    memset(lv, 0, sizeof *lv);
}
