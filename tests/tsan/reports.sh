#!/bin/sh
# The TSan pass's verdict: every process of the tsan-labelled tests (test programs, onepathd,
# onepath) writes its reports to DIR/report.PID; any such file fails the pass (a daemon
# killed with SIGKILL by its test never gets to exit 66, so its exit status alone would hide
# them).
dir=$1
set -- "$dir"/report.*
if [ ! -e "$1" ]; then
    echo "tsan: no report"
    exit 0
fi
echo "tsan: $# report file(s) in $dir:"
for f in "$@"; do
    echo "==== $f"
    cat "$f"
done
exit 1
