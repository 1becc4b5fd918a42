#!/usr/bin/env bash
# Session 25 (step 43), call 4 ($1 = the commit; carry build/carry, `tar -xJf build/carry/deps.tar.xz`
# first), on the machine calls 2-3 left warm (an incremental build). The 192 x 256 tails against the
# heuristic's 192 x 128 ones at the five window points of calls 2-3 once more (wide against on there:
# GPT-OSS T=3584 +1.4%, T=4096 -3.6%, T=5664 +0.3%, DeepSeek-V3 T=3072 -2.6%, T=4096 +0.5%), to tell
# a rule from the spread.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-200}" "$1" moekit
wide="gemm1.tall_tail=wide;gemm2.tall_tail=wide"
device_ab r/ab/gpt-oss-4096 gpt-oss-120b 4096 "" "$wide"
device_ab r/ab/deepseek-3072 deepseek-v3 3072 "" "$wide"
device_ab r/ab/gpt-oss-3584 gpt-oss-120b 3584 "" "$wide"
device_ab r/ab/gpt-oss-5664 gpt-oss-120b 5664 "" "$wide"
device_ab r/ab/deepseek-4096 deepseek-v3 4096 "" "$wide"
echo "# total $((SECONDS - DEVICE_START))s"
