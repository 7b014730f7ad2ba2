"""Markdown tables of docs/benchmarks.md from the JSON files of bench/run_results.sh."""
import json
import os
import sys

O = sys.argv[1]
def load(f):
    return json.load(open(os.path.join(O, f)))["levels"]
def name(l):
    n = l["level"]
    return n.split("/")[-1] if "/" in n else n.replace("gen:", "gen ")
def f2(x): return "%.2f" % x
def fi(x): return "{:,}".format(x)

STAGES = ["prepare","spans","regions","contours","polys","detail","tile"]
def stage_table(levels, stages, extra_rows=True, threads=False):
    """One column per level; cells 'ours / Recast = ratio'."""
    cols = list(levels)
    out = []
    out.append("| stage (median ms) | " + " | ".join(name(l) for l in cols) + " |")
    out.append("|---|" + "---|" * len(cols))
    def row(label, fn):
        out.append("| %s | %s |" % (label, " | ".join(fn(l) for l in cols)))
    row("triangles", lambda l: fi(l["triangles"]))
    row("tiles (grid: ours / Recast)", lambda l: "%d / %d" % (l["onepath"]["tiles_total"], l["recast"]["tiles_total"]))
    row("tiles built (ours / Recast)", lambda l: "%d / %d" % (l["onepath"]["tiles_built"], l["recast"]["tiles_built"]))
    for s in stages:
        def cell(l, s=s):
            a = l["onepath"]["median_ms"].get(s); b = l["recast"]["median_ms"].get(s)
            if a is None or b is None: return "-"
            return "%s / %s = **%.2f**" % (f2(a), f2(b), a / b if b > 0 else float('nan'))
        row(s + " (ours / Recast = ratio)", cell)
    row("**total** (sum of the stages)", lambda l: "%s / %s = **%.2f**" % (f2(l["onepath"]["total_ms"]), f2(l["recast"]["total_ms"]), l["ratio"]["total"]))
    row("process CPU time", lambda l: "%s / %s = **%.2f**" % (f2(l["onepath"]["cpu_ms"]), f2(l["recast"]["cpu_ms"]), l["ratio"]["cpu"]))
    if threads:
        row("wall, 1 thread", lambda l: "%s / %s = %.2f" % (f2(l["onepath"]["wall_ms"]), f2(l["recast"]["wall_ms"]), l["onepath"]["wall_ms"]/l["recast"]["wall_ms"]))
        row("wall, 2 threads", lambda l: "%s / %s = %.2f" % (f2(l["onepath"]["wall_ms_threads_2"]), f2(l["recast"]["wall_ms_threads_2"]), l["onepath"]["wall_ms_threads_2"]/l["recast"]["wall_ms_threads_2"]))
        row("speed-up 1 → 2 threads (ours / Recast)", lambda l: "%.2f / %.2f" % (l["onepath"]["speedup"], l["recast"]["speedup"]))
    if extra_rows:
        row("compact spans (ours / Recast)", lambda l: "%s / %s" % (fi(l["onepath"]["spans"]), fi(l["recast"]["spans"])))
        if "regions" in stages:
            row("regions / contours (ours; Recast)", lambda l: "%d / %d; %d / %d" % (l["onepath"]["regions"], l["onepath"]["contours"], l["recast"]["regions"], l["recast"]["contours"]))
        if "tile" in stages:
            row("polygons / vertices (ours; Recast)", lambda l: "%s / %s; %s / %s" % (fi(l["onepath"]["polys"]), fi(l["onepath"]["verts"]), fi(l["recast"]["polys"]), fi(l["recast"]["verts"])))
            row("detail triangles (ours / Recast)", lambda l: "%s / %s" % (fi(l["onepath"]["detail_tris"]), fi(l["recast"]["detail_tris"])))
            row("tile data bytes (ours / Recast)", lambda l: "%s / %s" % (fi(l["onepath"]["tile_bytes"]), fi(l["recast"]["tile_bytes"])))
        row("arena / allocator peak KiB (ours / Recast)", lambda l: "%.0f / %.0f" % (l["onepath"]["heap_peak"]/1024, l["recast"]["heap_peak"]/1024))
        row("peak RSS KiB, after load → after build (ours; Recast)", lambda l: "%s → %s; %s → %s" % (fi(l["onepath"]["child_base_rss_kb"]), fi(l["onepath"]["child_maxrss_kb"]), fi(l["recast"]["child_base_rss_kb"]), fi(l["recast"]["child_maxrss_kb"])))
    return "\n".join(out)

print("### a. span stage\n")
print(stage_table(load("a_dungeon.json") + load("a_512.json"), ["prepare","spans"]))
print("\n### b. regions + contours per partition\n")
for lvl in ["dungeon", "512"]:
    ls = []
    for p in ["watershed","monotone","layers"]:
        l = load("b_%s_%s.json" % (lvl, p))[0]
        l["level"] = name(l) + " " + p
        ls.append(l)
    print(stage_table(ls, ["prepare","spans","regions","contours"]))
    print()
print("### c. full tiled bake\n")
print(stage_table(load("c_obj.json") + load("c_256.json") + load("c_1024.json"), STAGES, threads=True))

print("\n### d. where the time goes (ours, full bake, 1 thread; share of the stage total)\n")
ls = load("c_obj.json") + load("c_256.json") + load("c_1024.json")
print("| stage | " + " | ".join(name(l) for l in ls) + " |")
print("|---|" + "---|" * len(ls))
for s in STAGES:
    print("| %s | %s |" % (s, " | ".join("%.1f%% (%s ms)" % (100 * l["onepath"]["median_ms"][s] / l["onepath"]["total_ms"], f2(l["onepath"]["median_ms"][s])) for l in ls)))
print("| Recast's spans share | %s |" % " | ".join("%.1f%%" % (100 * l["recast"]["median_ms"]["spans"] / l["recast"]["total_ms"]) for l in ls))
