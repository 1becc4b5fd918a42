#!/usr/bin/env bash
# Step 21, device call 7 ($1 = the commit): gemm2's rows per item at 8 unless the busiest warp gets
# over 1.25 times the rows of 4 (call 6's strict rule gave Qwen3 T = 5 and 8 four rows): T = 2..8,
# the default plan against the stages, in turns, two runs each.
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
  timeout 120 $B bench --backend cuda --quant none --tokens 2,3,4,5,6,7,8 --sets 2 --reps 5 --no-baseline --refcheck \
    --gate-up interleaved --csv "$OUT/r/small$run.csv" > "$OUT/r/small$run.txt" 2>&1
  timeout 120 $B bench --backend cuda --quant none --tokens 2,3,4,5,6,7,8 --sets 2 --reps 5 --no-baseline \
    --gate-up interleaved --fusion whole_layer=off --csv "$OUT/r/small-stages$run.csv" > "$OUT/r/small-stages$run.txt" 2>&1
done
echo "== small T (${SECONDS}s)"
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/small-summary.txt"
import csv, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for kind in ("small", "small-stages"):
    for run in (1, 2):
        for r in csv.DictReader(open(f"{sys.argv[1]}/{kind}{run}.csv")):
            if r["method"] == "moekit":
                d[(r["preset"], int(r["tokens"]))][kind].append(float(r["median_us"]))
for k in sorted(d):
    a = d[k]["small"]; b = d[k]["small-stages"]
    print(k[0], "T=%d" % k[1], "default", " ".join("%.1f" % x for x in a), "| stages", " ".join("%.1f" % x for x in b),
          "| %+.1f%%" % (100 * (min(a) / min(b) - 1)))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
