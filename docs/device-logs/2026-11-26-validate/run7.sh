#!/usr/bin/env bash
# Call 7 ($1 = the commit): the tuner with the order knobs, on the points where claimed won (GPT-OSS
# T = 1024, 4096), into a copy of bench/tune/h100.csv (--compare: the production path with and
# without the new rows). The H100's table, since the machine gives H100s.
set -uo pipefail
COMMIT=$1
D=docs/device-logs/2026-11-26-validate
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
cp bench/tune/h100.csv "$OUT/r/h100.csv"
SECONDS=0
timeout 420 build/device/bin/moekit tune -i $D/order_shapes.csv -o "$OUT/r/h100.csv" --compare --no-progress --timeout 300 > "$OUT/r/tune.txt" 2>&1
echo "# tune rc=$? ${SECONDS}s"; tail -25 "$OUT/r/tune.txt"
rm -rf "$OUT/r/h100.csv.refs"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
