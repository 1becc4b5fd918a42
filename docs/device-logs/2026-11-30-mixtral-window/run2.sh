#!/usr/bin/env bash
# Step 47 b: the rule built (Mixtral-8x7B's experts, 48M elements or more, run wide tall tails on
# gemm1 at 128-176 rows an expected expert and on gemm2 at 136-172; moe_launch.h
# kSm90HugeExpertWide*). $1 = the commit; carry build/carry and `tar -xJf build/carry/deps.tar.xz`
# first; give the device tool this script alone.
# 1. `moekit explain` at the windows' ends; the tall tails' GPU tests and the host rule tests.
# 2. The rule (v0) against the old default, tails off on both GEMMs (v1), at call 1's five points
#    where the rule acts (predicted as call 1 measured: -4..-16%, within about 2 points).
# 3. The edges once more: gemm1 wide at 120 and 124 rows (T = 480, 496) and at 180 (T=720), gemm2
#    wide at 132 (T=528), each against the rule.
# 4. `moekit bench --refcheck` at T = 544 and 704 (the layer against the CPU reference at full size).
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-560}" "$1" moekit gpu_tests
for t in 508 512 544 688 704 708; do
  $B explain --arch sm90 --preset mixtral-8x7b --tokens $t --gate-up interleaved > "$OUT/r/explain-mixtral-$t.txt" 2>&1
  echo "T=$t $(grep -E 'gemm[12]\.tall_tail' "$OUT/r/explain-mixtral-$t.txt" | awk '{printf "%s=%s ", $1, $2}')"
done
device_ctest_gpu r/ctest-tails.txt -R "TallTail|TwoParts"
ctest --test-dir build/device -R "Knobs|CommittedTables" -j 4 > "$OUT/r/ctest-host.txt" 2>&1
echo "# host rule tests rc=$?: $(grep -E 'tests passed|tests failed' "$OUT/r/ctest-host.txt")"
off="gemm1.tall_tail=off;gemm2.tall_tail=off"
for t in 544 560 688 512 704; do
  [ "$(device_left)" -lt 60 ] && { echo "# skipped T=$t"; continue; }
  device_ab "r/ab/mixtral-8x7b-$t" mixtral-8x7b "$t" "" "$off"
done
[ "$(device_left)" -gt 60 ] && device_ab r/ab/mixtral-8x7b-480 mixtral-8x7b 480 "" "gemm1.tall_tail=wide"
[ "$(device_left)" -gt 60 ] && device_ab r/ab/mixtral-8x7b-496 mixtral-8x7b 496 "" "gemm1.tall_tail=wide"
[ "$(device_left)" -gt 60 ] && device_ab r/ab/mixtral-8x7b-720 mixtral-8x7b 720 "" "gemm1.tall_tail=wide"
[ "$(device_left)" -gt 60 ] && device_ab r/ab/mixtral-8x7b-528 mixtral-8x7b 528 "" "gemm1.tall_tail=wide;gemm2.tall_tail=wide"
# Every token checked (--refcheck-tokens T): an expert's tail rows are its last tokens, which the
# default 64 would miss.
for t in 544 704; do
  [ "$(device_left)" -lt 110 ] && { echo "# skipped refcheck T=$t"; continue; }
  timeout 100 "$B" bench --backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3 \
    --preset mixtral-8x7b --tokens $t --refcheck --refcheck-tokens $t > "$OUT/r/refcheck-mixtral-$t.txt" 2>&1
  echo "# refcheck T=$t rc=$?: $(grep -E '^ +[0-9]+ +moekit' "$OUT/r/refcheck-mixtral-$t.txt")"
done
echo "# total $((SECONDS - DEVICE_START))s"
