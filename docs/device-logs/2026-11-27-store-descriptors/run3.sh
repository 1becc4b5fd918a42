#!/usr/bin/env bash
# Call 3 ($1 = the commit): main's final code of the session: every gpu test; then, at the
# compute-bound prefill points, each kernel's share of the layer (--stages with gemm2 and the
# finalize as separate steps) beside cuBLAS's GEMMs alone (--batched-reference), one run each: the
# time budget the 80% target leaves the GEMMs once the gather, the combine and the routing are paid.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((560 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout 260 ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
for p in qwen3-30b-a3b:16384 mixtral-8x7b:4096 gpt-oss-120b:16384 deepseek-v3:4096,16384; do
  [ "$(left)" -lt 25 ] && break
  timeout $(( $(left) - 10 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 1 --reps 3 --no-baseline --stages \
    --fusion gemm2_finalize=off --batched-reference --preset ${p%%:*} --tokens ${p#*:} \
    --csv "$OUT/r/budget-${p%%:*}.csv" > "$OUT/r/budget-${p%%:*}.txt" 2>&1
  echo "# ${p%%:*} rc=$?"; grep -E "^ +[0-9]+ +(moekit|cublas|  cuda)" "$OUT/r/budget-${p%%:*}.txt" | awk '{print $1, $2, $3, $(NF-2)}' | head -20
done
pack
