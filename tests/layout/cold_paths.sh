#!/usr/bin/env bash
# The error paths of a tile rebuild's stages are laid out apart from the code a successful
# build runs (OP_COLD on op_err_set and the stages' error helpers, status.h): gcc moves the
# blocks that only lead to an error into each function's .cold part. Each function below
# returns errors from its body (allocation failures, limits), so it has a .cold part when
# the attribute is in place and none without it (main before rbcold14 had none of them).
# Only for gcc with optimization (tests/CMakeLists.txt): -O0 and clang do not split.
# usage: cold_paths.sh NM LIBRARY
set -uo pipefail
nm=$1 lib=$2
syms=$("$nm" "$lib") || { echo "FAIL: $nm $lib"; exit 1; }
fail=0
for f in op_level_rebuild_tile op__tile_build op__tile_spans op_regions_build_from_layers \
         op__regions_layers_local op__contours_build_reuse op__polys_build_reuse \
         op_tile_assemble; do
    if grep -Eq " $f(\.[a-z]+\.[0-9]+)*\.cold$" <<<"$syms"; then
        echo "ok   $f has a .cold part"
    else
        echo "FAIL $f has no .cold part: its error paths sit in its hot body"; fail=1
    fi
done
exit $fail
