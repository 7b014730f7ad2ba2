"""The tile decoder against `onepath bake --out` files: every field, the hashes, and
refusals. An encoder written here from navmesh-format.md §2 re-encodes every decoded
tile to the same bytes, and builds altered tiles (with correct hashes) that validation
must refuse."""

import os
import struct

import pytest

import onepath
import support


def _uint(v):
    if v < 128:
        return bytes([v])
    if v < 256:
        return b"\xcc" + bytes([v])
    if v < 65536:
        return b"\xcd" + struct.pack(">H", v)
    return b"\xce" + struct.pack(">I", v)


def _int(v):
    if v >= 0:
        return _uint(v)
    if v >= -32:
        return struct.pack("b", v)
    if v >= -128:
        return b"\xd0" + struct.pack(">b", v)
    if v >= -32768:
        return b"\xd1" + struct.pack(">h", v)
    return b"\xd2" + struct.pack(">i", v)


def _bin(data):
    n = len(data)
    head = b"\xc4" + bytes([n]) if n < 256 else (
        b"\xc5" + struct.pack(">H", n) if n < 65536 else b"\xc6" + struct.pack(">I", n))
    return head + data


def _key(k):
    return bytes([0xA0 | len(k)]) + k.encode()


def encode(t):
    """A tile blob from a decoded Tile (plain lists), per navmesh-format.md §2."""
    flat = lambda rows: [x for r in rows for x in r]  # noqa: E731
    out = b"\xde\x00\x11"
    out += _key("format") + _uint(t.format) + _key("tx") + _int(t.tx) + _key("tz") + _int(t.tz)
    out += _key("layer") + _uint(t.layer) + _key("origin") + b"\x93"
    out += b"".join(b"\xcb" + struct.pack(">d", o) for o in t.origin)
    out += _key("tile_size") + b"\xcb" + struct.pack(">d", t.tile_size) + _key("nvp") + _uint(t.nvp)
    v, p, n, d = flat(t.verts), flat(t.polys), flat(t.neis), flat(t.dmeshes)
    out += _key("verts") + _bin(struct.pack("<%df" % len(v), *v))
    out += _key("polys") + _bin(struct.pack("<%dH" % len(p), *p))
    out += _key("neis") + _bin(struct.pack("<%dH" % len(n), *n))
    out += _key("areas") + _bin(bytes(t.areas))
    out += _key("flags") + _bin(struct.pack("<%dH" % len(t.flags), *t.flags))
    out += _key("regs") + _bin(struct.pack("<%dH" % len(t.regs), *t.regs))
    out += _key("dmeshes") + _bin(struct.pack("<%dI" % len(d), *d))
    dv = flat(t.dverts)
    out += _key("dverts") + _bin(struct.pack("<%df" % len(dv), *dv))
    out += _key("dtris") + _bin(bytes(flat(t.dtris)))
    return out + _key("hash") + b"\xcf" + struct.pack(">Q", onepath.fnv1a64(out))


@pytest.fixture(scope="module")
def baked(workdir):
    """A generated level of decks over a ground floor, baked offline in tile layers."""
    return support.bake("gen:multifloor:48:3", os.path.join(workdir, "bake-multifloor"),
                        ["partition=layers"])


# The content hash of navmesh-format.md §2 item 11's example blob, as the spec states it.
EXAMPLE_HASH = 0x9A3ED4F6D4CB9C4F


def test_fnv1a64_reference_values():
    # The published FNV-1a 64 test vectors.
    assert onepath.fnv1a64(b"") == 0xCBF29CE484222325
    assert onepath.fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert onepath.fnv1a64(b"foobar") == 0x85944171F73967E8


def test_every_tile_decodes_and_reencodes(baked):
    summary, files = baked
    assert any(k[2] > 0 for k in files), "the level should have stacked layers"
    totals = [0, 0, 0]
    for key, blob in files.items():
        t = onepath.decode_tile(blob, numpy=False)
        assert t.key == key
        assert t.hash == onepath.content_hash(blob) == struct.unpack(">Q", blob[-8:])[0]
        assert encode(t) == blob  # every field read back as written
        assert isinstance(t.verts, list) and isinstance(t.polys[0], list)
        assert t.origin[0] == t.tx * t.tile_size and t.origin[2] == t.tz * t.tile_size
        totals[0] += t.npolys
        totals[1] += len(t.verts)
        totals[2] += len(t.dtris)
    assert totals == [summary["polygons"], summary["vertices"], summary["detail_triangles"]]
    h = onepath.mesh_hash((k, onepath.content_hash(b)) for k, b in files.items())
    assert "%016x" % h == summary["hash"]


