#!/usr/bin/env bash
# Written in session 31 for the next call (on the prebuilt build, scripts/prepare-device-prebuilt.sh):
# what call 12 had no time for, and the tuned H200 table checked against the heuristic.
#  1. explain at Mixtral T=736 (the why lines); the full table and its deterministic twin
#     (device_tables): none on an H200 since b7a1afa.
#  2. On an H200 only: `moekit tune --run-config bench/tune/h200.csv --compare`, each row of the
#     table at the token count it was tuned at against the heuristic, 60 s kept for step 3. Since
#     session 32 the table holds the four rows whose tuned gain beat their noise (docs/tune.md); they
#     predate steps 36-47, and step 40's rule keeps a row only where the bench confirms it.
#     Predicted: DeepSeek-V3 T=512 and T=8 still faster than the heuristic, Mixtral T=256 and Qwen3
#     T=4096 level within 1%.
#  3. In the time left, the rest of run12.sh's A/B/A/B and A/A runs of `bench --ab` (call 12 ran
#     T=736: the A/A -0.1%, its sets -3.3..+5.8%).
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-585}" "$1"
"$B" explain --preset mixtral-8x7b --quant none -T 736 --gate-up interleaved > "$OUT/r/explain-mixtral-736.txt" 2>&1
device_tables
# `tune --run-config` prints each row as soon as it has run with the table and without it (since
# 5e85be1), so a call cut short keeps the rows it finished.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ "$(device_left)" -gt 90 ]; then
  t0=$SECONDS
  timeout $(($(device_left) - 60)) "$B" tune --run-config bench/tune/h200.csv --compare --backend cuda --no-progress \
    --reference-cache /tmp/refs > "$OUT/r/tune-rows.txt" 2>&1
  echo "== tune --run-config bench/tune/h200.csv --compare rc=$? ($((SECONDS - t0))s)"
  grep -c speedup "$OUT/r/tune-rows.txt"
fi
export DEVICE_AB_SETS=12
[ "$(device_left)" -gt 60 ] && device_ab_inproc r/abab/mixtral-8x7b-720 mixtral-8x7b 720 "" "gemm1.tall_tail=off" "" "gemm1.tall_tail=off"
[ "$(device_left)" -gt 40 ] && device_ab_inproc r/aa/qwen3-1024 qwen3-30b-a3b 1024 "" ""
echo "# total $((SECONDS - DEVICE_START))s"
