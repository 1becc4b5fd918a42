#!/usr/bin/env bash
# Seventh device call ($1 = the commit): build everything, ctest -L gpu, then re-tune the T = 1 rows of
# bench/tune/h200.csv into a copy under $OUT (retune-t1.csv), with --compare against the heuristic.
set -uo pipefail
COMMIT=$1
TARGETS="moekit test_moe_cuda test_decode_layer_cuda test_decode_token_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
COMMIT=$COMMIT OUT=$OUT TARGETS="$TARGETS" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/ctest-cpu.txt" "$OUT/info.txt"
grep -E "tests passed|Failed|FAILED|\*\*\*" "$OUT/ctest-gpu.txt" | head -20
cp bench/tune/h200.csv "$OUT/h200.csv"
( time build/device/bin/moekit tune -i docs/device-logs/2026-11-22-decode-token/retune-t1.csv -o "$OUT/h200.csv" --compare --no-progress ) > "$OUT/retune.txt" 2>&1
grep -E "^shape|heuristic .* tuned|^real" "$OUT/retune.txt"
