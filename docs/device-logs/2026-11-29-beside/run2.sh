#!/usr/bin/env bash
# Step 42, call 2 ($1 = the commit; carry build/carry, `tar -xJf build/carry/deps.tar.xz` first).
# Call 1: the GEMMs in parts, the tails beside the heads, win only at GPT-OSS (gemm1 -4.4% at
# T=4096, both GEMMs -6.5%; T=8192 -0.5%), are level on DeepSeek-V3 (-0.5%) and lose or tie at
# Qwen3 and Mixtral (+4.0%, +4.7% at 256 rows; Mixtral T=512 gemm1 -0.7%, both +5.2%).
# Hypothesis: the parts win where the GEMM's N is not a multiple of 256, the 128 x 256 tile's
# width (GPT-OSS: gemm1 N = 5760, gemm2 N = 2880); every other measured GEMM's N is. Tested on
# shapes that differ from a preset in that one respect:
#   GPT-OSS with I = 2816 (gemm1 N = 5632 = 22 x 256): predicts gemm1 in parts level or worse,
#     gemm2 in parts (N = 2880) still a win;
#   Qwen3 with I = 704 (gemm1 N = 1408 = 5.5 x 256): predicts gemm1 in parts a win;
#   Qwen3 with H = 1920 (gemm2 N = 1920 = 7.5 x 256): predicts gemm2 in parts a win.
# Then the GPT-OSS window's lower edge (T=3584, 112 rows) and gemm2 alone in parts, and both GEMMs
# in parts at Qwen3 and DeepSeek-V3.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit
g1="gemm1.tall_tail=on"
g2="gemm2.tall_tail=on"
both="gemm1.tall_tail=on;gemm2.tall_tail=on"
DEVICE_AB_ARGS="--intermediate 2816" device_ab r/ab/gpt-oss-i2816-4096 gpt-oss-120b 4096 "" "$g1" "$both"
DEVICE_AB_ARGS="--intermediate 704" device_ab r/ab/qwen3-i704-2048 qwen3-30b-a3b 2048 "" "$g1"
DEVICE_AB_ARGS="--hidden 1920" device_ab r/ab/qwen3-h1920-2048 qwen3-30b-a3b 2048 "" "$g2"
device_ab r/ab/gpt-oss-3584 gpt-oss-120b 3584 "" "$g1" "$both"
device_ab r/ab/gpt-oss-4096 gpt-oss-120b 4096 "" "$g2"
device_ab r/ab/qwen3-2048 qwen3-30b-a3b 2048 "" "$both"
device_ab r/ab/deepseek-4096 deepseek-v3 4096 "" "$both"
echo "# total $((SECONDS - DEVICE_START))s"
