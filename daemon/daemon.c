/*
 * onepathd leaf services every layer may use, because they call nothing of the daemon:
 * the monotonic clock, the log (one line per write, under the log lock) and the wake-up
 * of the loop thread (a uv_async_send on the handle main.c made).
 */
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "daemon.h"

uint64_t opd_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void opd_daemon_wake(opd_daemon *d)
{
    if (d->wake)
        uv_async_send(d->wake);
}

/* Longest log line written in one piece; a longer one (a long error message) is
 * written in parts, still under the lock. */
#define OPD_LOG_LINE 512

void opd_log(opd_daemon *d, const char *fmt, ...)
{
    /* The line is formatted here, outside the lock, and written with one write (an
     * unbuffered stderr would otherwise take one per part). */
    char line[OPD_LOG_LINE];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%03ldZ ", ts.tv_nsec / 1000000);
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int m = vsnprintf(line + n, sizeof line - n, fmt, ap);
    int whole = m >= 0 && (size_t)m + 1 < sizeof line - n;
    pthread_mutex_lock(&d->log_mu);
    FILE *f = d->log ? d->log : stderr;
    if (whole) {
        line[n + (size_t)m] = '\n';
        fwrite(line, 1, n + (size_t)m + 1, f);
    } else {
        fwrite(line, 1, n, f);
        vfprintf(f, fmt, ap2);
        fputc('\n', f);
    }
    fflush(f);
    pthread_mutex_unlock(&d->log_mu);
    va_end(ap2);
    va_end(ap);
}
