/*
 * onepathd HTTP files (docs/spec/http.md §2): which file a GET path names. Only two trees
 * are served, the viewer's folder and three.js's (libjs-three), and a path reaches a file
 * only through segments of [A-Za-z0-9._-] that do not start with '.': no '%' (nothing is
 * decoded, so no encoded traversal), no '..', no empty segment, no backslash. The file
 * found must still lie inside its tree once links are resolved (the package's build/
 * names are links to files beside them), and is opened without following a link.
 */
#define _DEFAULT_SOURCE /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"

static int segment_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '_' || ch == '-';
}

/* rel: segments joined by '/', each 1..255 allowed characters not starting with '.'. */
static int valid_rel(const char *rel)
{
    size_t seg = 0;
    for (const char *p = rel;; p++) {
        if (*p == '/' || *p == '\0') {
            if (seg == 0 || seg > 255)
                return 0;
            if (*p == '\0')
                return 1;
            seg = 0;
            continue;
        }
        if (!segment_char(*p) || (seg == 0 && *p == '.'))
            return 0;
        seg++;
    }
}

int opd_http_file_path(const char *root, const char *three, const char *path, char *out, size_t n)
{
    if (path[0] != '/')
        return 400;
    const char *rel = path + 1, *base = root;
    if (*rel == '\0') {
        rel = "index.html";
    } else if (!strncmp(rel, "three/", 6)) {
        base = three;
        rel += 6;
    }
    if (!valid_rel(rel))
        return 400;
    if (!base)
        return 404;
    char joined[PATH_MAX], real[PATH_MAX], rbase[PATH_MAX];
    int w = snprintf(joined, sizeof joined, "%s/%s", base, rel);
    if (w < 0 || (size_t)w >= sizeof joined)
        return 414;
    if (!realpath(base, rbase) || !realpath(joined, real))
        return 404;
    size_t bl = strlen(rbase);
    if (strncmp(real, rbase, bl) != 0 || real[bl] != '/')
        return 404; /* a link out of the tree */
    if (strlen(real) >= n)
        return 414;
    memcpy(out, real, strlen(real) + 1);
    return 0;
}

int opd_http_file_read(const char *path, size_t max, void **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 404;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return 404;
    }
    if ((size_t)st.st_size > max) {
        close(fd);
        return 500; /* a file of the page that is not one: the install is wrong */
    }
    size_t size = (size_t)st.st_size, got = 0;
    char *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        return 500;
    }
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (got != size) {
        free(buf);
        return 500;
    }
    *data = buf;
    *len = size;
    return 0;
}

const char *opd_http_mime(const char *path)
{
    static const char *const map[][2] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".png", "image/png"},
        {".svg", "image/svg+xml"},
    };
    size_t pl = strlen(path);
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        size_t el = strlen(map[i][0]);
        if (pl >= el && !strcmp(path + pl - el, map[i][0]))
            return map[i][1];
    }
    return "application/octet-stream";
}
