#!/usr/bin/env bash
# Session 31, call 12 (written in session 30, rewritten in session 31 before it ever ran): the full
# `ctest -L gpu` owed since knob_space (explain's reasons, 15b399a .. d2f65fb) changed after session
# 30's last GPU run (893be5c), on the CI build packed here (scripts/prepare-device-prebuilt.sh: no
# build on the device; ten failed starts had left this session 614 s of device time, too few for a
# 170 s build and the 342 s suite). Then explain at Mixtral T=736 (the why lines), the full table
# and its deterministic twin (device_tables), and in the time left run12's original A/B/A/B runs
# of `bench --ab` (v2 against v0 is the A/A: the noise a paired change must beat).
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-585}" "$1"
device_ctest_gpu r/ctest-gpu.txt
"$B" explain --preset mixtral-8x7b --quant none -T 736 --gate-up interleaved > "$OUT/r/explain-mixtral-736.txt" 2>&1
device_tables
export DEVICE_AB_SETS=12
[ "$(device_left)" -gt 40 ] && device_ab_inproc r/abab/mixtral-8x7b-736 mixtral-8x7b 736 "" "gemm1.tall_tail=off" "" "gemm1.tall_tail=off"
[ "$(device_left)" -gt 40 ] && device_ab_inproc r/aa/qwen3-1024 qwen3-30b-a3b 1024 "" ""
echo "# total $((SECONDS - DEVICE_START))s"
