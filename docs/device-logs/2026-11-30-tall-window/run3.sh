#!/usr/bin/env bash
# For the next session's first call (written in session 27, not run: its device time was spent).
# $1 = the commit (main at or after step 46's rule, 7c58b21). Carry build/carry, `tar -xJf
# build/carry/deps.tar.xz` first, give the device tool this script alone.
# 1. `ctest -L gpu`, all of it (about 370 s at 4 at a time, the longest first): step 46 changed which
#    plan the heuristic picks for experts of 6M elements or more at 136-176 rows an expected expert,
#    so every default-plan test at such shapes now runs 128 x 256 with wide tall tails. No GPU code
#    changed since e527833 (100/100 there).
# 2. In the time left, step 46's A/B at the windows' far ends (run2.sh's, not measured in call 2):
#    the rule (v0) against the old plan pinned, GPT-OSS T = 4352 and 5632 (gemm1 alone changed there)
#    and Mixtral T=672 (both GEMMs). Predicted: the rule -1..-5% at each.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit gpu_tests
device_ctest_gpu r/ctest-gpu.txt
old_gpt="gemm1.tile=sm90_m192n128k64_c1x1;gemm1.tall_tail=off"
old_mix="gemm1.tile=sm90_m192n128k64_c1x1;gemm2.tile=sm90_m192n128k64_c1x1;gemm1.tall_tail=off;gemm2.tall_tail=off"
[ "$(device_left)" -gt 50 ] && device_ab r/ab/mixtral-8x7b-672 mixtral-8x7b 672 "" "$old_mix"
[ "$(device_left)" -gt 45 ] && device_ab r/ab/gpt-oss-120b-5632 gpt-oss-120b 5632 "" "$old_gpt"
[ "$(device_left)" -gt 45 ] && device_ab r/ab/gpt-oss-120b-4352 gpt-oss-120b 4352 "" "$old_gpt"
echo "# total $((SECONDS - DEVICE_START))s"
