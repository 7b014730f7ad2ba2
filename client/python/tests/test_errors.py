"""The client's status table is status.h's OP_STATUS_MAP (the codes travel in replies)."""

import os
import re

import onepath
import support


def test_status_table_matches_status_h():
    with open(os.path.join(support.SOURCE, "core", "include", "onepath", "status.h")) as f:
        text = f.read()
    c = [(int(v), "OP_" + n, t) for n, v, t in re.findall(r'X\((\w+), (\d+), "([^"]*)"\)', text)]
    assert len(c) >= 12
    assert list(onepath.STATUS) == c
    for code, name, _ in c:
        assert onepath.status_name(code) == name
        if code:
            e = onepath.errors.error_for(code, "m")
            assert (e.code, e.name, e.message) == (code, name, "m")
            assert type(e) is not onepath.Error, name  # every code has its class
    assert onepath.status_name(999) == "OP_UNKNOWN"
