#!/usr/bin/env bash
# Step 21, device call 11 ($1 = the commit, with x16.patch applied in the working tree): the
# few-token kernel with its hidden rows in 16 bits everywhere (MOEKIT_DECODE_TOKENS_X16=1: half the
# shared-memory reads, a conversion per chunk) against float where it fits (the default), T = 2..8,
# in turns, two runs each.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit || exit 1
mkdir -p "$OUT/r"
B=build/device/bin/moekit
SECONDS=0
for run in 1 2; do
  for x in 0 1; do
    MOEKIT_DECODE_TOKENS_X16=$x timeout 120 $B bench --backend cuda --quant none --preset qwen3-30b-a3b,gpt-oss-120b,deepseek-v3 --tokens 2,3,4,6,8 \
      --sets 2 --reps 5 --no-baseline --gate-up interleaved --csv "$OUT/r/x$x-$run.csv" > "$OUT/r/x$x-$run.txt" 2>&1
  done
done
echo "== (${SECONDS}s)"
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for x in (0, 1):
    for run in (1, 2):
        for r in csv.DictReader(open(f"{sys.argv[1]}/x{x}-{run}.csv")):
            if r["method"] == "moekit": d[(r["preset"], int(r["tokens"]))][x].append(float(r["median_us"]))
for k in sorted(d):
    a = d[k][0]; b = d[k][1]
    print(k[0], "T=%d" % k[1], "float", " ".join("%.1f" % v for v in a), "| 16-bit", " ".join("%.1f" % v for v in b), "| %+.1f%%" % (100 * (min(b) / min(a) - 1)))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
