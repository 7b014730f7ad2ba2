"""onepathd --metrics, --log-format json and `onepath remote stats --json` (http.md §5,
protocol.md §9.3). The scrape is read by a strict parser of Prometheus's text format
0.0.4: every line a HELP, a TYPE or a sample; every family with exactly one HELP and one
TYPE before its samples, which are contiguous; names and labels well formed; counters
named _total, never negative, and never smaller in a later scrape; histograms with
cumulative buckets ending at +Inf equal to _count, and a _sum."""
import json
import math
import os
import re
import subprocess
import unittest

from support import BIN, Daemon, get, json_lines

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def parse_value(text):
    if text in ("+Inf", "Inf"):
        return math.inf
    if text == "-Inf":
        return -math.inf
    if text == "NaN":
        return math.nan
    if not re.fullmatch(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)", text):
        raise ValueError(f"bad value {text!r}")
    return float(text)


def parse_exposition(text):
    """{family: {"type", "help", "samples": {(name, labels tuple): value}}}; raises on any
    line that is not valid."""
    if not text.endswith("\n"):
        raise ValueError("the exposition must end with a newline")
    families, current, seen_done = {}, None, set()

    def family_of(name):
        for fam in (name, re.sub(r"_(bucket|sum|count)$", "", name)):
            if fam in families:
                return fam
        return None

    for n, line in enumerate(text[:-1].split("\n"), 1):
        where = f"line {n}: {line!r}"
        if line.startswith("#"):
            m = re.fullmatch(r"# (HELP|TYPE) (\S+) (.*)", line)
            if not m:
                raise ValueError(f"{where}: a comment that is not HELP or TYPE")
            kind, name, rest = m.groups()
            if not NAME.fullmatch(name):
                raise ValueError(f"{where}: bad metric name")
            if name in seen_done:
                raise ValueError(f"{where}: family {name} appears twice")
            fam = families.setdefault(name, {"type": None, "help": None, "samples": {}})
            if current and current != name:
                seen_done.add(current)
            current = name
            if kind == "HELP":
                if fam["help"] is not None or fam["samples"]:
                    raise ValueError(f"{where}: second HELP, or HELP after samples")
                fam["help"] = rest
            else:
                if fam["type"] is not None or fam["samples"] or rest not in TYPES:
                    raise ValueError(f"{where}: second TYPE, TYPE after samples, or bad type")
                fam["type"] = rest
            continue
        m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?", line)
        if not m:
            raise ValueError(f"{where}: not a sample")
        name, _, labels_text, value, _ = m.groups()
        labels = []
        if labels_text:
            pos = 0
            while pos < len(labels_text):
                lm = LABEL.match(labels_text, pos)
                if not lm:
                    raise ValueError(f"{where}: bad label at {pos}")
                labels.append(lm.groups())
                pos = lm.end()
                if pos < len(labels_text):
                    if labels_text[pos] != ",":
                        raise ValueError(f"{where}: labels not separated by ','")
                    pos += 1
            if len({k for k, _ in labels}) != len(labels):
                raise ValueError(f"{where}: repeated label")
        fam = family_of(name)
        if fam is None or fam != current:
            raise ValueError(f"{where}: sample outside its family's block (HELP/TYPE first)")
        f = families[fam]
        if f["help"] is None or f["type"] is None:
            raise ValueError(f"{where}: family {fam} lacks HELP or TYPE")
        if name != fam and f["type"] != "histogram":
            raise ValueError(f"{where}: suffix on a {f['type']}")
        key = (name, tuple(labels))
        if key in f["samples"]:
            raise ValueError(f"{where}: duplicate sample")
        f["samples"][key] = parse_value(value)
    for fam, f in families.items():
        if f["help"] is None or f["type"] is None:
            raise ValueError(f"family {fam} lacks HELP or TYPE")
        if f["type"] == "counter":
            if not fam.endswith("_total"):
                raise ValueError(f"counter {fam} is not named _total")
            for k, v in f["samples"].items():
                if not v >= 0:
                    raise ValueError(f"counter {k} is {v}")
        if f["type"] == "histogram":
            check_histogram(fam, f["samples"])
    return families


