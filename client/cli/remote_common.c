/* Helpers of the remote commands (remote, put, fetch, watch). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_common.h"
#include "onepath/fleet.h"
#include "onepath/hash.h"
#include "remote_common.h"

void remote_opts_init(remote_opts *o)
{
    memset(o, 0, sizeof *o);
    o->timeout_ms = OP_CLI_TIMEOUT_MS;
    const char *env = getenv(OP_CLI_URL_ENV);
    if (env && *env)
        o->url = env;
    env = getenv(OP_CLI_TOKEN_FILE_ENV);
    if (env && *env)
        o->token_file = env;
}

int remote_opt(int argc, char **argv, int *i, remote_opts *o)
{
    const char *a = argv[*i];
    int more = *i + 1 < argc;
    if (!more)
        return 0;
    if (!strcmp(a, "--url")) {
        if (o->nurls == REMOTE_MAX_URL_ARGS) {
            fprintf(stderr, "onepath: more than %d --url options\n", REMOTE_MAX_URL_ARGS);
            return -1;
        }
        o->url = o->urls[o->nurls++] = argv[++*i];
    } else if (!strcmp(a, "--level"))
        o->level = argv[++*i];
    else if (!strcmp(a, "--out"))
        o->out_dir = argv[++*i];
    else if (!strcmp(a, "--token-file"))
        o->token_file = argv[++*i];
    else if (!strcmp(a, "--timeout"))
        return cli_parse_int("--timeout", argv[++*i], 1, 3600000, &o->timeout_ms) ? -1 : 1;
    else
        return 0;
    return 1;
}

int remote_members(const remote_opts *o, char ***members, int *n)
{
    *members = NULL;
    *n = 0;
    op_err e;
    int nurls = o->nurls;
    const char *const *urls = o->urls;
    const char *one[1] = {o->url};
    if (!nurls && o->url) { /* set without --url (a default) */
        nurls = 1;
        urls = one;
    }
    for (int i = 0; i < nurls; i++) {
        if (op_fleet_members_parse(urls[i], members, n, &e) != OP_OK) {
            op_fleet_members_free(*members, *n);
            *members = NULL;
            *n = 0;
            return remote_fail("--url", &e);
        }
    }
    for (int i = 0; i < *n; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp((*members)[i], (*members)[j])) {
                fprintf(stderr, "onepath: --url: member %s is listed twice\n", (*members)[i]);
                op_fleet_members_free(*members, *n);
                *members = NULL;
                *n = 0;
                return 1;
            }
    return 0;
}

static op_client *remote_open_one(const remote_opts *o, const char *url, int member);

op_client *remote_open(remote_opts *o)
{
    if (!o->url) {
        fprintf(stderr, "onepath: --url URL (or $" OP_CLI_URL_ENV
                        ") is required (tcp://HOST:PORT or ipc:///PATH)\n");
        return NULL;
    }
    char **m;
    int n;
    if (remote_members(o, &m, &n))
        return NULL;
    if (n > 1 && !o->level) {
        fprintf(stderr, "onepath: --url lists %d members; without --level give one\n", n);
        op_fleet_members_free(m, n);
        return NULL;
    }
    int pick = op_fleet_pick((const char *const *)m, n, o->level ? o->level : "");
    snprintf(o->member, sizeof o->member, "%s", m[pick]);
    op_fleet_members_free(m, n);
    /* With several members, every error names the one that answered (or did not). */
    return remote_open_one(o, o->member, n > 1);
}

op_client *remote_open_url(const remote_opts *o, const char *url)
{
    return remote_open_one(o, url, 0);
}

static op_client *remote_open_one(const remote_opts *o, const char *url, int member)
{
    op_client *c = NULL;
    op_err e;
    op_status st = member ? op_fleet_member_open(url, &c, &e) : op_client_open(url, &c, &e);
    if (st != OP_OK) {
        remote_fail(url, &e);
        return NULL;
    }
    if (o->token_file && op_client_set_token_file(c, o->token_file, &e) != OP_OK) {
        remote_fail("--token-file", &e);
        op_client_close(c);
        return NULL;
    }
    return c;
}

int remote_fail(const char *what, const op_err *e)
{
    fprintf(stderr, "onepath: %s: %s (%s)\n", what, e->msg, op_status_name(e->status));
    return 1;
}

int out_dir_make(const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "onepath: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    return 0;
}

int tile_file_write(const char *dir, int tx, int tz, int layer, const uint8_t *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tile_%d_%d_%d.optile", dir, tx, tz, layer);
    return file_write(path, data, len);
}

int file_write(const char *path, const uint8_t *data, size_t len)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        fprintf(stderr, "onepath: cannot write %s: %s\n", tmp, strerror(errno));
        return 1;
    }
    int bad = fwrite(data, 1, len, f) != len;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        fprintf(stderr, "onepath: writing %s failed: %s\n", path, strerror(errno));
        unlink(tmp);
        return 1;
    }
    return 0;
}

int tile_files_prune(const char *dir, int tx, int tz, const int *keep, int nkeep)
{
    DIR *d = opendir(dir);
    if (!d)
        return 1;
    char prefix[64];
    int plen = snprintf(prefix, sizeof prefix, "tile_%d_%d_", tx, tz);
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        if (strncmp(n, prefix, (size_t)plen) != 0)
            continue;
        char *end;
        long layer = strtol(n + plen, &end, 10);
        if (end == n + plen || strcmp(end, ".optile") != 0)
            continue;
        int kept = 0;
        for (int k = 0; k < nkeep && !kept; k++)
            kept = keep[k] == layer;
        if (kept)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, n);
        if (unlink(path) != 0 && errno != ENOENT)
            rc = 1;
    }
    closedir(d);
    return rc;
}

uint64_t hash_fold(uint64_t h, uint64_t layer_hash)
{
    uint8_t le[8];
    for (int b = 0; b < 8; b++)
        le[b] = (uint8_t)(layer_hash >> (8 * b));
    return op_hash_update(h, le, 8);
}

op_client_mesh remote_mesh(const char *spec, const char *name, const op_soup *soup)
{
    if (!name) {
        const char *slash = strrchr(spec, '/');
        name = !strncmp(spec, "gen:", 4) ? "generated" : slash ? slash + 1 : spec;
    }
    return (op_client_mesh){name,
                            soup->verts,
                            soup->verts_len / 3,
                            (const int32_t *)soup->tris,
                            soup->tris_len / 3,
                            soup->areas};
}
