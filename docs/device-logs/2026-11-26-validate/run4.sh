#!/usr/bin/env bash
# Call 4 ($1 = the commit): does the claimed tile order rescue step 22's skip? Two builds: main and
# main + skip.patch (docs/device-logs/2026-11-26-skip-empty-rows/); each under both tile orders, two
# turns, at the skip's three worst points; then DRAM bytes under ncu (kernel name MoeGroupShape).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
rm -rf /tmp/skip && mkdir -p /tmp/skip
tar --exclude=./build --exclude=./.deps --exclude=./third_party -cf - . | (cd /tmp/skip && tar xf -)
ln -s "$PWD/.deps" /tmp/skip/.deps && ln -s "$PWD/third_party" /tmp/skip/third_party
(cd /tmp/skip && git apply docs/device-logs/2026-11-26-skip-empty-rows/skip.patch) || { echo "skip.patch does not apply"; exit 1; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit > "$OUT/r/build-main.out" 2>&1 &
(cd /tmp/skip && scripts/device-build.sh "skip-$COMMIT" /tmp/log-skip moekit) > "$OUT/r/build-skip.out" 2>&1 &
wait
cat "$OUT"/r/build-*.out; echo "# builds $((SECONDS - START))s"
for turn in 1 2; do
  for v in main skip; do
    B=build/device/bin/moekit; [ $v = skip ] && B=/tmp/skip/build/device/bin/moekit
    for order in static claimed; do
      [ "$(left)" -lt 80 ] && break 3
      for p in deepseek-v3:16384 mixtral-8x7b:4096 gpt-oss-120b:16384; do
        MOEKIT_SM90_TILE_ORDER=$order timeout 40 $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} \
          --sets 2 --reps 5 --no-baseline --csv "$OUT/r/$v-$order$turn-${p%%:*}.csv" > "$OUT/r/$v-$order$turn-${p%%:*}.txt" 2>&1
      done
      echo "# $v $order $turn at $((SECONDS - START))s"
    done
  done
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, os, sys, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/*-*[12]-*.csv")):
    v, o = os.path.basename(f).split("-")[:2]
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit": d[(r["preset"], r["tokens"], v, o[:-1])].append(float(r["median_us"]))
for k in sorted(d): print(*k, " ".join("%.1f" % x for x in d[k]))
PY
NCU="ncu --clock-control none --kernel-name-base demangled --kernel-name regex:MoeGroupShape --launch-count 2 --csv --print-units base \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,sm__cycles_elapsed.avg.per_second"
for p in mixtral-8x7b:4096 deepseek-v3:16384; do
  for v in main skip; do
    B=build/device/bin/moekit; [ $v = skip ] && B=/tmp/skip/build/device/bin/moekit
    for order in static claimed; do
      [ "$(left)" -lt 20 ] && break 3
      MOEKIT_SM90_TILE_ORDER=$order timeout 30 $NCU $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} \
        --sets 1 --reps 1 --iters 1 --warmup 0 --no-baseline > "$OUT/r/ncu-$v-$order-${p%%:*}.csv" 2> "$OUT/r/ncu-$v-$order-${p%%:*}.err"
    done
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
