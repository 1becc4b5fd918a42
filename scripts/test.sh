#!/usr/bin/env bash
# The test command: installs what is missing, configures, builds and runs every test.
# Tests labelled `gpu` report themselves skipped on a machine without a GPU.
# MOEKIT_PRESET picks the CMake preset (default: release; CI uses ci).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/env.sh
scripts/bootstrap.sh
cmake --preset "$MOEKIT_PRESET"
cmake --build --preset "$MOEKIT_PRESET"
ctest --preset "$MOEKIT_PRESET" --no-tests=error "$@"
