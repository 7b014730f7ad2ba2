#!/usr/bin/env bash
# External programs of the installed onepath (tests/install/consumer.c), built the two ways
# a user would: with pkg-config (shared, run with LD_LIBRARY_PATH; and static, from the
# Libs.private) and with find_package(onepath) (a CMake project: shared with its rpath,
# and the static targets). Each must bake the level to the mesh hash that the installed
# `onepath bake --json` prints, and see the client's errors.
#   install_consumers.sh PREFIX WORKDIR CC "EXTRA_CFLAGS"
set -euo pipefail
prefix=$1 work=$2 cc=$3 extra=${4:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work" && mkdir -p "$work"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
level=(rooms 32 1)

fail() { echo "install_consumers: $*" >&2; exit 1; }

want=$("$prefix/bin/onepath" bake "gen:${level[0]}:${level[1]}:${level[2]}" --json |
       sed -n 's/.*"hash": "\([0-9a-f]*\)".*/\1/p')
[ -n "$want" ] || fail "no hash from the installed onepath bake"
echo "onepath bake --json: hash $want"

check_run() { # name, command...: runs it, checks the hash and the client line
    local name=$1 out
    shift
    out=$("$@") || fail "$name exited $?: $out"
    echo "$name: $(echo "$out" | tr '\n' ' ')"
    grep -qx "tiles [0-9]* hash $want" <<<"$out" || fail "$name: hash differs from onepath bake ($want)"
    grep -qx "client ok" <<<"$out" || fail "$name: client check missing"
}

needs() { # binary, library: the binary loads library from the prefix
    local bin=$1 lib=$2
    local deps
    deps=$(LD_LIBRARY_PATH=$prefix/lib ldd "$bin")
    grep -qF "$lib => $prefix/lib/$lib" <<<"$deps" || fail "$bin does not load $prefix/lib/$lib: $deps"
}

# 1. pkg-config, shared libraries.
pc_version=$(pkg-config --modversion onepath)
echo "pkg-config: onepath $pc_version, onepath-client $(pkg-config --modversion onepath-client)"
flags=$(pkg-config --cflags --libs onepath onepath-client)
echo "pkg-config --cflags --libs onepath onepath-client: $flags"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror $extra "$here/consumer.c" $flags -o "$work/pc_shared"
needs "$work/pc_shared" libonepath.so.0
needs "$work/pc_shared" libonepath-client.so.0
check_run pc_shared env LD_LIBRARY_PATH="$prefix/lib" "$work/pc_shared" "${level[@]}"

# 2. pkg-config --static: the archives and Libs.private / Requires.private suffice.
static=$(pkg-config --static --libs onepath-client onepath |
         sed 's/-lonepath-client/-l:libonepath-client.a/g; s/-lonepath\b/-l:libonepath.a/g')
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror $extra "$here/consumer.c" \
    $(pkg-config --cflags onepath-client) $static -o "$work/pc_static"
if grep -q libonepath <<<"$(ldd "$work/pc_static")"; then
    fail "pc_static still loads a libonepath .so"
fi
check_run pc_static "$work/pc_static" "${level[@]}"

# 3. find_package(onepath): a CMake project configured against the prefix.
cmake -S "$here/find_package" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$extra" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log"; fail "configuring the find_package project failed"; }
cmake --build "$work/cmake" >>"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log"; fail "building the find_package project failed"; }
grep -q "onepath_DIR:PATH=$prefix/lib/cmake/onepath" "$work/cmake/CMakeCache.txt" ||
    fail "find_package found another onepath: $(grep onepath_DIR "$work/cmake/CMakeCache.txt")"
# No LD_LIBRARY_PATH: the imported targets give the build tree an rpath into the prefix.
check_run cmake_shared "$work/cmake/consumer_shared" "${level[@]}"
grep -qF "libonepath.so.0 => $prefix/lib/" <<<"$(ldd "$work/cmake/consumer_shared")" ||
    fail "consumer_shared does not load the prefix's libonepath.so.0"
check_run cmake_static "$work/cmake/consumer_static" "${level[@]}"

# 4. A version the package does not satisfy is refused.
mkdir -p "$work/badver"
printf 'cmake_minimum_required(VERSION 3.25)\nproject(v C)\nfind_package(onepath 1 REQUIRED)\n' \
    >"$work/badver/CMakeLists.txt"
if cmake -S "$work/badver" -B "$work/badver/b" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null 2>&1; then
    fail "find_package(onepath 1) accepted version $pc_version"
fi
echo "install_consumers: all passed"
