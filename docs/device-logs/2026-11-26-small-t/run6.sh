#!/usr/bin/env bash
# Step 21, device call 6 ($1 = the commit): the session's final library code (the few-token kernel
# with gemm2's rows per item chosen by balance): every gpu test; the full table with W13 interleaved;
# then T = 1..8 on every preset, the default plan against the stages (--fusion whole_layer=off).
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit gpu_tests || exit 1
mkdir -p "$OUT/r"
B=build/device/bin/moekit
SECONDS=0
ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest ${SECONDS}s"; grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/r/ctest-gpu.txt" | head -20
SECONDS=0
timeout 200 $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
  --gate-up interleaved --csv "$OUT/r/table.csv" --json "$OUT/r/table.json" > "$OUT/r/table.txt" 2>&1
echo "== table (${SECONDS}s)"; cut -d, -f1,3,7,20,23 "$OUT/r/table.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
grep -E "ceiling" "$OUT/r/table.txt"
SECONDS=0
timeout 120 $B bench --backend cuda --quant none --tokens 1,2,3,4,5,6,7,8 --sets 2 --reps 5 --no-baseline --refcheck \
  --gate-up interleaved --csv "$OUT/r/small.csv" > "$OUT/r/small.txt" 2>&1
timeout 120 $B bench --backend cuda --quant none --tokens 2,3,4,5,6,7,8 --sets 2 --reps 5 --no-baseline \
  --gate-up interleaved --fusion whole_layer=off --csv "$OUT/r/small-stages.csv" > "$OUT/r/small-stages.txt" 2>&1
echo "== small T (${SECONDS}s)"
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/small-summary.txt"
import csv, sys, collections
d = collections.defaultdict(dict)
for kind in ("small", "small-stages"):
    for r in csv.DictReader(open(f"{sys.argv[1]}/{kind}.csv")):
        if r["method"] == "moekit":
            d[(r["preset"], int(r["tokens"]))][kind] = (float(r["median_us"]), r["percent_of_floor"])
for k in sorted(d):
    a = d[k].get("small"); b = d[k].get("small-stages")
    print(k[0], "T=%d" % k[1], "default %.1f (%s)" % a if a else "", "stages %.1f (%s)" % b if b else "",
          "%+.1f%%" % (100 * (a[0] / b[0] - 1)) if a and b else "")
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
