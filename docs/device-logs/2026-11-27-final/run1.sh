#!/usr/bin/env bash
# Call 1 ($1 = the commit): main's final code of session 6 on a GPU for the first time (8ab9c43's
# claim counter reset, 42448ac's launcher): every gpu test; deterministic mode against the default
# at two points the overlap takes (Qwen3 T=64, GPT-OSS T=256); the full table.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((585 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout 290 ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
for det in "" --deterministic; do
  for p in qwen3-30b-a3b:64 gpt-oss-120b:256; do
    [ "$(left)" -lt 150 ] && break 2
    timeout 20 $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} --sets 2 --reps 5 \
      --no-baseline $det --csv "$OUT/r/det-${p%%:*}${det}.csv" > "$OUT/r/det-${p%%:*}${det}.txt" 2>&1
    echo "# ${p%%:*} T=${p##*:} ${det:-default}: $(cut -d, -f7,20 "$OUT/r/det-${p%%:*}${det}.csv" | sed -n 2p)"
  done
done
T0=$SECONDS
timeout $(($(left) - 5)) $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
  --gate-up interleaved --csv "$OUT/r/table.csv" --json "$OUT/r/table.json" > "$OUT/r/table.txt" 2>&1
echo "== table rc=$? ($((SECONDS - T0))s)"; grep -E "ceiling" "$OUT/r/table.txt"
python3 docs/device-logs/2026-11-26-h200-rules/summarize.py "$OUT/r" | tee "$OUT/r/summary.txt"
pack
