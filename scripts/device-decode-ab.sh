#!/usr/bin/env bash
# One call on the GPU machine for decode work: build and run the gpu tests (scripts/device-check.sh),
# then time the layer at small T with the stage pipeline and with the decode layer forced on, and the
# stages one by one at T=1. Everything lands in $OUT; bench.txt holds "mode,preset,T,us,%floor,refcheck"
# rows and the per-stage medians.
#   $1       the commit being measured (recorded in the logs)
#   TARGETS  build targets (default: moekit and every gpu test)
#   TOK      token counts (default: 1,2,4,8)
set -uo pipefail
COMMIT=$1 OUT=$OUT TARGETS="${TARGETS:-moekit test_moe_cuda test_decode_layer_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation}" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/env.txt" "$OUT/ctest-cpu.txt"  # at most 8 files come back
grep -E "tests passed|Failed|FAILED|\*\*\*" "$OUT/ctest-gpu.txt" | head -20
B=build/device/bin/moekit
run() {
  local label=$1
  shift
  $B bench --backend cuda --quant none --sets 2 --reps 5 --no-baseline --refcheck --csv /tmp/x.csv "$@" > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep ",layer," | cut -d, -f1,3,7,20,23 | sed "s/^/$label,/"
}
{
  run stages --tokens "${TOK:-1,2,4,8}"
  run whole --tokens "${TOK:-1,2,4,8}" --fusion whole_layer=on
  run stagesT1 --tokens 1 --stages
  grep -v "^#" /tmp/x.csv | cut -d, -f1,2,3,7 | head -40
} > "$OUT/bench.txt" 2>&1
cat "$OUT/bench.txt"
