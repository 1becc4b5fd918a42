#!/usr/bin/env bash
# Session 31, call 13: the rest of run12.sh on the machine call 12 left warm (call 12's full
# `ctest -L gpu` takes most of a call), then the tuned table checked against the heuristic.
#  1. explain at Mixtral T=736 (the why lines), the A/B/A/B and A/A runs of `bench --ab`, as run12.sh
#     (v2 against v0 is the A/A: its set range is the noise a paired change must beat).
#  2. The full table and its deterministic twin (device_tables): none on an H200 since b7a1afa.
#  3. On an H200 only: `moekit tune --run-config bench/tune/h200.csv --compare`, every row of the
#     table at the token count it was tuned at against the heuristic. The rows predate steps 36-47
#     (docs/tune.md); step 40's rule keeps a row only where the bench confirms it. Predicted: most
#     rows at or slower than the heuristic, GPT-OSS T=4096's (fixed order, no tall tails) among them.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit
"$B" explain --preset mixtral-8x7b --quant none -T 736 --gate-up interleaved > "$OUT/r/explain-mixtral-736.txt" 2>&1
export DEVICE_AB_SETS=12
for t in 736 720; do
  [ "$(device_left)" -gt 200 ] && device_ab_inproc r/abab/mixtral-8x7b-$t mixtral-8x7b $t "" "gemm1.tall_tail=off" "" "gemm1.tall_tail=off"
done
[ "$(device_left)" -gt 200 ] && device_ab_inproc r/aa/qwen3-1024 qwen3-30b-a3b 1024 "" ""
device_tables
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ "$(device_left)" -gt 60 ]; then
  t0=$SECONDS
  timeout $(($(device_left) - 5)) "$B" tune --run-config bench/tune/h200.csv --compare --backend cuda --no-progress \
    --reference-cache /tmp/refs > "$OUT/r/tune-h200-compare.txt" 2>&1
  echo "== tune --run-config h200.csv --compare rc=$? ($((SECONDS - t0))s)"
  tail -45 "$OUT/r/tune-h200-compare.txt"
fi
echo "# total $((SECONDS - DEVICE_START))s"
