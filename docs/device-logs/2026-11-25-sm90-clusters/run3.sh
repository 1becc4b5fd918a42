#!/usr/bin/env bash
# Third device call ($1 = the commit: the 2 x 1 tiles gone, the new heuristic): build every gpu test
# and moekit, ctest -L gpu, then the full table (every preset at T = 1 .. 16384 with the refcheck).
set -uo pipefail
COMMIT=$1
TARGETS="moekit test_moe_cuda test_decode_layer_cuda test_decode_token_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
COMMIT=$COMMIT OUT=$OUT TARGETS="$TARGETS" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/ctest-cpu.txt" "$OUT/info.txt"
grep real "$OUT/build.txt"
grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/ctest-gpu.txt" | head -20
SECONDS=0
timeout 330 build/device/bin/moekit bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
  --csv "$OUT/bench-table.csv" --json "$OUT/bench-table.json" > "$OUT/bench-table.txt" 2>&1
echo "# bench took ${SECONDS}s"
cut -d, -f1,3,7,20,23 "$OUT/bench-table.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '
