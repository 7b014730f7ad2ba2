/*
 * Rendezvous placement of levels over a fleet of daemons (protocol.md §11) and the
 * member lists the CLI and tools read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "onepath/fleet.h"

struct op_fleet {
    int n;
    char **members;
    op_client **clients;
};

static uint64_t fnv1a(uint64_t h, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

uint64_t op_fleet_weight(const char *member, const char *level)
{
    uint64_t h = fnv1a(0xcbf29ce484222325ULL, member, strlen(member));
    h = fnv1a(h, "", 1); /* the 0 byte between the two */
    h = fnv1a(h, level, strlen(level));
    /* SplitMix64's finaliser: FNV-1a's low bits alone mix poorly across members. */
    uint64_t z = h + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int op_fleet_pick(const char *const *members, int n, const char *level)
{
    int best = -1;
    uint64_t bw = 0;
    for (int i = 0; i < n; i++) {
        uint64_t w = op_fleet_weight(members[i], level);
        if (best < 0 || w > bw || (w == bw && strcmp(members[i], members[best]) < 0)) {
            best = i;
            bw = w;
        }
    }
    return best;
}

op_status op_fleet_member_open(const char *url, op_client **out, op_err *err)
{
    op_status st = op_client_open(url, out, err);
    if (st == OP_OK)
        op_client_name_member(*out);
    return st;
}

void op_fleet_close(op_fleet *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n; i++) {
        op_client_close(f->clients[i]);
        free(f->members[i]);
    }
    free(f->clients);
    free(f->members);
    free(f);
}

op_status op_fleet_open(const char *const *members, int n, op_fleet **out, op_err *err)
{
    *out = NULL;
    if (n < 1 || n > OP_FLEET_MAX_MEMBERS)
        return op_err_set(err, OP_EINVAL, "fleet: %d members (1..%d)", n, OP_FLEET_MAX_MEMBERS);
    for (int i = 0; i < n; i++) {
        if (!members[i] || !members[i][0])
            return op_err_set(err, OP_EINVAL, "fleet: member %d is empty", i);
        for (int j = 0; j < i; j++)
            if (!strcmp(members[i], members[j]))
                return op_err_set(err, OP_EINVAL, "fleet: member %s is listed twice", members[i]);
    }
    op_fleet *f = calloc(1, sizeof *f);
    if (!f || !(f->members = calloc((size_t)n, sizeof *f->members)) ||
        !(f->clients = calloc((size_t)n, sizeof *f->clients))) {
        op_fleet_close(f);
        return op_err_set(err, OP_ENOMEM, "fleet: out of memory");
    }
    for (int i = 0; i < n; i++) {
        f->n = i + 1;
        if (!(f->members[i] = strdup(members[i]))) {
            op_fleet_close(f);
            return op_err_set(err, OP_ENOMEM, "fleet: out of memory");
        }
        op_status st = op_fleet_member_open(members[i], &f->clients[i], err);
        if (st != OP_OK) {
            op_fleet_close(f);
            return st;
        }
    }
    *out = f;
    return OP_OK;
}

op_status op_fleet_set_token(op_fleet *f, const char *token, size_t len, op_err *err)
{
    for (int i = 0; i < f->n; i++) {
        op_status st = op_client_set_token(f->clients[i], token, len, err);
        if (st != OP_OK)
            return st;
    }
    return OP_OK;
}

int op_fleet_size(const op_fleet *f)
{
    return f->n;
}

const char *op_fleet_member(const op_fleet *f, int i)
{
    return i >= 0 && i < f->n ? f->members[i] : NULL;
}

op_client *op_fleet_client(const op_fleet *f, int i)
{
    return i >= 0 && i < f->n ? f->clients[i] : NULL;
}

int op_fleet_index(const op_fleet *f, const char *level)
{
    return op_fleet_pick((const char *const *)f->members, f->n, level);
}

op_client *op_fleet_for(const op_fleet *f, const char *level, const char **member)
{
    int i = op_fleet_index(f, level);
    if (member)
        *member = f->members[i];
    return f->clients[i];
}

void op_fleet_members_free(char **members, int n)
{
    for (int i = 0; i < n; i++)
        free(members[i]);
    free(members);
}

/* Appends s[0..len) trimmed of spaces; empty entries are errors when strict. */
static op_status add_member(const char *s, size_t len, const char *where, int strict,
                            char ***members, int *n, op_err *err)
{
    while (len && (*s == ' ' || *s == '\t' || *s == '\r')) {
        s++;
        len--;
    }
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        len--;
    if (!len)
        return strict ? op_err_set(err, OP_EINVAL, "fleet: %s has an empty URL", where) : OP_OK;
    if (!strict && s[0] == '#')
        return OP_OK;
    if (*n >= OP_FLEET_MAX_MEMBERS)
        return op_err_set(err, OP_EINVAL, "fleet: %s lists more than %d members", where,
                          OP_FLEET_MAX_MEMBERS);
    if (memchr(s, '\0', len))
        return op_err_set(err, OP_EINVAL, "fleet: %s has a URL with a 0 byte", where);
    char **m = realloc(*members, (size_t)(*n + 1) * sizeof *m);
    if (!m)
        return op_err_set(err, OP_ENOMEM, "fleet: out of memory");
    *members = m;
    if (!(m[*n] = strndup(s, len)))
        return op_err_set(err, OP_ENOMEM, "fleet: out of memory");
    ++*n;
    return OP_OK;
}

op_status op_fleet_members_parse(const char *spec, char ***members, int *n, op_err *err)
{
    if (spec[0] != '@') {
        const char *p = spec;
        for (;;) {
            const char *c = strchr(p, ',');
            size_t len = c ? (size_t)(c - p) : strlen(p);
            op_status st = add_member(p, len, "--url list", 1, members, n, err);
            if (st != OP_OK || !c)
                return st;
            p = c + 1;
        }
    }
    const char *path = spec + 1;
    FILE *fp = fopen(path, "r");
    if (!fp)
        return op_err_set(err, OP_EIO, "fleet: cannot read %s: %s", path, strerror(errno));
    char line[4096];
    int lineno = 0, before = *n;
    op_status st = OP_OK;
    while (st == OP_OK && fgets(line, sizeof line, fp)) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n')
            line[--len] = '\0';
        else if (!feof(fp)) {
            st = op_err_set(err, OP_EINVAL, "fleet: %s line %d is longer than %zu bytes", path,
                            lineno, sizeof line - 2);
            break;
        }
        char where[64 + 4096];
        snprintf(where, sizeof where, "%s line %d", path, lineno);
        st = add_member(line, len, where, 0, members, n, err);
    }
    if (st == OP_OK && ferror(fp))
        st = op_err_set(err, OP_EIO, "fleet: reading %s failed", path);
    fclose(fp);
    if (st == OP_OK && *n == before)
        st = op_err_set(err, OP_EINVAL, "fleet: %s lists no URL", path);
    return st;
}
