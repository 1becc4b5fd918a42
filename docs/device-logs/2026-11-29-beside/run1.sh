#!/usr/bin/env bash
# Step 42, call 1 ($1 = the commit; carry build/carry and run `tar -xJf build/carry/deps.tar.xz`
# first). Step 41 measured the tails beside the heads (Sm90Overlap::kBeside) at three points only and
# left 027fd41 (one launch_sm90_grouped_gemm_in_parts for the stage and the tests) unrun on a GPU.
# 1. A/B in turns: gemm1 in parts beside the heads where step 41 measured only in stream order (256
#    rows an expected expert, DeepSeek-V3), and both GEMMs in parts beside at the two points where
#    gemm1 alone won. Prediction: beside takes 3-4 points off each in-order figure (step 41 d), so
#    256-row points about level (+0..+1%), DeepSeek-V3 about -2%, gemm2 beside a further -1..-2% at
#    GPT-OSS T=4096.
# 2. every gpu test (`ctest -L gpu`, about 300 s four at a time), in the time left.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit gpu_tests
g1="gemm1.tall_tail=on"
both="gemm1.tall_tail=on;gemm2.tall_tail=on"
device_ab r/ab/gpt-oss-4096 gpt-oss-120b 4096 "" "$g1" "$both"
device_ab r/ab/mixtral-512 mixtral-8x7b 512 "" "$g1" "$both"
device_ab r/ab/gpt-oss-8192 gpt-oss-120b 8192 "" "$g1"
device_ab r/ab/qwen3-4096 qwen3-30b-a3b 4096 "" "$g1"
device_ab r/ab/mixtral-1024 mixtral-8x7b 1024 "" "$g1"
device_ab r/ab/deepseek-4096 deepseek-v3 4096 "" "$g1"
device_ab r/ab/deepseek-2048 deepseek-v3 2048 "" "$g1"
echo "# A/B done at $((SECONDS - DEVICE_START))s"
device_ctest_gpu r/ctest-gpu.txt
echo "# total $((SECONDS - DEVICE_START))s"
