#!/usr/bin/env bash
# Step 39, call 1 ($1 = the commit; carry build/carry, `tar -xJf build/carry/deps.tar.xz` first):
# re-tune bench/tune/h200.csv at the memory-bound points below the target (the rows there predate
# steps 24-38), each half with --compare (the heuristic re-measured in the same run), into a copy of
# the committed table. The journal lets a cut run's rows be read.
set -uo pipefail
source scripts/device-ab.sh
device_call_start "${LIMIT:-585}"
trap device_pack EXIT
scripts/device-build.sh "$1" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || exit 1
B=build/device/bin/moekit
cp bench/tune/h200.csv "$OUT/r/h200.csv"
for half in a b; do
  t0=$SECONDS
  timeout $(($(device_left) - 15)) "$B" tune -i bench/tune/retune_h200_$half.csv -o "$OUT/r/h200.csv" \
    --journal "$OUT/r/retune-$half.journal" --compare --no-progress > "$OUT/r/retune-$half.txt" 2>&1
  echo "# tune $half rc=$? $((SECONDS - t0))s"
  tail -25 "$OUT/r/retune-$half.txt"
done
echo "# total $((SECONDS - DEVICE_START))s"
