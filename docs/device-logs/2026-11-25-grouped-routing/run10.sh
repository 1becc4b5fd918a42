#!/usr/bin/env bash
# Tenth device call ($1 = the commit): build every gpu test and moekit, ctest -L gpu, then
# DeepSeek-V3 T=1 with the grouped routing's selections as ranks by counting (rank-count.patch) and
# as rounds of warp reductions (the patch reversed, decode_token.cu rebuilt), three times in turns.
set -uo pipefail
COMMIT=$1
HERE=docs/device-logs/2026-11-25-grouped-routing
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
rebuild() { cmake --build build/device -j 16 --target moekit > /tmp/rebuild.txt 2>&1 || tail -20 /tmp/rebuild.txt; }
flip() { (patch "$@" -p1 < $HERE/rank-count.patch || git apply "$@" $HERE/rank-count.patch) > /dev/null && rebuild; }
{
  echo "label,preset,T,method,kind,median_us,spread,experts_hit,pct_floor,refcheck"
  run counted --refcheck --sets 2 --reps 5 --tokens 1
  for i in 1 2 3; do
    flip -R; run rounds-ds --preset deepseek-v3 --refcheck --sets 2 --reps 5 --tokens 1
    flip; run counted-ds --preset deepseek-v3 --refcheck --sets 2 --reps 5 --tokens 1
  done
} > "$OUT/bench.txt" 2>&1
grep -E ",layer," "$OUT/bench.txt"
