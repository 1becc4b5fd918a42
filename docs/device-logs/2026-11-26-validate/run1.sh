#!/usr/bin/env bash
# Call 1 ($1 = the commit): main's exact build on the GPU. Every gpu test; the full table (heuristic,
# W13 interleaved); then, as time allows, the memory-bound middle with the shipped tuned table
# (MOEKIT_TUNING_TABLE=bench/tune/h200.csv) and deterministic mode at three points a preset.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((570 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout $(($(left) - 250)) ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest $((SECONDS - T0))s"; grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/r/ctest-gpu.txt" | head -20
T0=$SECONDS
timeout $(($(left) - 20)) $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
  --gate-up interleaved --csv "$OUT/r/table.csv" --json "$OUT/r/table.json" > "$OUT/r/table.txt" 2>&1
echo "== table ($((SECONDS - T0))s)"; cut -d, -f1,3,7,20,23 "$OUT/r/table.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
grep -E "ceiling" "$OUT/r/table.txt"
if [ "$(left)" -gt 90 ]; then
  T0=$SECONDS
  MOEKIT_TUNING_TABLE=bench/tune/h200.csv timeout $(($(left) - 15)) $B bench --backend cuda --quant none --tokens 8,64,256,1024 --sets 2 --reps 5 \
    --no-baseline --gate-up interleaved --csv "$OUT/r/tuned.csv" > "$OUT/r/tuned.txt" 2>&1
  echo "== tuned ($((SECONDS - T0))s)"; cut -d, -f1,3,7,20 "$OUT/r/tuned.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
fi
if [ "$(left)" -gt 60 ]; then
  T0=$SECONDS
  timeout $(($(left) - 10)) $B bench --backend cuda --quant none --preset qwen3-30b-a3b,deepseek-v3 --tokens 64,1024,16384 --sets 2 --reps 5 \
    --no-baseline --gate-up interleaved --deterministic --csv "$OUT/r/det.csv" > "$OUT/r/det.txt" 2>&1
  echo "== deterministic ($((SECONDS - T0))s)"; cut -d, -f1,3,7 "$OUT/r/det.csv" | tail -n +2 | tr '\n' ' '; echo
fi
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
