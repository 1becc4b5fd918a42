#!/usr/bin/env bash
# The session's last device seconds (about 290): the tall tails' layer test with a concatenated W13
# case (gemm1 in parts on the plain epilogue, then the activation: the heuristic's plan for
# GPT-OSS-sized experts in that layout, never run at the layer level on the GPU), then, if time is
# left, Mixtral's concatenated gemm1 with `wide` tails against the heuristic (off) at T=624 (156
# rows). $1 = the commit; carry build/carry and `tar -xJf build/carry/deps.tar.xz` first; give the
# device tool this script alone.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-235}" "$1" moekit gpu_tests
device_ctest_gpu r/ctest-tails.txt -R "TallTailsGiveTheSameLayer"
if [ "$(device_left)" -gt 35 ]; then
  DEVICE_AB_GATE_UP=concatenated device_ab r/ab/mixtral-8x7b-624-concatenated mixtral-8x7b 624 "" "gemm1.tall_tail=wide"
fi
echo "# total $((SECONDS - DEVICE_START))s"
