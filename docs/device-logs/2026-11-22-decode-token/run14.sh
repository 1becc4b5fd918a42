#!/usr/bin/env bash
# Fourteenth device call ($1 = the commit, the landed code): build everything, ctest -L gpu (the
# decode tests' edge cases now come from moe_case helpers), and one short T=1 bench for the record.
set -uo pipefail
COMMIT=$1
TARGETS="moekit test_moe_cuda test_decode_layer_cuda test_decode_token_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
COMMIT=$COMMIT OUT=$OUT TARGETS="$TARGETS" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/ctest-cpu.txt" "$OUT/info.txt"
grep -E "tests passed|Failed|FAILED|\*\*\*" "$OUT/ctest-gpu.txt" | head -20
rm -f /tmp/x.csv
build/device/bin/moekit bench --backend cuda --quant none --no-baseline --refcheck --csv /tmp/x.csv --sets 1 --reps 3 --tokens 1 > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
grep -v "^#" /tmp/x.csv | cut -d, -f1,3,5,6,7,12,14,20,23 | tee "$OUT/bench.txt"
