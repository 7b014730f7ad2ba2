#!/bin/sh
# Soak test of onepathd (not part of ctest): CLIENTS clients of mixed reads (tile-get,
# level-info, level-list, ping), edits (level put with a new seed) and long polls
# (changes --wait) against one daemon for DURATION seconds; the daemon's RSS is sampled
# every 10 s. Passes when no request failed and the RSS after warm-up (the first third of
# the run) grew by less than --max-growth KiB (default 20480).
#
#   tests/soak/soak.sh [--bin BUILD/bin] [--duration SECONDS] [--clients N] [--max-growth KIB]
#
# Default: build/bin, 600 s, 64 clients. Prints one line per sample and a summary.
set -u
BIN=build/bin
DURATION=600
CLIENTS=64
MAX_GROWTH=20480
while [ $# -gt 0 ]; do
    case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --max-growth) MAX_GROWTH=$2; shift 2 ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) echo "soak: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$DURATION$CLIENTS$MAX_GROWTH" in *[!0-9]*) echo "soak: numbers only" >&2; exit 2 ;; esac
OP="$BIN/onepath"
OPD="$BIN/onepathd"
[ -x "$OP" ] && [ -x "$OPD" ] || { echo "soak: no onepath/onepathd in $BIN" >&2; exit 2; }
DIR=$(mktemp -d /tmp/opd-soak-XXXXXX)
URL="ipc://$DIR/s.ipc"
"$OPD" --listen "$URL" --data-dir "$DIR/data" --log "$DIR/log" --threads 2 \
    2>"$DIR/stderr" &
PID=$!
cleanup() {
    kill "$PID" 2>/dev/null
    wait "$PID" 2>/dev/null
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM
i=0
until "$OP" remote ping --url "$URL" --timeout 1000 >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 50 ] || { echo "soak: daemon did not start" >&2; cat "$DIR/stderr"; exit 1; }
    sleep 0.2
done
for k in 0 1 2 3; do
    "$OP" put gen:rooms:64:$k --url "$URL" --level "l$k" >/dev/null || { echo "soak: put l$k failed" >&2; exit 1; }
done
END=$(( $(date +%s) + DURATION ))
client() { # $1: client number
    n=0 fail=0 k=$(( $1 % 4 ))
    while [ "$(date +%s)" -lt "$END" ]; do
        n=$((n + 1))
        case $(( ($1 + n) % 8 )) in
        0) "$OP" put "gen:rooms:64:$((n % 3))" --url "$URL" --level "l$k" ;;
        1) "$OP" remote changes --url "$URL" --level "l$k" --wait 3000 ;;
        2) "$OP" remote level-info --url "$URL" --level "l$k" ;;
        3) "$OP" remote level-list --url "$URL" ;;
        4) "$OP" remote ping --url "$URL" ;;
        *) "$OP" remote tile-get --url "$URL" --level "l$k" --tile "$((n % 2)),$(( (n / 2) % 2 ))" --out "$DIR/c$1" ;;
        esac >/dev/null 2>>"$DIR/err.$1" || fail=$((fail + 1))
    done
    echo "$n $fail" >"$DIR/count.$1"
}
c=0
while [ $c -lt "$CLIENTS" ]; do mkdir -p "$DIR/c$c"; client $c & c=$((c + 1)); done
START=$(date +%s)
: >"$DIR/rss"
while [ "$(date +%s)" -lt "$END" ]; do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$PID/status" 2>/dev/null)
    [ -n "$rss" ] || { echo "soak: the daemon is gone" >&2; exit 1; }
    t=$(( $(date +%s) - START ))
    echo "$t $rss" >>"$DIR/rss"
    echo "t=${t}s rss=${rss}KiB"
    sleep 10
done
wait_clients() { for j in $(seq 0 $((CLIENTS - 1))); do while [ ! -f "$DIR/count.$j" ]; do sleep 1; done; done; }
wait_clients
total=0 fails=0
for j in $(seq 0 $((CLIENTS - 1))); do
    read -r a b <"$DIR/count.$j"; total=$((total + a)); fails=$((fails + b))
done
warm=$(( DURATION / 3 ))
summary=$(awk -v w="$warm" '$1 >= w { if (!s) { first = $2; s = 1 } if ($2 < lo || !lo) lo = $2; if ($2 > hi) hi = $2; last = $2 }
    END { printf "%d %d %d %d", first, lo, hi, last }' "$DIR/rss")
set -- $summary
growth=$(( $4 - $1 ))
echo "soak: $CLIENTS clients, ${DURATION}s, $total requests, $fails failed;" \
     "RSS after warm-up (t>=${warm}s): first $1 KiB, min $2, max $3, last $4 (growth $growth KiB)"
if [ "$fails" -gt 0 ]; then
    echo "soak: first errors:" >&2; cat "$DIR"/err.* | sort | uniq -c | sort -rn | head -5 >&2
fi
if ! kill -0 "$PID" 2>/dev/null; then echo "soak: FAIL daemon died" >&2; exit 1; fi
[ "$fails" -eq 0 ] && [ $(( $3 - $1 )) -lt "$MAX_GROWTH" ] && { echo "soak: PASS"; exit 0; }
echo "soak: FAIL"; exit 1
