#!/usr/bin/env bash
# The configure-time refusal of excess-precision floating point (CMakeLists.txt):
#   -mfpmath=387 (x87 maths on x86-64: FLT_EVAL_METHOD 2)  must be refused, naming it
#   -m32 (plain: x87)                                       must be refused, when gcc -m32 links
#   -m32 -msse2 -mfpmath=sse                                must pass the check
#   no flags                                                must pass the check
# Each configure is of the real project (OP_TESTS=OFF) in a scratch build dir.
# usage: fp_eval_check.sh SOURCE_DIR WORK_DIR [C_COMPILER]
set -uo pipefail
src=$1 work=$2 cc=${3:-cc}
rm -rf "$work" && mkdir -p "$work"
fail=0

configure() { # name cflags -> rc; log in $work/name.log
    local name=$1 flags=$2
    CFLAGS="$flags" cmake -S "$src" -B "$work/$name" -DCMAKE_C_COMPILER="$cc" -DOP_TESTS=OFF \
        >"$work/$name.log" 2>&1
}
refused() { # name cflags
    if configure "$1" "$2"; then
        echo "FAIL $1: CFLAGS='$2' configured; excess precision must be refused"; fail=1
    elif ! grep -q "FLT_EVAL_METHOD" "$work/$1.log"; then
        echo "FAIL $1: CFLAGS='$2' failed without naming FLT_EVAL_METHOD:"; tail -5 "$work/$1.log"; fail=1
    else
        echo "ok   $1: CFLAGS='$2' refused"
    fi
}
accepted() { # name cflags
    configure "$1" "$2"
    if grep -q "FLT_EVAL_METHOD" "$work/$1.log"; then
        echo "FAIL $1: CFLAGS='$2' was refused:"; tail -5 "$work/$1.log"; fail=1
    else
        echo "ok   $1: CFLAGS='$2' passes the check"
    fi
}

case $("$cc" -dumpmachine) in
x86_64-*|i?86-*)
    refused x87_on_x86_64 "-mfpmath=387"
    if printf 'int main(void){return 0;}\n' | "$cc" -m32 -x c - -o "$work/m32" 2>/dev/null; then
        refused m32_x87 "-m32 -mfpmath=387"
        refused m32_plain "-m32"
        accepted m32_sse "-m32 -msse2 -mfpmath=sse"
    else
        echo "skip m32: $cc -m32 does not link here (gcc-multilib)"
    fi
    ;;
esac
accepted native ""
[ $fail -eq 0 ] && echo "fp_eval_check: passed" || echo "fp_eval_check: FAILED"
exit $fail
