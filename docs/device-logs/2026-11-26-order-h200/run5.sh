#!/usr/bin/env bash
# Call 5 ($1 = the commit): the automatic tile order (gemm1.order / gemm2.order = auto, the default:
# claimed on the ping-pong tile without a cluster while every expert fits one M tile, decided on the
# device). The order tests of test_sm90_gemm (TileOrderReachesTheScheduler reads the claim counter);
# then the default against both orders fixed, two turns, where the heuristic runs that tile:
# GPT-OSS T=1024 (gemm1), 1100..2048 (gemm2), Qwen3 T=600..1024, DeepSeek-V3 T=300..512.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit test_sm90_gemm || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout 120 build/device/tests/gpu/test_sm90_gemm --gtest_filter="*TileOrder*:*LastTile*:*Graph*" > "$OUT/r/test-sm90.txt" 2>&1
echo "# test_sm90_gemm rc=$? $((SECONDS - T0))s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|OK \] " "$OUT/r/test-sm90.txt" | head -20
for p in gpt-oss-120b:1024,1100,1536,2048 qwen3-30b-a3b:600,800,1024 deepseek-v3:300,384,512; do
  $B explain --preset ${p%%:*} --quant none --gate-up interleaved -T ${p##*,} | grep -E "order|tile" >> "$OUT/r/explain.txt"
done
for turn in 1 2; do
  for p in gpt-oss-120b:1024,1100,1536,2048 qwen3-30b-a3b:600,800,1024 deepseek-v3:300,384,512; do
    for o in auto fixed; do
      [ "$(left)" -lt 30 ] && break 3
      T0=$SECONDS
      timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} --sets 2 --reps 5 \
        --no-baseline --choice "gemm1.order=$o;gemm2.order=$o" --csv "$OUT/r/${p%%:*}-$o$turn.csv" > "$OUT/r/${p%%:*}-$o$turn.txt" 2>&1
      echo "# ${p%%:*} $o$turn rc=$? $((SECONDS - T0))s"
    done
  done
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, os, re, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + "/*-*[12].csv")):
    name, o = re.match(r"(.+)-(auto|fixed)[12]\.csv", os.path.basename(f)).groups()
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit": d[(name, int(r["tokens"]))][o].append((float(r["median_us"]), float(r["percent_of_floor"])))
for k in sorted(d):
    f, a = d[k]["fixed"], d[k]["auto"]
    ch = "%+.1f%%" % (100 * (min(a)[0] / min(f)[0] - 1)) if f and a else ""
    fmt = lambda v: " ".join("%.1f (%.1f%%)" % x for x in v)
    print("%-14s T=%-5d fixed %s  auto %s  %s" % (k + (fmt(f), fmt(a), ch)))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
