#!/usr/bin/env bash
# The installed man pages, bash completion and systemd unit agree with the installed
# programs: every command and flag that `onepath --help`, `onepath COMMAND --help` and
# `onepathd --help` list is described in onepath(1) / onepathd(8) and offered by the
# completion; the pages render without a warning; the unit names the installed binary.
#   install_docs.sh PREFIX WORKDIR VERSION
set -euo pipefail
prefix=$1 work=$2 version=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "install_docs: $*" >&2; exit 1; }
# Under ASan the programs' exits are checked for leaks; this test reads their help texts
# only (onepathd --help leaks its two start-up allocations: reported, not ours to judge).
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
op=$prefix/bin/onepath
opd=$prefix/sbin/onepathd
man1=$prefix/share/man/man1/onepath.1
man8=$prefix/share/man/man8/onepathd.8
comp=$prefix/share/bash-completion/completions

flags_of() { grep -oE -- '--[a-z][a-z-]*' | sort -u; }
# The text of a roff page with \- and font escapes undone (what a reader sees, unwrapped).
page_text() { sed 's/\\-/-/g; s/\\f[BIRP]//g; s/\\%//g' "$1"; }

# 1. Both pages render cleanly (lintian's check) and carry the version.
for m in "$man1" "$man8"; do
    warn=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$m" 2>&1 >/dev/null)
    [ -z "$warn" ] || fail "$(basename "$m") renders with warnings: $warn"
    grep -q "^\.TH .* \"onepath $version\"" "$m" || fail "$(basename "$m") is not for version $version"
done
grep -q "@" "$man1" "$man8" && fail "an unconfigured @VARIABLE@ is left in a man page"

# 2. onepath(1) and the completion know every command and flag of the help texts.
page_text "$man1" >"$work/onepath.txt"
commands=$("$op" --help | sed -n 's/^  \([a-z]\+\)  .*/\1/p')
[ "$(wc -w <<<"$commands")" -ge 10 ] || fail "too few commands in onepath --help: $commands"
# shellcheck disable=SC1091
source "$comp/onepath"
complete_words() { # words...: what the completion offers for the last word
    COMP_WORDS=("$@")
    COMP_CWORD=$(($# - 1))
    COMPREPLY=()
    _onepath
    printf '%s\n' "${COMPREPLY[@]}"
}
offered=$(complete_words onepath "")
nflags=0
for c in $commands; do
    grep -qE "^\.B $c\$" "$man1" || fail "onepath(1) has no item for the command '$c'"
    grep -qx "$c" <<<"$offered" || fail "completion does not offer the command '$c'"
    # A command's --help may go to stderr and exit 2 (its usage).
    help=$("$op" "$c" --help 2>&1 || true)
    if [ "$c" = remote ]; then
        subs=$(sed -n 's/.*onepath remote \([a-z|-]*\) .*/\1/p' <<<"$help" | tr '|' '\n')
        offered_subs=$(complete_words onepath remote "")
        for s in $subs; do
            grep -qw -- "$s" "$work/onepath.txt" || fail "onepath(1) does not describe remote $s"
            grep -qx -- "$s" <<<"$offered_subs" || fail "completion does not offer remote $s"
            for f in $(flags_of <<<"$(grep -F "remote $s" <<<"$help" | sed 's/.*remote [a-z|-]*//')"); do
                grep -qx -- "$f" <<<"$(complete_words onepath remote "$s" --)" ||
                    fail "completion does not offer '$f' for remote $s"
            done
        done
        # The common flags (--timeout) and every sub's flags are in the page.
    fi
    for f in $(flags_of <<<"$help"); do
        grep -qF -- "$f" "$work/onepath.txt" || fail "onepath(1) does not describe '$c $f'"
        [ "$c" = remote ] || grep -qx -- "$f" <<<"$(complete_words onepath "$c" --)" ||
            fail "completion does not offer '$f' for '$c'"
        nflags=$((nflags + 1))
    done
done
echo "onepath(1) and completion: $(wc -w <<<"$commands") commands, $nflags command flags"

# 3. onepathd(8) and its completion know every flag and variable of onepathd --help.
page_text "$man8" >"$work/onepathd.txt"
dhelp=$("$opd" --help)
# shellcheck disable=SC1091
source "$comp/onepathd"
COMP_WORDS=(onepathd --)
COMP_CWORD=1
COMPREPLY=()
_onepathd
doffered=$(printf '%s\n' "${COMPREPLY[@]}")
dflags=$(flags_of <<<"$dhelp")
for f in $dflags; do
    grep -qE -- "^\.BI? $f( |\$)" "$work/onepathd.txt" || fail "onepathd(8) has no item for '$f'"
    grep -qx -- "$f" <<<"$doffered" || fail "onepathd completion does not offer '$f'"
done
envs=$(grep -oE 'ONEPATHD_[A-Z_]+' <<<"$dhelp" | sort -u)
for v in $envs; do
    grep -q "^\.B $v\$" "$man8" || fail "onepathd(8) ENVIRONMENT lacks $v"
done
[ "$(wc -w <<<"$dflags")" -ge 10 ] || fail "too few flags in onepathd --help"
echo "onepathd(8) and completion: $(wc -w <<<"$dflags") flags, $(wc -w <<<"$envs") variables"

# 4. The installed unit starts the installed daemon and documents itself with the page.
unit=$prefix/lib/systemd/system/onepathd.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[ "$exec_start" = "$opd" ] || fail "unit ExecStart=$exec_start, want $opd"
"$exec_start" --version | grep -qx "onepathd $version (protocol [0-9]*)" || fail "unit's binary is not $version"
doc=$(sed -n 's|^Documentation=.*file://\([^ ]*\).*|\1|p' "$unit")
[ -f "$doc" ] || fail "unit Documentation $doc is not installed"
# systemd-analyze (Debian package systemd; deploy/setup.sh installs it) works offline, in a
# container where systemd is not running. verify: the unit parses, its ExecStart= is
# executable, its man: Documentation= exists. security: exposure 4.9 or less is "OK".
if command -v systemd-analyze >/dev/null; then
    MANPATH=$prefix/share/man: systemd-analyze verify "$unit" || fail "systemd-analyze verify $unit"
    score=$(systemd-analyze security --offline=true --threshold=49 "$unit" 2>&1) ||
        fail "systemd-analyze security rates the unit above 4.9: $(tail -1 <<<"$score")"
    echo "unit: $(sed -n 's/.*Overall exposure level for [^:]*: //p' <<<"$score")"
    for d in RuntimeDirectory=onepathd StateDirectory=onepathd; do
        grep -qx "$d" "$unit" || fail "unit lacks $d"
    done
else
    echo "install_docs: systemd-analyze missing (Debian package systemd): unit checks skipped"
fi
echo "install_docs: all passed"