def check_histogram(fam, samples):
    series = {}
    for (name, labels), v in samples.items():
        rest = tuple(l for l in labels if l[0] != "le")
        s = series.setdefault(rest, {"buckets": [], "sum": None, "count": None})
        if name == fam + "_bucket":
            le = [l[1] for l in labels if l[0] == "le"]
            if len(le) != 1:
                raise ValueError(f"{name}{labels}: a bucket needs one le")
            s["buckets"].append((parse_value(le[0]), v))
        elif name == fam + "_sum":
            s["sum"] = v
        elif name == fam + "_count":
            s["count"] = v
        else:
            raise ValueError(f"{name}: not a histogram series of {fam}")
    for rest, s in series.items():
        b = s["buckets"]
        if not b or s["sum"] is None or s["count"] is None:
            raise ValueError(f"{fam}{rest}: buckets, _sum and _count are all required")
        if [x for x, _ in b] != sorted(x for x, _ in b) or b[-1][0] != math.inf:
            raise ValueError(f"{fam}{rest}: buckets not ordered by le or no +Inf")
        if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
            raise ValueError(f"{fam}{rest}: bucket counts are not cumulative")
        if b[-1][1] != s["count"]:
            raise ValueError(f"{fam}{rest}: +Inf bucket {b[-1][1]} != _count {s['count']}")


def value(fams, fam, name=None, **labels):
    want = tuple(sorted(labels.items()))
    for (n, ls), v in fams[fam]["samples"].items():
        if n == (name or fam) and tuple(sorted(ls)) == want:
            return v
    raise KeyError(f"{name or fam}{labels}")


class Parser(unittest.TestCase):
    """The parser refuses what it should (so a pass means something)."""

    def test_refuses(self):
        good = "# HELP a_total x\n# TYPE a_total counter\na_total 1\n"
        parse_exposition(good)
        for bad in (good[:-1], "a_total 1\n", "# TYPE a_total counter\na_total 1\n",
                    good + "a_total 2\n", good.replace("a_total 1", "a_total{x=\"1} 1"),
                    good.replace("counter", "countr"), good.replace("a_total 1", "a_total one"),
                    good.replace("a_total 1", "a_total -1"),
                    "# HELP a x\n# TYPE a counter\na 1\n", good + "# random comment\n",
                    "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
                    "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
                    good + "# HELP b x\n# TYPE b gauge\nb 1\na_total 3\n"):
            with self.assertRaises(ValueError, msg=repr(bad)):
                parse_exposition(bad)


