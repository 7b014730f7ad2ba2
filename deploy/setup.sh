#!/usr/bin/env bash
# onepath set-up on a fresh Debian 12 machine.
#   deploy/setup.sh run    install packages, build, run the main job on the bundled default
#   deploy/setup.sh test   install packages, build, run every test (ctest)
#   deploy/setup.sh deps   install packages only
# BUILD_DIR (default: build) and JOBS (default: nproc) can be set in the environment.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$here/build}
jobs=${JOBS:-$(nproc)}

packages=(build-essential cmake pkg-config libnng-dev libuv1-dev libmsgpack-dev
          libcriterion-dev libnanomsg-dev librecast-dev)

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

case "${1:-}" in
deps) deps ;;
run)
    deps
    build
    "$build/bin/onepath" bake
    ;;
test)
    deps
    build
    cd "$build"
    ctest --output-on-failure -j "$jobs"
    ;;
*)
    sed -n '2,7p' "$0"
    exit 2
    ;;
esac