def test_polygons_and_detail_helpers(baked):
    _, files = baked
    for blob in files.values():
        t = onepath.decode_tile(blob, numpy=False)
        for p in range(t.npolys):
            pv = t.poly_verts(p)
            assert 3 <= len(pv) <= t.nvp and onepath.NULL_INDEX not in pv
            assert len(t.poly_neis(p)) == len(pv)
            verts, tris = t.detail(p)
            assert verts[:len(pv)] == [tuple(t.verts[v]) for v in pv]
            for a, b, c, flags in tris:
                assert max(a, b, c) < len(verts) and flags < 8
            # Every edge of the polygon is one boundary edge of its detail mesh.
            boundary = sum(bin(tri[3]).count("1") for tri in tris)
            assert boundary >= len(pv)
        w = t.world(t.verts[0])
        assert w == tuple(o + c for o, c in zip(t.origin, t.verts[0]))


def test_numpy_arrays_hold_the_same_values(baked):
    np = pytest.importorskip("numpy")
    _, files = baked
    for blob in files.values():
        a = onepath.decode_tile(blob, numpy=True)
        b = onepath.decode_tile(blob, numpy=False)
        assert isinstance(a.verts, np.ndarray) and a.verts.dtype == np.float32
        assert a.verts.shape == (len(b.verts), 3) and a.polys.shape == (b.npolys, b.nvp)
        for k in ("verts", "polys", "neis", "areas", "flags", "regs", "dmeshes", "dverts",
                  "dtris"):
            assert getattr(a, k).tolist() == getattr(b, k), k
        assert a.poly_verts(0) == b.poly_verts(0) and a.detail(0) == b.detail(0)


def _refused(blob, cls=onepath.ProtocolError):
    with pytest.raises(cls) as e:
        onepath.decode_tile(blob, numpy=False)
    assert e.value.code in (6, 7)
    return e.value.message


def test_truncated_and_corrupted_blobs_are_refused(baked):
    _, files = baked
    blob = min(files.values(), key=len)
    for n in range(len(blob)):
        _refused(blob[:n], (onepath.ProtocolError, onepath.Incomplete))
    _refused(blob + b"\x00")  # trailing bytes
    for i in range(0, len(blob) - 8):
        bad = bytearray(blob)
        bad[i] ^= 0x01
        _refused(bytes(bad), (onepath.ProtocolError, onepath.Incomplete))
    bad = bytearray(blob)
    bad[-1] ^= 0xFF
    assert "hash" in _refused(bytes(bad))


def _altered(blob, change):
    t = onepath.decode_tile(blob, numpy=False)
    change(t)
    return encode(t)


def test_validation_refuses_bad_tiles_with_good_hashes(baked):
    _, files = baked
    blob = max(files.values(), key=lambda b: onepath.decode_tile(b).npolys)
    assert onepath.decode_tile(_altered(blob, lambda t: None)).hash  # unchanged: accepted
    t0 = onepath.decode_tile(blob, numpy=False)

    def clockwise(t):
        n = len(t.poly_verts(0))
        t.polys[0][:n] = t.polys[0][:n][::-1]
    assert "clockwise" in _refused(_altered(blob, clockwise))

    def area(t):
        t.areas[0] = 64
    assert "area" in _refused(_altered(blob, area))

    def outside(t):
        t.verts[0][0] = t.tile_size * 2
    assert "outside" in _refused(_altered(blob, outside))

    def padding(t):
        t.polys[0] = [t.polys[0][0], onepath.NULL_INDEX] + t.polys[0][2:]
    _refused(_altered(blob, padding))

    def detail(t):
        t.dtris[0][0] = 255
    assert "detail" in _refused(_altered(blob, detail))

    def neighbour(t):
        for p in range(t.npolys):
            for k, nb in enumerate(t.poly_neis(p)):
                if 0 < nb < onepath.NEI_PORTAL:
                    t.neis[p][k] = onepath.NEI_WALL  # the other side still links here
                    return
        pytest.skip("no in-tile neighbours")
    assert "share the edge" in _refused(_altered(blob, neighbour))

    def portal(t):
        for p in range(t.npolys):
            for k, nb in enumerate(t.poly_neis(p)):
                if nb & onepath.NEI_PORTAL:
                    t.neis[p][k] = onepath.NEI_PORTAL | ((nb + 1) & 3)
                    return
        pytest.skip("no portals")
    assert "portal" in _refused(_altered(blob, portal))

    def seam_into_itself(t):
        t.neis[0][0] = onepath.NEI_SEAM | t.layer
    assert "seam into layer" in _refused(_altered(blob, seam_into_itself))

    for bad in (0, 0xFFFF):
        def region(t):
            t.regs[-1] = bad
        msg = _refused(_altered(blob, region))
        assert "key 'regs'" in msg and "polygon %d region %d" % (len(t0.regs) - 1, bad) in msg

    def region_count(t):
        t.regs.pop()
    assert "disagree" in _refused(_altered(blob, region_count))

    def older(t):
        t.format = 2
    assert "older than 3" in _refused(_altered(blob, older))


