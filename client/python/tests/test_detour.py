"""Tiles in Detour form (protocol.md §4.2b) through the Python client: every tile of the
dungeon fetched with format="detour" (tile.range and tile.get) equals the file of
`onepath export LEVEL --detour-tiles DIR`, its hashes are the native layers', and an
unknown format is refused with OP_EINVAL naming it."""

import os
import struct

import pytest

import onepath
import support


def _export(level, out_dir):
    """{(tx, tz): bytes} of `onepath export LEVEL --detour-tiles DIR`."""
    support.tool("export", level, "--detour-tiles", out_dir)
    files = {}
    for name in os.listdir(out_dir):
        if name.startswith("tile_") and name.endswith(".dtile"):
            tx, tz = (int(x) for x in name[len("tile_"):-len(".dtile")].split("_"))
            with open(os.path.join(out_dir, name), "rb") as f:
                files[(tx, tz)] = f.read()
    return files


def test_detour_tiles_equal_the_export(client, dungeon, workdir):
    client.level_put("dt", [onepath.mesh("m", dungeon["verts"], dungeon["tris"])])
    want = _export(dungeon["path"], os.path.join(workdir, "export-detour"))
    assert len(want) > 20
    info = client.level_info("dt")
    assert info["tile_size"] == pytest.approx(9.6)
    got = {}
    for tile in client.tiles("dt", format="detour", max_bytes=20000):
        assert tile["format"] == "detour"
        native = client.tile_get("dt", tile["tx"], tile["tz"])
        assert tile["hashes"] == [layer["hash"] for layer in native["layers"]]
        if tile["data"] is None:
            assert tile["hashes"] == []
            continue
        data = tile["data"]
        # dtMeshHeader: 'DNAV', version 7, x = tx, y = tz (detour-export.md §3.2).
        magic, version, x, y = struct.unpack_from("<iiii", data, 0)
        assert (magic, version, x, y) == (0x444E4156, 7, tile["tx"], tile["tz"])
        got[(tile["tx"], tile["tz"])] = data
        one = client.tile_get("dt", tile["tx"], tile["tz"], format="detour")
        assert one["data"] == data
    assert got == want  # byte for byte, and the same set of cells


@pytest.mark.parametrize("fmt", ["tiles", "Detour", ""])
def test_unknown_format_is_refused(client, dungeon, fmt):
    client.level_put("dt", [onepath.mesh("m", dungeon["verts"], dungeon["tris"])])
    tx0, tz0, tx1, tz1 = client.level_info("dt")["tiles"]
    with pytest.raises(onepath.InvalidArgument) as ei:
        client.tile_get("dt", tx0, tz0, format=fmt)
    assert ei.value.name == "OP_EINVAL" and "format '%s'" % fmt in str(ei.value)
    with pytest.raises(onepath.InvalidArgument) as ei:
        client.tile_range("dt", tx0, tz0, tx1, tz1, format=fmt)
    assert ei.value.name == "OP_EINVAL"
