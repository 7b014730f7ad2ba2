/*
 * How many CPUs this process may use: the default thread count of `onepath bake` and
 * onepathd. Not the machine's count (sysconf): a process pinned with taskset or
 * sched_setaffinity, or run in a cgroup with a CPU quota (a container's CPU limit, a
 * systemd CPUQuota=), gets no more time than that however many threads it starts.
 *
 *   count = min(CPUs in the affinity mask, ceil(quota / period) of every cgroup
 *               from the process's own up to the root), at least 1
 *
 * cgroup v2 reads cpu.max ("max 100000" or "QUOTA PERIOD"); cgroup v1 reads
 * cpu.cfs_quota_us and cpu.cfs_period_us (quota -1: none). Files that are missing or
 * unreadable impose no limit; the functions never fail.
 */
#ifndef ONEPATH_CPUS_H
#define ONEPATH_CPUS_H

/* The CPUs this process may use, from sched_getaffinity and /sys/fs/cgroup for the
 * cgroup named in /proc/self/cgroup. At least 1, at most 1024. */
int op_cpu_count(void);

/* The CPU limit of cgroup quotas alone, ceil(quota / period), minimised over the cgroup
 * directory ROOT/PATH and its parents up to ROOT; 0 when no quota applies.
 * proc_cgroup is the text of /proc/self/cgroup ("0::/PATH" for v2, "N:cpu,...:/PATH"
 * for v1, whose controller directories are ROOT/cpu,cpuacct, ROOT/cpu, or ROOT itself;
 * v2 is read at ROOT and at ROOT/unified, where hybrid trees mount it).
 * ROOT is a parameter so that tests can lay out a cgroup tree in a temporary directory. */
int op_cgroup_cpu_limit(const char *root, const char *proc_cgroup);

/* Parses the text of a cgroup v2 cpu.max file: ceil(QUOTA / PERIOD) for "QUOTA PERIOD",
 * 0 for "max ..." or for text that is not two positive integers. */
int op_cgroup_parse_cpu_max(const char *text);

#endif
