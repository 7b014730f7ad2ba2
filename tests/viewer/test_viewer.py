"""The viewer in headless Chromium (docs/viewer.md): onepathd --http with dungeon.obj and a
multifloor level; the page loads each, and what it reports it drew (data- attributes on
<body>) is checked against an offline bake of the same level (`onepath bake --json`) and
the tile blobs the daemon serves (decoded here by the Python client's decoder); WebGL
draws through SwiftShader (pixels of the mesh's colour in the screenshot); a click-path
between two polygons gives the corridor and straight path of `onepath path` at the points
the page picked; hovering a polygon names it; an edit over RPC (mesh.put of a crate)
swaps the changed tiles live, with no reload, within a bound derived from the daemon's own
build time for the edit and the measured round trip of a tile.get; the colour mode "region"
draws one fill colour per region (tile cell, region id) of the blobs. Screenshots go to
ONEPATH_ARTEFACTS."""
import glob
import json
import os
import subprocess
import tempfile
import time
import unittest

from cdp import Browser
from support import ARTEFACTS, SHARED, Daemon, get, png_pixels, rpc

from onepath import Client  # the Python client (mesh.put over the REP socket)
from onepath.tile import decode_tile

DUNGEON = os.path.join(SHARED, "levels", "dungeon.obj")
MULTI = "gen:multifloor:48:3"
MULTI_SET = ["--set", "partition=layers"]


def bake_json(level, *sets):
    r = subprocess.run([os.path.join(os.environ.get("ONEPATH_BIN_DIR", "build/bin"), "onepath"),
                        "bake", level, "--json", *sets], capture_output=True, text=True, check=True,
                       timeout=600)
    return json.loads(r.stdout)


def fetched_tiles(d, level):
    out = tempfile.mkdtemp(prefix="onepath-viewer-fetch-")
    d.cli("fetch", "--url", d.url, "--level", level, "--out", out, "--timeout", "120000")
    tiles = {}
    for f in sorted(glob.glob(os.path.join(out, "*.optile"))):
        with open(f, "rb") as fh:
            t = decode_tile(fh.read())
        tiles[(t.tx, t.tz, t.layer)] = t
    subprocess.run(["rm", "-rf", out], check=False)
    return tiles


def edge_kinds(tiles):
    seams = portals = 0
    for t in tiles.values():
        for p in range(t.npolys):
            for v in t.poly_neis(p):
                if v & 0xC000 == 0xC000:
                    seams += 1
                elif v & 0x8000:
                    portals += 1
    return seams, portals


def mesh_pixels(path):
    """Pixels of the walkable area's colour family (blue-teal: b well above r)."""
    w, h, bpp, rows = png_pixels(path)
    n = 0
    for y in range(0, h, 2):
        row = rows[y]
        for x in range(300, w, 2):  # the canvas, right of the side panel
            r, g, b = row[x * bpp], row[x * bpp + 1], row[x * bpp + 2]
            n += b > r + 40 and g > r + 10
    return n


