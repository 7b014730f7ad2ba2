#!/bin/sh
# The TSan pass's own check: a program with a known race (canary.c), run with the options
# of the pass (a log_path directory, the suppressions file), must leave a data race report
# there and exit 66. Without this, a pass whose reports went nowhere would look clean.
bin=$1 dir=$2 supp=$3
rm -rf "$dir" && mkdir -p "$dir" || exit 1
TSAN_OPTIONS="log_path=$dir/report halt_on_error=0 exitcode=66 suppressions=$supp" "$bin" >/dev/null
rc=$?
if [ "$rc" -ne 66 ]; then
    echo "tsan canary: exit status $rc, want 66"
    exit 1
fi
if ! cat "$dir"/report.* 2>/dev/null | grep -q "WARNING: ThreadSanitizer: data race"; then
    echo "tsan canary: no data race report in $dir"
    exit 1
fi
echo "tsan canary: the race was reported in $dir"
