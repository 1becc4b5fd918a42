#!/usr/bin/env bash
# Session 34, first call: session 33's call 2 (where the one-token kernel's time goes now; the last
# trace was step 11's, at 14592ff), then on an H200 what is owed there since session 29.
# Carry build/carry: prebuilt.tar.xz (main's CI build, scripts/prepare-device-prebuilt.sh) and
# moekit-trace.xz (the same moekit with ../2026-12-07-handoff/trace.patch applied to
# decode_token.cu: per-warp %globaltimer stamps of the last launch, printed at exit with
# MOEKIT_DECODE_TRACE=1; never committed).
#  1. The trace at Qwen3-30B-A3B T=1 (twice), Mixtral and DeepSeek-V3 T=1 (the trace binary).
#  2. ncu on main's one-token kernel at Qwen3 T=1 (speed of light, memory, warp states), then at
#     DeepSeek-V3 T=1.
#  3. On an H200 only: the four rows of bench/tune/h200.csv against the heuristic, then the full
#     table and its deterministic twin (none on an H200 since b7a1afa).
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-590}" "$1"
xz -dc build/carry/moekit-trace.xz > /tmp/moekit-trace && chmod +x /tmp/moekit-trace
trace() {  # PRESET NAME
  [ "$(device_left)" -lt 60 ] && { echo "# skipped $1 $2"; return; }
  MOEKIT_DECODE_TRACE=1 timeout $(($(device_left) - 10)) /tmp/moekit-trace bench --backend cuda --quant none --preset "$1" --tokens 1 \
    --sets 2 --reps 5 --no-baseline > "$OUT/r/trace-$1-$2.txt" 2>&1
  echo "== trace $1 $2 rc=$?"; grep -E "^ +1 +moekit|^#   |^# decode_token" "$OUT/r/trace-$1-$2.txt"
}
ncu_one() {  # PRESET
  [ "$(device_left)" -lt 80 ] && { echo "# skipped ncu $1"; return; }
  timeout $(($(device_left) - 40)) ncu --clock-control none --kernel-name-base demangled --kernel-name regex:decode_token_kernel \
    --launch-skip 3 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section SchedulerStats --section LaunchStats --section Occupancy "$B" bench --backend cuda --quant none --preset "$1" --tokens 1 \
    --sets 1 --reps 1 --iters 1 --warmup 3 --no-baseline > "$OUT/r/ncu-$1-1.txt" 2>&1
  echo "== ncu $1 rc=$?"
  grep -E "Duration|DRAM Throughput|Memory Throughput|Stall|Warp Cycles|Issued Warp|No Eligible|Registers|Achieved Occ" "$OUT/r/ncu-$1-1.txt" | head -30
}
trace qwen3-30b-a3b a
ncu_one qwen3-30b-a3b
trace qwen3-30b-a3b b
trace mixtral-8x7b a
trace deepseek-v3 a
ncu_one deepseek-v3
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ "$(device_left)" -gt 200 ]; then
  t0=$SECONDS
  timeout $(($(device_left) - 150)) "$B" tune --run-config bench/tune/h200.csv --compare --backend cuda --no-progress \
    --reference-cache /tmp/refs > "$OUT/r/tune-rows.txt" 2>&1
  echo "== tune --run-config bench/tune/h200.csv --compare rc=$? ($((SECONDS - t0))s)"
  device_tables
fi
echo "# total $((SECONDS - DEVICE_START))s"
