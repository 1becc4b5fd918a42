#!/usr/bin/env bash
# Call 6 ($1 = the commit): the session's final code (the tile order as the gemm1.order / gemm2.order
# knobs). Every gpu test; then, as time allows, the order per GEMM (--choice) at the points where
# call 5 saw it win or lose most.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((580 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout $(($(left) - 30)) ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/r/ctest-gpu.txt" | head -20
for v in fixed g1 g2 both; do
  case $v in
    fixed) C="gemm1.order=fixed;gemm2.order=fixed" ;;
    g1) C="gemm1.order=claimed;gemm2.order=fixed" ;;
    g2) C="gemm1.order=fixed;gemm2.order=claimed" ;;
    both) C="gemm1.order=claimed;gemm2.order=claimed" ;;
  esac
  for p in gpt-oss-120b:1024,4096 mixtral-8x7b:1024 qwen3-30b-a3b:4096,16384; do
    [ "$(left)" -lt 20 ] && break 2
    timeout 30 $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} --sets 2 --reps 5 \
      --no-baseline --choice "$C" --csv "$OUT/r/order-$v-${p%%:*}.csv" > "$OUT/r/order-$v-${p%%:*}.txt" 2>&1
  done
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/order-summary.txt"
import csv, glob, os, sys, collections
d = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + "/order-*.csv")):
    v = os.path.basename(f).split("-")[1]
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit": d[(r["preset"], int(r["tokens"]))][v] = float(r["median_us"])
for k in sorted(d):
    f = d[k].get("fixed")
    print(k[0], "T=%d" % k[1], " ".join("%s %.1f%s" % (v, d[k][v], " (%+.1f%%)" % (100 * (d[k][v] / f - 1)) if f and v != "fixed" else "")
                                      for v in ("fixed", "g1", "g2", "both") if v in d[k]))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
