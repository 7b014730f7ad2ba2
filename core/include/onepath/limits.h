/*
 * Every limit of the onepath core, in one place (as SQLite's sqliteLimit.h).
 * Each entry: meaning, unit, hard bound and why, and what the code returns when
 * the limit is met. Tests exercise N and N+1 where that is cheap.
 */
#ifndef ONEPATH_LIMITS_H
#define ONEPATH_LIMITS_H

/* Largest absolute input coordinate (world units). Beyond it: OP_ERANGE naming the
 * vertex and value. Bound: keeps global cell indices (2^21 / cs, cs >= 0.001) below 2^31
 * (the rasterizer keeps them in int64 regardless) and long cross products exact. */
#define OP_MAX_COORD 2097152.0 /* 2^21 */

/* Smallest cell size and row height of a heightfield (world units), the settings' own
 * lower bound; a tile's cs = tile_size / tile_cells must not be smaller either. Below:
 * OP_ERANGE. Bound: with OP_MAX_ORIGIN it keeps (v - origin) / cs far below 2^53, so
 * cell indices (int64) are exact. */
#define OP_MIN_CELL_SIZE 0.001

/* Largest absolute heightfield origin coordinate (2^40 wu; tile frames of heightfield
 * input can lie far beyond OP_MAX_COORD). Beyond: OP_ERANGE. */
#define OP_MAX_ORIGIN 1099511627776.0

/* Rows of a heightfield (cells of height ch). Span bottoms/tops are uint16, so the
 * hard bound is 65535. Beyond: OP_ERANGE naming the row count. */
#define OP_MAX_ROWS 65535

/* Cells along one side of a heightfield grid. Cell indices are int32 and the
 * distance field is uint32; 2^15 keeps width*height below 2^30. Beyond: OP_ERANGE. */
#define OP_MAX_GRID_SIDE 32768

/* The ceiling of a column's highest span for the span filters (the open sky,
 * Recast's 0xffff; build3d-spans.md §4). Equal to OP_MAX_ROWS. */
#define OP_SPAN_SKY OP_MAX_ROWS

/* Spans in one column. Spans of a column are disjoint and separated by at least one
 * empty row (touching spans merge), so a column holds at most (rows + 1) / 2 spans;
 * no further limit is needed. */
#define OP_MAX_SPANS_PER_COLUMN ((OP_MAX_ROWS + 1) / 2)

/* Spans of one heightfield, and fragments (what one triangle leaves in one column,
 * build3d-spans.md §3.5). Indices and links are uint32 with 0xffffffff reserved as
 * "no link"; the cap stays below that. Beyond: OP_ELIMIT naming the count. */
#define OP_MAX_SPANS 0x7ffffffe

/* Largest absolute grid origin (settings grid_origin_x, grid_origin_z; world units): where
 * tile (0, 0) of a soup starts (build3d-spans.md §1.1). Beyond: OP_ERANGE naming the
 * setting. Bound: valid coordinates lie within +-OP_MAX_COORD, so a global cell index is
 * at most (2^21 + 2^15) / 0.001 + B < 2147483000 cells from the grid origin and stays in
 * int32 (level.c's tile_of, tile keys); any grid line position is reachable within it,
 * since only the origin's offset from a multiple of TileSize moves the lines. */
#define OP_MAX_GRID_ORIGIN 32768.0

/* Cells along one side of a tile (tile_size / cell_size). Beyond: OP_ERANGE from
 * op_settings_validate. Bound: a tile's build grid must stay far below OP_MAX_GRID_SIDE. */
#define OP_MAX_TILE_CELLS 4096

/* Tiles of a soup's tile range (build3d-polys.md §1, build3d-spans.md §1.4). Beyond:
 * OP_ERANGE naming the count. */
#define OP_MAX_TILES (1 << 20)

/* Region ids are uint16; 0 = none, 0xffff reserved. Beyond: OP_ELIMIT. */
#define OP_MAX_REGIONS 0xfffe

/* Layers of one tile (build3d-polys.md §5). Beyond: OP_ELIMIT naming the tile. Counted
 * first where it is cheap: a column holding more than this many walkable spans (each on
 * a layer of its own) is refused before the layer partition, whose overlap pairs grow
 * with the square of a column's spans. */
#define OP_MAX_LAYERS 1024

/* Vertices of one tile layer (build3d-polys.md §5, uint16 indices in the tile format with
 * 0xffff the padding, so a layer holds at most OP_MAX_LAYER_VERTS - 1 = 65,535). Counted
 * per layer in every path, as the vertices its polygons use, right after the polygons and
 * before the detail stage: beyond, OP_ELIMIT naming the tile and layer. A tile built with
 * partition = layers in one piece (sample distance above 0.9 cells) welds all its layers
 * into one polygon mesh; that mesh has its own, larger bound (OP_MAX_TILE_MESH_VERTS). */
