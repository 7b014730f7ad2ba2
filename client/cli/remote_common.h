/* Helpers of the commands that talk to onepathd: options, tile files, the level's rect. */
#ifndef OP_CLI_REMOTE_COMMON_H
#define OP_CLI_REMOTE_COMMON_H

#include <stdint.h>

#include "onepath/client.h"
#include "onepath/input.h"

/* Default per-request timeout of the remote commands (ms). */
#define OP_CLI_TIMEOUT_MS 60000

#define REMOTE_MAX_URL_ARGS 64

/* Options every remote command shares. --url may be given several times; each value is
 * URL[,URL...] or @FILE (protocol.md §11.3): the members of a fleet. */
typedef struct remote_opts {
    const char *url; /* the last --url value */
    const char *urls[REMOTE_MAX_URL_ARGS];
    int nurls;
    const char *level;
    const char *out_dir;
    int timeout_ms;
    const char *token_file; /* --token-file or $ONEPATH_TOKEN_FILE (NULL: no token) */
    char member[4096];      /* set by remote_open: the member it dialed */
} remote_opts;

/* Environment variable holding the default --url. */
#define OP_CLI_URL_ENV "ONEPATH_URL"
/* Environment variable holding the default --token-file. */
#define OP_CLI_TOKEN_FILE_ENV "ONEPATH_TOKEN_FILE"

/* The defaults: timeout OP_CLI_TIMEOUT_MS, url from $ONEPATH_URL when set and not empty
 * (a --url option replaces it). */
void remote_opts_init(remote_opts *o);

/* Consumes a shared option at argv[*i] (--url, --level, --out, --timeout, --token-file); returns 1
 * when consumed, 0 when not ours, -1 on a bad value (printed). */
int remote_opt(int argc, char **argv, int *i, remote_opts *o);

/* Opens the client of the member that holds o->level (rendezvous placement over the
 * --url members; with no level, the only member), printing the error. */
op_client *remote_open(remote_opts *o);
/* Opens a client of url with o's token (if any), printing the error. */
op_client *remote_open_url(const remote_opts *o, const char *url);
/* The fleet's members from every --url (op_fleet_members_free them); 0 or 1 (printed). */
int remote_members(const remote_opts *o, char ***members, int *n);
/* The mesh a level spec uploads as: its arrays are soup's; its name is name, or by default
 * the file's base name ("generated" for gen:KIND:SIZE:SEED), as put and mesh put name it. */
op_client_mesh remote_mesh(const char *spec, const char *name, const op_soup *soup);
/* Prints "onepath: what: message (OP_NAME)" and returns 1. */
int remote_fail(const char *what, const op_err *e);

/* Writes DIR/tile_<tx>_<tz>_<layer>.optile atomically (temp file, rename). 0 or 1 (printed). */
int tile_file_write(const char *dir, int tx, int tz, int layer, const uint8_t *data, size_t len);
/* Writes path whole or not at all (a temporary file renamed): 0, or 1 printed. */
int file_write(const char *path, const uint8_t *data, size_t len);
/* Removes the layer files of tile (tx, tz) whose layer is not in keep[0..nkeep). */
int tile_files_prune(const char *dir, int tx, int tz, const int *keep, int nkeep);
/* Creates dir if missing (0 or 1, printed). */
int out_dir_make(const char *dir);

/* Folds layer hashes as `onepath bake` does for its summary. */
uint64_t hash_fold(uint64_t h, uint64_t layer_hash);

#endif
