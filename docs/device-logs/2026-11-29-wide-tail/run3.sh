#!/usr/bin/env bash
# Session 25 (step 43), call 3 ($1 = the commit; carry build/carry, `tar -xJf build/carry/deps.tar.xz`
# first). Call 2 found the 192 x 256 tails (`wide`) -3.6% against the 192 x 128 ones (`on`, the
# heuristic) at GPT-OSS T=4096, level at GPT-OSS T=5664 and DeepSeek-V3 T=4096, and losing at 256
# rows an expected expert (Qwen3, Mixtral) as `on` does. 1. the window's two other measured points,
# the heuristic against both GEMMs' tails wide (prediction: -1..-4% at GPT-OSS T=3584, level at
# DeepSeek-V3 T=3072); 2. every gpu test (the new tile is in every all-tiles test).
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit gpu_tests
wide="gemm1.tall_tail=wide;gemm2.tall_tail=wide"
device_ab r/ab/gpt-oss-3584 gpt-oss-120b 3584 "" "$wide"
device_ab r/ab/deepseek-3072 deepseek-v3 3072 "" "$wide"
echo "# A/B done at $((SECONDS - DEVICE_START))s"
device_ctest_gpu r/ctest-gpu.txt
echo "# total $((SECONDS - DEVICE_START))s"