def test_region_ids_name_one_region_of_one_layer_per_tile_cell(baked):
    """navmesh-format.md §2 item 7: a region id is the tile cell's, so within one tile cell
    an id is on one layer only; the multifloor level with the Layers partition has cells of
    several layers and several regions per layer."""
    _, files = baked
    layer_of = {}
    multi = 0
    for (tx, tz, layer), blob in files.items():
        t = onepath.decode_tile(blob, numpy=False)
        assert len(t.regs) == t.npolys and all(1 <= r <= onepath.tile.MAX_REGION for r in t.regs)
        multi += len(set(t.regs)) > 1
        for r in set(t.regs):
            assert layer_of.setdefault((tx, tz, r), layer) == layer, (tx, tz, r)
    assert multi > 0 and len(layer_of) > len(files)


def test_detail_triangles_wind_like_polygons(baked):
    from onepath.tile import _orient

    _, files = baked
    for blob in files.values():
        t = onepath.decode_tile(blob, numpy=False)
        for p in range(t.npolys):
            verts, tris = t.detail(p)
            assert tris, "every polygon has detail triangles"
            for a, b, c, _ in tris:
                xz = [(verts[i][0], verts[i][2]) for i in (a, b, c)]
                assert _orient(*xz) > 0  # counter-clockwise, x right and z up


def test_detail_without_samples_has_no_extra_vertices(workdir):
    _, files = support.bake("gen:rooms:48:1", os.path.join(workdir, "bake-nodetail"),
                            ["detail_sample_distance=0"])
    for blob in files.values():
        t = onepath.decode_tile(blob, numpy=False)
        assert t.dverts == [] and all(d[1] == 0 and d[3] >= 1 for d in t.dmeshes)


def test_example_blob_of_navmesh_format_md():
    with open(os.path.join(support.SOURCE, "docs", "spec", "navmesh-format.md")) as f:
        text = f.read()
    hexdump = text.split("<!-- example-blob")[1].split("-->", 1)[1].split("<!--")[0]
    blob = bytes.fromhex(hexdump)
    assert len(blob) == 257
    t = onepath.decode_tile(blob, numpy=False)
    assert (t.tx, t.tz, t.layer, t.nvp) == (-1, 2, 0, 6)
    assert t.origin == (-9.6, 1.5, 19.2) and t.tile_size == 9.6
    assert t.verts == [[0, 0, 0], [8, 0.5, 0], [4, 0.25, 8]]
    assert t.polys == [[0, 1, 2] + [onepath.NULL_INDEX] * 3]
    assert t.neis == [[onepath.NEI_PORTAL | 3, 0, 0, 0, 0, 0]]
    assert (t.areas, t.flags, t.regs, t.dmeshes, t.dverts, t.dtris) == \
        ([63], [1], [1], [[0, 0, 0, 1]], [], [[0, 1, 2, 7]])
    assert t.format == 3
    assert t.hash == EXAMPLE_HASH == onepath.content_hash(blob)
    assert encode(t) == blob


def test_example_blob_passes_onepath_verify(workdir):
    """The C decoder and validator accept the example too (`onepath verify`)."""
    with open(os.path.join(support.SOURCE, "docs", "spec", "navmesh-format.md")) as f:
        hexdump = f.read().split("<!-- example-blob")[1].split("-->", 1)[1].split("<!--")[0]
    d = os.path.join(workdir, "example")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tile_-1_2_0.optile"), "wb") as f:
        f.write(bytes.fromhex(hexdump))
    assert "1 valid, 0 invalid" in support.tool("verify", d)
