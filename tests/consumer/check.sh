#!/usr/bin/env bash
# check.sh BUILD_DIR: install the library built in BUILD_DIR into a temporary prefix, then
# build and run tests/consumer/project/main.c against that installed copy four ways:
#   1. CMake, find_package(tenlane), tenlane::tenlane         (shared)
#   2. CMake, find_package(tenlane), tenlane::tenlane_static  (static)
#   3. cc $(pkg-config --cflags --libs tenlane)                (shared)
#   4. cc $(pkg-config --cflags --static --libs tenlane)       (static; against a copy of the
#      prefix that holds only the static library, as a static-only install would)
#   5. the installed libtenlane.a defines no global name but tl_* (nm), and a static consumer
#      that brings its own BLAS (project/own_blas.c, archived and linked after tenlane) gets
#      its own dgemm_, not one from inside tenlane
# Each build must link the kind of library it asked for (checked with readelf) and print
# "consumer: TL_E_BUSY". The compiler and any sanitizer of BUILD_DIR are reused, so the
# check also works on the ASan and TSan builds. Exit 0 only if all four pass.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1/CMakeCache.txt" ]; then
  echo "usage: $0 BUILD_DIR (a configured and built tenlane build folder)" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
project_dir="$here/project"
expected="consumer: TL_E_BUSY"

cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt" | head -n1; }
cc=$(cache_value CMAKE_C_COMPILER)
sanitize=$(cache_value TL_SANITIZE)
san_flags=""
case "$sanitize" in
  "") ;;
  address) san_flags="-fsanitize=address,undefined" ;;
  thread) san_flags="-fsanitize=thread" ;;
  *) echo "check.sh: unknown TL_SANITIZE '$sanitize' in $build_dir" >&2; exit 2 ;;
esac
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

work=$(mktemp -d "${TMPDIR:-/tmp}/tenlane-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

step() { printf '\n== %s\n' "$*"; }
fail() { echo "check.sh: FAIL: $*" >&2; exit 1; }

# needs_tenlane_so BINARY: exit 0 when BINARY has libtenlane.so.* among its DT_NEEDED.
needs_tenlane_so() { readelf -d "$1" | grep -q 'NEEDED.*\[libtenlane\.so'; }

# run_and_compare NAME BINARY [env...]: run the consumer and compare its output.
run_and_compare() {
  local name=$1 binary=$2
  shift 2
  local output
  output=$(env "$@" "$binary") || fail "$name: the consumer exited with status $?"
  [ "$output" = "$expected" ] || fail "$name: printed '$output', expected '$expected'"
  echo "$name: ok ($output)"
}

step "install $build_dir (component tenlane: the library, headers, .pc, CMake package) into $prefix"
cmake --install "$build_dir" --prefix "$prefix" --component tenlane >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "cmake --install failed"; }
libdir=$(dirname "$(find "$prefix" -name 'libtenlane.a' -print -quit)")
[ -f "$libdir/libtenlane.a" ] || fail "no libtenlane.a installed under $prefix"
ls "$libdir"/libtenlane.so.* >/dev/null 2>&1 || fail "no libtenlane.so.* installed in $libdir"
pcdir="$libdir/pkgconfig"
[ -f "$pcdir/tenlane.pc" ] || fail "no tenlane.pc installed in $pcdir"
[ -f "$libdir/cmake/tenlane/tenlaneConfig.cmake" ] || fail "no tenlaneConfig.cmake installed"

for kind in shared static; do
  step "CMake find_package, $kind"
  cmake -S "$project_dir" -B "$work/cmake-$kind" "${generator[@]}" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" -DTENLANE_LINK="$kind" \
    -DCMAKE_C_FLAGS="$san_flags" -DCMAKE_EXE_LINKER_FLAGS="$san_flags" >"$work/cmake-$kind.log" 2>&1 ||
    { cat "$work/cmake-$kind.log"; fail "CMake $kind: configure failed"; }
  cmake --build "$work/cmake-$kind" >>"$work/cmake-$kind.log" 2>&1 ||
    { cat "$work/cmake-$kind.log"; fail "CMake $kind: build failed"; }
  binary="$work/cmake-$kind/consumer"
  if [ "$kind" = shared ]; then
    needs_tenlane_so "$binary" || fail "CMake shared: the consumer does not load libtenlane.so"
  else
    ! needs_tenlane_so "$binary" || fail "CMake static: the consumer loads libtenlane.so"
  fi
  run_and_compare "CMake $kind" "$binary"
done

step "pkg-config --libs (shared)"
export PKG_CONFIG_PATH="$pcdir"
pc_flags=$(pkg-config --cflags --libs tenlane)
echo "flags: $pc_flags"
# shellcheck disable=SC2086 # the flags are words on purpose
"$cc" $san_flags -std=c11 "$project_dir/main.c" -o "$work/pc-shared" $pc_flags
needs_tenlane_so "$work/pc-shared" || fail "pkg-config shared: the consumer does not load libtenlane.so"
run_and_compare "pkg-config shared" "$work/pc-shared" LD_LIBRARY_PATH="$libdir"

step "pkg-config --static --libs (static-only copy of the prefix)"
static_prefix="$work/static-prefix"
cp -a "$prefix" "$static_prefix"
static_libdir="$static_prefix/${libdir#"$prefix"/}"
rm -f "$static_libdir"/libtenlane.so*
export PKG_CONFIG_PATH="$static_libdir/pkgconfig"
pc_flags=$(pkg-config --cflags --static --libs tenlane)
echo "flags: $pc_flags"
case " $pc_flags " in
  *" -L$static_libdir "* | *" -L$static_libdir/ "* | *"$static_prefix"*) ;;
  *) fail "pkg-config static: the flags do not point into the copied prefix (is the .pc relocatable?)" ;;
esac
# shellcheck disable=SC2086
"$cc" $san_flags -std=c11 "$project_dir/main.c" -o "$work/pc-static" $pc_flags
! needs_tenlane_so "$work/pc-static" || fail "pkg-config static: the consumer loads libtenlane.so"
run_and_compare "pkg-config static" "$work/pc-static"

step "libtenlane.a defines only tl_ names"
leaked=$(nm -g --defined-only "$libdir/libtenlane.a" | awk 'NF >= 3 && $3 !~ /^tl_[a-z]/ {print $3}')
[ -z "$leaked" ] || fail "libtenlane.a defines global names other than tl_*: $(echo "$leaked" | head -20 | tr '\n' ' ')"
echo "libtenlane.a: $(nm -g --defined-only "$libdir/libtenlane.a" | awk 'NF >= 3' | wc -l) global names, all tl_*"

step "a static consumer with its own BLAS calls its own dgemm_"
"$cc" $san_flags -std=c11 -c "$project_dir/own_blas.c" -o "$work/own_blas.o"
ar rcs "$work/libownblas.a" "$work/own_blas.o"
# shellcheck disable=SC2086
"$cc" $san_flags -std=c11 -I"$project_dir" "$project_dir/own_blas_main.c" -o "$work/own-blas" \
  $pc_flags "$work/libownblas.a"
output=$("$work/own-blas") || fail "own BLAS: the consumer did not reach its own dgemm_: $output"
echo "$output"

step "all consumer builds passed"
