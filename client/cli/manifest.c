/*
 * Bake manifests (docs/spec/bake-output.md): a text file per bake (or per shard) that lists
 * every tile file with its length and FNV-1a hash, so that `onepath verify` can tell a
 * complete, unchanged directory from one with a missing, extra or changed tile or a lost
 * shard. Manifests are small (one line a tile layer); verify reads them whole.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "manifest.h"
#include "onepath/hash.h"

/* A manifest longer than this is refused (about a million tile lines). */
#define MANIFEST_MAX_BYTES ((size_t)128 << 20)
#define MANIFEST_MAX_FILES 4096

int manifest_hash_file(const char *path, uint64_t *h)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "onepath: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    unsigned char buf[1 << 16];
    size_t got;
    uint64_t v = OP_HASH_INIT;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        v = op_hash_update(v, buf, got);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "onepath: reading %s failed\n", path);
        return 1;
    }
    *h = v;
    return 0;
}

void manifest_name(char *buf, size_t cap, int shard, int nshards)
{
    if (nshards <= 1)
        snprintf(buf, cap, "manifest.optm");
    else
        snprintf(buf, cap, "manifest_shard_%d_of_%d.optm", shard, nshards);
}

static void tmp_path(char *buf, size_t cap, const char *dir, const manifest_head *h)
{
    char name[128];
    manifest_name(name, sizeof name, h->shard, h->nshards);
    snprintf(buf, cap, "%s/%s.tmp%ld", dir, name, (long)getpid());
}

FILE *manifest_begin(const char *dir, const manifest_head *h)
{
    char tmp[4300];
    tmp_path(tmp, sizeof tmp, dir, h);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "onepath: cannot write %s: %s\n", tmp, strerror(errno));
        return NULL;
    }
    fprintf(f, "onepath-manifest 1\nlevel %s\ninput %016llx\n", h->level,
            (unsigned long long)h->input);
    for (int i = 0; i < h->nsets; i++)
        fprintf(f, "set %s\n", h->sets[i]);
    if (h->has_volumes)
        fprintf(f, "volumes %016llx\n", (unsigned long long)h->volumes);
    fprintf(f, "grid %d %d %d %d\nshard %d %d %d %d\n", h->grid[0], h->grid[1], h->grid[2],
            h->grid[3], h->nshards > 1 ? h->shard : 0, h->nshards > 1 ? h->nshards : 1, h->row0,
            h->row1);
    return f;
}

void manifest_tile(FILE *f, const char *name, size_t len, uint64_t hash)
{
    fprintf(f, "tile %s %zu %016llx\n", name, len, (unsigned long long)hash);
}

int manifest_finish(FILE *f, const char *dir, const manifest_head *h, uint64_t hash, long ntiles)
{
    char tmp[4300], path[4300], name[128];
    tmp_path(tmp, sizeof tmp, dir, h);
    manifest_name(name, sizeof name, h->shard, h->nshards);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    fprintf(f, "hash %016llx\nend %ld\n", (unsigned long long)hash, ntiles);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        fprintf(stderr, "onepath: writing %s failed: %s\n", path, strerror(errno));
        unlink(tmp);
        return 1;
    }
    return 0;
}

static int is_manifest(const char *n, int *shard, int *nshards)
{
    int a, b, len = 0;
    if (!strcmp(n, "manifest.optm")) {
        *shard = 0;
        *nshards = 1;
        return 1;
    }
    if (sscanf(n, "manifest_shard_%d_of_%d.optm%n", &a, &b, &len) == 2 && n[len] == '\0' &&
        len > 0) {
        *shard = a;
        *nshards = b;
        return 1;
    }
    return 0;
}

int manifest_remove_stale(const char *dir, int nshards)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "onepath: cannot open %s: %s\n", dir, strerror(errno));
        return 1;
    }
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        int s, n;
        if (!is_manifest(de->d_name, &s, &n) || (nshards > 1) == (n > 1))
            continue;
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (unlink(path) != 0 && errno != ENOENT) {
            fprintf(stderr, "onepath: cannot remove %s: %s\n", path, strerror(errno));
            rc = 1;
        }
    }
    closedir(d);
    return rc;
}

/* ---- verify ---- */

typedef struct entry {
    char *name;
    unsigned long long len, hash;
    int tz;
    int shard, row0, row1; /* of its manifest */
} entry;

typedef struct mfile {
    char name[256];
    char *text;   /* owned */
    char *common; /* input/set/volumes lines: must match across manifests */
    size_t common_len;
    int grid[4], shard, nshards, row0, row1;
} mfile;

static char *slurp_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 14, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = cap >= MANIFEST_MAX_BYTES ? NULL : realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