#define OP_MAX_LAYER_VERTS 65536

/* Vertices of one tile's polygon mesh (op_poly_mesh, uint32 indices): the welded vertices
 * of every layer a build polygonizes together, unused ones included. Only a tile built in
 * one piece with many full layers meets it: 64 layers of OP_MAX_LAYER_VERTS. Beyond:
 * OP_ELIMIT naming the tile, met while the mesh welds. Bound: the polygon stage's scratch
 * is about 90 bytes a contour vertex, so a tile's mesh stays near 400 MB at most (a
 * layer-by-layer build welds one layer at a time and never comes near it). */
#define OP_MAX_TILE_MESH_VERTS (1 << 22)

/* Polygons of one tile layer. Edge neighbour values 1..npolys name in-tile polygons and
 * values with bit 15 set are portals and seams (docs/spec/navmesh-format.md §3), so a
 * layer holds at most 0x7fff polygons. Beyond: OP_ELIMIT naming the tile and layer (build)
 * or OP_EPROTO (decoder, validator). */
#define OP_MAX_LAYER_POLYS 0x7fff

/* Volumes of one volume set (a level's, a build's, a volumes file's;
 * docs/spec/build3d-runtime.md §4). Each tile build visits every volume it is given (a
 * binary search each), so a set is kept to what one level plausibly holds. Beyond:
 * OP_ERANGE naming the count. */
#define OP_MAX_VOLUMES 65536

/* A volumes file (docs/spec/input-formats.md §6): largest accepted JSON text (bytes), about
 * 200 bytes a volume for the largest set. Beyond: OP_ERANGE naming the size. */
#define OP_MAX_VOLUMES_FILE (16u << 20)

/* Vertices of one polygon (MaxVertsPerPoly upper bound, as Detour). Setting beyond: OP_ERANGE. */
#define OP_MAX_VERTS_PER_POLY 6
#define OP_MIN_VERTS_PER_POLY 3

/* Vertices of one polygon's detail mesh (build3d-polys.md §4, uint8 indices). */
#define OP_MAX_DETAIL_VERTS 255

/* Area ids are 6 bits; 0 = not walkable, 63 = walkable (the default). */
#define OP_NULL_AREA     0
#define OP_WALKABLE_AREA 63
#define OP_MAX_AREA      63

/* OBJ reader: longest accepted line (bytes). Beyond: OP_EINVAL naming the line. */
#define OP_OBJ_MAX_LINE 65536

/* Heightfield / voxel-chunk files (hfio.h): largest file read whole (bytes). Beyond:
 * OP_ERANGE naming the size. Bound: parsing holds the file and its arrays (about 3.4x
 * its size for a heightfield) in memory at once. */
#define OP_MAX_INPUT_FILE (1u << 30)

/* Voxels of one voxel chunk (sx * sy * sz, one byte each). Beyond: OP_ERANGE naming the
 * product (op_chunk_parse). Bound: a chunk file's run-length encoding expands up to
 * 13107x, so its length alone does not bound the memory a parse takes. */
#define OP_MAX_CHUNK_VOXELS (1u << 30)

/* Detour export (docs/spec/detour-export.md §6). Beyond any of them the export refuses
 * the cell (OP_ELIMIT, OP_ERANGE for the coordinate) naming the count; nothing is cut.
 * Polygons of one Detour tile: an in-tile neighbour is stored as index + 1 below
 * DT_EXT_LINK (0x8000). Vertices: uint16 indices, dtCreateNavMeshData wants < 0xffff.
 * Detail triangles and extra vertices of one polygon: dtPolyDetail counts are bytes.
 * Reference bits: tile + polygon bits of a 32-bit dtPolyRef, leaving the 10 salt bits
 * dtNavMesh::init requires. Coordinates: Detour keeps world positions in float32, whose
 * spacing at 2^21 is already 0.25 wu (the soup's own bound, OP_MAX_COORD). */
#define OP_DETOUR_MAX_POLYS        0x7fff
#define OP_DETOUR_MAX_VERTS        0xfffe
#define OP_DETOUR_MAX_DETAIL_TRIS  255
#define OP_DETOUR_MAX_DETAIL_VERTS 255
#define OP_DETOUR_REF_BITS         22
#define OP_DETOUR_MAX_COORD        OP_MAX_COORD

_Static_assert(OP_MAX_ROWS <= 65535, "span rows are stored as uint16");
_Static_assert(OP_MAX_TILE_MESH_VERTS >= OP_MAX_LAYER_VERTS && OP_MAX_TILE_MESH_VERTS < (1 << 29),
               "a tile mesh holds a full layer; weld table sizes stay in int");
_Static_assert(OP_MAX_REGIONS < 0xffff, "region ids are uint16 with 0xffff reserved");

#endif
