#!/usr/bin/env bash
# Session 32, call 15 (warm H100 right after call 14; this is the command the call ran, inline):
# `bench --ab`'s noise with 24 sets: four copies of the heuristic's plan at Mixtral T=736, three at
# Qwen3 T=1, two at DeepSeek-V3 T=4096 (each vN against v0 is an A/A).
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt 330 "$1" > /dev/null
export DEVICE_AB_SETS=24
device_ab_inproc r/aaaa/mixtral-8x7b-736 mixtral-8x7b 736 "" "" "" ""
device_ab_inproc r/aa/qwen3-1 qwen3-30b-a3b 1 "" "" ""
device_ab_inproc r/aa/deepseek-v3-4096 deepseek-v3 4096 "" ""
echo "# total $((SECONDS - DEVICE_START))s"
cp "$OUT/r/summary.txt" "$OUT/summary-aa.txt" 2>/dev/null
true
