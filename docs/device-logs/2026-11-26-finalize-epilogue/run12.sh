#!/usr/bin/env bash
# Step 20, device call 12 ($1 = the commit): after the review mends (the ceiling GEMMs' operands from
# fill_uniform_device and random_bits): build every gpu test and moekit; ctest -L gpu -j 3; the
# bench's ceilings and one preset's table.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit gpu_tests || exit 1
mkdir -p "$OUT/r"
SECONDS=0
ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest ${SECONDS}s"; grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/r/ctest-gpu.txt" | head -20
timeout 100 build/device/bin/moekit bench --backend cuda --quant none --preset qwen3-30b-a3b --tokens 1,1024,16384 --sets 2 --reps 5 \
  --no-baseline --refcheck --gate-up interleaved --csv "$OUT/r/qwen3.csv" > "$OUT/r/qwen3.txt" 2>&1
grep -E "ceiling|^\s+[0-9]+\s+moekit" "$OUT/r/qwen3.txt"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
