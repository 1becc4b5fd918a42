#!/usr/bin/env bash
# Session 33, second call: where the one-token kernel's time goes now (the last trace was step 11's,
# at 14592ff). The pack is main's code plus trace.patch (per-warp %globaltimer stamps of the last
# launch, printed at exit: `MOEKIT_DECODE_TRACE=1`; never committed; the 4-row kernel keeps its 0
# spills, the 6-row one spills 8 bytes, so GPT-OSS is not traced). Qwen3-30B-A3B T=1, then the
# kernel alone under ncu there (speed of light, memory, warp states), then Qwen3 again, Mixtral and
# DeepSeek-V3 T=1 in the time left. Never ran in session 33 (no machine started); README.md says how to run it.
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-280}" "$1"
trace() {  # PRESET NAME
  [ "$(device_left)" -lt 60 ] && { echo "# skipped $1 $2"; return; }
  MOEKIT_DECODE_TRACE=1 timeout $(($(device_left) - 10)) "$B" bench --backend cuda --quant none --preset "$1" --tokens 1 --sets 2 --reps 5 \
    --no-baseline > "$OUT/r/trace-$1-$2.txt" 2>&1
  echo "== $1 $2 rc=$?"; grep -E "^ +1 +moekit|^#   |^# decode_token" "$OUT/r/trace-$1-$2.txt"
}
trace qwen3-30b-a3b a
if [ "$(device_left)" -gt 80 ]; then
  timeout $(($(device_left) - 40)) ncu --clock-control none --kernel-name-base demangled --kernel-name regex:decode_token_kernel --launch-skip 3 \
    --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section LaunchStats "$B" bench --backend cuda --quant none --preset qwen3-30b-a3b --tokens 1 --sets 1 --reps 1 --iters 1 --warmup 3 \
    --no-baseline > "$OUT/r/ncu-qwen3-1.txt" 2>&1
  echo "== ncu rc=$?"; grep -E "Duration|DRAM Throughput|Memory Throughput|Stall|Warp Cycles|Issued Warp|No Eligible" "$OUT/r/ncu-qwen3-1.txt" | head -30
fi
trace qwen3-30b-a3b b
trace mixtral-8x7b a
trace deepseek-v3 a
echo "# total $((SECONDS - DEVICE_START))s"
