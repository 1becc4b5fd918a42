#!/usr/bin/env bash
# Session 32, call 17 (warm H100; the command the call ran, inline): run16.sh's two DeepSeek-V3 rows
# again as A/B only. Four variants of DeepSeek-V3 hold four copies of its 22.5 GB of expert weights
# (with the rotated copies more), which the H100's 80 GB could not: call 16's two runs stopped with
# "out of memory", naming the tensor, before timing anything.
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt 200 "$1" > /dev/null
export DEVICE_AB_SETS=12 DEVICE_AB_GATE_UP=concatenated
c8=$(sed -n 's/.*deepseek-v3-8 deepseek-v3 8 "" "\([^"]*\)".*/\1/p' docs/device-logs/2026-11-30-mixtral-window/run16.sh)
c512=$(sed -n 's/.*deepseek-v3-512 deepseek-v3 512 "" "\([^"]*\)".*/\1/p' docs/device-logs/2026-11-30-mixtral-window/run16.sh)
device_ab_inproc r/rows2/deepseek-v3-8 deepseek-v3 8 "" "$c8"
device_ab_inproc r/rows2/deepseek-v3-512 deepseek-v3 512 "" "$c512"
echo "# total $((SECONDS - DEVICE_START))s"
