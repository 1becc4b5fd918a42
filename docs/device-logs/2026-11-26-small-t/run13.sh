#!/usr/bin/env bash
# Step 21, device call 13 ($1 = the commit): the final code after the review's mends (shared launch
# checks and busiest-warp count, routing_groups): every gpu test, and T = 1..8 on every preset.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit gpu_tests || exit 1
mkdir -p "$OUT/r"
SECONDS=0
ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest ${SECONDS}s"; grep -E "tests passed|tests failed|\*\*\*|Total Test" "$OUT/r/ctest-gpu.txt" | head -10
timeout 100 build/device/bin/moekit bench --backend cuda --quant none --tokens 1,2,3,4,5,6,7,8 --sets 2 --reps 5 --no-baseline --refcheck \
  --gate-up interleaved --csv "$OUT/r/small.csv" > "$OUT/r/small.txt" 2>&1
grep ",moekit," "$OUT/r/small.csv" | cut -d, -f1,3,7,20,23 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
