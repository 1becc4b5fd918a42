#!/usr/bin/env bash
# Session 35, call 2: where GPT-OSS-120B T=1's time goes (83.5% of the floor on the last H100 table,
# 12 µs over it): the one-token kernel's per-warp stamps with SM ids (the traced binary of session
# 34's run5.sh, build/carry/moekit-trace.xz) at GPT-OSS-120B and, beside it, Qwen3-30B-A3B T=1.
# GPT-OSS runs the 6-row gemm2 kernel (no early loads) and its walk deals 11,520 gemm1 items of
# 11.5 KB and 1,920 gemm2 items of 34.6 KB over 2,112 warps: warps 0..767 get 103.7 KB, 768..959
# 69.1 KB, 960..2111 92.2 KB (the busiest 1.10x the mean), so CTAs 0..47 should end last.
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-150}" "$1"
xz -dc build/carry/moekit-trace.xz > /tmp/moekit-trace && chmod +x /tmp/moekit-trace
device_trace_warps /tmp/moekit-trace gpt-oss-120b qwen3-30b-a3b
"$B" explain --backend cuda --preset gpt-oss-120b --tokens 1 > "$OUT/r/explain-gptoss-1.txt" 2>&1
echo "# total $((SECONDS - DEVICE_START))s"
