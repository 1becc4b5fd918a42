#!/usr/bin/env bash
# Eleventh device call ($1 = the commit, the final code): build every gpu test and moekit,
# ctest -L gpu, then T=1 on the four presets with the refcheck.
set -uo pipefail
COMMIT=$1
TARGETS="moekit test_moe_cuda test_decode_layer_cuda test_decode_token_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
COMMIT=$COMMIT OUT=$OUT TARGETS="$TARGETS" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/ctest-cpu.txt" "$OUT/info.txt"
grep -E "tests passed|Failed|FAILED|\*\*\*" "$OUT/ctest-gpu.txt" | head -20
build/device/bin/moekit bench --backend cuda --quant none --no-baseline --refcheck --sets 2 --reps 5 --tokens 1 --csv "$OUT/bench.csv" > "$OUT/bench.txt" 2>&1
cut -d, -f1,3,7,20,23 "$OUT/bench.csv"