class Metrics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--metrics", "127.0.0.1:0", "--log-format", "json")
        cls.d.put("gen:stairs:32:1", "stairs")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def scrape(self):
        st, h, body = get(self.d.metrics_port, "/metrics")
        self.assertEqual(st, 200)
        self.assertTrue(h["content-type"].startswith("text/plain; version=0.0.4"))
        return parse_exposition(body.decode())

    def test_scrape(self):
        a = self.scrape()
        for fam in ("onepathd_requests_total", "onepathd_request_errors_total",
                    "onepathd_request_duration_seconds", "onepathd_cache_bytes",
                    "onepathd_cache_hits_total", "onepathd_cache_misses_total",
                    "onepathd_cache_evictions_total", "onepathd_tile_builds_total",
                    "onepathd_tile_build_seconds_total", "onepathd_levels",
                    "onepathd_level_version", "onepathd_queue_depth", "onepathd_uptime_seconds"):
            self.assertIn(fam, a)
        for fam in a:
            self.assertTrue(fam.startswith("onepathd_"), fam)
        self.assertEqual(value(a, "onepathd_levels"), 1)
        self.assertEqual(value(a, "onepathd_level_version", level="stairs"), 1)
        n0 = value(a, "onepathd_requests_total", method="tile.get")
        e0 = value(a, "onepathd_request_errors_total", method="tile.get")
        # Traffic counted independently: 5 tile.get, 2 of them out of range.
        for tile in ("0,0", "1,0", "0,1", "900,900", "-900,0"):
            self.d.cli("remote", "tile-get", "--url", self.d.url, "--level", "stairs", "--tile",
                       tile, check=False)
        b = self.scrape()
        self.assertEqual(value(b, "onepathd_requests_total", method="tile.get") - n0, 5)
        self.assertEqual(value(b, "onepathd_request_errors_total", method="tile.get") - e0, 2)
        self.assertEqual(value(b, "onepathd_request_duration_seconds",
                               "onepathd_request_duration_seconds_count", method="tile.get"),
                         value(b, "onepathd_requests_total", method="tile.get"))
        self.assertGreater(value(b, "onepathd_tile_builds_total"), 0)
        self.assertGreater(value(b, "onepathd_cache_bytes", cache="tiles"), 0)
        # Counters never go down between scrapes.
        for fam, f in a.items():
            if f["type"] == "counter" or f["type"] == "histogram":
                for key, v in f["samples"].items():
                    if key[0].endswith("_total") or key[0].endswith("_bucket") or key[0].endswith("_count"):
                        self.assertGreaterEqual(b[fam]["samples"][key], v, key)

    def test_not_found(self):
        self.assertEqual(get(self.d.metrics_port, "/")[0], 404)
        self.assertEqual(get(self.d.metrics_port, "/metrics", "POST")[0], 405)

    def test_remote_stats_json(self):
        r = self.d.cli("remote", "stats", "--url", self.d.url, "--json")
        s = json.loads(r.stdout)
        self.assertEqual(s["levels"], 1)
        for k in ("uptime_ms", "memory", "cache", "builds", "requests", "errors", "latency_us"):
            self.assertIn(k, s)
        self.assertEqual(set(s["latency_us"]), {"p50", "p90", "p99", "max"})
        self.assertGreater(s["requests"], 0)


class JsonLog(unittest.TestCase):
    def run_requests(self, *fmt):
        d = Daemon(*fmt)
        try:
            d.put("gen:stairs:16:1", "s")
            for tile in ("0,0", "9,9"):
                d.cli("remote", "tile-get", "--url", d.url, "--level", "s", "--tile", tile, check=False)
            d.cli("remote", "level-info", "--url", d.url, "--level", "nope", check=False)
        finally:
            d.stop()
        return d.log_text()

    def test_every_line_is_json(self):
        text = self.run_requests("--log-format", "json")
        lines = json_lines(text)  # raises on any line that is not one JSON object
        self.assertTrue(all(isinstance(x, dict) and "time" in x for x in lines))
        reqs = [x for x in lines if "method" in x]
        events = [x for x in lines if "event" in x]
        for x in reqs:
            self.assertEqual(set(x) - {"via"}, {"time", "method", "level", "ms", "status"}, x)
            self.assertIsInstance(x["ms"], float)
        self.assertTrue({"OP-LISTEN", "OP-READY", "OP-STOP", "OP-EXIT"} <= {x["event"] for x in events})
        # The same requests as a text log, field for field.
        plain = self.run_requests()
        want = []
        for line in plain.splitlines():
            m = re.match(r"\S+ (\S+) level=(\S+) ms=[\d.]+ (\S+)$", line)
            if m:
                want.append(m.groups())
        self.assertEqual([(x["method"], x["level"], x["status"]) for x in reqs], want)
        self.assertIn(("level.info", "nope", "OP_ENOTFOUND"), want)

    def test_bad_format(self):
        r = subprocess.run([os.path.join(BIN, "onepathd"), "--log-format", "xml"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("text or json", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
