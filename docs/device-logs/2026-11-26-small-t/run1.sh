#!/usr/bin/env bash
# Step 21, device call 1 ($1 = the commit): where the time goes at few tokens and in prefill on the
# H200. (a) T = 2..32 on every preset: the stage pipeline with stage times, and the decode layer
# (fusion.whole_layer=on), in turns, two runs each. (b) Prefill points with stage times.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit || exit 1
mkdir -p "$OUT/r"
B=build/device/bin/moekit
SECONDS=0
for run in 1 2; do
  for p in qwen3-30b-a3b gpt-oss-120b mixtral-8x7b deepseek-v3; do
    timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --preset $p --tokens 2,4,8,16,32 --sets 2 --reps 5 --no-baseline --stages \
      --csv "$OUT/r/small-$p-stages$run.csv" > "$OUT/r/small-$p-stages$run.txt" 2>&1
    timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --preset $p --tokens 2,4,8,16,32 --sets 2 --reps 5 --no-baseline \
      --fusion whole_layer=on --csv "$OUT/r/small-$p-layer$run.csv" > "$OUT/r/small-$p-layer$run.txt" 2>&1
  done
  echo "# small run $run done (${SECONDS}s)"
done
for spec in qwen3-30b-a3b:4096,16384 mixtral-8x7b:1024,4096 deepseek-v3:4096 gpt-oss-120b:16384; do
  p=${spec%%:*}; t=${spec#*:}
  timeout 120 $B bench --backend cuda --quant none --gate-up interleaved --preset $p --tokens $t --sets 2 --reps 5 --no-baseline --stages \
    --csv "$OUT/r/prefill-$p.csv" > "$OUT/r/prefill-$p.txt" 2>&1
done
echo "# prefill done (${SECONDS}s)"
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, sys, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/small-*.csv")):
    kind = "layer" if "layer" in f.rsplit("-",1)[1] else "stages"
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit":
            d[(r["preset"], int(r["tokens"]))].append((kind, float(r["median_us"]), r.get("pct_floor", "")))
for k in sorted(d):
    print(k[0], "T=%d" % k[1], " ".join("%s %.1f" % (a, b) for a, b, _ in d[k]))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
