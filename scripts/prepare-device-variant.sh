#!/usr/bin/env bash
# Builds moekit with a patch applied (a trace, an experiment never committed) and packs that one
# binary, stripped and xz'd, into build/carry/moekit-NAME.xz for a device call beside the prebuilt
# pack (scripts/prepare-device-prebuilt.sh), then takes the patch back out and rebuilds moekit, so
# the working tree and the build are main's again. With no patch, it packs main's moekit as it is.
# Session 34 did this by hand three times (docs/device-logs/2026-12-07-trace).
#
#   scripts/prepare-device-variant.sh NAME [PATCH] [BUILD_DIR]
#   # in the call:  xz -dc build/carry/moekit-NAME.xz > /tmp/moekit-NAME && chmod +x /tmp/moekit-NAME
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?usage: scripts/prepare-device-variant.sh NAME [PATCH] [BUILD_DIR]}
PATCH=${2:-}
BUILD=${3:-build/ci}
source scripts/env.sh
if [[ -n $PATCH ]]; then
  # Only clean files can be restored exactly: refuse to mix the patch with local edits to any file
  # it touches (tests and docs too, not only src and include).
  mapfile -t touched < <(git apply --numstat "$PATCH" | cut -f3)
  if ! git diff --quiet HEAD -- "${touched[@]}"; then
    echo "files the patch touches have uncommitted changes: commit or stash them first" >&2
    git diff --name-only HEAD -- "${touched[@]}" >&2
    exit 1
  fi
  git apply --check "$PATCH"
  git apply "$PATCH"
  # Whatever happens next, the patch comes back out.
  trap 'git apply -R "$PATCH" && cmake --build "$BUILD" --target moekit > /dev/null' EXIT
fi
cmake --build "$BUILD" --target moekit | tail -n 1
mkdir -p build/carry
tmp=$(mktemp)
cp "$BUILD/bin/moekit" "$tmp"
strip --strip-unneeded "$tmp"
xz -T1 -c "$tmp" > "build/carry/moekit-$NAME.xz"
rm -f "$tmp"
echo "build/carry/moekit-$NAME.xz: moekit at $(git rev-parse --short HEAD)${PATCH:+ + $PATCH}, $(du -h "build/carry/moekit-$NAME.xz" | cut -f1)"
