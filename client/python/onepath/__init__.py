"""onepath: a pure-Python client of onepathd and a decoder of its tile blobs.

    import onepath
    with onepath.Client("ipc:///run/onepathd/onepathd.ipc") as c:
        c.level_put("demo", [onepath.mesh("floor", verts, tris)], {"cell_size": 0.3})
        for tile in c.tiles("demo"):
            for layer in tile["layers"]:
                t = onepath.decode_tile(layer["blob"])   # t.verts, t.polys, t.neis, ...

Needs python3-msgpack and libnng.so.1 (libnng1); numpy is used when present.
The wire format is docs/spec/protocol.md, the tile blob docs/spec/navmesh-format.md.
"""

from .client import Client, PROTOCOL_VERSION, box, cylinder, mesh, prism, read_token_file
from .fleet import Fleet, parse_members, pick, weight
from .errors import (STATUS, Busy, Error, Incomplete, InputOutputError, InternalError,
                     InvalidArgument, LimitError, NotFound, OutOfMemory, OutOfRange,
                     PermissionDenied, ProtocolError, Timeout, status_name)
from .tile import (NEI_PORTAL, NEI_SEAM, NEI_WALL, NULL_INDEX, Tile, content_hash,
                   decode_tile, fnv1a64, mesh_hash)

__all__ = [
    "Client", "read_token_file", "Fleet", "parse_members", "pick", "weight", "PROTOCOL_VERSION", "box", "cylinder", "mesh", "prism", "STATUS", "Busy", "Error", "Incomplete",
    "InputOutputError", "InternalError", "InvalidArgument", "LimitError", "NotFound",
    "OutOfMemory", "OutOfRange", "PermissionDenied", "ProtocolError", "Timeout", "status_name", "NEI_PORTAL",
    "NEI_SEAM", "NEI_WALL", "NULL_INDEX", "Tile", "content_hash", "decode_tile", "fnv1a64", "mesh_hash",
]
