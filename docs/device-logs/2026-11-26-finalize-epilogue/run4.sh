#!/usr/bin/env bash
# Step 20, device call 4 ($1 = the commit): the bench's GEMM ceilings on random operands. Build
# moekit and test_bench_cuda; its tests; `moekit info`; the full table with W13 interleaved twice (the
# kernels are call 2's: only the floors' compute ceiling changed).
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit test_bench_cuda || exit 1
mkdir -p "$OUT/r"
B=build/device/bin/moekit
$(find build/device -name test_bench_cuda -type f -perm -u+x | head -1) > "$OUT/r/test-bench-cuda.txt" 2>&1
echo "# test_bench_cuda: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/r/test-bench-cuda.txt" | tr '\n' ' ')"
$B info > "$OUT/r/info.txt" 2>&1
for i in 1 2; do
  SECONDS=0
  timeout 200 $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
    --gate-up interleaved --csv "$OUT/r/table$i.csv" --json "$OUT/r/table$i.json" > "$OUT/r/table$i.txt" 2>&1
  echo "== table $i (${SECONDS}s)"; cut -d, -f1,3,7,18,19,20 "$OUT/r/table$i.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
  grep -E "ceiling" "$OUT/r/table$i.txt"
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
