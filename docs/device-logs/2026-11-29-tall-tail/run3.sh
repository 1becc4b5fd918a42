#!/usr/bin/env bash
# Step 41, call 3 ($1 = the commit; carry build/carry and run `tar -xJf build/carry/deps.tar.xz`
# first). Calls 1-2: gemm1 in parts, one launch after the other, wins at GPT-OSS T = 3584..4096
# (-0.8..-9% the layer, -5.1% gemm1 alone) and loses at Qwen3 (+5..+7%) and Mixtral (+0.7..+4%),
# where the two launches' rounds add up to as many as the one launch's. The tails now launch beside
# the heads (PDL, Sm90Overlap::kBeside): their CTAs take the SMs of the heads' last round. Prediction:
# the losses shrink by about a round of each GEMM (Qwen3 T=2048 gemm1: about 9 rounds of ~45 us
# tiles, so +5.8% becomes about level); GPT-OSS a little better than in order.
# 1. the tests of the change (the parts beside each other); 2. A/B in turns at three points.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-235}" "$1" moekit gpu_tests
device_ctest_gpu r/ctest-new.txt -R "TwoPartsCoverEveryRow|TallTailsGiveTheSameLayer"
g1="gemm1.tall_tail=on"
device_ab r/ab/gpt-oss gpt-oss-120b 4096 "" "$g1"
device_ab r/ab/qwen3 qwen3-30b-a3b 2048 "" "$g1"
device_ab r/ab/mixtral mixtral-8x7b 512 "" "$g1"
echo "# total $((SECONDS - DEVICE_START))s"
