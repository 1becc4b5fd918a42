#!/usr/bin/env bash
# Call 9 ($1 = the commit): the final code (the automatic tile order; the 64 x 128 tile without its
# cluster up to 32 rows an expert). Every gpu test; the full table (heuristic, W13 interleaved); then,
# as time allows, deterministic mode against the default at Qwen3 T=256 and GPT-OSS T=1024.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((580 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout $(($(left) - 75)) ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest $((SECONDS - T0))s"; grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/r/ctest-gpu.txt" | head -20
T0=$SECONDS
timeout $(($(left) - 5)) $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
  --gate-up interleaved --csv "$OUT/r/table.csv" --json "$OUT/r/table.json" > "$OUT/r/table.txt" 2>&1
echo "== table rc=$? ($((SECONDS - T0))s)"; cut -d, -f1,3,7,20,23 "$OUT/r/table.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
grep -E "ceiling" "$OUT/r/table.txt"
for det in "" --deterministic; do
  for p in qwen3-30b-a3b:256 gpt-oss-120b:1024; do
    [ "$(left)" -lt 12 ] && break 2
    timeout 10 $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} --sets 2 --reps 5 \
      --no-baseline $det --csv "$OUT/r/det-${p%%:*}${det}.csv" > "$OUT/r/det-${p%%:*}${det}.txt" 2>&1
    echo "# ${p%%:*} T=${p##*:} ${det:-default}: $(cut -d, -f7,20 "$OUT/r/det-${p%%:*}${det}.csv" | sed -n 2p)"
  done
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
