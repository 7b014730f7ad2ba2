/*
 * op_cpu_count and the cgroup quota readers: cpu.max parsing, a cgroup v2 and a v1
 * tree laid out in a temporary directory (the root is a parameter), parents that are
 * stricter than the leaf, and the affinity mask of a child pinned to one CPU.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "onepath/cpus.h"

Test(cpus, parse_cpu_max)
{
    cr_assert_eq(op_cgroup_parse_cpu_max("max 100000\n"), 0);
    cr_assert_eq(op_cgroup_parse_cpu_max("100000 100000\n"), 1);
    cr_assert_eq(op_cgroup_parse_cpu_max("150000 100000\n"), 2, "ceil(1.5) is 2");
    cr_assert_eq(op_cgroup_parse_cpu_max("50000 100000"), 1, "half a CPU is at least 1");
    cr_assert_eq(op_cgroup_parse_cpu_max("400000 100000\n"), 4);
    cr_assert_eq(op_cgroup_parse_cpu_max("400001 100000\n"), 5);
    /* Not two positive integers: no limit, never a failure. */
    cr_assert_eq(op_cgroup_parse_cpu_max(""), 0);
    cr_assert_eq(op_cgroup_parse_cpu_max("100000"), 0);
    cr_assert_eq(op_cgroup_parse_cpu_max("100000 0"), 0);
    cr_assert_eq(op_cgroup_parse_cpu_max("-1 100000"), 0);
    cr_assert_eq(op_cgroup_parse_cpu_max("1x 100000"), 0);
    cr_assert_eq(op_cgroup_parse_cpu_max("100000 100000 junk"), 0);
    cr_assert_eq(op_cgroup_parse_cpu_max("99999999999999999999999 1"), 0);
    cr_assert_eq(op_cgroup_parse_cpu_max("100000000000 1"), 1024, "capped");
}

static char root[256];

static void mk(const char *rel)
{
    char p[1024];
    snprintf(p, sizeof p, "%s%s", root, rel);
    char *s = p + strlen(root);
    for (char *q = s + 1; *q; q++)
        if (*q == '/') {
            *q = '\0';
            mkdir(p, 0755);
            *q = '/';
        }
    mkdir(p, 0755);
}

static void put(const char *rel, const char *text)
{
    char p[1024];
    snprintf(p, sizeof p, "%s%s", root, rel);
    FILE *f = fopen(p, "w");
    cr_assert(f, "cannot write %s", p);
    fputs(text, f);
    fclose(f);
}

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/onepath_cpus_XXXXXX");
    cr_assert(mkdtemp(root));
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    cr_expect_eq(system(cmd), 0);
}

Test(cpus, v2_leaf_and_parents, .init = setup, .fini = teardown)
{
    mk("/kubepods/pod1/ctr");
    /* No cpu.max anywhere: no limit. */
    cr_assert_eq(op_cgroup_cpu_limit(root, "0::/kubepods/pod1/ctr\n"), 0);
    put("/kubepods/pod1/ctr/cpu.max", "250000 100000\n");
    cr_assert_eq(op_cgroup_cpu_limit(root, "0::/kubepods/pod1/ctr\n"), 3);
    /* A stricter parent wins; a looser one does not. */
    put("/kubepods/cpu.max", "max 100000\n");
    put("/kubepods/pod1/cpu.max", "100000 100000\n");
    cr_assert_eq(op_cgroup_cpu_limit(root, "0::/kubepods/pod1/ctr\n"), 1);
    put("/kubepods/pod1/cpu.max", "800000 100000\n");
    cr_assert_eq(op_cgroup_cpu_limit(root, "0::/kubepods/pod1/ctr\n"), 3);
    /* The root's own file counts (a container's namespace root is "/"). */
    put("/cpu.max", "200000 100000\n");
    cr_assert_eq(op_cgroup_cpu_limit(root, "0::/\n"), 2);
    cr_assert_eq(op_cgroup_cpu_limit(root, "0::/kubepods/pod1/ctr\n"), 2);
    /* A trailing slash and lines of other hierarchies change nothing. */
    cr_assert_eq(op_cgroup_cpu_limit(root, "3:memory:/x\n0::/kubepods/pod1/ctr/\n"), 2);
    /* A cgroup that does not exist: only the files that do exist count. */
    cr_assert_eq(op_cgroup_cpu_limit(root, "0::/kubepods/nosuch\n"), 2);
    /* Malformed /proc/self/cgroup text: no limit, no crash. */
    cr_assert_eq(op_cgroup_cpu_limit(root, ""), 0);
    cr_assert_eq(op_cgroup_cpu_limit(root, "garbage"), 0);
    cr_assert_eq(op_cgroup_cpu_limit(root, "0::relative\n"), 0);
    cr_assert_eq(op_cgroup_cpu_limit(root, "::::\n"), 0);
}

Test(cpus, v2_hybrid_unified, .init = setup, .fini = teardown)
{
    mk("/unified/svc");
    put("/unified/svc/cpu.max", "300000 100000\n");
    cr_assert_eq(op_cgroup_cpu_limit(root, "1:cpu:/\n0::/svc\n"), 3);
}

Test(cpus, v1_quota_and_period, .init = setup, .fini = teardown)
{
    mk("/cpu,cpuacct/docker/abc");
    put("/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n");
    put("/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
    const char *self = "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n";
    cr_assert_eq(op_cgroup_cpu_limit(root, self), 0, "quota -1 is no limit");
    put("/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "150000\n");
    cr_assert_eq(op_cgroup_cpu_limit(root, self), 2);
    /* The controller list must name cpu itself ("cpuacct" alone is not it). */
    cr_assert_eq(op_cgroup_cpu_limit(root, "3:cpuacct:/docker/abc\n"), 0);
    /* A split mount: ROOT/cpu. */
    mk("/cpu/job");
    put("/cpu/job/cpu.cfs_quota_us", "50000\n");
    put("/cpu/job/cpu.cfs_period_us", "100000\n");
    cr_assert_eq(op_cgroup_cpu_limit(root, "2:cpu:/job\n"), 1);
}

Test(cpus, affinity_of_one_cpu_gives_one)
{
    int n = op_cpu_count();
    cr_assert_geq(n, 1);
    cr_assert_leq(n, sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1024);
    cpu_set_t set;
    CPU_ZERO(&set);
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    int first = -1;
    for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
        if (CPU_ISSET(c, &set))
            first = c;
    cr_assert_geq(first, 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(first, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            _exit(3);
        _exit(op_cpu_count() == 1 ? 0 : 1);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "pinned to CPU %d, op_cpu_count is not 1 (status %d)", first, status);
}

/* `onepath bake --json` run pinned to one CPU (what `taskset -c 0` does) reports 1 thread. */
Test(cpus, bake_pinned_reports_one_thread)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        cpu_set_t set, one;
        CPU_ZERO(&one);
        if (sched_getaffinity(0, sizeof set, &set) != 0)
            _exit(126);
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set)) {
                CPU_SET(c, &one);
                break;
            }
        if (sched_setaffinity(0, sizeof one, &one) != 0 || dup2(fds[1], 1) < 0)
            _exit(126);
        close(fds[0]);
        execl(OP_BIN_DIR "/onepath", "onepath", "bake", "gen:rooms:32:1", "--json", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char out[4096];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof out - 1 && (got = read(fds[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)got;
    out[n] = '\0';
    close(fds[0]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "bake failed: status %d", status);
    const char *t = strstr(out, "\"threads\": ");
    cr_assert(t, "no threads in %s", out);
    cr_assert_eq(atoi(t + 11), 1, "pinned to one CPU, bake reports %s", t);
}
