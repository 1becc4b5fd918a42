#!/usr/bin/env bash
# Fifth device call ($1 = the commit): build + gpu tests, then the points that run the sm_90a kernel
# (its rows now 16-bit), GPT-OSS with biases among them.
set -uo pipefail
COMMIT=$1
TARGETS="moekit test_moe_cuda test_decode_layer_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
COMMIT=$COMMIT OUT=$OUT TARGETS="$TARGETS" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/env.txt" "$OUT/ctest-cpu.txt" "$OUT/build.txt" "$OUT/info.txt"
grep -E "tests passed|Failed|FAILED|\*\*\*" "$OUT/ctest-gpu.txt" | head -20
B=build/device/bin/moekit
$B bench --backend cuda --quant none --tokens 1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck --csv "$OUT/bench.csv" > "$OUT/bench.txt" 2>&1
grep -v "^#" "$OUT/bench.csv" | grep ",layer," | cut -d, -f1,3,7,12,14,20,23
$B bench --backend cuda --quant none --preset gpt-oss-120b --biases --tokens 1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck --csv "$OUT/bench-biases.csv" > "$OUT/bench-biases.txt" 2>&1
grep -v "^#" "$OUT/bench-biases.csv" | grep ",layer," | cut -d, -f1,3,7,12,14,20,23
