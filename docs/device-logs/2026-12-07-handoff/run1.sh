#!/usr/bin/env bash
# Session 33, first call, on the CI build packed here (scripts/prepare-device-prebuilt.sh):
#  1. the one-token kernel's hand-off (`decode.handoff=on`: a warp's first gemm2 weights loaded in
#     its last gemm1 step) against the default (off), `bench --ab` A/B/A/B at Qwen3-30B-A3B T=1 with
#     --json (the against_v0 block, never run on a GPU), A/B at Mixtral and DeepSeek-V3 T=1 (4-row
#     gemm2 items; GPT-OSS runs 6-row items, where the knob changes nothing);
#  2. the full `ctest -L gpu`, owed since af77ce2 (the tuner's tie rule, bench --json's against_v0)
#     and for the hand-off's new test;
#  3. explain at Qwen3 T=1; the full table and its deterministic twin in the time left.
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-585}" "$1"
export DEVICE_AB_SETS=12
DEVICE_AB_ARGS="--json $OUT/r/ab-qwen3-1.json" device_ab_inproc r/ab/qwen3-1 qwen3-30b-a3b 1 "" "decode.handoff=on" "" "decode.handoff=on"
device_ab_inproc r/ab/mixtral-1 mixtral-8x7b 1 "" "decode.handoff=on"
device_ab_inproc r/ab/deepseek-1 deepseek-v3 1 "" "decode.handoff=on"
device_ctest_gpu r/ctest-gpu.txt
"$B" explain --preset qwen3-30b-a3b --quant none -T 1 > "$OUT/r/explain-qwen3-1.txt" 2>&1
device_tables
echo "# total $((SECONDS - DEVICE_START))s"
