#!/usr/bin/env bash
# Twelfth device call (the final code) ($1 = the commit): build everything, ctest -L gpu, then T=1 on the four presets:
# the default plan (the one-token kernel) against the stages (whole_layer off), GPT-OSS with biases,
# the default plan again, then T = 8 and 64.
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
  $B bench --backend cuda --quant none --no-baseline --refcheck --csv /tmp/x.csv "$@" > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/$label,/"
}
{
  echo "label,preset,T,method,kind,median_us,spread,experts_hit,pct_floor,refcheck"
  run token --sets 2 --reps 5 --tokens 1
  run stages --sets 2 --reps 5 --tokens 1 --fusion whole_layer=off
  run token-biases --sets 2 --reps 5 --tokens 1 --preset gpt-oss-120b --biases
  run stages-biases --sets 2 --reps 5 --tokens 1 --preset gpt-oss-120b --biases --fusion whole_layer=off
  run token-again --sets 2 --reps 5 --tokens 1
  run batch --sets 2 --reps 5 --tokens 8,64
} > "$OUT/bench.txt" 2>&1
grep ",layer," "$OUT/bench.txt"
