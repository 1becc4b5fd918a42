#!/usr/bin/env bash
# Step 39, call 2 ($1 = the commit; carry build/carry, `tar -xJf build/carry/deps.tar.xz` first):
# call 1 again (its packed results were over the device tool's size limit: the tuner's reference
# cache sat beside the table in $OUT/r), the cache now outside $OUT; then the points already at the
# target (retune_h200_c.csv) in the time left. Each half with --compare, into a copy of the
# committed table.
set -uo pipefail
source scripts/device-ab.sh
device_call_start "${LIMIT:-570}"
trap device_pack EXIT
scripts/device-build.sh "$1" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || exit 1
B=build/device/bin/moekit
cp bench/tune/h200.csv "$OUT/r/h200.csv"
for half in a b c; do
  t0=$SECONDS
  timeout $(($(device_left) - 10)) "$B" tune -i bench/tune/retune_h200_$half.csv -o "$OUT/r/h200.csv" \
    --journal "$OUT/r/retune-$half.journal" --reference-cache /tmp/moekit-refs --compare --no-progress \
    > "$OUT/r/retune-$half.txt" 2>&1
  echo "# tune $half rc=$? $((SECONDS - t0))s"
  grep -E "^shape|heuristic .* tuned|speedup|not valid" "$OUT/r/retune-$half.txt"
done
echo "# total $((SECONDS - DEVICE_START))s"
