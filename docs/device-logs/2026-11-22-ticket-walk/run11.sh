#!/usr/bin/env bash
# Eleventh device call (the landed code, $1 = the commit): build everything, ctest -L gpu, then T=1 on
# the four presets twice, the stages at T=1, GPT-OSS with biases, Qwen3 T=1 four more times, and
# T = 8, 64 (refcheck).
set -uo pipefail
COMMIT=$1
TARGETS="moekit test_moe_cuda test_decode_layer_cuda test_decode_token_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
COMMIT=$COMMIT OUT=$OUT TARGETS="$TARGETS" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/ctest-cpu.txt" "$OUT/info.txt"
grep -E "tests passed|Failed|FAILED|\*\*\*" "$OUT/ctest-gpu.txt" | head -20
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
  run token --refcheck --sets 2 --reps 5 --tokens 1
  run stages --refcheck --sets 2 --reps 5 --tokens 1 --fusion whole_layer=off
  run token-biases --refcheck --sets 2 --reps 5 --tokens 1 --preset gpt-oss-120b --biases
  run token-again --refcheck --sets 2 --reps 5 --tokens 1
  for i in 1 2 3 4; do run qwen3-$i --preset qwen3-30b-a3b --sets 2 --reps 5 --tokens 1; done
  run batch --refcheck --sets 2 --reps 5 --tokens 8,64
} > "$OUT/bench.txt" 2>&1
grep ",layer," "$OUT/bench.txt"
