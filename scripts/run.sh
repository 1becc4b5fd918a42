#!/usr/bin/env bash
# The main command: installs what is missing, builds, and runs moekit on its default workload.
# Until the MoE runner lands, that is `moekit info`: the build and the device it would run on.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/env.sh
scripts/bootstrap.sh
cmake --preset "$MOEKIT_PRESET" >/dev/null
cmake --build --preset "$MOEKIT_PRESET"
exec "build/$MOEKIT_PRESET/bin/moekit" info "$@"
