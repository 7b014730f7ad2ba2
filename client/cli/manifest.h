/* Bake manifests (docs/spec/bake-output.md): writing one, checking a directory of them. */
#ifndef OP_CLI_MANIFEST_H
#define OP_CLI_MANIFEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Maximum --set lines a manifest records (bake refuses more). */
#define OP_MANIFEST_MAX_SETS 64

/* What a bake knows of its output, for the header lines. */
typedef struct manifest_head {
    const char *level; /* as given */
    uint64_t input;    /* FNV-1a of the level file (or the gen: spec) */
    const char *const *sets;
    int nsets;
    int has_volumes;
    uint64_t volumes;
    int grid[4]; /* tx0 tz0 tx1 tz1 */
    int shard, nshards, row0, row1;
} manifest_head;

/* FNV-1a 64 of a file's bytes into *h; 0 or 1 (printed). */
int manifest_hash_file(const char *path, uint64_t *h);

/* The manifest's file name in dir for this shard (N = 1: manifest.optm). */
void manifest_name(char *buf, size_t cap, int shard, int nshards);

/* Starts DIR/<name>.tmp<pid>; tile lines follow with manifest_tile, then manifest_finish
 * writes hash and end, and renames. NULL (printed) on failure. */
FILE *manifest_begin(const char *dir, const manifest_head *h);
void manifest_tile(FILE *f, const char *name, size_t len, uint64_t hash);
int manifest_finish(FILE *f, const char *dir, const manifest_head *h, uint64_t hash, long ntiles);

/* Removes the manifests that this bake makes stale (spec §1.4); 0 or 1 (printed). */
int manifest_remove_stale(const char *dir, int nshards);

/* Checks DIR's manifests against the tile files names[0..n) (sorted); prints one
 * "FAIL <what>: <why>" line per offence to stdout. *found: manifests read. Returns the
 * number of offences. bad_file[i] is set for a file that failed, so the caller counts
 * each file once. */
size_t manifest_verify(const char *dir, char **names, size_t n, unsigned char *bad_file,
                       int *found);

#endif
