#!/usr/bin/env bash
# Session 35, call 4: run3.sh cut to the device time left after the session's failed starts (about
# 150 s): decode.g2_item's A/B in one process (bench --ab, 12 sets) at GPT-OSS-120B T=1 (auto = 6x3
# against 6x2 and 4x3, and an A/A copy), then the one-token kernel's tests (ctest -R
# DecodeTokenCuda, with Gemm2ItemShapesGiveTheSameBits), then Qwen3-30B-A3B T=1 (auto = 4x3 against
# 6x2), each only while time is left.
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-150}" "$1"
export DEVICE_AB_SETS=12
device_ab_inproc r/ab/gptoss-1 gpt-oss-120b 1 "" "decode.g2_item=6x2" "decode.g2_item=4x3" ""
if [ "$(device_left)" -gt 30 ]; then
  device_ctest_gpu r/ctest-decode-token.txt -R DecodeTokenCuda
  grep -E "tests passed|Failed|Passed" "$OUT/r/ctest-decode-token.txt" | tail -14
fi
[ "$(device_left)" -gt 40 ] && device_ab_inproc r/ab/qwen3-1 qwen3-30b-a3b 1 "" "decode.g2_item=6x2"
[ "$(device_left)" -gt 70 ] && device_ab_inproc r/ab/deepseek-1 deepseek-v3 1 "" "decode.g2_item=6x2"
[ "$(device_left)" -gt 70 ] && device_ab_inproc r/ab/mixtral-1 mixtral-8x7b 1 "" "decode.g2_item=6x2"
echo "# total $((SECONDS - DEVICE_START))s"
