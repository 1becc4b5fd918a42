#!/usr/bin/env bash
# Call 2 ($1 = the commit): (1) the gpu test call 1's time limit cut (Sm90GroupedGemm.Bf16LargeShapes);
# (2) step 22's lockstep reading, measured: DRAM bytes read by the sm_90a GEMMs of main against the
# skip build (docs/device-logs/2026-11-26-skip-empty-rows/skip.patch applied to a copy), under ncu;
# (3) the stage times of the memory-bound middle (--stages).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((570 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
rm -rf /tmp/skip && mkdir -p /tmp/skip
tar --exclude=./build --exclude=./.deps --exclude=./third_party -cf - . | (cd /tmp/skip && tar xf -)
ln -s "$PWD/.deps" /tmp/skip/.deps && ln -s "$PWD/third_party" /tmp/skip/third_party
(cd /tmp/skip && git apply docs/device-logs/2026-11-26-skip-empty-rows/skip.patch) || { echo "skip.patch does not apply"; exit 1; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit test_sm90_gemm > "$OUT/r/build-main.out" 2>&1 &
(cd /tmp/skip && scripts/device-build.sh "skip-$COMMIT" /tmp/log-skip moekit) > "$OUT/r/build-skip.out" 2>&1 &
wait
cat "$OUT"/r/build-*.out; echo "# builds $((SECONDS - START))s"
T0=$SECONDS
timeout 200 build/device/tests/gpu/test_sm90_gemm --gtest_filter='*Bf16LargeShapes*' > "$OUT/r/bf16-large.txt" 2>&1
echo "# Bf16LargeShapes rc=$? $((SECONDS - T0))s"; grep -E "OK|FAILED|PASSED" "$OUT/r/bf16-large.txt" | head
NCU="ncu --clock-control none --kernel-name-base demangled --kernel-name regex:GroupProblemShape --launch-count 2 --csv --print-units base \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"
for p in deepseek-v3:16384 mixtral-8x7b:4096 gpt-oss-120b:16384; do
  for v in main skip; do
    [ "$(left)" -lt 60 ] && break 2
    B=build/device/bin/moekit; [ $v = skip ] && B=/tmp/skip/build/device/bin/moekit
    T0=$SECONDS
    timeout 120 $NCU $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} --sets 1 --reps 1 \
      --iters 1 --warmup 0 --no-baseline > "$OUT/r/ncu-$v-${p%%:*}.csv" 2> "$OUT/r/ncu-$v-${p%%:*}.err"
    echo "# ncu $v ${p} rc=$? $((SECONDS - T0))s"
  done
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/ncu-summary.txt"
import csv, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/ncu-*.csv")):
    lines = open(f).read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None: print(os.path.basename(f), "no ncu rows"); continue
    rows = list(csv.DictReader(lines[start:]))
    per = {}
    for r in rows:
        per.setdefault(r["ID"], {})[r["Metric Name"]] = r["Metric Value"]
    for i, m in per.items():
        print(os.path.basename(f)[4:-4], "launch", i, " ".join("%s=%s" % (k.split("__")[1] if "__" in k else k, v) for k, v in sorted(m.items())))
PY
if [ "$(left)" -gt 40 ]; then
  timeout $(($(left) - 10)) build/device/bin/moekit bench --backend cuda --quant none --gate-up interleaved --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 \
    --tokens 256,1024 --sets 1 --reps 5 --no-baseline --stages > "$OUT/r/stages.txt" 2>&1
  echo "# stages rc=$?"
fi
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
