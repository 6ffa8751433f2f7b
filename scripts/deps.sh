#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages tops needs to build and test, if they
# are missing. Usage: scripts/deps.sh [extra-package ...]
# Without root (and without passwordless sudo) it prints the exact command to
# run instead and fails.
set -euo pipefail

packages=(cmake ninja-build g++ pkg-config libxsimd-dev libgtest-dev "$@")
if [[ "${TOPS_BENCH_DEPS:-1}" == 1 ]]; then
  # optional: tops-bench compares with oneDNN when present; Debian's oneDNN
  # CMake config requires the OpenCL development files (a Recommends of it).
  packages+=(libdnnl-dev ocl-icd-opencl-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if ! command -v apt-get >/dev/null; then
  echo "tops needs these packages (Debian names): ${missing[*]}; install them with your package manager." >&2
  exit 1
fi
if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo)
else
  echo "tops needs: ${missing[*]}" >&2
  echo "run: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
