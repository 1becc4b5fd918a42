#!/usr/bin/env bash
# Call 8 ($1 = the commit): the 64 x 128 tile without its cluster (where the automatic order claims)
# against the heuristic's tile below call 7's range: T = 16, 32, 64, 96, two turns (no table).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
PP="gemm1.tile=sm90_m64n128k128_c1x1;gemm2.tile=sm90_m64n128k128_c1x1"
for turn in 1 2; do
  for c in dflt pp; do
    [ "$(left)" -lt 45 ] && break 2
    T0=$SECONDS
    if [ $c = pp ]; then ch=(--choice "$PP"); else ch=(); fi
    timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --tokens 16,32,64,96 --sets 2 --reps 5 --no-baseline \
      "${ch[@]}" --csv "$OUT/r/$c$turn.csv" > "$OUT/r/$c$turn.txt" 2>&1
    echo "# $c$turn rc=$? $((SECONDS - T0))s"
  done
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, os, re, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + "/*[12].csv")):
    c = os.path.basename(f)[:-5]
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit": d[(r["preset"], int(r["tokens"]))][c].append(float(r["median_us"]))
for k in sorted(d):
    f, c = d[k]["dflt"], d[k]["pp"]
    ch = "%+.1f%%" % (100 * (min(c) / min(f) - 1)) if f and c else ""
    print("%-14s T=%-5d default %s  pp %s  %s" % (k + (" ".join("%.1f" % x for x in f), " ".join("%.1f" % x for x in c), ch)))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
