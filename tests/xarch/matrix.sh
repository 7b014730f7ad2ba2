#!/usr/bin/env bash
# The determinism matrix on this host: every compiler (gcc, clang) at every optimisation
# level (-O0 to -O3) builds the library, the CLI and the Criterion suites that hold golden
# hashes (tests/golden/, hash-matrix scenarios), runs those suites, and bakes a few levels
# at 1, 2 and 8 threads; every bake's --json summary (its counts and the hash of all its
# tiles' bytes; not its time or thread count) must equal the first configuration's.
# aarch64 is tests/xarch/aarch64.sh. Not part of ctest: eight builds take 20-40 minutes.
#
#   bash tests/xarch/matrix.sh [WORK_DIR]     (default: build-matrix)
#   CCS="gcc clang" OPTS="-O0 -O1 -O2 -O3" JOBS=2 bash tests/xarch/matrix.sh
#   SUITES=0 bash tests/xarch/matrix.sh     (the bakes alone, e.g. again on built trees)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=${1:-$here/build-matrix}
ccs=${CCS:-gcc clang}
opts=${OPTS:--O0 -O1 -O2 -O3}
jobs=${JOBS:-$(nproc)}
levels=(gen:rooms:128:1 gen:stairs:96:3 gen:multifloor:64:2 "$here/../shared/levels/dungeon.obj")
suites=(test_build test_build_inputs test_compact test_contours test_contours_rules test_detail
        test_detour_export test_levelgen test_obj test_polys test_query_levels test_regions
        test_regions_layers test_scenarios test_tile_select test_rasterize test_rasterize_rule
        test_filters test_filters_scalar test_rebuild)
strip='import json, sys
m = json.load(sys.stdin)
for k in ("build_ms", "threads"):
    m.pop(k, None)
print(json.dumps(m, sort_keys=True))'
mkdir -p "$work"
work=$(cd "$work" && pwd)
ref=""
fail=0
for cc in $ccs; do
    command -v "$cc" >/dev/null || { echo "matrix: $cc missing" >&2; exit 2; }
    for o in $opts; do
        name=$cc$o
        tree=$work/$name
        echo "== $name"
        # CMAKE_BUILD_TYPE=None: the flags below are the only optimisation flags.
        CC=$cc cmake -S "$here" -B "$tree" -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS="$o" \
            >"$tree.configure.log" 2>&1 || { tail -20 "$tree.configure.log"; exit 1; }
        cmake --build "$tree" -j "$jobs" --target onepath_cli "${suites[@]}" >"$tree.build.log" 2>&1 ||
            { tail -40 "$tree.build.log"; exit 1; }
        regex="^($(IFS='|'; echo "${suites[*]}"))\$"
        if [ "${SUITES:-1}" = 1 ] && ! (cd "$tree" && ctest -j "$jobs" -R "$regex" --output-on-failure >"$tree.ctest.log" 2>&1); then
            echo "matrix: $name: golden suites fail (see $tree.ctest.log)"
            tail -20 "$tree.ctest.log"
            fail=1
        fi
        out=$work/$name.bakes
        : >"$out"
        for lv in "${levels[@]}"; do
            for t in 1 2 8; do
                m=$("$tree/bin/onepath" bake "$lv" --threads "$t" --json --progress none) ||
                    { echo "matrix: $name: bake $lv --threads $t failed"; fail=1; continue; }
                # The manifest less what a run may vary in: its time and its thread count.
                printf '%s threads %s %s\n' "$(basename "$lv")" "$t" \
                    "$(printf '%s' "$m" | python3 -c "$strip" | sha256sum | cut -d' ' -f1)" >>"$out"
            done
        done
        # Within one configuration the thread counts must agree...
        if [ "$(awk '{print $1, $4}' "$out" | sort -u | wc -l)" != "${#levels[@]}" ]; then
            echo "matrix: $name: thread counts disagree"; cat "$out"; fail=1
        fi
        # ...and every configuration with the first.
        if [ -z "$ref" ]; then
            ref=$out
        elif ! cmp -s "$ref" "$out"; then
            echo "matrix: $name differs from $(basename "$ref" .bakes):"
            diff "$ref" "$out" || true
            fail=1
        fi
        echo "   ok so far: $(wc -l <"$out") bakes, suites $(grep -c ' Passed' "$tree.ctest.log" || true) passed"
    done
done
[ "$fail" = 0 ] && echo "matrix: every configuration agrees" || { echo "matrix: FAILED"; exit 1; }
