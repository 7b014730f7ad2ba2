/*
 * nng-rtt: the round trip of a bare nng REQ/REP exchange (16 bytes each way), with no
 * onepath code on either side: the floor under onepathd's request latency. A REP socket
 * echoes on a thread of this process; the REQ side times N exchanges one after another.
 * With WORK_US the echo thread first spins that long (a stand-in for an on-demand build on
 * the thread that received the request): the round trip is then reported less WORK_US, the
 * floor under an on-demand tile.get's overhead, whose wait leaves the other threads idle.
 *
 *   nng-rtt [URL] [N] [WORK_US]   default ipc:///tmp/nng-rtt-<pid>.ipc, 3000, 0
 */
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static nng_socket rep;
static double work_us;

static void *echo(void *arg)
{
    (void)arg;
    nng_msg *m;
    while (nng_recvmsg(rep, &m, 0) == 0) {
        double t0 = now_us();
        while (now_us() - t0 < work_us) {
        }
        if (nng_sendmsg(rep, m, 0) != 0)
            nng_msg_free(m);
    }
    return NULL;
}

/* CPU time of this process (both sides and nng's threads), in us. */
static double cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    char url[256];
    if (argc > 1)
        snprintf(url, sizeof url, "%s", argv[1]);
    else
        snprintf(url, sizeof url, "ipc:///tmp/nng-rtt-%ld.ipc", (long)getpid());
    int n = argc > 2 ? atoi(argv[2]) : 3000;
    if (n < 1 || n > 1000000) {
        fprintf(stderr, "nng-rtt: N must be 1..1000000, not %s\n", argv[2]);
        return 2;
    }
    work_us = argc > 3 ? atof(argv[3]) : 0;
    if (!(work_us >= 0 && work_us <= 1e6)) {
        fprintf(stderr, "nng-rtt: WORK_US must be 0..1000000, not %s\n", argv[3]);
        return 2;
    }
    nng_socket req;
    int rv;
    if ((rv = nng_rep0_open(&rep)) != 0 || (rv = nng_listen(rep, url, NULL, 0)) != 0 ||
        (rv = nng_req0_open(&req)) != 0 || (rv = nng_dial(req, url, NULL, 0)) != 0) {
        fprintf(stderr, "nng-rtt: %s: %s\n", url, nng_strerror(rv));
        return 1;
    }
    pthread_t th;
    pthread_create(&th, NULL, echo, NULL);
    double *v = malloc((size_t)n * sizeof *v);
    char buf[16] = "ping";
    double c0 = cpu_us();
    for (int i = 0; i < n && v; i++) {
        double t0 = now_us();
        char *r = NULL;
        size_t sz = 0;
        if ((rv = nng_send(req, buf, sizeof buf, 0)) != 0 ||
            (rv = nng_recv(req, &r, &sz, NNG_FLAG_ALLOC)) != 0) {
            fprintf(stderr, "nng-rtt: exchange %d: %s\n", i, nng_strerror(rv));
            return 1;
        }
        nng_free(r, sz);
        v[i] = now_us() - t0 - work_us;
    }
    double cpu = cpu_us() - c0 - n * work_us;
    if (!v)
        return 1;
    qsort(v, (size_t)n, sizeof *v, cmp);
    printf("%s: bare nng REQ/REP round trip%s p50 %.1f us, p99 %.1f us, CPU %.1f us an exchange "
           "(both sides) (%d exchanges)\n",
           url, work_us > 0 ? " less the echo's work" : "", v[n / 2], v[(size_t)n * 99 / 100],
           cpu / n, n);
    if (work_us > 0)
        printf("  (the echo spun %.0f us before each reply; best exchange %.1f us over it)\n",
               work_us, v[0]);
    nng_close(req);
    nng_close(rep);
    pthread_join(th, NULL);
    free(v);
    if (argc <= 1)
        unlink(url + 6);
    return 0;
}
