#!/usr/bin/env bash
# Call 5 ($1 = the commit): the session's final code (the automatic order on the cooperative tiles;
# old tuned rows pinned to the fixed order). Every gpu test; the full table (heuristic, W13
# interleaved); deterministic mode against the default where the new rule claims (GPT-OSS T=3072,
# Qwen3 T=1536).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((580 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout $(($(left) - 90)) ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest $((SECONDS - T0))s"; grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/r/ctest-gpu.txt" | head -20
for det in "" --deterministic; do
  for p in gpt-oss-120b:3072 qwen3-30b-a3b:1536; do
    [ "$(left)" -lt 75 ] && break 2
    timeout 15 $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} --sets 2 --reps 5 \
      --no-baseline $det --csv "$OUT/r/det-${p%%:*}${det}.csv" > "$OUT/r/det-${p%%:*}${det}.txt" 2>&1
    echo "# ${p%%:*} T=${p##*:} ${det:-default}: $(cut -d, -f7,20 "$OUT/r/det-${p%%:*}${det}.csv" | sed -n 2p)"
  done
done
T0=$SECONDS
timeout $(($(left) - 5)) $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
  --gate-up interleaved --csv "$OUT/r/table.csv" --json "$OUT/r/table.json" > "$OUT/r/table.txt" 2>&1
echo "== table rc=$? ($((SECONDS - T0))s)"; grep -E "ceiling" "$OUT/r/table.txt"
python3 docs/device-logs/2026-11-26-h200-rules/summarize.py "$OUT/r" | tee "$OUT/r/summary.txt"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
