#!/usr/bin/env bash
# onepath set-up on a fresh Debian 12 machine.
#   deploy/setup.sh run    install packages, build, run the main job on the bundled default:
#                          onepathd serves a generated level, the client fetches every tile,
#                          and they are checked byte for byte against an offline bake
#   deploy/setup.sh test   install packages, build, run every test (ctest)
#   deploy/setup.sh deps   install packages only
#   deploy/setup.sh xarch  the cross-architecture determinism check: installs the aarch64
#                          cross toolchain and qemu-user, adds dpkg's arm64 architecture
#                          (for `apt-get download pkg:arm64`), runs tests/xarch/aarch64.sh
# BUILD_DIR (default: build) and JOBS (default: nproc) can be set in the environment;
# CMAKE_ARGS is passed to cmake, CTEST_ARGS to ctest (e.g. CTEST_ARGS="-L tsan": only the
# ThreadSanitizer pass's tests of a -DOP_TSAN=ON build).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$here/build}
jobs=${JOBS:-$(nproc)}

packages=(build-essential cmake pkg-config libnng-dev libuv1-dev libmsgpack-dev
          libcriterion-dev libnanomsg-dev librecast-dev zlib1g-dev
          python3 python3-msgpack python3-pytest python3-numpy python3-yaml man-db
          chromium libjs-three systemd)

# The cross-architecture check's own group (not in deps: CI's default run does not use it).
xarch_packages=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user file)

xarch_deps() {
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    dpkg --print-foreign-architectures | grep -qx arm64 || $sudo dpkg --add-architecture arm64
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        "${xarch_packages[@]}"
}

deps() {
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
    cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-}
    cmake --build "$build" -j "$jobs"
}

# The main job: the whole product on the bundled default level. Starts onepathd on an
# ipc:// socket, uploads the level, fetches every tile over RPC, bakes the same level
# offline, and checks that both sets of tile files are byte-identical.
demo() {
    # Globals, not locals: the EXIT trap runs after demo has returned.
    demo_level=${LEVEL:-gen:rooms:128:1}
    demo_work=$(mktemp -d)
    demo_url="ipc://$demo_work/onepathd.sock"
    "$build/bin/onepathd" --listen "$demo_url" --data-dir "$demo_work/data" \
        --log "$demo_work/onepathd.log" </dev/null >/dev/null 2>&1 &
    demo_pid=$!
    trap 'kill "$demo_pid" 2>/dev/null; wait "$demo_pid" 2>/dev/null; rm -rf "$demo_work"' EXIT
    local level=$demo_level work=$demo_work url=$demo_url pid=$demo_pid
    echo "demo: onepathd (pid $pid) on $url"
    "$build/bin/onepath" put "$level" --url "$url" --level demo --timeout 60000
    "$build/bin/onepath" fetch --url "$url" --level demo --out "$work/fetched" --timeout 120000
    "$build/bin/onepath" bake "$level" --out "$work/baked"
    "$build/bin/onepath" verify "$work/fetched"
    # The bake's manifest (docs/spec/bake-output.md) proves its directory complete; fetch
    # writes none, so the byte comparison is of the tile files alone.
    "$build/bin/onepath" verify "$work/baked"
    if diff -r -x manifest.optm "$work/fetched" "$work/baked" >/dev/null &&
        [ "$(ls "$work/fetched" | wc -l)" -gt 0 ]; then
        echo "demo: $(ls "$work/fetched" | wc -l) tiles from onepathd are byte-identical to the offline bake"
    else
        echo "demo: tiles from onepathd differ from the offline bake" >&2
        return 1
    fi
    "$build/bin/onepath" remote stats --url "$url"
}

case "${1:-}" in
deps) deps ;;
run)
    deps
    build
    demo
    ;;
test)
    deps
    build
    cd "$build"
    # ThreadSanitizer (gcc 12's) maps its shadow at fixed addresses and fails with
    # "unexpected memory mapping" when the kernel randomises mmap with more than 28 bits
    # (vm.mmap_rnd_bits 32 on some newer kernels): run without address randomisation then.
    run=()
    if grep -q "^OP_TSAN:BOOL=ON" CMakeCache.txt 2>/dev/null &&
        [ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)" -gt 28 ]; then
        echo "setup: vm.mmap_rnd_bits > 28: running the tests under setarch -R for TSan"
        run=(setarch "$(uname -m)" -R)
    fi
    # shellcheck disable=SC2086 # CTEST_ARGS is a list of arguments
    "${run[@]}" ctest --output-on-failure -j "$jobs" ${CTEST_ARGS:-}
    ;;
xarch)
    xarch_deps
    bash "$here/tests/xarch/aarch64.sh" "${BUILD_DIR:-$here/build-aarch64}"
    ;;
*)
    sed -n '2,10p' "$0"
    exit 2
    ;;
esac
