#!/usr/bin/env bash
# Step 21, device call 4 ($1 = the commit): the few-token kernel with groups of at most 4 pairs at
# every T from 3 (T = 5..8 ran groups of up to 8 in call 3): its tests, then T = 3..8 against the
# stages (--fusion whole_layer=off), in turns, two runs each.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit test_decode_tokens_cuda || exit 1
mkdir -p "$OUT/r"
SECONDS=0
(cd build/device && timeout 300 ctest -L gpu -R "DecodeTokens" -j 3 --output-on-failure) > "$OUT/r/ctest-decode.txt" 2>&1
tail -5 "$OUT/r/ctest-decode.txt"
echo "# tests ${SECONDS}s"
B=build/device/bin/moekit
for run in 1 2; do
  for p in qwen3-30b-a3b gpt-oss-120b mixtral-8x7b; do
    timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --preset $p --tokens 3,4,5,6,8 --sets 2 --reps 5 --no-baseline --refcheck \
      --csv "$OUT/r/ab-$p-new$run.csv" > "$OUT/r/ab-$p-new$run.txt" 2>&1
    timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --preset $p --tokens 3,4,5,6,8 --sets 2 --reps 5 --no-baseline \
      --fusion whole_layer=off --csv "$OUT/r/ab-$p-stages$run.csv" > "$OUT/r/ab-$p-stages$run.txt" 2>&1
  done
  echo "# bench run $run (${SECONDS}s)"
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, sys, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/ab-*.csv")):
    kind = f.rsplit("-", 1)[1][:-5]
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit":
            d[(r["preset"], int(r["tokens"]))].append("%s %.1f (%s%%)" % (kind, float(r["median_us"]), r["percent_of_floor"][:4]))
for k in sorted(d):
    print(k[0], "T=%d" % k[1], " | ".join(d[k]))
PY
grep -h "refcheck\|error" "$OUT"/r/ab-*-new1.txt | head -5
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
