#!/usr/bin/env bash
# For the next session's first call (written in session 29, not run: its device time was spent).
# $1 = the commit (main at or after 06352e7); carry build/carry, `tar -xJf build/carry/deps.tar.xz`
# first, give the device tool this script alone. About 35 + 170 + 335 + 30 + 40 + 110 s.
# 1. `ctest -L gpu` in full after step 47 g (the head of a GEMM in parts without its tail split
#    beside the tails: host code on the launch path; call 9 ran the six tests of the parts and the
#    split, 6/6), with Sm90GroupedGemm.TheHeadSplitsItsLastRoundOnlyWhenTheTailsRunAfterIt, written
#    after call 9 and never run before this call.
# 2. The built rule against gemm1's tails off at Mixtral T = 736 and 720 (call 9 had no time left):
#    predicted from calls 7-8, where knobs gave the same plans: -3..-4% at 736, -4..-6% at 720.
# 3. The full table and its deterministic twin (run3.sh's protocol): no table point's plan changed;
#    GPT-OSS T=4096's gemm2 head may meet the split's conditions in some routing draws (step 47 g:
#    -1.7% with both heads' splits off, within the spread), so every point is predicted within the
#    run-to-run spread of b7a1afa's table.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit gpu_tests
device_ctest_gpu r/ctest-gpu.txt
for t in 736 720; do
  [ "$(device_left)" -gt 40 ] && device_ab r/ab/mixtral-8x7b-$t-rule mixtral-8x7b $t "" "gemm1.tall_tail=off"
done
# 2b. The same two comparisons with `moekit bench --ab` (session 29: the plans in turns inside one
#     process, paired by set; never run on a GPU before this call): its per-set changes against
#     device_ab's two processes a variant. Predicted: the same sign, and sets within about 2% of
#     each other where device_ab's turns spread 2-4%.
for t in 736 720; do
  [ "$(device_left)" -gt 60 ] && device_ab_inproc r/ab-inproc/mixtral-8x7b-$t mixtral-8x7b $t "" "gemm1.tall_tail=off"
done
for mode in table det; do
  [ "$(device_left)" -lt 60 ] && { echo "# skipped $mode"; continue; }
  T0=$SECONDS
  extra=(); [ $mode = det ] && extra=(--deterministic)
  timeout $(($(device_left) - 5)) $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 \
    --no-baseline --refcheck --gate-up interleaved "${extra[@]}" --csv "$OUT/r/$mode.csv" --json "$OUT/r/$mode.json" > "$OUT/r/$mode.txt" 2>&1
  echo "== $mode rc=$? ($((SECONDS - T0))s)"
done
echo "# total $((SECONDS - DEVICE_START))s"
