#!/usr/bin/env bash
# Cross-architecture determinism check: the core library and every Criterion suite that
# holds golden hashes (hash-matrix scenarios, tests/golden/) built for aarch64 with
# Debian's cross toolchain and run under qemu-user. The golden files are the same ones
# the x86-64 build checks: a hash that differs on arm64 fails here.
#
#   bash tests/xarch/aarch64.sh [BUILD_DIR]      (default: build-aarch64)
#
# Needs (deploy/setup.sh xarch installs them): gcc-aarch64-linux-gnu, libc6-dev-arm64-cross,
# qemu-user, and dpkg's arm64 architecture so that `apt-get download pkg:arm64` finds the
# target's libraries (Criterion and its dependencies, msgpack-c), which are unpacked into
# BUILD_DIR/sysroot with dpkg-deb -x: nothing is installed for arm64 on the host.
# Runs the suites one at a time (JOBS: make jobs, default nproc).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$here/build-aarch64}
mkdir -p "$build"
build=$(cd "$build" && pwd)
sysroot=$build/sysroot
jobs=${JOBS:-$(nproc)}

# The target's libraries: what the golden suites link (Criterion, msgpack-c for the tile
# codec) and what those need at run time. libc and libgcc come from the cross toolchain.
debs=(libcriterion-dev libcriterion3 libboxfort-dev libnanomsg5 libgit2-1.5 libffi8
      libhttp-parser2.9 libmbedcrypto7 libmbedtls14 libmbedx509-1 libssh2-1 libssl3 zlib1g
      libpcre2-8-0 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2
      libkeyutils1 libmsgpackc2 libmsgpack-dev)

for tool in aarch64-linux-gnu-gcc qemu-aarch64 dpkg-deb apt-get; do
    command -v "$tool" >/dev/null || { echo "aarch64: $tool missing (deploy/setup.sh xarch)" >&2; exit 2; }
done
if [ ! -f "$sysroot/.complete" ]; then
    dpkg --print-foreign-architectures | grep -qx arm64 ||
        { echo "aarch64: dpkg has no arm64 architecture (deploy/setup.sh xarch)" >&2; exit 2; }
    rm -rf "$sysroot" "$build/debs" && mkdir -p "$sysroot" "$build/debs"
    (cd "$build/debs" && apt-get download -q "${debs[@]/%/:arm64}" >/dev/null)
    for d in "$build"/debs/*.deb; do dpkg-deb -x "$d" "$sysroot"; done
    touch "$sysroot/.complete"
fi

# Criterion starts every test as a new process of the test program (execve of
# /proc/self/exe): under qemu-user that is an aarch64 program the kernel must know how to
# run. Register qemu-aarch64 with binfmt_misc (root) unless something already does.
binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e "$binfmt/register" ]; then
    mount -t binfmt_misc binfmt_misc "$binfmt" ||
        { echo "aarch64: cannot mount binfmt_misc (root needed)" >&2; exit 2; }
fi
if ! grep -qs "^enabled" "$binfmt/qemu-aarch64"; then
    printf '%s' ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:'"$(command -v qemu-aarch64)"':' \
        >"$binfmt/register" ||
        { echo "aarch64: cannot register qemu-aarch64 with binfmt_misc" >&2; exit 2; }
fi

cmake -S "$here/tests/xarch" -B "$build/tree" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_TOOLCHAIN_FILE="$here/tests/xarch/aarch64-toolchain.cmake" \
    -DOP_XARCH_SYSROOT="$sysroot" -DOP_SHARED_DIR="$here/../shared" >"$build/configure.log" ||
    { cat "$build/configure.log"; exit 1; }
cmake --build "$build/tree" -j "$jobs" >"$build/build.log" 2>&1 ||
    { tail -40 "$build/build.log"; exit 1; }
file "$build/tree/bin/test_scenarios" | grep -q "ARM aarch64" ||
    { echo "aarch64: test_scenarios is not an aarch64 program" >&2; exit 1; }
(cd "$build/tree" && ctest --output-on-failure -j 1)
