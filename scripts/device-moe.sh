#!/usr/bin/env bash
# One GPU-machine call for the CUDA MoE backend: build (sm_90a), the gpu tests, then `moekit run` on
# the public presets in bf16 with --refcheck and a timing per token count. Logs under $OUT.
#   TOKENS  token counts for the timing sweep (default: 1 64 1024 16384)
#   ITERS   timed runs per point (default: 20)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/.device-out}"
mkdir -p "$OUT"
TARGETS="moekit_cli test_moe_cuda test_gpu_foundation test_attention_cuda" ARCHS="${ARCHS:-90a}" CPU_TESTS='^$' \
  ./scripts/device-check.sh || exit 1
MOEKIT=build/device/bin/moekit
{
  for preset in mixtral-8x7b qwen3-30b-a3b deepseek-v3 gpt-oss-120b; do
    "$MOEKIT" run --preset "$preset" --quant none --tokens 77 --backend cuda --refcheck --iters 3 2>&1 | grep -E "plan|refcheck|time|error" 
    for t in ${TOKENS:-1 64 1024 16384}; do
      echo "== $preset T=$t"
      "$MOEKIT" run --preset "$preset" --quant none --tokens "$t" --backend cuda --iters "${ITERS:-20}" 2>&1 | grep -E "steps|time|error"
    done
  done
} 2>&1 | tee "$OUT/moe-run.txt"
