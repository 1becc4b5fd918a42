#!/usr/bin/env bash
# Rewrites the golden `moekit explain` plans (tests/cli/golden/) from a configured build directory,
# then restores the comparing tests. Review `git diff tests/cli/golden` before committing.
#
#   scripts/update-golden.sh [BUILD_DIR]   (default build/ci)
set -euo pipefail
BUILD=${1:-build/ci}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  echo "update-golden: $BUILD is not a configured build directory (cmake --preset ci first)" >&2
  exit 2
fi
cmake -S . -B "$BUILD" -DMOEKIT_UPDATE_GOLDEN=ON > /dev/null
trap 'cmake -S . -B "$BUILD" -DMOEKIT_UPDATE_GOLDEN=OFF > /dev/null' EXIT
cmake --build "$BUILD" --target moekit_cli
ctest --test-dir "$BUILD" -R '^cli\.golden\.' --output-on-failure
git --no-pager diff --stat -- tests/cli/golden
