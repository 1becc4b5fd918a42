#!/usr/bin/env bash
# The device call of this step (run from the repository root on the GPU machine, $1 = the commit):
# build + gpu tests, then the layer at the token counts where the heuristic takes stream_n32k128
# (Mixtral T=64), the same tile forced where the heuristic takes the sm_90a kernel (Qwen3, GPT-OSS,
# DeepSeek-V3 at 16-32 rows per expert), and a per-stage breakdown at two prefill points.
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
  $B bench --backend cuda --quant none --sets 2 --reps 5 --no-baseline --refcheck --csv /tmp/x.csv "$@" > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/$label,/"
}
N32="gemm1.tile=stream_n32k128;gemm2.tile=stream_n32k128"
{
  echo "label,preset,T,method,kind,median_us,spread,experts_hit,pct_floor,refcheck"
  run heuristic --tokens 16,32,64,128,256
  run n32 --preset qwen3-30b-a3b --tokens 128,256 --choice "$N32"
  run n32 --preset gpt-oss-120b --tokens 256,512 --choice "$N32"
  run n32 --preset deepseek-v3 --tokens 128,256 --choice "$N32"
  run stages --preset qwen3-30b-a3b,gpt-oss-120b --tokens 4096 --stages --sets 1 --reps 3
  run stages --preset mixtral-8x7b,deepseek-v3 --tokens 16384 --stages --sets 1 --reps 3
} > "$OUT/bench.txt" 2>&1
cat "$OUT/bench.txt"
