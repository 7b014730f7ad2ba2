"""Levels over a fleet of onepathd members (docs/spec/protocol.md §11): each level lives
on the member that rendezvous (highest-random-weight) hashing of its name picks, so
every client (C, CLI, Python) agrees and a new member moves only the levels that now
hash to it.

    with onepath.Fleet(["ipc:///run/a.sock", "ipc:///run/b.sock"]) as f:
        f.level_put("demo", meshes)          # goes to f.member_for("demo")
        f.tile_get("demo", 0, 0)

A level method of Client (its first argument the level) is a method of Fleet too; an
error from a member says which member (the exception's `member` and its message).
"""

import os

from .client import Client
from .errors import Error, InvalidArgument

MAX_MEMBERS = 1024
_MASK = (1 << 64) - 1


def weight(member, level):
    """The weight of (member, level), §11.1: SplitMix64's finaliser of 64-bit FNV-1a over
    the member's UTF-8 bytes, one 0 byte, the level's UTF-8 bytes."""
    h = 0xcbf29ce484222325
    for b in member.encode() + b"\0" + level.encode():
        h = ((h ^ b) * 0x100000001b3) & _MASK
    z = (h + 0x9e3779b97f4a7c15) & _MASK
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & _MASK
    return z ^ (z >> 31)


def pick(members, level):
    """The member that holds level: the highest weight, a tie to the member whose UTF-8
    bytes sort first."""
    if not members:
        raise InvalidArgument("fleet: no members")
    return min(members, key=lambda m: (-weight(m, level), m.encode()))


def parse_members(spec):
    """Members from one --url value (§11.3): URL[,URL...] or @FILE (one URL a line, blank
    lines and '#' lines skipped)."""
    if spec.startswith("@"):
        path = spec[1:]
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise InvalidArgument("fleet: cannot read %s: %s" % (path, e.strerror)) from None
        out = [ln.strip() for ln in lines]
        out = [u for u in out if u and not u.startswith("#")]
        if not out:
            raise InvalidArgument("fleet: %s lists no URL" % path)
        return out
    out = [u.strip() for u in spec.split(",")]
    if not all(out):
        raise InvalidArgument("fleet: --url list %r has an empty URL" % spec)
    return out


_LEVEL_METHODS = ("level_put", "level_drop", "level_info", "mesh_put", "mesh_drop",
                  "volume_put", "volume_drop", "tile_get", "tile_range", "level_bake",
                  "changes_since", "tiles")


class Fleet:
    """Clients of several members; members: a list of URLs, or a str read as
    parse_members reads one (comma list or @FILE)."""

    def __init__(self, members, timeout=30.0, libnng=None, token=None, token_file=None):
        if isinstance(members, str):
            members = parse_members(members)
        members = list(members)
        if not 1 <= len(members) <= MAX_MEMBERS:
            raise InvalidArgument("fleet: %d members (1..%d)" % (len(members), MAX_MEMBERS))
        if len(set(members)) != len(members):
            dup = next(m for m in members if members.count(m) > 1)
            raise InvalidArgument("fleet: member %s is listed twice" % dup)
        self.members = members
        self.clients = {}
        try:
            for m in members:
                self.clients[m] = Client(m, timeout=timeout, libnng=libnng, token=token,
                                         token_file=token_file)
        except Exception:
            self.close()
            raise

    def close(self):
        for c in self.clients.values():
            c.close()
        self.clients = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def member_for(self, level):
        return pick(self.members, level)

    def client_for(self, level):
        return self.clients[self.member_for(level)]

    def level_list(self, *, timeout=None):
        """{member: its level.list result} of every member (an error names its member)."""
        return {m: _named(m, c.level_list, timeout=timeout) for m, c in self.clients.items()}

    def __getattr__(self, name):
        if name not in _LEVEL_METHODS:
            raise AttributeError(name)

        def call(level, *args, **kw):
            m = self.member_for(level)
            fn = getattr(self.clients[m], name)
            if name == "tiles":  # a generator: name the member as it runs
                return _named_gen(m, fn(level, *args, **kw))
            return _named(m, fn, level, *args, **kw)
        call.__name__ = name
        return call


def _renamed(member, e):
    e.member = member
    e.message = "%s: %s" % (member, e.message)
    e.args = ("%s: %s" % (e.name, e.message),)
    return e


def _named(member, fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except Error as e:
        raise _renamed(member, e) from None


def _named_gen(member, gen):
    try:
        yield from gen
    except Error as e:
        raise _renamed(member, e) from None


def from_env(default=None, **kw):
    """A Fleet of $ONEPATH_URL (or default)."""
    return Fleet(os.environ.get("ONEPATH_URL", default), **kw)
