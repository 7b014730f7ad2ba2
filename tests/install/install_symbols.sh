#!/usr/bin/env bash
# The installed shared libraries export exactly the functions of the installed headers:
# nm -D of each .so against the compiler's own list of the headers' declarations
# (gcc -aux-info, a different route from the preprocessor scan that wrote the version
# script). No op__ internal, no internal op_ function, no dependency symbol may leak, and
# no public function may be missing. Also the soname, the file names and the version.
#   install_symbols.sh PREFIX WORKDIR CC VERSION
set -euo pipefail
prefix=$1 work=$2 cc=$3 version=$4
rm -rf "$work" && mkdir -p "$work"
major=${version%%.*}
fail() { echo "install_symbols: $*" >&2; exit 1; }
lib=$prefix/lib
inc=$prefix/include/onepath

# Functions declared (not static) in the given installed headers, per gcc -aux-info.
declared() { # out, headers...
    local out=$1
    shift
    : >"$work/decl.c"
    for h in "$@"; do echo "#include \"$h\"" >>"$work/decl.c"; done
    # -aux-info lists every function declared in the translation unit, each line headed
    # by the file and line it comes from; keep those of the headers asked for.
    "$cc" -std=c11 -fsyntax-only -I"$prefix/include" -aux-info "$work/aux.txt" "$work/decl.c"
    printf '/* %s:\n' "$@" >"$work/from.txt"
    grep -F -f "$work/from.txt" "$work/aux.txt" | grep -v ' static ' |
        sed -E 's/^\/\*[^*]*\*\/ *//; s/^[^(]*[^A-Za-z0-9_](op_[A-Za-z0-9_]*) \(.*$/\1/' |
        sort -u >"$out"
}

check_lib() { # soname, node, declared-list
    local so=$1 node=$2 want=$3 name=${1%.so.*}
    [ "$(readlink "$lib/$name.so")" = "$so" ] || fail "$name.so does not point to $so"
    [ "$(readlink "$lib/$so")" = "$name.so.$version" ] || fail "$so does not point to $name.so.$version"
    [ -f "$lib/$name.so.$version" ] && [ -f "$lib/$name.a" ] || fail "$name.so.$version or $name.a missing"
    readelf -d "$lib/$so" | grep -qF "Library soname: [$so]" || fail "$so: wrong soname"
    nm -D --defined-only --without-symbol-versions "$lib/$so" >"$work/$name.nm"
    # Exported: every defined dynamic symbol but the version node itself.
    awk -v node="$node" '!($2 == "A" && $3 == node)' "$work/$name.nm" >"$work/$name.exp"
    awk '{print $3}' "$work/$name.exp" | sort -u >"$work/$name.names"
    local bad
    bad=$(awk '$2 != "T" || $3 !~ /^op_/ || $3 ~ /^op__/' "$work/$name.exp")
    [ -z "$bad" ] || fail "$so exports symbols that are not public functions:"$'\n'"$bad"
    local extra missing
    extra=$(comm -13 "$want" "$work/$name.names")
    missing=$(comm -23 "$want" "$work/$name.names")
    [ -z "$extra" ] || fail "$so exports functions no installed header declares:"$'\n'"$extra"
    [ -z "$missing" ] || fail "$so does not export declared functions:"$'\n'"$missing"
    nm -D --defined-only --with-symbol-versions "$lib/$so" | grep ' T ' | grep -v "@@$node\$" >"$work/$name.unversioned" || true
    [ ! -s "$work/$name.unversioned" ] || fail "$so: symbols outside version $node: $(cat "$work/$name.unversioned")"
    echo "$so: $(wc -l <"$work/$name.names") functions exported (version $node), all declared in the installed headers; $(wc -l <"$want") declared"
}

core_headers=()
client_headers=("$inc/client.h" "$inc/fleet.h") # libonepath-client's; the rest are libonepath's
for h in "$inc"/*.h; do
    case $(basename "$h") in client.h | fleet.h) ;; *) core_headers+=("$h") ;; esac
done
[ ${#core_headers[@]} -gt 10 ] || fail "only ${#core_headers[@]} headers in $inc"
declared "$work/core.decl" "${core_headers[@]}"
declared "$work/client.decl" "${client_headers[@]}"
[ -s "$work/core.decl" ] && [ -s "$work/client.decl" ] || fail "no declarations found"
check_lib "libonepath.so.$major" "ONEPATH_$major" "$work/core.decl"
check_lib "libonepath-client.so.$major" "ONEPATH_CLIENT_$major" "$work/client.decl"

# The internal headers are not installed, and neither are their functions exported.
for h in rpc.h mpscan.h; do [ ! -e "$inc/$h" ] || fail "internal header $h is installed"; done
nm -D "$lib/libonepath-client.so.$major" | grep -q ' op_rpc_' && fail "op_rpc_* exported"
# libonepath depends on nothing but libc and libm; the client on libonepath and nng (the
# sanitizer runtimes of an -DOP_SANITIZE=ON build aside).
needed=$(readelf -d "$lib/libonepath.so.$major" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' |
         grep -Ev '^lib(asan|ubsan|lsan)\.so' | sort | paste -sd' ')
[ "$needed" = "libc.so.6 libm.so.6" ] || fail "libonepath.so needs $needed"
needed=$(readelf -d "$lib/libonepath-client.so.$major" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | sort | paste -sd' ')
for n in libonepath.so.$major libnng.so.1; do
    grep -qw "$n" <<<"$needed" || fail "libonepath-client.so needs $needed, not $n"
done
echo "install_symbols: all passed"
