#!/usr/bin/env bash
# Call 6 ($1 = the commit): every gpu test with the automatic tile order as the default; then, as time
# allows, deterministic mode against the default where the automatic order claims (GPT-OSS T=1024,
# Qwen3 T=600): its cost there.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout $(($(left) - 10)) ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest $((SECONDS - T0))s"; grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/r/ctest-gpu.txt" | head -20
for det in "" --deterministic; do
  for p in gpt-oss-120b:1024 qwen3-30b-a3b:600; do
    [ "$(left)" -lt 20 ] && break 2
    timeout 30 $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} --sets 2 --reps 5 \
      --no-baseline $det --csv "$OUT/r/det-${p%%:*}${det}.csv" > "$OUT/r/det-${p%%:*}${det}.txt" 2>&1
    echo "# ${p%%:*} T=${p##*:} ${det:-default}: $(cut -d, -f7,20 "$OUT/r/det-${p%%:*}${det}.csv" | sed -n 2p)"
  done
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
