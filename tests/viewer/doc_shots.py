"""Regenerates the pictures of docs/viewer.md (not a test): onepathd --http with
dungeon.obj and a multifloor level, the viewer in headless Chromium, half-size shots.
    ONEPATH_BIN_DIR=build/bin ONEPATH_SHARED_DIR=../shared /usr/bin/python3 \\
        tests/viewer/doc_shots.py docs/img"""
import os
import sys
import time

from cdp import Browser
from support import SHARED, Daemon

out = sys.argv[1]
d = Daemon("--http", "127.0.0.1:0")
b = None
try:
    d.put(os.path.join(SHARED, "levels", "dungeon.obj"), "dungeon")
    d.put("gen:multifloor:48:3", "multifloor", "--set", "partition=layers")
    b = Browser(1200, 760)
    base = f"http://127.0.0.1:{d.http_port}/"

    def open_level(level):
        b.goto("about:blank")
        b.goto(base + "#" + level)
        b.wait(f"document.body && document.body.dataset.ready === '1' && document.body.dataset.level === '{level}'", 120)

    open_level("dungeon")
    b.eval("viewer.view(30, 80, 0.85)")
    time.sleep(0.3)
    # A path across the dungeon: two points picked on the mesh (the test does the same).
    pts = b.eval("""(() => { const o = [];
      for (const [k, ls] of viewer.cells()) for (const [l, n] of ls) for (let p = 0; p < n; p++) {
        const [tx, tz] = k.split(',').map(Number); const c = viewer.polyCentre(tx, tz, l, p);
        const s = viewer.screenOf(...c); const h = viewer.pick(...s);
        if (h && h.poly === p && h.tx === tx && h.tz === tz && s[0] > 300) o.push([s, c[2]]); }
      o.sort((a, b) => a[1] - b[1]); return [o[o.length - 3][0], o[2][0]]; })()""")
    b.click(*pts[0])
    b.click(*pts[1])
    b.wait("['complete', 'partial'].includes(document.body.dataset.pathState)", 60)
    b.move(pts[0][0] + 40, pts[0][1] - 30)
    time.sleep(0.8)
    b.screenshot(os.path.join(out, "viewer-dungeon.png"), 0.5)

    # The same level coloured by region, from above, no path.
    open_level("dungeon")
    b.eval("document.getElementById('colour').value = 'region'; document.getElementById('colour').onchange()")
    b.eval("viewer.view(30, 80, 0.85)")
    time.sleep(0.8)
    b.screenshot(os.path.join(out, "viewer-dungeon-regions.png"), 0.5)

    open_level("multifloor")
    b.eval("document.getElementById('colour').value = 'layer'; document.getElementById('colour').onchange()")
    b.eval("viewer.view(35, 38, 0.75)")
    time.sleep(0.8)
    b.screenshot(os.path.join(out, "viewer-multifloor-layers.png"), 0.5)
    b.eval("viewer.floors(500, 1000)")
    time.sleep(0.8)
    b.screenshot(os.path.join(out, "viewer-multifloor-upper.png"), 0.5)
    b.eval("viewer.floors(0, 1000)")
    b.eval("document.getElementById('colour').value = 'region'; document.getElementById('colour').onchange()")
    time.sleep(0.8)
    b.screenshot(os.path.join(out, "viewer-multifloor-regions.png"), 0.5)
finally:
    if b:
        b.close()
    d.stop()
