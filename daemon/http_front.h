/* The HTTP front: bounds each request head before nng's HTTP server sees it (http_front.c). */
#ifndef OPD_HTTP_FRONT_H
#define OPD_HTTP_FRONT_H

#include <nng/nng.h>

/* Request line and headers, bytes: more gets 431. nng's server reads a head into a fixed
 * 8 KiB buffer; 32 bytes of it are kept for the "Connection: close" the front substitutes. */
#define OPD_FRONT_HEAD_MAX      8160
#define OPD_FRONT_HEAD_MAX_TEXT "8160"
#define OPD_FRONT_HEAD_MS       10000 /* the whole head must arrive within this: else 408 */

typedef struct opd_front opd_front;

/* Listens on listen_url ("tcp://HOST:PORT") and hands each request whose head fits on to
 * nng's HTTP server at 127.0.0.1:backend_port. Returns 0 or an nng error. */
int opd_front_open(const char *listen_url, int backend_port, opd_front **out);
int opd_front_port(const opd_front *f); /* the bound port */
void opd_front_close(opd_front *f);     /* stops listening; frees every connection */

#endif