static int parse_hex16(const char *s, unsigned long long *v)
{
    if (strlen(s) != 16 || strspn(s, "0123456789abcdef") != 16)
        return 1;
    *v = strtoull(s, NULL, 16);
    return 0;
}

/* Parses one manifest's text; appends its tiles to *ents. 0 or the offence (printed). */
static int parse_manifest(mfile *m, entry **ents, size_t *nents, size_t *cap)
{
    char *line = m->text, *next;
    int lineno = 0, have_grid = 0, have_shard = 0, ended = 0;
    long tiles = 0, want = -1;
    for (; line && *line; line = next) {
        next = strchr(line, '\n');
        if (!next) {
            printf("FAIL %s: line %d has no end of line (truncated)\n", m->name, lineno + 1);
            return 1;
        }
        *next++ = '\0';
        lineno++;
        if (ended) {
            printf("FAIL %s: line %d follows the end line\n", m->name, lineno);
            return 1;
        }
        char name[256];
        unsigned long long len;
        char hex[32];
        int n = 0;
        if (lineno == 1) {
            if (strcmp(line, "onepath-manifest 1") != 0) {
                printf("FAIL %s: not an onepath manifest version 1\n", m->name);
                return 1;
            }
        } else if (!strncmp(line, "level ", 6)) {
        } else if (!strncmp(line, "input ", 6) || !strncmp(line, "set ", 4) ||
                   !strncmp(line, "volumes ", 8)) {
            if (!m->common)
                m->common = line;
            m->common_len = (size_t)(next - m->common);
        } else if (sscanf(line, "grid %d %d %d %d%n", &m->grid[0], &m->grid[1], &m->grid[2],
                          &m->grid[3], &n) == 4 &&
                   !line[n]) {
            have_grid = 1;
        } else if (sscanf(line, "shard %d %d %d %d%n", &m->shard, &m->nshards, &m->row0, &m->row1,
                          &n) == 4 &&
                   !line[n]) {
            have_shard = 1;
        } else if (sscanf(line, "tile %255s %llu %31s%n", name, &len, hex, &n) == 3 && !line[n]) {
            unsigned long long h;
            int tx, tz, layer, k = 0;
            if (!have_shard || parse_hex16(hex, &h) ||
                sscanf(name, "tile_%d_%d_%d.optile%n", &tx, &tz, &layer, &k) != 3 || name[k]) {
                printf("FAIL %s: line %d is not a tile line (after the shard line)\n", m->name,
                       lineno);
                return 1;
            }
            if (*nents == *cap) {
                size_t nc = *cap ? *cap * 2 : 256;
                entry *ne = realloc(*ents, nc * sizeof *ne);
                if (!ne) {
                    printf("FAIL %s: out of memory\n", m->name);
                    return 1;
                }
                *ents = ne;
                *cap = nc;
            }
            entry *e = &(*ents)[(*nents)++];
            e->name = line + 5;
            e->name[strlen(name)] = '\0';
            e->len = len;
            e->hash = h;
            e->tz = tz;
            e->shard = m->shard;
            e->row0 = m->row0;
            e->row1 = m->row1;
            tiles++;
        } else if (sscanf(line, "hash %31s%n", hex, &n) == 1 && !line[n]) {
        } else if (sscanf(line, "end %ld%n", &want, &n) == 1 && !line[n]) {
            ended = 1;
        } else {
            printf("FAIL %s: line %d is not understood\n", m->name, lineno);
            return 1;
        }
    }
    if (!ended) {
        printf("FAIL %s: no end line (truncated)\n", m->name);
        return 1;
    }
    if (want != tiles || !have_grid || !have_shard) {
        printf("FAIL %s: %ld tile lines, the end line says %ld%s\n", m->name, tiles, want,
               have_grid && have_shard ? "" : " (or no grid/shard line)");
        return 1;
    }
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static int cmp_mfile(const void *a, const void *b)
{
    const mfile *x = a, *y = b;
    return x->shard != y->shard ? (x->shard > y->shard) - (x->shard < y->shard)
                                : strcmp(x->name, y->name);
}

static size_t check_set(mfile *ms, int nm)
{
    size_t bad = 0;
    qsort(ms, (size_t)nm, sizeof *ms, cmp_mfile);
    const mfile *a = &ms[0];
    int full = 0;
    for (int i = 0; i < nm; i++) {
        const mfile *m = &ms[i];
        full += m->nshards == 1;
        if (m->common_len != a->common_len ||
            (m->common_len && memcmp(m->common, a->common, m->common_len)) ||
            memcmp(m->grid, a->grid, sizeof m->grid) || m->nshards != a->nshards) {
            printf("FAIL %s: another bake than %s (level input, settings, grid or shard "
                   "count differ)\n",
                   m->name, a->name);
            bad++;
        }
        if (i && m->shard == ms[i - 1].shard) {
            printf("FAIL %s: shard %d appears twice\n", m->name, m->shard);
            bad++;
        }
    }
    if (full && nm > 1) {
        printf("FAIL manifest.optm: a full manifest beside shard manifests\n");
        bad++;
    }
    int nshards = a->nshards;
    for (int s = 0, i = 0; !bad && s < nshards; s++) {
        while (i < nm && ms[i].shard < s)
            i++;
        if (i >= nm || ms[i].shard != s) {
            printf("FAIL manifest_shard_%d_of_%d.optm: shard %d of %d missing\n", s, nshards, s,
                   nshards);
            bad++;
        }
    }
    return bad;
}

size_t manifest_verify(const char *dir, char **names, size_t n, unsigned char *bad_file, int *found)
{
    *found = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0; /* the caller has listed it already */
    mfile *ms = NULL;
    int nm = 0, cap = 0;
    size_t bad = 0;
    entry *ents = NULL;
    size_t nents = 0, ecap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        int s, k;
        if (!is_manifest(de->d_name, &s, &k))
            continue;
        if (nm == cap) {
            int nc = cap ? cap * 2 : 8;
            mfile *nmf = nc > MANIFEST_MAX_FILES ? NULL : realloc(ms, (size_t)nc * sizeof *ms);
            if (!nmf) {
                printf("FAIL %s: too many manifests\n", de->d_name);
                bad++;
                break;
            }
            ms = nmf;
            cap = nc;
        }
        mfile *m = &ms[nm];
        memset(m, 0, sizeof *m);
        snprintf(m->name, sizeof m->name, "%s", de->d_name);
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", dir, m->name);
        if (!(m->text = slurp_text(path))) {
            printf("FAIL %s: cannot read (or over %zu bytes)\n", m->name, MANIFEST_MAX_BYTES);
            bad++;
            continue;
        }
        nm++;
        if (parse_manifest(m, &ents, &nents, &ecap)) {
            bad++;
            continue;
        }
        if (m->shard != s || m->nshards != (k > 1 ? k : 1) || m->nshards < 1) {
            printf("FAIL %s: its shard line says %d of %d\n", m->name, m->shard, m->nshards);
            bad++;
        }
    }
    closedir(d);
    *found = nm;
    if (nm && !bad)
        bad += check_set(ms, nm);
    if (nm) {
        /* Tiles: listed once, present, same bytes, in their shard's rows; files: listed. */
        qsort(ents, nents, sizeof *ents, cmp_entry);
        size_t i = 0, j = 0;
        while (i < nents || j < n) {
            int c = i >= nents ? 1 : j >= n ? -1 : strcmp(ents[i].name, names[j]);
            if (c < 0) {
                printf("FAIL %s: missing (listed by the manifest)\n", ents[i].name);
                bad++;
                i++;
                continue;
            }
            if (c > 0) {
                if (!bad_file[j])
                    printf("FAIL %s: extra (no manifest lists it)\n", names[j]);
                bad_file[j] = 1;
                bad++;
                j++;
                continue;
            }
            const entry *e = &ents[i];
            char path[4300];
            snprintf(path, sizeof path, "%s/%s", dir, names[j]);
            uint64_t h = 0;
            FILE *f = fopen(path, "rb");
            long long len = -1;
            if (f && fseek(f, 0, SEEK_END) == 0)
                len = ftell(f);
            if (f)
                fclose(f);
            if (i + 1 < nents && !strcmp(ents[i + 1].name, e->name)) {
                printf("FAIL %s: listed twice\n", e->name);
                bad_file[j] = 1;
                bad++;
            } else if (len < 0 || manifest_hash_file(path, &h)) {
                printf("FAIL %s: cannot read\n", e->name);
                bad_file[j] = 1;
                bad++;
            } else if ((unsigned long long)len != e->len || h != e->hash) {
                /* One FAIL line a file: a blob that did not decode is named already. */
                if (!bad_file[j])
                    printf("FAIL %s: changed (%lld bytes, hash %016llx; the manifest says %llu "
                           "bytes, %016llx)\n",
                           e->name, len, (unsigned long long)h, e->len, e->hash);
                bad_file[j] = 1;
                bad++;
            } else if (e->tz < e->row0 || e->tz > e->row1) {
                printf("FAIL %s: outside the rows %d..%d of shard %d\n", e->name, e->row0, e->row1,
                       e->shard);
                bad_file[j] = 1;
                bad++;
            }
            while (i < nents && !strcmp(ents[i].name, names[j]))
                i++;
            j++;
        }
    }
    for (int k = 0; k < nm; k++)
        free(ms[k].text);
    free(ms);
    free(ents);
    return bad;
}
