#!/usr/bin/env bash
# Installs what moekit needs on a fresh Debian machine, idempotently:
#   1. the Debian -dev packages (compiler, CMake, Ninja, GoogleTest, CLI11, nlohmann-json, fmt, dlpack),
#      only those missing;
#   2. the CUTLASS/CuTe headers, pinned to one version and checked against a SHA-256, into
#      third_party/cutlass-<version>/ (ignored by git). The headers come from the nvidia-cutlass wheel
#      on PyPI, which carries the C++ include/ tree under cutlass_library/source/.
# Re-runs reuse what is there and need no network. Set MOEKIT_SKIP_APT=1 to skip step 1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CUTLASS_VERSION="4.2.0"
CUTLASS_WHEEL="nvidia_cutlass-4.2.0.0-py3-none-any.whl"
CUTLASS_SHA256="f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6"
CUTLASS_DIR="$ROOT/third_party/cutlass-$CUTLASS_VERSION"
CACHE_DIR="$ROOT/third_party/.cache"

log() { printf 'bootstrap: %s\n' "$*" >&2; }

install_debian_packages() {
  local wanted=(build-essential cmake ninja-build git python3 python3-pip unzip
                libgtest-dev libcli11-dev nlohmann-json3-dev libfmt-dev libdlpack-dev)
  local missing=()
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "Debian packages: all present"
    return
  fi
  log "Debian packages to install: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { log "not root and no sudo: install ${missing[*]} yourself"; exit 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq || log "apt-get update failed; trying with the package lists already here"
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

fetch_cutlass() {
  if [ -f "$CUTLASS_DIR/.complete" ] && [ "$(cat "$CUTLASS_DIR/.complete")" = "$CUTLASS_SHA256" ]; then
    log "CUTLASS $CUTLASS_VERSION: present in $CUTLASS_DIR"
    return
  fi
  mkdir -p "$CACHE_DIR"
  local wheel="$CACHE_DIR/$CUTLASS_WHEEL"
  if [ ! -f "$wheel" ] || ! echo "$CUTLASS_SHA256  $wheel" | sha256sum -c --quiet - 2>/dev/null; then
    rm -f "$wheel"
    log "fetching $CUTLASS_WHEEL from PyPI (pip download nvidia-cutlass==$CUTLASS_VERSION.0)"
    if ! python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$CACHE_DIR" \
         "nvidia-cutlass==$CUTLASS_VERSION.0" >&2; then
      cat >&2 <<MSG
bootstrap: could not fetch the CUTLASS headers.
  tried: python3 -m pip download nvidia-cutlass==$CUTLASS_VERSION.0 (PyPI), into $CACHE_DIR
  fix one of:
    - put $CUTLASS_WHEEL (sha256 $CUTLASS_SHA256) into $CACHE_DIR and re-run;
    - configure with -DMOEKIT_CUTLASS_DIR=/path/to/cutlass (a checkout holding include/cutlass and include/cute);
    - configure with -DMOEKIT_CUDA=OFF for the CPU backend only.
MSG
      exit 1
    fi
  fi
  if ! echo "$CUTLASS_SHA256  $wheel" | sha256sum -c --quiet -; then
    log "checksum mismatch for $wheel (expected $CUTLASS_SHA256); removing it"
    rm -f "$wheel"
    exit 1
  fi
  local tmp
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' RETURN
  unzip -q "$wheel" 'cutlass_library/source/include/*' 'nvidia_cutlass-*.dist-info/licenses/LICENSE.txt' -d "$tmp"
  rm -rf "$CUTLASS_DIR"
  mkdir -p "$CUTLASS_DIR"
  mv "$tmp/cutlass_library/source/include" "$CUTLASS_DIR/include"
  cp "$tmp"/nvidia_cutlass-*.dist-info/licenses/LICENSE.txt "$CUTLASS_DIR/"
  echo "$CUTLASS_SHA256" > "$CUTLASS_DIR/.complete"
  log "CUTLASS $CUTLASS_VERSION headers in $CUTLASS_DIR"
}

if [ "${MOEKIT_SKIP_APT:-0}" != "1" ]; then install_debian_packages; fi
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  fetch_cutlass
else
  log "no nvcc: skipping CUTLASS (the build will be CPU-only)"
fi
