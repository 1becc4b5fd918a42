#!/usr/bin/env bash
# Call 1 ($1 = the commit): main. The tile order knobs (docs/perf-notes.md step 23) on the GPU that
# comes: both GEMMs fixed, gemm1 claimed, both claimed, at T = 1024, 4096 on every preset; on an H200
# also the tuner at GPT-OSS T = 1024, 4096 into a copy of bench/tune/h200.csv (--compare); then a
# second turn of the three.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
D=docs/device-logs/2026-11-26-order-h200
choice() {
  case $1 in
    fixed) echo "gemm1.order=fixed;gemm2.order=fixed" ;;
    g1) echo "gemm1.order=claimed;gemm2.order=fixed" ;;
    both) echo "gemm1.order=claimed;gemm2.order=claimed" ;;
  esac
}
turn() {
  for c in fixed g1 both; do
    [ "$(left)" -lt 60 ] && return
    T0=$SECONDS
    timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --tokens 1024,4096 --sets 2 --reps 5 \
      --no-baseline --choice "$(choice $c)" --csv "$OUT/r/$c$1.csv" > "$OUT/r/$c$1.txt" 2>&1
    echo "# $c$1 rc=$? $((SECONDS - T0))s"
  done
}
turn 1
case "$GPU" in
  *H200*)
    cp bench/tune/h200.csv "$OUT/r/h200.csv"
    T0=$SECONDS
    timeout $(( $(left) - 150 )) $B tune -i $D/order_shapes.csv -o "$OUT/r/h200.csv" --compare --no-progress --timeout 240 > "$OUT/r/tune.txt" 2>&1
    echo "# tune rc=$? $((SECONDS - T0))s"; tail -12 "$OUT/r/tune.txt"
    rm -rf "$OUT/r/h200.csv.refs" ;;
esac
turn 2
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, os, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + "/*[12].csv")):
    c = os.path.basename(f)[:-5]
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit": d[(r["preset"], int(r["tokens"]))][c].append(float(r["median_us"]))
for k in sorted(d):
    f = d[k]["fixed"]
    line = "%-14s T=%-5d fixed %s" % (k[0], k[1], " ".join("%.1f" % x for x in f))
    for c in ("g1", "both"):
        v = d[k][c]
        if v: line += "  %s %s (%+.1f%%)" % (c, " ".join("%.1f" % x for x in v), 100 * (min(v) / min(f) - 1) if f else 0)
    print(line)
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
