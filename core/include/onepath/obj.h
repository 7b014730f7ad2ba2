/*
 * Wavefront OBJ in and out: the core's only file I/O.
 *
 * Reading accepts the geometry subset a navmesh needs: 'v x y z [w]' vertices and
 * 'f' faces whose corners are 'i', 'i/t', 'i//n' or 'i/t/n' (t and n must be
 * integers and are otherwise ignored). Negative indices count back from the
 * vertices read so far (-1 is the last one); positive indices must name a vertex
 * read before the face (no forward references). Polygons are fan-triangulated from
 * their first corner. Every other statement (vn, vt, g, o, s, usemtl, mtllib, l, p,
 * ...) and everything after a '#' is ignored. Lines end at '\n'; '\r' is white space.
 *
 * Numbers are read by the reader's own parser, not strtod: it is independent of
 * the locale and rounds the decimal value correctly to the nearest float (ties to
 * even) using exact integer arithmetic, so every machine reads the same bits.
 *
 * Refusals (all name the 1-based line number and what was wrong):
 *   OP_EINVAL: a NUL byte; a line longer than OP_OBJ_MAX_LINE bytes; a vertex with a
 *              missing, malformed or extra number; a non-finite coordinate (inf, nan,
 *              or a decimal beyond the float range); a face with fewer than 3
 *              corners; a malformed corner; index 0; an index outside the vertices
 *              read so far.
 *   OP_ERANGE: a coordinate beyond +-OP_MAX_COORD (it would fail op_soup_validate).
 *   OP_ENOMEM: the out arena is exhausted (message names the bytes).
 *   OP_EIO:    (op_obj_read_file) the file cannot be opened or read.
 * On failure *soup is zeroed; memory taken from out stays taken (release it with a mark).
 */
#ifndef ONEPATH_OBJ_H
#define ONEPATH_OBJ_H

#include <stddef.h>

#include "onepath/arena.h"
#include "onepath/hash.h"
#include "onepath/input.h"
#include "onepath/limits.h"
#include "onepath/status.h"

/* Parses len bytes of OBJ text (need not be NUL-terminated). The soup's arrays are
 * allocated from out (exactly sized: a cheap counting pass runs first) and areas is
 * NULL. An empty input gives an empty soup. */
op_status op_obj_parse(const char *buf, size_t len, op_arena *out, op_soup *soup, op_err *err);

/* Reads the file at path whole (into a temporary arena freed before returning) and
 * parses it as op_obj_parse does. */
op_status op_obj_read_file(const char *path, op_arena *out, op_soup *soup, op_err *err);
/* The same with at most max bytes read (op_input_file_read: regular files only, a larger one
 * is OP_ERANGE naming its size). op_obj_read_file uses OP_DEFAULT_MAX_INPUT_BYTES. */
op_status op_obj_read_file_max(const char *path, size_t max, op_arena *out, op_soup *soup,
                               op_err *err);

/*
 * Writes a soup as OBJ text: a comment line, one 'v x y z' line per vertex and one
 * 'f a b c' line per triangle (1-based). Coordinates are printed by the writer's own
 * exact formatter: the value rounded correctly (ties to even) to 9 significant digits
 * (enough for any float to read back to the same bits), trailing zeros dropped, never
 * an exponent ("0.5", "-12", "1024.01562"). Output bytes are therefore the same on every
 * machine, and op_obj_parse of the output gives the same vertices and triangles.
 * Areas are not written (OBJ has no place for them).
 * Refusals: an invalid soup (op_soup_validate's status and message); the sink
 * returning nonzero gives OP_EIO "obj: write failed".
 */
op_status op_obj_write(const op_soup *soup, op_write_fn write, void *ctx, op_err *err);

/* Formats one finite float as op_obj_write does into out (at least OP_OBJ_FLOAT_MAX
 * bytes), NUL-terminated; returns the length. Non-finite values give "nan"/"inf". */
#define OP_OBJ_FLOAT_MAX 64
size_t op_obj_format_float(float v, char *out);

/* Parses one number as the reader does: the whole of [s, s + len) must be a decimal
 * ([+-] digits [. digits] [e [+-] digits], or inf/nan). Returns 0 and sets *v, or -1
 * when malformed; a decimal beyond the float range gives +-inf. */
int op_obj_parse_float(const char *s, size_t len, float *v);

#endif
