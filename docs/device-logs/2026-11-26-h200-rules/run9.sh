#!/usr/bin/env bash
# Call 9 ($1 = the commit): step 25 h's question, what the cooperative tile's ~3.4 µs a tile at
# short K are. ncu's warp-state section (stall reasons, averaged over every warp of the kernel:
# producer, scheduler and consumer warps alike) on gemm2 of one layer call: Qwen3 T=16384 (12
# k-blocks a tile, tensor pipes 68% busy) against Mixtral T=16384 (224 k-blocks, 98% busy).
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
for p in qwen3-30b-a3b:16384 mixtral-8x7b:16384; do
  T0=$SECONDS
  timeout 150 ncu --clock-control none --kernel-name-base demangled --kernel-name regex:MoeGroupShape --launch-skip 1 --launch-count 1 \
    --section WarpStateStats --section SchedulerStats --section LaunchStats --csv --print-units base --page details \
    $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} --sets 1 --reps 1 --iters 1 --warmup 0 \
    --no-baseline > "$OUT/r/warps-${p%%:*}.csv" 2> "$OUT/r/warps-${p%%:*}.err"
  echo "# ncu $p rc=$? $((SECONDS - T0))s"
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/warps-*.csv")):
    lines = open(f).read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None: print(os.path.basename(f), "no rows"); continue
    print("==", os.path.basename(f))
    for r in csv.DictReader(lines[start:]):
        print("  %-40s %-45s %s %s" % (r.get("Section Name", ""), r.get("Metric Name", ""), r.get("Metric Value", ""), r.get("Metric Unit", "")))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
