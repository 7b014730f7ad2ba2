/*
 * The CPUs this process may use (see cpus.h): the affinity mask and the cgroup CPU
 * quotas. Runs once at start-up of a program; reads a handful of small files.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT_S */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onepath/cpus.h"

#define CPUS_MAX      1024
#define CPUS_PATH_MAX 4096
#define CPUS_TEXT_MAX 8192

/* Reads a whole small file into buf (NUL-terminated); 0 on success. */
static int read_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    int bad = ferror(f);
    fclose(f);
    buf[n] = '\0';
    return bad ? -1 : 0;
}

/* A positive integer at *p (advanced past it); 0 when there is none or it overflows. */
static long long parse_pos(const char **p)
{
    const char *s = *p;
    long long v = 0;
    if (*s < '0' || *s > '9')
        return 0;
    while (*s >= '0' && *s <= '9') {
        if (v > (1LL << 53))
            return 0;
        v = v * 10 + (*s++ - '0');
    }
    *p = s;
    return v;
}

static int quota_cpus(long long quota, long long period)
{
    if (quota <= 0 || period <= 0)
        return 0;
    long long n = (quota + period - 1) / period;
    return n > CPUS_MAX ? CPUS_MAX : (int)n;
}

int op_cgroup_parse_cpu_max(const char *text)
{
    const char *p = text;
    long long quota = parse_pos(&p);
    if (!quota || *p != ' ')
        return 0; /* "max ..." or not a number */
    p++;
    long long period = parse_pos(&p);
    if (*p && *p != '\n')
        return 0;
    return quota_cpus(quota, period);
}

/* Reads the v1 quota of a directory (0: none). */
static int v1_limit(const char *dir)
{
    char path[CPUS_PATH_MAX + 32], q[64], pe[64];
    snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
    if (read_text(path, q, sizeof q))
        return 0;
    snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
    if (read_text(path, pe, sizeof pe))
        return 0;
    const char *a = q, *b = pe;
    long long quota = parse_pos(&a), period = parse_pos(&b); /* "-1": parse_pos gives 0 */
    return quota_cpus(quota, period);
}

static int v2_limit(const char *dir)
{
    char path[CPUS_PATH_MAX + 32], text[128];
    snprintf(path, sizeof path, "%s/cpu.max", dir);
    return read_text(path, text, sizeof text) ? 0 : op_cgroup_parse_cpu_max(text);
}

/* min over base + cg and each parent of cg up to base itself (0 = none anywhere). */
static int walk_limit(const char *base, const char *cg, int v2)
{
    char dir[CPUS_PATH_MAX];
    int n = snprintf(dir, sizeof dir, "%s%s", base, cg);
    if (n < 0 || (size_t)n >= sizeof dir)
        return 0;
    size_t base_len = strlen(base), len = (size_t)n;
    while (len > base_len && dir[len - 1] == '/')
        dir[--len] = '\0';
    int best = 0;
    for (;;) {
        int lim = v2 ? v2_limit(dir) : v1_limit(dir);
        if (lim && (!best || lim < best))
            best = lim;
        if (len <= base_len)
            break;
        char *slash = strrchr(dir + base_len, '/');
        len = slash ? (size_t)(slash - dir) : base_len;
        dir[len] = '\0';
    }
    return best;
}

static int min_limit(int a, int b)
{
    return !a ? b : (!b ? a : (a < b ? a : b));
}

/* The v1 "cpu" controller's line: "N:cpu,cpuacct:/PATH" (the list names cpu). */
static int v1_controller_is_cpu(const char *list, size_t n)
{
    const char *p = list, *end = list + n;
    while (p < end) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        size_t l = c ? (size_t)(c - p) : (size_t)(end - p);
        if (l == 3 && !memcmp(p, "cpu", 3))
            return 1;
        p += l + 1;
    }
    return 0;
}

int op_cgroup_cpu_limit(const char *root, const char *proc_cgroup)
{
    int best = 0;
    const char *line = proc_cgroup;
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        char cg[CPUS_PATH_MAX];
        size_t plen = c2 ? len - (size_t)(c2 + 1 - line) : 0;
        if (c2 && plen < sizeof cg && c2[1] == '/') {
            memcpy(cg, c2 + 1, plen);
            cg[plen] = '\0';
            if (c1 == line + 1 && line[0] == '0' && c2 == c1 + 1) {
                /* Pure v2 at ROOT; a hybrid tree mounts v2 at ROOT/unified. */
                char base[CPUS_PATH_MAX];
                snprintf(base, sizeof base, "%s/unified", root);
                best = min_limit(best, walk_limit(root, cg, 1));
                best = min_limit(best, walk_limit(base, cg, 1));
            } else if (v1_controller_is_cpu(c1 + 1, (size_t)(c2 - c1 - 1))) {
                static const char *const dirs[] = {"/cpu,cpuacct", "/cpuacct,cpu", "/cpu", ""};
                for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
                    char base[CPUS_PATH_MAX];
                    snprintf(base, sizeof base, "%s%s", root, dirs[i]);
                    best = min_limit(best, walk_limit(base, cg, 0));
                }
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return best;
}

static int affinity_cpus(void)
{
    for (int n = 1024; n <= 65536; n *= 4) {
        cpu_set_t *set = CPU_ALLOC((size_t)n);
        if (!set)
            return 0;
        size_t sz = CPU_ALLOC_SIZE((size_t)n);
        CPU_ZERO_S(sz, set);
        if (sched_getaffinity(0, sz, set) == 0) {
            int c = CPU_COUNT_S(sz, set);
            CPU_FREE(set);
            return c;
        }
        CPU_FREE(set);
    }
    return 0;
}

int op_cpu_count(void)
{
    int n = affinity_cpus();
    if (n <= 0) {
        long s = sysconf(_SC_NPROCESSORS_ONLN);
        n = s > 0 ? (int)(s > CPUS_MAX ? CPUS_MAX : s) : 1;
    }
    char *text = malloc(CPUS_TEXT_MAX);
    if (text) {
        if (read_text("/proc/self/cgroup", text, CPUS_TEXT_MAX) == 0) {
            int q = op_cgroup_cpu_limit("/sys/fs/cgroup", text);
            if (q && q < n)
                n = q;
        }
        free(text);
    }
    if (n > CPUS_MAX)
        n = CPUS_MAX;
    return n < 1 ? 1 : n;
}
