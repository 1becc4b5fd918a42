#!/usr/bin/env bash
# Third device call of this step ($1 = the commit): build + gpu tests (the sm_90a kernel with
# biases among them); GPT-OSS with biases on the sm_90a kernel (now the heuristic's) against the
# mma.sync tiles it took before; DeepSeek-V3 at T=128, 256 (the halved expert estimate); then the
# full table (bench-table.txt/.csv).
set -uo pipefail
COMMIT=$1
TARGETS="moekit test_moe_cuda test_decode_layer_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
COMMIT=$COMMIT OUT=$OUT TARGETS="$TARGETS" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/env.txt" "$OUT/ctest-cpu.txt" "$OUT/build.txt" "$OUT/info.txt"
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
  run biases-heuristic --sets 2 --reps 5 --preset gpt-oss-120b --biases --tokens 1024,4096,16384
  run biases-m64n128 --sets 2 --reps 5 --preset gpt-oss-120b --biases --tokens 1024 --choice "gemm1.tile=m64n128k64;gemm2.tile=m64n128k64"
  run biases-m128n256 --sets 2 --reps 5 --preset gpt-oss-120b --biases --tokens 4096,16384 --choice "gemm1.tile=m128n256k64;gemm2.tile=m128n256k64"
  run heuristic --sets 2 --reps 5 --preset deepseek-v3 --tokens 128,256
} > "$OUT/bench.txt" 2>&1
cat "$OUT/bench.txt"
$B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck --csv "$OUT/bench-table.csv" > "$OUT/bench-table.txt" 2>&1
grep -v "^#" "$OUT/bench-table.csv" | grep ",layer," | cut -d, -f1,3,7,12,14,20,23
