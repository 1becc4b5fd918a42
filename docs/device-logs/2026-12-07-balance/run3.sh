#!/usr/bin/env bash
# Session 35, call 3 (never ran), on the CI build with g2-item.patch applied (28150d3, reverted in
# main) packed here (scripts/prepare-device-prebuilt.sh):
#  1. the one-token kernel's tests (ctest -R DecodeTokenCuda, Gemm2ItemShapesGiveTheSameBits new:
#     every decode.g2_item value bitwise the default's);
#  2. decode.g2_item A/B in one process (bench --ab, 12 sets): GPT-OSS-120B T=1 (auto = 6x3, no
#     early loads) against 6x2 (early loads, 12 chunks a lane a pass) and 4x3, and an A/A copy;
#     Qwen3-30B-A3B, DeepSeek-V3 and Mixtral T=1 (auto = 4x3) against 6x2;
#  3. the GPT-OSS-120B trace with SM ids (run2.sh's, which never started), and on an H200 the owed
#     tuned rows and table in the time left.
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-585}" "$1"
device_ctest_gpu r/ctest-decode-token.txt -R DecodeTokenCuda
grep -E "tests passed|Failed|Passed" "$OUT/r/ctest-decode-token.txt" | tail -14
export DEVICE_AB_SETS=12
device_ab_inproc r/ab/gptoss-1 gpt-oss-120b 1 "" "decode.g2_item=6x2" "decode.g2_item=4x3" ""
device_ab_inproc r/ab/qwen3-1 qwen3-30b-a3b 1 "" "decode.g2_item=6x2"
device_ab_inproc r/ab/deepseek-1 deepseek-v3 1 "" "decode.g2_item=6x2" "decode.g2_item=6x3"
device_ab_inproc r/ab/mixtral-1 mixtral-8x7b 1 "" "decode.g2_item=6x2"
xz -dc build/carry/moekit-trace.xz > /tmp/moekit-trace && chmod +x /tmp/moekit-trace
device_trace_warps /tmp/moekit-trace gpt-oss-120b
device_h200_owed
echo "# total $((SECONDS - DEVICE_START))s"