def hue_buckets(path, min_pixels=200):
    """Hue buckets (12 of 30 degrees) that at least min_pixels saturated pixels of the canvas
    fall in: one or two for a mesh of one area, many for one coloured by region."""
    w, h, bpp, rows = png_pixels(path)
    counts = [0] * 12
    for y in range(0, h, 2):
        row = rows[y]
        for x in range(300, w, 2):
            r, g, b = row[x * bpp], row[x * bpp + 1], row[x * bpp + 2]
            hi, lo = max(r, g, b), min(r, g, b)
            if hi - lo < 40:
                continue  # grey: background, tile borders, edges
            if hi == r:
                hue = (60 * (g - b) / (hi - lo)) % 360
            elif hi == g:
                hue = 60 * (b - r) / (hi - lo) + 120
            else:
                hue = 60 * (r - g) / (hi - lo) + 240
            counts[int(hue // 30) % 12] += 1
    return sum(1 for c in counts if c >= min_pixels)


def build_seconds(d):
    """onepathd_tile_build_seconds_total from /metrics: the daemon's own time in tile builds."""
    status, _, body = get(d.metrics_port, "/metrics")
    assert status == 200, status
    for line in body.decode().splitlines():
        if line.startswith("onepathd_tile_build_seconds_total "):
            return float(line.split()[1])
    raise AssertionError("no onepathd_tile_build_seconds_total")


def regions_of(tiles):
    """The regions of the blobs (navmesh-format.md §2 item 7): ids are per tile cell."""
    return {(t.tx, t.tz, r) for t in tiles.values() for r in t.regs}


class Viewer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(ARTEFACTS, exist_ok=True)
        cls.d = Daemon("--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0")
        cls.d.put(DUNGEON, "dungeon")
        cls.d.put(MULTI, "multifloor", *MULTI_SET)
        cls.b = Browser()
        cls.base = f"http://127.0.0.1:{cls.d.http_port}/"

    @classmethod
    def tearDownClass(cls):
        errors = cls.b.console_errors()
        cls.b.close()
        cls.d.stop()
        if errors:
            raise AssertionError(f"page errors: {errors}")

    def open(self, level):
        self.b.goto("about:blank")
        self.b.goto(self.base + "#" + level)
        self.b.wait(f"document.body && document.body.dataset.ready === '1' && document.body.dataset.level === '{level}'",
                    180, f"{level} drawn")
        return self.b.eval("Object.assign({}, document.body.dataset)")

    def shot(self, name):
        time.sleep(0.5)  # a frame or two after the last change
        path = os.path.join(ARTEFACTS, name)
        self.b.screenshot(path)
        return path

    def check_counts(self, ds, level, bake, tiles):
        self.assertEqual(int(ds["cells"]), bake["tiles"])
        self.assertEqual(int(ds["tiles"]), bake["layers"])
        self.assertEqual(int(ds["polys"]), bake["polygons"])
        self.assertEqual(int(ds["tris"]), bake["detail_triangles"])
        # Tile by tile: the page's layers, polygon counts and hashes are the daemon's blobs.
        page = {}
        for key, layers in self.b.eval("viewer.cells()"):
            tx, tz = map(int, key.split(","))
            for layer, npolys, h in layers:
                page[(tx, tz, layer)] = (npolys, int(h))
        want = {k: (t.npolys, t.hash) for k, t in tiles.items()}
        self.assertEqual(page, want)

    def test_0_read_only(self):
        # Without --http-edit the page offers no edit: no form, no drop buttons.
        self.open("dungeon")
        self.assertEqual(self.b.eval("document.body.dataset.edit"), "false")
        self.assertTrue(self.b.eval("document.getElementById('volume-form').hidden"))
        self.assertEqual(self.b.eval("document.querySelectorAll('#volumes button').length"), 0)

    def test_1_dungeon(self):
        ds = self.open("dungeon")
        self.assertIn("SwiftShader", ds["webgl"])
        self.check_counts(ds, "dungeon", bake_json(DUNGEON), fetched_tiles(self.d, "dungeon"))
        shot = self.shot("viewer-dungeon.png")
        self.assertGreater(mesh_pixels(shot), 5000, "WebGL drew no mesh")

    def test_2_path_and_hover(self):
        self.open("dungeon")
        self.b.eval("viewer.view(30, 80, 1.0)")  # from above: every floor polygon visible
        time.sleep(0.3)
        # Two far apart polygons whose centres the page picks back (not hidden).
        cands = self.b.eval("""(() => {
          const out = [];
          for (const [key, layers] of viewer.cells())
            for (const [layer, n] of layers)
              for (let p = 0; p < n; p++) {
                const [tx, tz] = key.split(',').map(Number);
                const c = viewer.polyCentre(tx, tz, layer, p);
                const s = viewer.screenOf(...c);
                const h = viewer.pick(...s);
                if (h && h.tx === tx && h.tz === tz && h.poly === p && s[0] > 300 && s[1] > 20)
                  out.push({ s, w: h.world, tx, tz, layer, p });
              }
          return out;
        })()""")
        self.assertGreater(len(cands), 10)
        # From the polygon with the smallest z towards the farthest one that it reaches (a
        # partial corridor is compared as well, but a long complete one says more).
        ends = sorted(cands, key=lambda c: c["w"][2])
        pairs = [(a, z) for a in ends[-4:][::-1] for z in ends[:6]]
        for a, z in pairs:
            self.b.eval("delete document.body.dataset.pathState")
            self.b.click(*a["s"])
            self.b.click(*z["s"])
            self.b.wait("['complete', 'partial', 'error'].includes(document.body.dataset.pathState)", 120)
            ds = self.b.eval("Object.assign({}, document.body.dataset)")
            if ds["pathState"] == "complete":
                break
        self.assertNotEqual(ds["pathState"], "error")
        frm, to = ds["pathFrom"], ds["pathTo"]
        r = self.d.cli("path", DUNGEON, "--from", frm, "--to", to, "--json")
        cli = json.loads(r.stdout)
        corridor = [[c["tx"], c["tz"], c["layer"], c["poly"]] for c in cli["corridor"]]
        self.assertEqual(json.loads(ds["pathCorridor"]), corridor)
        self.assertGreater(len(corridor), 3)
        straight = json.loads(ds["pathStraight"])
        self.assertEqual(len(straight), len(cli["straight"]))
        for p, q in zip(straight, cli["straight"]):
            for x, y in zip(p, q["pos"]):
                self.assertAlmostEqual(x, y, places=5)
        length = sum(sum((b - a) ** 2 for a, b in zip(p, q)) ** 0.5 for p, q in zip(straight, straight[1:]))
        self.assertAlmostEqual(float(ds["pathLength"]), length, places=6)
        self.assertEqual(ds["pathState"], "partial" if cli["partial"] else "complete")
        self.shot("viewer-dungeon-path.png")
        # Hover: the polygon under the pointer, with its area and flags from its tile.
        m = cands[len(cands) // 2]
        self.b.move(*m["s"])
        self.b.wait("document.body.dataset.hover", 10)
        hv = json.loads(self.b.eval("document.body.dataset.hover"))
        tiles = fetched_tiles(self.d, "dungeon")
        t = tiles[(m["tx"], m["tz"], m["layer"])]
        self.assertEqual(hv, {"tx": m["tx"], "tz": m["tz"], "layer": m["layer"], "poly": m["p"],
                              "area": t.areas[m["p"]], "flags": t.flags[m["p"]],
                              "region": t.regs[m["p"]]})

    def test_3_multifloor(self):
        ds = self.open("multifloor")
        tiles = fetched_tiles(self.d, "multifloor")
        self.check_counts(ds, "multifloor", bake_json(MULTI, *MULTI_SET), tiles)
        self.assertGreater(max(t.layer for t in tiles.values()), 0, "no second layer")
        seams, portals = edge_kinds(tiles)
        self.assertGreater(seams, 0)
        self.assertEqual(int(ds["seams"]), seams)
        self.assertEqual(int(ds["portals"]), portals)
        self.b.eval("viewer.view(35, 40, 0.8)")
        self.assertGreater(mesh_pixels(self.shot("viewer-multifloor.png")), 5000)
        # The floor slider: only the upper floors.
        self.b.eval("viewer.floors(500, 1000)")
        self.shot("viewer-multifloor-upper.png")
        self.b.eval("viewer.floors(0, 1000)")

    def region_mode(self, level, tiles):
        """The page in colour mode "region": one fill colour per region of the blobs."""
        self.b.eval("document.getElementById('colour').value = 'region'; "
                    "document.getElementById('colour').onchange(), 1")
        ds = self.b.eval("Object.assign({}, document.body.dataset)")
        want = regions_of(tiles)
        self.assertEqual(ds["colour"], "region")
        self.assertEqual(int(ds["regions"]), len(want))
        self.assertEqual(int(ds["fills"]), len(want), "two regions share a colour")
        self.assertIn(f"{len(want)} regions drawn", self.b.eval("document.getElementById('legend').textContent"))
        return ds, want

    def test_5_regions(self):
        for level, view in (("dungeon", (30, 80, 1.0)), ("multifloor", (35, 40, 0.8))):
            ds = self.open(level)
            tiles = fetched_tiles(self.d, level)
            # Area mode for contrast: one fill per area id, whatever the regions.
            self.assertEqual(ds["colour"], "area")
            self.assertEqual(int(ds["fills"]), len({a for t in tiles.values() for a in t.areas}))
            self.b.eval(f"viewer.view{view}")
            area_hues = hue_buckets(self.shot(f"viewer-{level}-area.png"))
            ds, want = self.region_mode(level, tiles)
            self.assertGreater(len(want), len(tiles), f"{level}: as many regions as tile layers")
            region_hues = hue_buckets(self.shot(f"viewer-{level}-regions.png"))
            self.assertGreaterEqual(region_hues, 6, f"{level}: the regions drew few hues")
            self.assertGreater(region_hues, area_hues)
            print(f"\n{level}: {len(tiles)} tile layers, {len(want)} regions, "
                  f"{int(ds['fills'])} fill colours, hue buckets {area_hues} (area) -> {region_hues} (region)")
            self.b.eval("document.getElementById('colour').value = 'area'; "
                        "document.getElementById('colour').onchange(), 1")

    def test_4_live_edit(self):
        ds = self.open("dungeon")
        v0 = int(ds["version"])
        before = fetched_tiles(self.d, "dungeon")
        # A crate (2 x 1 x 2) on the floor at a polygon's centre: mesh.put over RPC.
        t = max(before.values(), key=lambda t: t.npolys)
        c = self.b.eval(f"viewer.polyCentre({t.tx}, {t.tz}, {t.layer}, 0)")
        x, y, z = c
        vs = [(x + dx, y + dy, z + dz) for dy in (0, 1) for dz in (-1, 1) for dx in (-1, 1)]
        quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
        tris = [tri for a, b, c, e in quads for tri in ((a, e, c), (a, c, b))]  # outward; top faces up
        # One round trip of the page's own kind (POST /rpc tile.get of the largest tile),
        # measured before the edit; the page makes one per changed cell, plus level.info.
        rtts = []
        for _ in range(3):
            r0 = time.time()
            st, rep = rpc(self.d.http_port, "tile.get", {"level": "dungeon", "tx": t.tx, "tz": t.tz})
            rtts.append(time.time() - r0)
            self.assertEqual(st, 200)
            self.assertTrue(rep["ok"])
        rtt = max(rtts)
        built0 = build_seconds(self.d)
        t0 = time.time()
        with Client(self.d.url) as cl:  # mesh.put over RPC: only the crate's tiles rebuild
            cl.mesh_put("dungeon", "crate", vs, tris)
        put = time.time() - t0
        # Wait until the page holds the new version's tiles (one poll may list them all).
        self.b.wait(f"+document.body.dataset.version === {v0 + 1} && +document.body.dataset.swaps > 0",
                    120, "the edit on the page")
        latency = time.time() - t0
        build = build_seconds(self.d) - built0
        after = fetched_tiles(self.d, "dungeon")
        changed = {(k[0], k[1]) for k in set(before) ^ set(after)} | {
            (k[0], k[1]) for k in before if k in after and before[k].hash != after[k].hash}
        self.assertTrue(changed, "the crate changed no tile")
        ds = self.b.eval("Object.assign({}, document.body.dataset)")
        self.assertEqual(int(ds["swaps"]), len(changed))  # exactly the tiles that changed
        self.assertEqual(int(ds["flashes"]), sum(1 for k in after if (k[0], k[1]) in changed))
        page = {}
        for key, layers in self.b.eval("viewer.cells()"):
            tx, tz = map(int, key.split(","))
            for layer, npolys, h in layers:
                page[(tx, tz, layer)] = int(h)
        self.assertEqual(page, {k: t.hash for k, t in after.items()})
        self.assertEqual(self.b.eval("location.hash"), "#dungeon")  # no reload
        # Within one rebuild: the edit's reply, the daemon's time building the changed tiles
        # (summed over its workers, so at least their wall time), the page's round trips
        # (the long poll's reply, a tile.get per changed cell, level.info) and a margin for
        # decoding and drawing them on a loaded 2-core machine (SwiftShader draws on the CPU).
        # A page that stops following edits, or reloads on a timer, misses it.
        self.assertGreater(build, 0.0, "the edit built no tile")
        bound = put + build + (len(changed) + 2) * rtt + 5.0 + 0.5 * build
        print(f"\nedit to page: {latency:.2f} s (bound {bound:.2f} s: put {put:.3f} s, "
              f"build {build:.3f} s, round trip {rtt * 1000:.1f} ms), {len(changed)} tiles swapped")
        self.assertLess(latency, bound, "the page did not show the edit within one rebuild")
        self.shot("viewer-dungeon-edit.png")


class Volumes(unittest.TestCase):
    """Volumes on the page: drawn as translucent shapes from level.info; with --http-edit
    the page's form puts a box and its drop button drops it, over POST /rpc; the tiles the
    page holds after each edit are the daemon's."""
    LEVEL = "gen:rooms:48:1"

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--http", "127.0.0.1:0", "--http-edit")
        cls.d.put(cls.LEVEL, "rooms")
        cls.b = Browser()
        cls.base = f"http://127.0.0.1:{cls.d.http_port}/"

    @classmethod
    def tearDownClass(cls):
        errors = cls.b.console_errors()
        cls.b.close()
        cls.d.stop()
        if errors:
            raise AssertionError(f"page errors: {errors}")

    def page_tiles(self):
        page = {}
        for key, layers in self.b.eval("viewer.cells()"):
            tx, tz = map(int, key.split(","))
            for layer, npolys, h in layers:
                page[(tx, tz, layer)] = int(h)
        return page

    def settle(self, version):
        self.b.wait(f"+document.body.dataset.version === {version}", 120, f"version {version}")
        self.assertEqual(self.page_tiles(), {k: t.hash for k, t in fetched_tiles(self.d, "rooms").items()})

    def info(self):
        with Client(self.d.url) as cl:
            return cl.level_info("rooms")

    def test_volumes_drawn_and_edited(self):
        self.b.goto(self.base + "#rooms")
        self.b.wait("document.body && document.body.dataset.ready === '1'", 180, "rooms drawn")
        self.assertEqual(self.b.eval("document.body.dataset.edit"), "true")
        self.assertFalse(self.b.eval("document.getElementById('volume-form').hidden"))
        self.assertEqual(self.b.eval("viewer.volumes()"), [])
        v0 = int(self.info()["version"])
        # Over RPC: an area cylinder; the page draws it from level.info.
        with Client(self.d.url) as cl:
            cl.call("volume.put", {"level": "rooms", "volume": {
                "name": "pool", "mode": "area", "area": 5, "kind": "cylinder",
                "center": [10.0, 10.0], "radius": 3.0, "y": [-1.0, 4.0]}})
        self.b.wait("document.body.dataset.volumes === '1'", 60, "the cylinder")
        self.settle(v0 + 1)
        drawn = self.b.eval("viewer.volumes()")
        self.assertEqual(len(drawn), 1)
        self.assertTrue(drawn[0][0])      # translucent
        self.assertLess(drawn[0][1], 1.0)
        self.assertGreater(drawn[0][2], 0)
        # The page's own form: a box obstacle, put over POST /rpc.
        self.b.eval("""(() => {
            document.getElementById('vf-name').value = 'crate';
            document.getElementById('vf-mode').value = 'obstacle';
            document.getElementById('vf-bmin').value = '20,-1,20';
            document.getElementById('vf-bmax').value = '22,2,22';
            document.getElementById('volume-form').requestSubmit(); return 1; })()""")
        self.b.wait("document.body.dataset.volumes === '2'", 60, "the box")
        self.settle(v0 + 2)
        vols = {v["name"]: v for v in self.info()["volumes"]}
        self.assertEqual(sorted(vols), ["crate", "pool"])
        self.assertEqual(vols["crate"]["mode"], "obstacle")
        self.assertEqual([float(x) for x in vols["crate"]["bmin"]], [20.0, -1.0, 20.0])
        self.assertEqual(len(self.b.eval("viewer.volumes()")), 2)
        shot = os.path.join(ARTEFACTS, "viewer-volumes.png")
        time.sleep(0.5)
        self.b.screenshot(shot)
        # Its drop button (name order: crate first).
        self.b.eval("document.querySelector('#volumes li button').click(), 1")
        self.b.wait("document.body.dataset.volumes === '1'", 60, "the drop")
        self.settle(v0 + 3)
        self.assertEqual([v["name"] for v in self.info()["volumes"]], ["pool"])


class Token(unittest.TestCase):
    """onepathd --http --token-file: the page opened as /#LEVEL&token=T draws the level (every
    POST /rpc carries the token) and rewrites the address to #LEVEL (the token leaves the
    address bar); opened without it, level.list is refused and nothing is drawn."""
    TOKEN = "Vw3Zp8Qd1Lr6Tn0Jc5Hs9Fk2Gm7Bx4Ya"

    @classmethod
    def setUpClass(cls):
        cls.tdir = tempfile.mkdtemp(prefix="onepath-viewer-token-")
        cls.token_file = os.path.join(cls.tdir, "token")
        fd = os.open(cls.token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, (cls.TOKEN + "\n").encode())
        os.close(fd)
        cls.d = Daemon("--http", "127.0.0.1:0", "--token-file", cls.token_file)
        # "arena" lists first: the page must open the fragment's level, not the first one.
        for name in ("arena", "stairs"):
            cls.d.put("gen:stairs:16:1", name, "--token-file", cls.token_file)
        cls.b = Browser()
        cls.base = f"http://127.0.0.1:{cls.d.http_port}/"

    @classmethod
    def tearDownClass(cls):
        errors = cls.b.console_errors()
        cls.b.close()
        cls.d.stop()
        subprocess.run(["rm", "-rf", cls.tdir], check=False)
        # The refused page of test_without_the_token may log its failed requests.
        errors = [e for e in errors if "OP_EPERM" not in str(e) and "403" not in str(e)]
        if errors:
            raise AssertionError(f"page errors: {errors}")

    def test_with_the_token(self):
        self.b.goto("about:blank")
        self.b.goto(self.base + "#stairs&token=" + self.TOKEN)
        self.b.wait("document.body && document.body.dataset.ready === '1' && "
                    "document.body.dataset.level === 'stairs'", 180, "stairs drawn")
        self.assertGreater(int(self.b.eval("document.body.dataset.tiles")), 0)
        self.assertEqual(self.b.eval("location.hash"), "#stairs")
        self.assertNotIn(self.TOKEN[:10], self.d.log_text())

    def test_without_the_token(self):
        self.b.goto("about:blank")
        self.b.goto(self.base + "#stairs")
        time.sleep(3)
        self.assertNotEqual(self.b.eval("document.body.dataset.level || ''"), "stairs")
        self.assertIn("OP_EPERM", self.d.log_text())


if __name__ == "__main__":
    unittest.main(verbosity=2)
