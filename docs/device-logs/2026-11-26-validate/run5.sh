#!/usr/bin/env bash
# Call 5 ($1 = the commit): the claimed tile order with lookahead 1 (cooperative) or 2 (ping-pong) instead of 3 (step 23 c). The sm_90a GEMM tests (the
# ClaimedTileOrderGivesTheSameBits among them); then MOEKIT_SM90_TILE_ORDER=static against claimed,
# two turns, at T = 256, 1024, 4096, 16384 on every preset; then DRAM bytes of both under ncu.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit test_sm90_gemm || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout 150 build/device/tests/gpu/test_sm90_gemm --gtest_filter="*Claimed*:*LastTile*:*GatedEpilogueEvery*:*Graph*:*F16" > "$OUT/r/test-sm90.txt" 2>&1
echo "# test_sm90_gemm rc=$? $((SECONDS - T0))s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|OK \] .*Claimed" "$OUT/r/test-sm90.txt" | head -20
for turn in 1 2; do
  for order in static claimed; do
    [ "$(left)" -lt 85 ] && break 2
    T0=$SECONDS
    MOEKIT_SM90_TILE_ORDER=$order timeout 80 $B bench --backend cuda --quant none --gate-up interleaved --tokens 256,1024,4096,16384 \
      --sets 2 --reps 5 --no-baseline --csv "$OUT/r/$order$turn.csv" > "$OUT/r/$order$turn.txt" 2>&1
    echo "# $order$turn rc=$? $((SECONDS - T0))s"
  done
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, os, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + "/*[12].csv")):
    order = os.path.basename(f)[:-5]
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit": d[(r["preset"], int(r["tokens"]))][order].append(float(r["median_us"]))
for k in sorted(d):
    s, c = d[k]["static"], d[k]["claimed"]
    ch = "%+.1f%%" % (100 * (min(c) / min(s) - 1)) if s and c else ""
    print(k[0], "T=%d" % k[1], "static", " ".join("%.1f" % x for x in s), "claimed", " ".join("%.1f" % x for x in c), ch)
PY
NCU="ncu --clock-control none --kernel-name-base demangled --kernel-name regex:MoeGroupShape --launch-count 2 --csv --print-units base \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,sm__cycles_elapsed.avg.per_second"
for p in mixtral-8x7b:4096 deepseek-v3:16384 qwen3-30b-a3b:4096; do
  for order in static claimed; do
    [ "$(left)" -lt 25 ] && break 2
    MOEKIT_SM90_TILE_ORDER=$order timeout 60 $NCU $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} \
      --sets 1 --reps 1 --iters 1 --warmup 0 --no-baseline > "$OUT/r/ncu-$order-${p%%:*}.csv" 2> "$OUT/r/ncu-$order-${p%%:*}.err"
  done
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/ncu-summary.txt"
import csv, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/ncu-*.csv")):
    lines = open(f).read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None: print(os.path.basename(f), "no ncu rows"); continue
    per = {}
    for r in csv.DictReader(lines[start:]): per.setdefault(r["ID"], {})[r["Metric Name"]] = r["Metric Value"]
    for i, m in per.items():
        print(os.path.basename(f)[4:-4], "launch", i, " ".join("%s=%s" % (k.split("__")[1], v) for k, v in sorted(m.items())))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
