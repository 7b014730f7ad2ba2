"""Tile blobs (docs/spec/navmesh-format.md): a strict decoder, the content hash and the
mesh hash, written from the spec alone (no onepath C code is involved).

decode_tile(blob) refuses anything but the exact layout (navmesh-format.md §2, §4) with
a ProtocolError naming the key or byte offset, checks the content hash, validates the
tile as §4 does and returns a Tile whose arrays are plain lists, or numpy arrays when
numpy is importable (numpy=None, the default) or asked for (numpy=True).
"""

import math
import struct
from fractions import Fraction

from .errors import Incomplete, ProtocolError

FORMAT = 3
NULL_INDEX = 0xFFFF  # pads polys after a polygon's last vertex
NEI_WALL = 0  # neis: no neighbour
NEI_PORTAL = 0x8000  # neis: | side (0 = -x, 1 = +z, 2 = +x, 3 = -z)
NEI_SEAM = 0xC000  # neis: | layer, a layer seam into that layer of the tile cell (§3, §6)
MAX_LAYERS = 1024
MAX_LAYER_VERTS = 65536
MAX_LAYER_POLYS = 0x7FFF
MAX_AREA = 63
MAX_REGION = 0xFFFE  # regs: region ids are 1..MAX_REGION (§2 item 7)

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
_M64 = (1 << 64) - 1

# The 17 keys in their order (§2) and the element size of each bin.
_BINS = (("verts", 4), ("polys", 2), ("neis", 2), ("areas", 1), ("flags", 2),
         ("regs", 2), ("dmeshes", 4), ("dverts", 4), ("dtris", 1))


def fnv1a64(data, h=FNV_OFFSET):
    """64-bit FNV-1a of data (bytes-like), continuing from h."""
    for b in bytes(data):
        h = ((h ^ b) * FNV_PRIME) & _M64
    return h


def content_hash(blob):
    """The content hash a blob must carry: FNV-1a 64 of every byte before the 'hash'
    key's str header, i.e. all but the last 14 bytes (0xa4 'hash' 0xcf + 8)."""
    if len(blob) < 14:
        raise Incomplete("tile blob of %d bytes has no hash" % len(blob))
    return fnv1a64(memoryview(blob)[:-14])


