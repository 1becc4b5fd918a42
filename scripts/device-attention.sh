#!/usr/bin/env bash
# One call on the GPU machine for shared-context attention: build what it needs and run its tests
# (scripts/device-check.sh: the gpu label, and the attention cpu tests), then the benchmark of
# docs/benchmarks.md, text and JSON, everything under $OUT. Carry .deps and third_party/cutlass-4.2.0
# as for device-check.sh.
#   ARCHS        CUDA archs (default: 90a, the H200's; half the compile time of "90a;80")
#   BENCH_ARGS   arguments of `moekit bench attention` (default: the benchmark of docs/benchmarks.md)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/.device-out}"
mkdir -p "$OUT"

export ARCHS="${ARCHS:-90a}"
# ctest -R is case-sensitive: gtest names are Attention*, the CLI tests cli.bench_attention*.
TARGETS="moekit_cli test_attention_cuda test_attention_reference" CPU_TESTS="Attention|attention" \
  scripts/device-check.sh || exit $?

BENCH_ARGS="${BENCH_ARGS:---batch 1024 --q-heads 4 --kv-heads 4 --head-dim 32 --ctx 512,4096,16384 --buf 32 --dtype bf16 --iters 50}"
# shellcheck disable=SC2086
build/device/bin/moekit bench attention $BENCH_ARGS 2>&1 | tee "$OUT/bench-attention.txt"
# shellcheck disable=SC2086
build/device/bin/moekit bench attention $BENCH_ARGS --json > "$OUT/bench-attention.json" 2> "$OUT/bench-attention-json.err"
# The CUDA-core engine on the same shapes, for comparison with the tensor-core one.
# shellcheck disable=SC2086
build/device/bin/moekit bench attention $BENCH_ARGS --backend cuda --engine simt 2>&1 | tail -8 | tee "$OUT/bench-attention-simt.txt"
