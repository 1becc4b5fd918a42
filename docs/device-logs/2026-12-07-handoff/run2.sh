#!/usr/bin/env bash
# Session 33, second call: where the one-token kernel's time goes now (the last trace was step 11's,
# at 14592ff). The pack is main's code plus trace.patch (per-warp %globaltimer stamps of the last
# launch, printed at exit: `MOEKIT_DECODE_TRACE=1`; never committed; the 4-row kernel keeps its 0
# spills, the 6-row one spills 8 bytes, so GPT-OSS is not traced). Qwen3-30B-A3B T=1 twice, Mixtral
# and DeepSeek-V3 T=1 once; then the kernel alone under ncu at Qwen3 T=1 (speed of light, memory,
# warp states).
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-300}" "$1"
for run in "qwen3-30b-a3b a" "qwen3-30b-a3b b" "mixtral-8x7b a" "deepseek-v3 a"; do
  read -r p n <<< "$run"
  MOEKIT_DECODE_TRACE=1 timeout 120 "$B" bench --backend cuda --quant none --preset "$p" --tokens 1 --sets 2 --reps 5 --no-baseline \
    > "$OUT/r/trace-$p-$n.txt" 2>&1
  echo "== $p $n rc=$?"; grep -E "^ +1 +moekit|^#   " "$OUT/r/trace-$p-$n.txt"
done
timeout 150 ncu --clock-control none --kernel-name-base demangled --kernel-name regex:decode_token_kernel --launch-skip 3 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats \
  "$B" bench --backend cuda --quant none --preset qwen3-30b-a3b --tokens 1 --sets 1 --reps 1 --iters 1 --warmup 3 --no-baseline \
  > "$OUT/r/ncu-qwen3-1.txt" 2>&1
echo "== ncu rc=$?"; grep -E "Duration|DRAM Throughput|Memory Throughput|Stall|Warp Cycles|Issued Warp|No Eligible" "$OUT/r/ncu-qwen3-1.txt" | head -30
echo "# total $((SECONDS - DEVICE_START))s"
