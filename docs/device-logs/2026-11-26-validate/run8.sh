#!/usr/bin/env bash
# Call 8 ($1 = the commit): where step 22's skip loses beyond DRAM (perf-notes Next steps 0b'). Finds
# this ncu's tensor-pipe metric names, then profiles the sm_90a GEMMs of main and of main + skip.patch
# at DeepSeek-V3 T=16384 and Mixtral T=4096: tensor-pipe cycles (sum, average share), per-SM active
# cycles (min / avg / max: how unevenly the SMs finish), time and clock.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
ncu --query-metrics --chip gh100 > "$OUT/r/metrics.txt" 2>&1
grep -iE "tensor_op|gmma" "$OUT/r/metrics.txt" | head -40
T=$(awk '{print $1}' "$OUT/r/metrics.txt" | grep -E "^sm__pipe_tensor_op_(gmma|hmma)_cycles_active$" | head -1)
echo "# tensor metric: ${T:-none}"
rm -rf /tmp/skip && mkdir -p /tmp/skip
tar --exclude=./build --exclude=./.deps --exclude=./third_party -cf - . | (cd /tmp/skip && tar xf -)
ln -s "$PWD/.deps" /tmp/skip/.deps && ln -s "$PWD/third_party" /tmp/skip/third_party
(cd /tmp/skip && git apply docs/device-logs/2026-11-26-skip-empty-rows/skip.patch) || { echo "skip.patch does not apply"; exit 1; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit > "$OUT/r/build-main.out" 2>&1 &
(cd /tmp/skip && scripts/device-build.sh "skip-$COMMIT" /tmp/log-skip moekit) > "$OUT/r/build-skip.out" 2>&1 &
wait
cat "$OUT"/r/build-*.out; echo "# builds $((SECONDS - START))s"
M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max"
[ -n "$T" ] && M="$M,$T.sum,$T.avg.pct_of_peak_sustained_active,$T.avg.pct_of_peak_sustained_elapsed"
for p in deepseek-v3:16384 mixtral-8x7b:4096; do
  for v in main skip; do
    [ "$(left)" -lt 25 ] && break 2
    B=build/device/bin/moekit; [ $v = skip ] && B=/tmp/skip/build/device/bin/moekit
    timeout 60 ncu --clock-control none --kernel-name-base demangled --kernel-name regex:MoeGroupShape --launch-count 2 --csv \
      --print-units base --metrics "$M" $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} \
      --sets 1 --reps 1 --iters 1 --warmup 0 --no-baseline > "$OUT/r/ncu-$v-${p%%:*}.csv" 2> "$OUT/r/ncu-$v-${p%%:*}.err"
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
