#!/bin/sh
# The measurements of docs/benchmarks.md "Results": one JSON file per run in OUT_DIR.
# Run from the checkout's top directory after building build-bench (-DOP_BENCH=ON);
# then python3 bench/results_tables.py OUT_DIR prints the tables.
set -e
O=${1:?usage: bench/run_results.sh OUT_DIR}
B=${B:-build-bench/bin/onepath-bench}
L=${L:-../shared/levels}
mkdir -p "$O"
git log -1 --format='%H %s' > "$O/commit.txt"
{ date -u; uptime; } > "$O/date.txt"
# a. span stage
nice $B --stage spans --level $L/dungeon.obj --reps 21 --json > "$O/a_dungeon.json"
nice $B --stage spans --gen terrain:512 --gen rooms:512 --reps 5 --json > "$O/a_512.json"
# b. regions + contours per partition
for p in watershed monotone layers; do
  nice $B --stage contours --set partition=$p --level $L/dungeon.obj --reps 21 --json \
    > "$O/b_dungeon_$p.json"
  nice $B --stage contours --set partition=$p --gen terrain:512 --reps 5 --json \
    > "$O/b_512_$p.json"
done
# c. full tiled bake, 1 and 2 threads
nice $B --level $L/dungeon.obj --level $L/undulating.obj --reps 21 --also-threads 2 --json \
  > "$O/c_obj.json"
nice $B --gen terrain:256 --gen rooms:256 --reps 11 --also-threads 2 --json > "$O/c_256.json"
nice $B --gen terrain:1024 --gen rooms:1024 --reps 5 --also-threads 2 --json > "$O/c_1024.json"
{ date -u; uptime; } >> "$O/date.txt"
