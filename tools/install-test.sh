#!/usr/bin/env bash
# The install test: installs Sluice into a temporary prefix, then builds and
# runs, from a directory outside the source tree and with nothing of it on any
# path, what an embedding host builds:
#   - examples/embed: a C++ trainer, find_package(sluice) + sluice::sluice
#     (CMAKE_PREFIX_PATH only);
#   - examples/embed/c/app.c and poll.c: C99 programs built with gcc and
#     $(pkg-config --cflags --libs sluice) alone (PKG_CONFIG_PATH only).
# It checks that each read every batch of examples/quickstart.lua (exact
# counts), that they load libsluice from the prefix, and what libsluice
# exports (the C API and namespace sluice, nothing else).
#
#   tools/install-test.sh [BUILD_DIR]
#
# BUILD_DIR: an existing build to install from (CTest passes its own);
# default build/ if configured, else build-install/ configured here.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}
if [ -z "$build" ]; then
  if [ -f "$src/build/CMakeCache.txt" ]; then build=$src/build; else build=$src/build-install; fi
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "install-test: FAIL: $*" >&2; exit 1; }

echo "== install-test: build ($build) and install into $prefix"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_BUILD_TESTS=OFF \
    -DSLUICE_BUILD_CUDA=OFF
fi
cmake --build "$build" --target sluice_shared sluice
cmake --install "$build" --prefix "$prefix" > "$work/install.log"

# The layout.
for f in include/sluice/sluice.h include/sluice/export.h include/sluice/loader.h include/sluice/run_settings.h \
         include/sluice/io/tfrecord.h include/sluice/ops/decode.h bin/sluice lib/pkgconfig/sluice.pc \
         lib/cmake/sluice/sluice-config.cmake lib/cmake/sluice/sluice-config-version.cmake; do
  [ -e "$prefix/$f" ] || fail "$f is not installed"
done
lib=$(find "$prefix" -name 'libsluice.so.*.*.*' | head -1)
[ -n "$lib" ] || fail "no libsluice.so.X.Y.Z under $prefix"
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
echo "libsluice: $(basename "$lib"), SONAME $soname"
[[ "$soname" == libsluice.so.* ]] || fail "SONAME is '$soname'"

"$prefix/bin/sluice" --version | grep -q "$(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/sluice.pc")" ||
  fail "the installed sluice command does not run or is not the package's version"

# What libsluice exports: the C API and namespace sluice only.
nm -D --defined-only "$lib" | awk '{print $3}' > "$work/exports"
c++filt < "$work/exports" | grep -Ev '^(sluice_|((typeinfo|typeinfo name|vtable|VTT) for |(non-)?virtual thunk to )?sluice::)' \
  > "$work/foreign" || true
[ ! -s "$work/foreign" ] || fail "libsluice exports what is not Sluice's: $(head -5 "$work/foreign" | tr '\n' ' ')"
for f in sluice_loader_open_script sluice_loader_next sluice_loader_try_next sluice_loader_ready_fd \
         sluice_batch_field_dlpack sluice_loader_state_json sluice_loader_stats sluice_last_error sluice_free; do
  grep -qx "$f" "$work/exports" || fail "libsluice does not export $f"
done
echo "libsluice exports $(wc -l < "$work/exports") symbols, all Sluice's"

# Out of tree: copies of the examples and the pipeline, nothing else.
cp -r "$src/examples/embed" "$work/embed"
cp "$src/examples/quickstart.lua" "$work/quickstart.lua"
cd "$work"

echo "== install-test: C++ trainer, find_package(sluice)"
cmake -S embed -B embed-build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" > cmake.log ||
  { cat cmake.log; fail "configuring examples/embed"; }
cmake --build embed-build

# The package's name as users spell it either way (its files are sluice-config*.cmake).
mkdir -p capital
printf 'cmake_minimum_required(VERSION 3.16)\nproject(capital CXX)\nfind_package(Sluice 0.1 CONFIG REQUIRED)\n' \
  > capital/CMakeLists.txt
cmake -S capital -B capital-build -DCMAKE_PREFIX_PATH="$prefix" > cmake.log ||
  { cat cmake.log; fail "find_package(Sluice), capital S"; }

echo "== install-test: C programs, gcc + pkg-config"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
flags=$(pkg-config --cflags --libs sluice)
rpath=-Wl,-rpath,$(pkg-config --variable=libdir sluice)
echo "pkg-config --cflags --libs sluice: $flags"
gcc -std=c99 -Wall -Wextra -Werror -pedantic embed/c/app.c $flags "$rpath" -o app
gcc -std=c99 -Wall -Wextra -Werror -pedantic embed/c/poll.c $flags "$rpath" -o poll

for exe in embed-build/embed_trainer app poll; do
  loaded=$(ldd "$exe" | awk '/libsluice/ {print $3}')
  [ -n "$loaded" ] || fail "$exe does not load libsluice"
  [ "$(realpath "$loaded")" = "$(realpath "$lib")" ] || fail "$exe loads $loaded, not $lib"
done
echo "every program loads $lib"

# quickstart.lua: 20000 samples, batch_size 64, drop_last: 312 batches of 64.
run() {
  echo "\$ $*"
  "$@" | tee -a out.log
}
run embed-build/embed_trainer quickstart.lua workers=2
run ./app quickstart.lua workers=2
run ./poll quickstart.lua workers=2
grep -qx 'cpp: batches=312 samples=19968 bytes=245526528 skipped=0' out.log || fail "the C++ trainer did not read every batch"
grep -q '^c: batches=312 samples=19968 tensors=624 skipped=0 ' out.log || fail "app.c did not read every batch"
grep -q '^poll: batches=312 samples=19968 ' out.log || fail "poll.c did not read every batch"
if ./app quickstart.lua wrokers=2 2> err.log; then fail "an unknown setting was accepted"; fi
grep -q "unknown setting 'wrokers'" err.log || fail "unknown setting: $(cat err.log)"
echo "install-test: OK"
