/*
 * The onepathd a daemon bench starts for itself: the binary next to the bench's, on an
 * ipc:// socket in a fresh directory under /var/tmp (a real disk, so fsync costs what it
 * costs), with a data directory and a request log there, 2 build threads.
 */
#ifndef OP_BENCH_SPAWN_H
#define OP_BENCH_SPAWN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct bench_daemon {
    char dir[256];
    char url[300], data[300], log[300];
    pid_t pid;
} bench_daemon;

/* Starts it (tag names the directory); 0, or -1 (printed). */
static inline int bench_daemon_start(bench_daemon *d, const char *argv0, const char *tag,
                                     int no_fsync)
{
    char bin[4096];
    snprintf(d->dir, sizeof d->dir, "/var/tmp/%s-XXXXXX", tag);
    if (!mkdtemp(d->dir))
        return perror("mkdtemp"), -1;
    const char *slash = strrchr(argv0, '/');
    snprintf(bin, sizeof bin, "%.*s/onepathd", slash ? (int)(slash - argv0) : 1,
             slash ? argv0 : ".");
    snprintf(d->url, sizeof d->url, "ipc://%s/s.ipc", d->dir);
    snprintf(d->data, sizeof d->data, "%s/data", d->dir);
    snprintf(d->log, sizeof d->log, "%s/log", d->dir);
    d->pid = fork();
    if (d->pid == 0) {
        const char *args[] = {
            bin,     "--listen", d->url,      "--data-dir", d->data,
            "--log", d->log,     "--threads", "2",          no_fsync ? "--no-fsync" : NULL,
            NULL};
        execv(bin, (char *const *)args);
        perror(bin);
        _exit(127);
    }
    return d->pid > 0 ? 0 : -1;
}

/* SIGTERM, wait, remove its directory. */
static inline void bench_daemon_stop(bench_daemon *d)
{
    kill(d->pid, SIGTERM);
    waitpid(d->pid, NULL, 0);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", d->dir);
}

#endif
