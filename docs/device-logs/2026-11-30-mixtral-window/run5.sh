#!/usr/bin/env bash
# For the next session's first call (written in session 28, not run: its device time was spent).
# $1 = the commit (main at or after 1359d5e); carry build/carry, `tar -xJf build/carry/deps.tar.xz`
# first, give the device tool this script alone. About 35 + 170 + 330 + 60 s.
# 1. `ctest -L gpu` in full at step 47's final rule (no kernel changed since 18d054d's 100/100; the
#    rule moves only Mixtral-sized experts, which no gpu test uses, and TallTailsGiveTheSameLayer
#    gained a concatenated case, which passed alone in call 4).
# 2. The concatenated-W13 window's edges for Mixtral (gemm1 and gemm2 at 136-172 since step 47 d,
#    measured at T=624 only): the rule (v0) against gemm1 off (v1) at T = 544 and 688 (its ends),
#    and gemm1 wide (v1) against the rule at T = 528 and 704 (just outside). Predicted from the
#    interleaved gemm1 (call 1-2): -5..-14% at the ends, level to -6% just outside.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit gpu_tests
device_ctest_gpu r/ctest-gpu.txt
export DEVICE_AB_GATE_UP=concatenated
[ "$(device_left)" -gt 45 ] && device_ab r/ab/mixtral-8x7b-544-concatenated mixtral-8x7b 544 "" "gemm1.tall_tail=off"
[ "$(device_left)" -gt 45 ] && device_ab r/ab/mixtral-8x7b-688-concatenated mixtral-8x7b 688 "" "gemm1.tall_tail=off"
[ "$(device_left)" -gt 45 ] && device_ab r/ab/mixtral-8x7b-528-concatenated mixtral-8x7b 528 "" "gemm1.tall_tail=wide"
[ "$(device_left)" -gt 45 ] && device_ab r/ab/mixtral-8x7b-704-concatenated mixtral-8x7b 704 "" "gemm1.tall_tail=wide"
echo "# total $((SECONDS - DEVICE_START))s"
