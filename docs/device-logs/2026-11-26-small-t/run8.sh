#!/usr/bin/env bash
# Step 21, device call 8 ($1 = the commit): the GEMV kernels' shared helpers (decode_gemv.cuh:
# unpack8, load_w2_pass, wait_act_pass, dot_w2_pass, wait_column8, now used by both kernels). The
# decode tests on the new code; then the one-token kernel as it was (decode_token-d2ab160.cu,
# swapped in and rebuilt) against the new one at T=1, and the few-token kernel at T = 2..8, in turns.
set -uo pipefail
COMMIT=$1
D=docs/device-logs/2026-11-26-small-t
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit test_decode_tokens_cuda test_decode_token_cuda test_decode_layer_cuda test_moe_cuda || exit 1
mkdir -p "$OUT/r"
SECONDS=0
(cd build/device && timeout 400 ctest -L gpu -R "DecodeTokens|DecodeToken|DecodeLayer|MoeCuda" -j 3 --output-on-failure) > "$OUT/r/ctest-decode.txt" 2>&1
echo "$(grep 'tests passed' "$OUT/r/ctest-decode.txt") (${SECONDS}s)"
cp build/device/bin/moekit /tmp/moekit-new
cp src/cuda/moe/decode_token.cu /tmp/decode_token-new.cu
cp $D/decode_token-d2ab160.cu src/cuda/moe/decode_token.cu
cmake --build build/device -j "$(nproc)" --target moekit > "$OUT/r/build-old.txt" 2>&1 || { tail -20 "$OUT/r/build-old.txt"; exit 1; }
cp build/device/bin/moekit /tmp/moekit-old
cp /tmp/decode_token-new.cu src/cuda/moe/decode_token.cu
echo "# old binary (${SECONDS}s)"
for run in 1 2 3; do
  for v in old new; do
    timeout 90 /tmp/moekit-$v bench --backend cuda --quant none --gate-up interleaved --tokens 1 --sets 2 --reps 5 --no-baseline \
      --csv "$OUT/r/t1-$v$run.csv" > "$OUT/r/t1-$v$run.txt" 2>&1
  done
done
timeout 120 /tmp/moekit-new bench --backend cuda --quant none --gate-up interleaved --tokens 2,3,4,5,6,7,8 --sets 2 --reps 5 --no-baseline --refcheck \
  --csv "$OUT/r/small.csv" > "$OUT/r/small.txt" 2>&1
echo "# bench (${SECONDS}s)"
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + "/t1-*.csv")):
    v = f.rsplit("-", 1)[1][:3]
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit": d[r["preset"]][v].append(float(r["median_us"]))
for p in sorted(d): print(p, "T=1 old", " ".join("%.1f" % x for x in d[p]["old"]), "| new", " ".join("%.1f" % x for x in d[p]["new"]))
for r in csv.DictReader(open(sys.argv[1] + "/small.csv")):
    if r["method"] == "moekit": print(r["preset"], "T=" + r["tokens"], "%.1f" % float(r["median_us"]), r["percent_of_floor"], r["refcheck"])
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
