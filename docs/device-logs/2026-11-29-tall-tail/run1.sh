#!/usr/bin/env bash
# Step 41, call 1 ($1 = the commit; carry build/carry and run `tar -xJf build/carry/deps.tar.xz`
# first). The experts' tall tails on the 192-row tile (knobs gemm1.tall_tail, gemm2.tall_tail; off by
# default). Prediction: where the rows an expert average a multiple of 128 about half the experts'
# last 128-row tile is nearly empty; the tall tail computes about a sixth fewer tile rows there, so
# gemm1 and gemm2 -10..-15% at GPT-OSS T=4096 (128 rows an expert), less at 256 rows (Qwen3 T=4096,
# Mixtral T=1024: about a twelfth fewer), minus the second launch's own last round.
# 1. the tests of the change; 2. A/B in turns: heuristic, both GEMMs in parts, gemm1 only;
# 3. every other gpu test in the time left.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit gpu_tests
device_ctest_gpu r/ctest-new.txt -R "TwoPartsCoverEveryRow|TallTailRule|RejectsBadArguments|SetupRejectsBadJobs|TallTailsGiveTheSameLayer"
both="gemm1.tall_tail=on;gemm2.tall_tail=on"
device_ab r/ab/gpt-oss gpt-oss-120b 4096,8192 "" "$both" "gemm1.tall_tail=on"
device_ab r/ab/qwen3 qwen3-30b-a3b 2048,4096 "" "$both"
device_ab r/ab/mixtral mixtral-8x7b 512,1024 "" "$both"
device_ab r/ab/deepseek deepseek-v3 4096 "" "$both"
device_ctest_gpu r/ctest-gpu.txt -E "TwoPartsCoverEveryRow|TallTailRule|RejectsBadArguments|SetupRejectsBadJobs|TallTailsGiveTheSameLayer"
echo "# total $((SECONDS - DEVICE_START))s"
