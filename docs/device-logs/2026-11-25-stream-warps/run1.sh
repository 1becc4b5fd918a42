#!/usr/bin/env bash
# First device call ($1 = the commit): build, ctest -L gpu (variant 0, the landed layout), the stream
# tiles' layer tests under variants 1 and 2 (MOEKIT_STREAM_VARIANT), then the bench at T = 8, 64, 256
# on every preset, the three variants in turns.
set -uo pipefail
COMMIT=$1
TARGETS="moekit test_moe_cuda test_decode_layer_cuda test_decode_token_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
COMMIT=$COMMIT OUT=$OUT TARGETS="$TARGETS" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/ctest-cpu.txt" "$OUT/info.txt"
grep -E "tests passed|Failed|FAILED|\*\*\*" "$OUT/ctest-gpu.txt" | head -20
T=build/device/bin/test_moe_cuda
[ -x $T ] || T=$(find build/device -name test_moe_cuda -type f | head -1)
for v in 1 2; do
  MOEKIT_STREAM_VARIANT=$v $T --gtest_filter='MoeCuda.EveryGemmTileGivesTheSameLayer:MoeCuda.StreamTilesAtEveryKSplit:MoeCuda.DeterministicModeIsBitwiseStable' > "$OUT/variant$v-tests.txt" 2>&1
  echo "variant $v: $(grep -E 'PASSED|FAILED' "$OUT/variant$v-tests.txt" | tr '\n' ' ')"
done
B=build/device/bin/moekit
run() {  # label, then bench arguments
  local label=$1
  shift
  rm -f /tmp/x.csv
  $B bench --backend cuda --quant none --no-baseline "$@" --csv /tmp/x.csv > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/$label,/"
}
{
  echo "label,preset,T,method,kind,median_us,spread,experts_hit,pct_floor,refcheck"
  for v in 0 1 2; do SECONDS=0; MOEKIT_STREAM_VARIANT=$v run v$v --refcheck --sets 2 --reps 5 --tokens 8,64,256; echo "# v$v took ${SECONDS}s"; done
  for v in 0 2 1 0 2; do MOEKIT_STREAM_VARIANT=$v run v$v-mixtral --preset mixtral-8x7b --sets 2 --reps 5 --tokens 64; done
} > "$OUT/bench.txt" 2>&1
grep -E ",layer,|took" "$OUT/bench.txt"
