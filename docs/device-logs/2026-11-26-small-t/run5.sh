#!/usr/bin/env bash
# Step 21, device call 5 ($1 = the commit): gemm2 of the few-token kernel with 8 W2 rows an item
# (half the act re-reads from L2 per weight byte; MOEKIT_DECODE_TOKENS_VARIANT=1) against 4 rows
# (variant 0, the kernel as landed): the tests under both, then T = 2..8 with the kernel forced on
# (--fusion whole_layer=on) in turns, two runs each, and the stages once.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit test_decode_tokens_cuda || exit 1
mkdir -p "$OUT/r"
SECONDS=0
for v in 0 1; do
  (cd build/device && MOEKIT_DECODE_TOKENS_VARIANT=$v timeout 300 ctest -L gpu -R "DecodeTokens" -j 3 --output-on-failure) > "$OUT/r/ctest-v$v.txt" 2>&1
  echo "variant $v: $(grep 'tests passed' "$OUT/r/ctest-v$v.txt")"
done
echo "# tests ${SECONDS}s"
B=build/device/bin/moekit
for run in 1 2; do
  for spec in qwen3-30b-a3b:3,4,6,8 gpt-oss-120b:3,4,8 mixtral-8x7b:3,4,6,8 deepseek-v3:2,4; do
    p=${spec%%:*}; t=${spec#*:}
    for v in 0 1; do
      MOEKIT_DECODE_TOKENS_VARIANT=$v timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --preset $p --tokens $t --sets 2 --reps 5 --no-baseline \
        --fusion whole_layer=on --csv "$OUT/r/ab-$p-v$v-$run.csv" > "$OUT/r/ab-$p-v$v-$run.txt" 2>&1
    done
    [ $run = 1 ] && timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --preset $p --tokens $t --sets 2 --reps 5 --no-baseline \
        --fusion whole_layer=off --csv "$OUT/r/ab-$p-stages-1.csv" > "$OUT/r/ab-$p-stages-1.txt" 2>&1
  done
  echo "# bench run $run (${SECONDS}s)"
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, sys, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/ab-*.csv")):
    kind = f.rsplit("-", 2)[1]
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit":
            d[(r["preset"], int(r["tokens"]))].append("%s %.1f" % (kind, float(r["median_us"])))
for k in sorted(d):
    print(k[0], "T=%d" % k[1], " | ".join(sorted(d[k])))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
