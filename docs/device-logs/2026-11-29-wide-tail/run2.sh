#!/usr/bin/env bash
# Session 25 (step 43), call 2 ($1 = the commit; carry build/carry, `tar -xJf build/carry/deps.tar.xz`
# first). The experts' tall tails on a 192 x 256 tile (`gemm1.tall_tail=wide`, `gemm2.tall_tail=wide`)
# against the 192 x 128 one (`on`) and against none (`off`), at 128 and 256 rows an expected expert.
# Prediction: the 192 x 256 tile runs at about the 128 x 256 tile's rate per MMA (the same m64n128
# wgmmas, 1.5 times the rows), so an expert's tail costs 1.5 head tiles instead of 2: where half the
# experts have a tall tail that is -8..-12% of the GEMM's tiles; wins at every preset where the
# 192 x 128 tile lost (Qwen3, Mixtral), and a further -1..-3% at GPT-OSS and DeepSeek-V3. The risk:
# 192 accumulators a thread (spills), and gemm2's epilogue through one shared-memory stage.
# 1. A/B in turns (device_ab), 2. the gpu tests that run the new tile (the rest in call 3).
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit gpu_tests
off="gemm1.tall_tail=off;gemm2.tall_tail=off"
on="gemm1.tall_tail=on;gemm2.tall_tail=on"
wide="gemm1.tall_tail=wide;gemm2.tall_tail=wide"
w1="gemm1.tall_tail=wide;gemm2.tall_tail=off"
device_ab r/ab/mixtral-1024 mixtral-8x7b 1024 "" "$on" "$wide" "$w1"
device_ab r/ab/qwen3-4096 qwen3-30b-a3b 4096 "" "$on" "$wide" "$w1"
device_ab r/ab/gpt-oss-4096 gpt-oss-120b 4096 "" "$off" "$wide"
device_ab r/ab/mixtral-512 mixtral-8x7b 512 "" "$on" "$wide"
device_ab r/ab/qwen3-2048 qwen3-30b-a3b 2048 "" "$on" "$wide"
device_ab r/ab/deepseek-4096 deepseek-v3 4096 "" "$wide"
device_ab r/ab/gpt-oss-5664 gpt-oss-120b 5664 "" "$wide"
echo "# A/B done at $((SECONDS - DEVICE_START))s"
device_ctest_gpu r/ctest-wide.txt -R "TallTails|TwoParts|RejectsBadArguments|SixteenBit|TileOrderReaches|ClaimedTile|LaunchWithout|TwoSetups|Sm90GroupedGemm.F16"
echo "# total $((SECONDS - DEVICE_START))s"
