#!/usr/bin/env bash
# Session 30, call 11 (right after call 10 on the same warm H100): `moekit bench --ab` on a GPU for the
# first time (call 10 had no time left for it), at Mixtral T = 736, 720, the rule against gemm1's
# tails off, then the full table's protocol (run3.sh's) on this H100.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-560}" "$1" moekit
for t in 736 720; do
  [ "$(device_left)" -gt 60 ] && device_ab_inproc r/ab-inproc/mixtral-8x7b-$t mixtral-8x7b $t "" "gemm1.tall_tail=off"
done
for mode in table det; do
  [ "$(device_left)" -lt 60 ] && { echo "# skipped $mode"; continue; }
  T0=$SECONDS
  extra=(); [ $mode = det ] && extra=(--deterministic)
  timeout $(($(device_left) - 5)) $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 \
    --no-baseline --refcheck --gate-up interleaved "${extra[@]}" --csv "$OUT/r/$mode.csv" --json "$OUT/r/$mode.json" > "$OUT/r/$mode.txt" 2>&1
  echo "== $mode rc=$? ($((SECONDS - T0))s)"
done
echo "# total $((SECONDS - DEVICE_START))s"
