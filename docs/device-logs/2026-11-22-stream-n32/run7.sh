#!/usr/bin/env bash
# Final check ($1 = the commit): build + gpu tests, and the sm_90a points with and without biases.
set -uo pipefail
COMMIT=$1
TARGETS="moekit test_moe_cuda test_decode_layer_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
COMMIT=$COMMIT OUT=$OUT TARGETS="$TARGETS" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/env.txt" "$OUT/ctest-cpu.txt" "$OUT/build.txt" "$OUT/info.txt"
grep -E "tests passed|Failed|FAILED|\*\*\*" "$OUT/ctest-gpu.txt" | head -20
B=build/device/bin/moekit
for extra in "" "--preset gpt-oss-120b --biases"; do
  $B bench --backend cuda --quant none --tokens 1,64,1024 --sets 1 --reps 3 --no-baseline --refcheck $extra --csv /tmp/x.csv > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep ",layer," /tmp/x.csv | cut -d, -f1,3,7,12,20,23 | sed "s/^/${extra:+biases,}/"
done | tee "$OUT/bench.txt"
