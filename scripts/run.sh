#!/usr/bin/env bash
# The main command: installs what is missing, builds, and runs moekit on its default workload.
# The default workload: one Qwen3-30B-A3B MoE layer (E=128, K=8, H=2048, I=768) at T=32 tokens with
# random weights, on the GPU when there is one (and the build has the CUDA backend), else on the CPU
# backend, checked against the CPU reference. Arguments replace the default workload, e.g.
#   scripts/run.sh --preset deepseek-v3 --local-experts 16 --tokens 8 --refcheck
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/env.sh
scripts/bootstrap.sh
cmake --preset "$MOEKIT_PRESET" >/dev/null
cmake --build --preset "$MOEKIT_PRESET"
"build/$MOEKIT_PRESET/bin/moekit" info
if [ $# -eq 0 ]; then
  set -- --preset qwen3-30b-a3b --tokens 32 --refcheck
fi
exec "build/$MOEKIT_PRESET/bin/moekit" run "$@"
