#!/usr/bin/env bash
# Runs the Rust, Go and Python binding test suites (CPU backend) against a
# built libtops. Usage: scripts/test_bindings.sh [library-dir] (default: build,
# the default preset's tree). Installs what is missing: Debian's golang-go,
# numpy + pytest through pip (Debian's python3-numpy/python3-pytest where pip
# cannot install). cargo must already be installed (rustup): Debian 12's is
# older than the crate's minimum (Rust 1.77).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
lib=$(cd "${1:-build}" && pwd)
[[ -f $lib/libtops.so ]] || { echo "test_bindings: no libtops.so in $lib; build first" >&2; exit 1; }

# -- toolchains ---------------------------------------------------------------
command -v go >/dev/null || scripts/deps.sh golang-go
if ! python3 -c 'import numpy, pytest' 2>/dev/null; then
  command -v python3 >/dev/null || scripts/deps.sh python3
  python3 -m pip install --quiet numpy pytest 2>/dev/null || scripts/deps.sh python3-numpy python3-pytest
  python3 -c 'import numpy, pytest'
fi
if ! command -v cargo >/dev/null && [[ -x $HOME/.cargo/bin/cargo ]]; then
  export PATH=$HOME/.cargo/bin:$PATH
fi
if ! command -v cargo >/dev/null; then
  echo "test_bindings: cargo not found; install Rust >= 1.77 (https://rustup.rs) to test bindings/rust" >&2
  exit 1
fi

# -- Rust ---------------------------------------------------------------------
echo "== bindings/rust: cargo test"
(cd bindings/rust && TOPS_DIR=$lib LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  cargo test --offline --quiet)

# -- Go -----------------------------------------------------------------------
echo "== bindings/go: go test"
(cd bindings/go && GOFLAGS=-mod=mod GOPROXY=off CGO_ENABLED=1 \
  CGO_LDFLAGS="-L$lib -Wl,-rpath,$lib" go test -count=1 ./...)

# -- Python -------------------------------------------------------------------
echo "== bindings/python: pytest"
# exit status 5 (nothing collected) fails the step like any other non-zero status
(cd bindings/python && TOPS_LIB=$lib/libtops.so python3 -m pytest -q -p no:cacheprovider -rs tests)
echo "== bindings: all passed"
