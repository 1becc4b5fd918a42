#!/usr/bin/env bash
# Step 21, device call 10 ($1 = the commit): the few-token kernel with its hidden rows in 16 bits
# where float does not fit the shared-memory budget (DeepSeek-V3 T = 5..7, declined before): its
# tests; T = 2..8 on DeepSeek-V3 and Qwen3 (whose rows stay float), default against the stages, in
# turns, two runs each.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit test_decode_tokens_cuda || exit 1
mkdir -p "$OUT/r"
B=build/device/bin/moekit
SECONDS=0
(cd build/device && timeout 300 ctest -L gpu -R "DecodeTokens" -j 3 --output-on-failure) > "$OUT/r/ctest-decode.txt" 2>&1
echo "$(grep 'tests passed' "$OUT/r/ctest-decode.txt") (${SECONDS}s)"
for run in 1 2; do
  timeout 120 $B bench --backend cuda --quant none --preset deepseek-v3,qwen3-30b-a3b --tokens 2,3,4,5,6,7,8 --sets 2 --reps 5 --no-baseline --refcheck \
    --gate-up interleaved --csv "$OUT/r/small$run.csv" > "$OUT/r/small$run.txt" 2>&1
  timeout 120 $B bench --backend cuda --quant none --preset deepseek-v3,qwen3-30b-a3b --tokens 2,3,4,5,6,7,8 --sets 2 --reps 5 --no-baseline \
    --gate-up interleaved --fusion whole_layer=off --csv "$OUT/r/small-stages$run.csv" > "$OUT/r/small-stages$run.txt" 2>&1
done
echo "== small T (${SECONDS}s)"
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/small-summary.txt"
import csv, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
ref = {}
for kind in ("small", "small-stages"):
    for run in (1, 2):
        for r in csv.DictReader(open(f"{sys.argv[1]}/{kind}{run}.csv")):
            if r["method"] == "moekit":
                d[(r["preset"], int(r["tokens"]))][kind].append(float(r["median_us"]))
                if kind == "small": ref[(r["preset"], int(r["tokens"]))] = r["refcheck"]
for k in sorted(d):
    a = d[k]["small"]; b = d[k]["small-stages"]
    print(k[0], "T=%d" % k[1], "default", " ".join("%.1f" % x for x in a), "| stages", " ".join("%.1f" % x for x in b),
          "| %+.1f%%" % (100 * (min(a) / min(b) - 1)), "| refcheck", ref[k])
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
