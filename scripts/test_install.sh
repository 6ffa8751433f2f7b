#!/usr/bin/env bash
# Install and CPU-only deployment tests over an already-built tree (default:
# build/, the `default` preset):
#  1. `cmake --install` into a temporary prefix;
#  2. a separate CMake project (tests/install/consumer) finds it with
#     find_package(tops), builds and runs;
#  3. the same program built with pkg-config flags only, and the C demo
#     (examples/demo.c) built the same way, run;
#  4. CPU-only deployment: a copy of the install without libtops_cuda.so, run
#     with LD_LIBRARY_PATH holding only that copy (no CUDA directories) and
#     with TOPS_CUDA_PLUGIN pointing at a missing file: `ldd libtops.so` must
#     name no CUDA library, CUDA must be reported unavailable with a reason,
#     and the built demo and the CPU test suite must pass.
# Usage: scripts/test_install.sh [build-dir]
# TOPS_INSTALL_TEST_FILTER: gtest filter for step 4's suite run (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build}
[[ -f $build/CMakeCache.txt ]] || { echo "test_install: $build is not a configured build tree" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/tops-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "test_install: FAIL: $*" >&2; exit 1; }

echo "-- install to $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libtops.so' -print -quit)")
[[ -n $libdir && -f $libdir/pkgconfig/tops.pc && -f $libdir/cmake/tops/topsConfig.cmake ]] ||
  fail "install lacks libtops.so, tops.pc or topsConfig.cmake"
[[ -f $prefix/include/tops/tops.h ]] || fail "install lacks include/tops/tops.h"

# LD_LIBRARY_PATH without CUDA directories, led by the given directory.
clean_ldpath() {
  local out=$1 d
  IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
  for d in "${dirs[@]}"; do
    [[ -z $d || ${d,,} == *cuda* || ${d,,} == *nvidia* ]] || out+=:$d
  done
  echo "$out"
}

echo "-- consumer via find_package(tops)"
cmake -S tests/install/consumer -B "$work/cmake-consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-consumer" >/dev/null
LD_LIBRARY_PATH=$(clean_ldpath "$libdir") "$work/cmake-consumer/consumer"

echo "-- consumer and demo via pkg-config"
export PKG_CONFIG_PATH=$libdir/pkgconfig
read -ra pc_cflags <<<"$(pkg-config --cflags tops)"
read -ra pc_libs <<<"$(pkg-config --libs tops)"
cc -std=c99 -O2 "${pc_cflags[@]}" tests/install/consumer/consumer.c -o "$work/pc-consumer" "${pc_libs[@]}" -lm
cc -std=c99 -O2 "${pc_cflags[@]}" examples/demo.c -o "$work/pc-demo" "${pc_libs[@]}" -lm
LD_LIBRARY_PATH=$(clean_ldpath "$libdir") "$work/pc-consumer"

echo "-- CPU-only deployment (no plugin, no CUDA on LD_LIBRARY_PATH)"
cpu=$work/cpu-only
cp -a "$prefix" "$cpu"
cpulib=${libdir/#$prefix/$cpu}
rm -f "$cpulib"/libtops_cuda.so*
cuda_deps=$(ldd "$cpulib/libtops.so" | grep -Ei 'cuda|cublas|nvrtc|nvidia' || true)
[[ -z $cuda_deps ]] || fail "libtops.so links CUDA libraries: $cuda_deps"
echo "ldd libtops.so: no CUDA library"
cpu_env=(env "LD_LIBRARY_PATH=$(clean_ldpath "$cpulib")")
"${cpu_env[@]}" "$work/pc-consumer" --expect-no-cuda
"${cpu_env[@]}" TOPS_CUDA_PLUGIN="$work/missing/libtops_cuda.so" "$work/pc-consumer" --expect-no-cuda
"${cpu_env[@]}" "$work/pc-demo"
if [[ -x $build/examples/tops_demo ]]; then
  "${cpu_env[@]}" TOPS_CUDA_PLUGIN="$work/missing/libtops_cuda.so" "$build/examples/tops_demo"
fi
if [[ -x $build/tests/tops_tests ]]; then
  # The test binary's RUNPATH names the build tree; LD_LIBRARY_PATH comes first,
  # so it loads the plugin-less copy (checked below through the reason text).
  "${cpu_env[@]}" TOPS_CUDA_PLUGIN="$work/missing/libtops_cuda.so" "$build/tests/tops_tests" \
    --gtest_brief=1 --gtest_filter="${TOPS_INSTALL_TEST_FILTER:-*}"
fi
echo "test_install: OK"
