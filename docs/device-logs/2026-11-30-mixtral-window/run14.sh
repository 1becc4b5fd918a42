#!/usr/bin/env bash
# Session 32, first call: the `ctest -L gpu` owed since 818a4e8 (decide_tile reads the small tile's
# bound from the small_max its reason prints; host code of the CUDA backend that had not run on a
# GPU), on the CI build packed here (scripts/prepare-device-prebuilt.sh). Then explain at Mixtral
# T=736; on an H200, the four rows left in bench/tune/h200.csv against the heuristic (run13.sh's
# step 2); the full table and its deterministic twin (device_tables; none on an H200 since
# b7a1afa); in the time left the A/B/A/B at Mixtral T=720 and the Qwen3 T=1024 A/A.
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-585}" "$1"
device_ctest_gpu r/ctest-gpu.txt
"$B" explain --preset mixtral-8x7b --quant none -T 736 --gate-up interleaved > "$OUT/r/explain-mixtral-736.txt" 2>&1
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ "$(device_left)" -gt 150 ]; then
  t0=$SECONDS
  timeout $(($(device_left) - 120)) "$B" tune --run-config bench/tune/h200.csv --compare --backend cuda --no-progress \
    --reference-cache /tmp/refs > "$OUT/r/tune-rows.txt" 2>&1
  echo "== tune --run-config bench/tune/h200.csv --compare rc=$? ($((SECONDS - t0))s)"
fi
device_tables
export DEVICE_AB_SETS=12
[ "$(device_left)" -gt 60 ] && device_ab_inproc r/abab/mixtral-8x7b-720 mixtral-8x7b 720 "" "gemm1.tall_tail=off" "" "gemm1.tall_tail=off"
[ "$(device_left)" -gt 40 ] && device_ab_inproc r/aa/qwen3-1024 qwen3-30b-a3b 1024 "" ""
echo "# total $((SECONDS - DEVICE_START))s"
