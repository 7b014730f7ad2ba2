/* Helpers shared by the subcommands: options, loading a level, JSON output. */
#ifndef OP_CLI_COMMON_H
#define OP_CLI_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "onepath/arena.h"
#include "onepath/build.h"
#include "onepath/input.h"
#include "onepath/settings.h"

/* The bundled default level: what `onepath bake` builds with no arguments. */
#define OP_CLI_DEFAULT_LEVEL "gen:rooms:128:1"

/* Loads a level: an OBJ file path, or "gen:KIND:SIZE:SEED" for a generated level.
 * Arrays come from a. Prints the error (naming the file/line) and returns nonzero on failure. */
int cli_load_level(const char *spec, op_arena *a, op_soup *soup);

/* Opens a level with settings s: "gen:KIND:SIZE:SEED", or a file whose first bytes pick the
 * reader (docs/spec/input-formats.md: "OPHF" heightfield, "OPVC" voxel chunk, anything else
 * OBJ). Input arrays come from a (keep it alive while the level is used). Prints the error
 * and returns nonzero on failure; free the level with op_level_destroy. */
int cli_open_level(const char *spec, const op_settings *s, op_arena *a, op_level **lvl);

/* cli_open_level with the volume set vols[0..nvols) (sorted by name, cli_read_volumes). */
int cli_open_level_vols(const char *spec, const op_settings *s, const op_volume *vols, int nvols,
                        op_arena *a, op_level **lvl);

/* Reads a volumes file (docs/spec/input-formats.md §6) into a and sorts it by name (the order
 * a level applies volumes in). path NULL: no volumes. Prints the error, returns nonzero. */
int cli_read_volumes(const char *path, op_arena *a, op_volume **vols, int *nvols);

/* The size bound of every file the tool reads (--max-input-bytes; default
 * OP_DEFAULT_MAX_INPUT_BYTES, input_file.h). */
void cli_set_max_input_bytes(size_t max);
size_t cli_max_input_bytes(void);

/* Reads the regular file at path whole into a, at most --max-input-bytes (input_file.h).
 * Prints the error (naming the file; a size limit names the flag) and returns nonzero. */
int cli_read_input(const char *path, const char *what, op_arena *a, uint8_t **data, size_t *len);

/* Applies one "key=value" to s (prints the error). */
int cli_apply_set(op_settings *s, const char *kv);

/* Parses "TX,TZ". */
int cli_parse_tile(const char *text, int *tx, int *tz);
/* Parses a positive int option value within [lo, hi]. */
int cli_parse_int(const char *opt, const char *text, int lo, int hi, int *out);

/* Milliseconds from a monotonic clock. */
double cli_now_ms(void);

/* Writes s as a JSON string (quoted, escaped). */
void cli_json_str(FILE *f, const char *s);

#endif