def mesh_hash(tile_hashes):
    """The hash of a whole mesh: FNV-1a 64 over the tiles' content hashes, 8 bytes
    little-endian each, in key order (tz, then tx, then layer). tile_hashes: an
    iterable of ((tx, tz, layer), hash) in any order."""
    h = FNV_OFFSET
    for _, th in sorted(tile_hashes, key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        h = fnv1a64(struct.pack("<Q", th), h)
    return h


def _numpy():
    try:
        import numpy
    except ImportError:
        return None
    return numpy


class Tile:
    """One decoded tile layer. Positions are tile-local float32 (x, z from 0 at the
    tile's minimum edge, y from its lowest vertex row); world = origin + local.

    verts    nverts x 3 (x, y, z)
    polys    npolys x nvp vertex indices, NULL_INDEX after the last used slot
    neis     npolys x nvp: edge k (vertex k -> k+1) is NEI_WALL, 1 + the in-tile
             polygon across it, or NEI_PORTAL | side
    areas    npolys area ids; flags: npolys polygon flags
    regs     npolys region ids (1..MAX_REGION): the region of the tile cell's build
             each polygon was traced from; unique within a tile cell, unrelated
             between cells, so (tx, tz, reg) names a region of the mesh
    dmeshes  npolys x 4: first extra vertex, extra count, first triangle, triangle count
    dverts   ndverts x 3 extra detail vertices
    dtris    ndtris x 4: a, b, c (0..n-1 the polygon's vertices, then its extras) and
             the edge flags (bit k: edge k, from corner k to corner k+1, is on the
             polygon's boundary)
    """

    __slots__ = ("format", "tx", "tz", "layer", "origin", "tile_size", "nvp", "hash",
                 "verts", "polys", "neis", "areas", "flags", "regs", "dmeshes", "dverts",
                 "dtris")

    @property
    def key(self):
        return (self.tx, self.tz, self.layer)

    @property
    def npolys(self):
        return len(self.areas)

    def poly_verts(self, p):
        """The used vertex indices of polygon p, in order (counter-clockwise seen from
        above with x right and z up)."""
        out = []
        for v in self.polys[p]:
            if int(v) == NULL_INDEX:
                break
            out.append(int(v))
        return out

    def poly_neis(self, p):
        """The neighbour values of polygon p's used edges."""
        return [int(n) for n in self.neis[p][:len(self.poly_verts(p))]]

    def world(self, local):
        """A tile-local (x, y, z) in world coordinates (double)."""
        return tuple(float(o) + float(c) for o, c in zip(self.origin, local))

    def detail(self, p):
        """Polygon p's detail mesh: (vertices, triangles), vertices being the polygon's
        own then its extras (tile-local), triangles (a, b, c, edge_flags)."""
        first, extra, tfirst, tcount = (int(x) for x in self.dmeshes[p])
        verts = [tuple(float(c) for c in self.verts[v]) for v in self.poly_verts(p)]
        verts += [tuple(float(c) for c in self.dverts[first + i]) for i in range(extra)]
        tris = [tuple(int(x) for x in self.dtris[tfirst + i]) for i in range(tcount)]
        return verts, tris

    def __repr__(self):
        return "Tile(tx=%d, tz=%d, layer=%d, polys=%d, verts=%d, hash=%016x)" % (
            self.tx, self.tz, self.layer, self.npolys, len(self.verts), self.hash)


class _Reader:
    """A cursor over the blob that expects the one layout of §2."""

    def __init__(self, data):
        self.b = data
        self.off = 0
        self.key = "map"

    def fail(self, what, incomplete=False):
        cls = Incomplete if incomplete else ProtocolError
        raise cls("tile decode: byte %d (key '%s'): %s" % (self.off, self.key, what))

    def need(self, n, what):
        if len(self.b) - self.off < n:
            self.fail(what, incomplete=True)

    def header(self):
        self.need(3, "blob shorter than its map header")
        if self.b[0:3] != b"\xde\x00\x11":
            self.fail("not a 17-entry map (map16)")
        self.off = 3

    def expect_key(self, key):
        self.key = key
        self.need(1, "blob ends before this key")
        t = self.b[self.off]
        if t < 0xA0 or t > 0xBF or (t & 0x1F) != len(key):
            self.fail("expected this key (a short str)")
        self.need(1 + len(key), "key cut short")
        if self.b[self.off + 1:self.off + 1 + len(key)] != key.encode():
            self.fail("another key stands where this key belongs")
        self.off += 1 + len(key)

    def integer(self, lo, hi):
        self.need(1, "blob ends before the value")
        t = self.b[self.off]
        n = 0
        if t <= 0x7F:
            v = t
        elif t >= 0xE0:
            v = t - 256
        elif 0xCC <= t <= 0xD3:
            n = (1, 2, 4, 8)[(t - 0xCC) % 4]
            self.need(1 + n, "integer cut short")
            v = int.from_bytes(self.b[self.off + 1:self.off + 1 + n], "big", signed=t >= 0xD0)
        else:
            self.fail("expected an integer")
        if not lo <= v <= hi:
            self.fail("integer out of range")
        self.off += 1 + n
        return v

    def float64(self):
        self.need(9, "float64 cut short")
        if self.b[self.off] != 0xCB:
            self.fail("expected a float64")
        (v,) = struct.unpack_from(">d", self.b, self.off + 1)
        if not math.isfinite(v):
            self.fail("float64 is not finite")
        self.off += 9
        return v

    def binary(self, es):
        self.need(1, "blob ends before the bin")
        t = self.b[self.off]
        hn = {0xC4: 1, 0xC5: 2, 0xC6: 4}.get(t)
        if hn is None:
            self.fail("expected a bin")
        self.need(1 + hn, "bin header cut short")
        n = int.from_bytes(self.b[self.off + 1:self.off + 1 + hn], "big")
        if n > len(self.b) - self.off - 1 - hn:
            self.fail("bin length exceeds the bytes present")
        if n % es:
            self.fail("bin length is not a multiple of its element size")
        start = self.off + 1 + hn
        self.off = start + n
        return self.b[start:start + n]


def decode_tile(blob, numpy=None, validate=True):
    """Decodes one tile blob into a Tile. numpy: None (arrays when numpy is importable),
    True (numpy arrays, ImportError without it) or False (plain lists). validate:
    run the checks of navmesh-format.md §4 (polygons, neighbours, detail) after the
    layout and hash checks. Raises ProtocolError / Incomplete naming what is wrong."""
    data = bytes(blob)
    r = _Reader(data)
    t = Tile()
    r.header()
    r.expect_key("format")
    t.format = r.integer(0, 65535)
    if t.format != FORMAT:
        r.fail("format version older than 3 (no region ids): rebuild" if t.format < FORMAT
               else "unknown format version %d" % t.format)
    r.expect_key("tx")
    t.tx = r.integer(-(1 << 31), (1 << 31) - 1)
    r.expect_key("tz")
    t.tz = r.integer(-(1 << 31), (1 << 31) - 1)
    r.expect_key("layer")
    t.layer = r.integer(0, MAX_LAYERS - 1)
    r.expect_key("origin")
    r.need(1, "blob ends before the origin")
    if data[r.off] != 0x93:
        r.fail("expected an array of 3 float64")
    r.off += 1
    t.origin = (r.float64(), r.float64(), r.float64())
    r.expect_key("tile_size")
    t.tile_size = r.float64()
    r.expect_key("nvp")
    t.nvp = r.integer(3, 6)
    raw = {}
    for key, es in _BINS:
        r.expect_key(key)
        raw[key] = r.binary(es)
    covered = r.off
    r.expect_key("hash")
    r.need(9, "hash cut short")
    if data[r.off] != 0xCF:
        r.fail("expected a uint64 (0xcf)")
    (t.hash,) = struct.unpack_from(">Q", data, r.off + 1)
    r.off += 9
    if r.off != len(data):
        r.fail("trailing bytes after the blob")
    r.key = "counts"
    np_ = len(raw["areas"])
    nvp = t.nvp
    if len(raw["verts"]) % 12 or len(raw["dverts"]) % 12 or len(raw["dtris"]) % 4:
        r.fail("vertex or triangle array length is not a whole count")
    if (len(raw["polys"]) != 2 * nvp * np_ or len(raw["neis"]) != 2 * nvp * np_
            or len(raw["flags"]) != 2 * np_ or len(raw["regs"]) != 2 * np_
            or len(raw["dmeshes"]) != 16 * np_):
        r.fail("polygon arrays disagree with the polygon count")
    if len(raw["verts"]) // 12 > MAX_LAYER_VERTS or np_ > MAX_LAYER_POLYS:
        r.fail("too many vertices or polygons")
    r.key = "hash"
    if t.hash != fnv1a64(memoryview(data)[:covered]):
        r.fail("content hash does not match the bytes")

    lists = {
        "verts": _rows(struct.unpack("<%df" % (len(raw["verts"]) // 4), raw["verts"]), 3),
        "polys": _rows(struct.unpack("<%dH" % (nvp * np_), raw["polys"]), nvp),
        "neis": _rows(struct.unpack("<%dH" % (nvp * np_), raw["neis"]), nvp),
        "areas": list(raw["areas"]),
        "flags": list(struct.unpack("<%dH" % np_, raw["flags"])),
        "regs": list(struct.unpack("<%dH" % np_, raw["regs"])),
        "dmeshes": _rows(struct.unpack("<%dI" % (4 * np_), raw["dmeshes"]), 4),
        "dverts": _rows(struct.unpack("<%df" % (len(raw["dverts"]) // 4), raw["dverts"]), 3),
        "dtris": _rows(list(raw["dtris"]), 4),
    }
    r.key = "regs"
    for p, reg in enumerate(lists["regs"]):
        if not 1 <= reg <= MAX_REGION:
            r.fail("polygon %d region %d outside 1..%d" % (p, reg, MAX_REGION))
    for k, v in lists.items():
        setattr(t, k, v)
    if validate:
        _validate(t)
    np = _numpy() if numpy is None else (_require_numpy() if numpy else None)
    if np is not None:
        dt = {"verts": "<f4", "polys": "<u2", "neis": "<u2", "areas": "u1", "flags": "<u2",
              "regs": "<u2", "dmeshes": "<u4", "dverts": "<f4", "dtris": "u1"}
        cols = {"verts": 3, "polys": nvp, "neis": nvp, "dmeshes": 4, "dverts": 3, "dtris": 4}
        for key, es in _BINS:
            a = np.frombuffer(raw[key], dtype=dt[key])
            if key in cols:
                a = a.reshape(-1, cols[key])
            setattr(t, key, a.astype(a.dtype.newbyteorder("=")))
    return t


def _require_numpy():
    np = _numpy()
    if np is None:
        raise ImportError("decode_tile(numpy=True) needs numpy (python3-numpy)")
    return np


def _rows(flat, n):
    return [list(flat[i:i + n]) for i in range(0, len(flat), n)]


# ---- validation (navmesh-format.md §4) ----

def _fail(what):
    raise ProtocolError("tile: " + what)


def _orient(a, b, c):
    """Sign of the turn a -> b -> c in (x, z): > 0 counter-clockwise with x right and z
    up. Exact: the double evaluation when its error bound allows, else rationals."""
    acx, acz = a[0] - c[0], a[1] - c[1]
    bcx, bcz = b[0] - c[0], b[1] - c[1]
    left, right = acx * bcz, acz * bcx
    det = left - right
    bound = 3.3306690738754716e-16 * (abs(left) + abs(right))
    if det > bound or -det > bound:
        return 1 if det > 0 else -1
    fa, fb, fc = ([Fraction(x) for x in p] for p in (a, b, c))
    d = (fa[0] - fc[0]) * (fb[1] - fc[1]) - (fa[1] - fc[1]) * (fb[0] - fc[0])
    return (d > 0) - (d < 0)


def _validate(t):
    nverts = len(t.verts)
    np_ = len(t.areas)
    try:
        size32 = struct.unpack("<f", struct.pack("<f", t.tile_size))[0]
    except OverflowError:
        size32 = math.inf
    if not (t.tile_size > 0.0 and math.isfinite(size32)):
        _fail("tile_size %r is not positive" % t.tile_size)
    if nverts >= MAX_LAYER_VERTS:
        _fail("%d vertices (at most %d)" % (nverts, MAX_LAYER_VERTS - 1))
    for i, (x, y, z) in enumerate(t.verts):
        if not all(math.isfinite(c) for c in (x, y, z)):
            _fail("vertex %d is not finite" % i)
        if not (0.0 <= x <= size32 and 0.0 <= z <= size32 and y >= 0.0):
            _fail("vertex %d (%r, %r, %r) outside the tile" % (i, x, y, z))
    xz = [(v[0], v[2]) for v in t.verts]
    for p in range(np_):
        row = t.polys[p]
        pv = []
        for k, v in enumerate(row):
            if v == NULL_INDEX:
                if any(w != NULL_INDEX for w in row[k:]):
                    _fail("polygon %d has a vertex after padding" % p)
                break
            if v >= nverts:
                _fail("polygon %d vertex %d index %d >= %d" % (p, k, v, nverts))
            if v in pv:
                _fail("polygon %d repeats vertex %d" % (p, v))
            pv.append(v)
        n = len(pv)
        if n < 3:
            _fail("polygon %d has %d vertices" % (p, n))
        area2 = 0.0
        for k in range(n):
            a, b, c = xz[pv[k - 1]], xz[pv[k]], xz[pv[(k + 1) % n]]
            if _orient(a, b, c) < 0:
                _fail("polygon %d turns clockwise at vertex %d" % (p, k))
            area2 += b[0] * c[1] - c[0] * b[1]
        if not area2 > 0.0:
            _fail("polygon %d has no positive area" % p)
        if t.areas[p] > MAX_AREA:
            _fail("polygon %d area %d > %d" % (p, t.areas[p], MAX_AREA))
    for p in range(np_):
        _check_neis(t, p, size32)
    _check_detail(t)


def _portal_side(va, vb, size32):
    """The tile side both vertices lie on (bitwise), in the order -x, +z, +x, -z."""
    for side, (coord, value) in enumerate(((0, 0.0), (2, size32), (0, size32), (2, 0.0))):
        if va[coord] == value and vb[coord] == value:
            return side
    return -1


def _check_neis(t, p, size32):
    pv = t.poly_verts(p)
    n = len(pv)
    for k, nb in enumerate(t.neis[p]):
        if k >= n:
            if nb != NEI_WALL:
                _fail("polygon %d unused edge %d has a neighbour" % (p, k))
            continue
        a, b = pv[k], pv[(k + 1) % n]
        if nb & 0xC000 == NEI_SEAM:
            layer = nb & 0x3FFF
            if layer >= MAX_LAYERS or layer == t.layer:
                _fail("polygon %d edge %d is a seam into layer %d (own layer %d)"
                      % (p, k, layer, t.layer))
        elif nb & NEI_PORTAL:
            side = nb & 0x7FFF
            if side > 3:
                _fail("polygon %d edge %d portal side %d" % (p, k, side))
            if _portal_side(t.verts[a], t.verts[b], size32) != side:
                _fail("polygon %d edge %d is marked portal %d but is not on that side"
                      % (p, k, side))
        elif nb != NEI_WALL:
            q = nb - 1
            if q >= len(t.areas) or q == p:
                _fail("polygon %d edge %d neighbour %d" % (p, k, nb))
            qv = t.poly_verts(q)
            m = len(qv)
            back = [j for j in range(m) if qv[j] == b and qv[(j + 1) % m] == a]
            if not back or t.neis[q][back[0]] != p + 1:
                _fail("polygon %d edge %d and polygon %d do not share the edge" % (p, k, q))


def _check_detail(t):
    nd, nt = len(t.dverts), len(t.dtris)
    next_v = next_t = 0
    for p in range(len(t.areas)):
        first, extra, tfirst, tcount = t.dmeshes[p]
        if first != next_v or tfirst != next_t or first + extra > nd or tfirst + tcount > nt:
            _fail("polygon %d detail ranges" % p)
        next_v, next_t = first + extra, tfirst + tcount
        limit = len(t.poly_verts(p)) + extra
        for i in range(tfirst, tfirst + tcount):
            if any(x >= limit for x in t.dtris[i][:3]):
                _fail("polygon %d detail triangle %d index out of range" % (p, i))
    if next_v != nd or next_t != nt:
        _fail("detail arrays are longer than the polygons' ranges")
    for i, v in enumerate(t.dverts):
        if not all(math.isfinite(c) for c in v):
            _fail("detail vertex %d is not finite" % i)
