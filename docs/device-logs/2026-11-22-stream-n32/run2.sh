#!/usr/bin/env bash
# Second device call of this step ($1 = the commit): build + gpu tests, then the new heuristic
# (the stream kernel up to 20 rows per expert whatever the expert count) against stream_n32k128 and
# sm90_m64n128k128 forced, at 16-24 rows per expert; then per-stage times at two prefill points.
set -uo pipefail
COMMIT=$1
TARGETS="moekit test_moe_cuda test_decode_layer_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
COMMIT=$COMMIT OUT=$OUT TARGETS="$TARGETS" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/env.txt" "$OUT/ctest-cpu.txt" "$OUT/build.txt"
grep -E "tests passed|Failed|FAILED|\*\*\*" "$OUT/ctest-gpu.txt" | head -20
B=build/device/bin/moekit
run() {  # label, then bench arguments
  local label=$1
  shift
  rm -f /tmp/x.csv
  $B bench --backend cuda --quant none --no-baseline --refcheck --csv /tmp/x.csv "$@" > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/$label,/"
}
N32="gemm1.tile=stream_n32k128;gemm2.tile=stream_n32k128"
S90="gemm1.tile=sm90_m64n128k128;gemm2.tile=sm90_m64n128k128"
{
  echo "label,preset,T,method,kind,median_us,spread,experts_hit,pct_floor,refcheck"
  for c in heuristic n32 s90; do
    ch=""; [ $c = n32 ] && ch=$N32; [ $c = s90 ] && ch=$S90
    run $c --sets 2 --reps 5 --preset mixtral-8x7b --tokens 64,80,96 ${ch:+--choice "$ch"}
    run $c --sets 2 --reps 5 --preset qwen3-30b-a3b --tokens 256,320,384 ${ch:+--choice "$ch"}
    run $c --sets 2 --reps 5 --preset gpt-oss-120b --tokens 512,640,768 ${ch:+--choice "$ch"}
    run $c --sets 2 --reps 5 --preset deepseek-v3 --tokens 512,640 ${ch:+--choice "$ch"}
  done
  run stages --sets 1 --reps 3 --preset qwen3-30b-a3b,gpt-oss-120b --tokens 4096 --stages
  run stages --sets 1 --reps 3 --preset mixtral-8x7b,deepseek-v3 --tokens 16384 --stages
  run stages --sets 1 --reps 3 --preset mixtral-8x7b --tokens 64 --stages
} > "$OUT/bench.txt" 2>&1
cat "$OUT/bench.txt"
