#!/usr/bin/env bash
# ABI guard: compares libtops.so from a build tree with the committed baseline
# abi/libtops.so.<major>.abi (libabigail's abidw XML restricted to the public
# header dir include/tops) using abidiff.
#   - an incompatible change (abidiff status bit 8: a removed function, a
#     changed symbol) fails: bump TOPS_VERSION_MAJOR (and the SONAME);
#   - a changed function or type (bit 4 with a nonzero "Changed" count, e.g. a
#     field added to a descriptor) fails too: either bump the major version, or,
#     if only fields were appended to a struct_size-versioned descriptor, bump
#     the minor version and refresh the baseline;
#   - additions only (new functions, bit 4 with nothing removed or changed) pass.
# The library must carry DWARF (a RelWithDebInfo or Debug build, e.g. the asan
# preset's build-asan/).
# Usage: scripts/check_abi.sh [build-dir]            check (default: build-asan)
#        scripts/check_abi.sh --update [build-dir]   rewrite the baseline from that build
set -euo pipefail
cd "$(dirname "$0")/.."
update=0
if [[ ${1:-} == --update ]]; then update=1; shift; fi
build=${1:-build-asan}

command -v abidiff >/dev/null || scripts/deps.sh abigail-tools
lib=$build/libtops.so
[[ -f $lib ]] || { echo "check_abi: $lib not found (build the library first)" >&2; exit 1; }
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
  echo "check_abi: $lib has no debug info; use a RelWithDebInfo/Debug build" >&2
  exit 1
fi
major=$(sed -n 's/^#define TOPS_VERSION_MAJOR \([0-9]*\).*/\1/p' include/tops/tops.h)
baseline=abi/libtops.so.$major.abi

if [[ $update == 1 ]]; then
  abidw --headers-dir include/tops --no-corpus-path --out-file "$baseline" "$lib"
  echo "check_abi: wrote $baseline from $lib"
  exit 0
fi
if [[ ! -f $baseline ]]; then
  echo "check_abi: no baseline $baseline for major version $major." >&2
  echo "  After a major bump, create it: scripts/check_abi.sh --update $build" >&2
  exit 1
fi

set +e
report=$(abidiff --headers-dir1 include/tops --headers-dir2 include/tops "$baseline" "$lib")
status=$?
set -e
echo "$report"
if (( status & 3 )); then
  echo "check_abi: abidiff failed to run (status $status)" >&2
  exit 1
fi
if (( status & 8 )); then
  echo "check_abi: FAIL: incompatible ABI change against $baseline." >&2
  echo "  This breaks existing binaries: bump TOPS_VERSION_MAJOR (SONAME) and refresh the baseline," >&2
  echo "  or restore the old declarations." >&2
  exit 1
fi
if (( status & 4 )); then
  if grep -Eq '(^|[^0-9])[1-9][0-9]* Changed|[1-9][0-9]* Removed' <<<"$report"; then
    echo "check_abi: FAIL: a public function or type changed against $baseline." >&2
    echo "  If old binaries can break, bump TOPS_VERSION_MAJOR. If only fields were appended to a" >&2
    echo "  struct_size-versioned descriptor, bump TOPS_VERSION_MINOR and refresh the baseline:" >&2
    echo "  scripts/check_abi.sh --update <RelWithDebInfo build dir>" >&2
    exit 1
  fi
  echo "check_abi: OK (additions only; refresh the baseline when releasing)"
  exit 0
fi
echo "check_abi: OK (no ABI change against $baseline)"
