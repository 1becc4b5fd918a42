#!/usr/bin/env bash
# The H200 benchmark of the CUDA MoE backend: `moekit bench` on the given presets (default: the four
# public ones, bf16) at T in {1, 8, 64, 256, 1024, 4096, 16384}, per-stage timing, the cuBLAS
# baseline and --refcheck; CSV, JSON, SVG and the terminal table under $OUT. Needs a build from
# scripts/device-check.sh (build/device).
#   PRESETS  comma-separated (default: mixtral-8x7b,qwen3-30b-a3b,deepseek-v3,gpt-oss-120b)
#   TOKENS   comma-separated (default: 1,8,64,256,1024,4096,16384)
#   EXTRA    more options for moekit bench
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/.device-out}"
TAG="${TAG:-bench}"
mkdir -p "$OUT"
# shellcheck disable=SC2086
build/device/bin/moekit bench --backend cuda --preset "${PRESETS:-mixtral-8x7b,qwen3-30b-a3b,deepseek-v3,gpt-oss-120b}" --quant none \
  --tokens "${TOKENS:-1,8,64,256,1024,4096,16384}" --stages --refcheck \
  --csv "$OUT/$TAG.csv" --json "$OUT/$TAG.json" --plot "$OUT/$TAG.svg" ${EXTRA:-} 2>"$OUT/$TAG.stderr.txt" | tee "$OUT/$TAG.txt"
