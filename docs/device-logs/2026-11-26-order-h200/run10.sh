#!/usr/bin/env bash
# Call 10 ($1 = the commit): why claims lose once experts span several M tiles (docs/perf-notes.md
# step 24, Next steps 0a). DRAM bytes, L2 hit rate and time of each GEMM under ncu, both GEMMs fixed
# against both claimed, on the 64 x 128 tile without cluster: Mixtral T=256 (claimed +10% a GEMM),
# DeepSeek-V3 T=512 (gemm1 +5.9%), GPT-OSS T=1024 (-3.7%, -3.2%).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
PP="gemm1.tile=sm90_m64n128k128_c1x1;gemm2.tile=sm90_m64n128k128_c1x1"
NCU="ncu --clock-control none --kernel-name-base demangled --kernel-name regex:MoeGroupShape --launch-count 2 --csv --print-units base \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct"
for p in mixtral-8x7b:256 deepseek-v3:512 gpt-oss-120b:1024; do
  for o in fixed claimed; do
    [ "$(left)" -lt 30 ] && break 2
    T0=$SECONDS
    timeout 90 $NCU $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} \
      --sets 1 --reps 1 --iters 1 --warmup 0 --no-baseline --choice "$PP;gemm1.order=$o;gemm2.order=$o" \
      > "$OUT/r/ncu-${p%%:*}-$o.csv" 2> "$OUT/r/ncu-${p%%:*}-$o.err"
    echo "# ${p%%:*} $o rc=$? $((SECONDS - T0))s"
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
