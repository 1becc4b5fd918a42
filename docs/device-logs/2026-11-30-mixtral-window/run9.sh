#!/usr/bin/env bash
# Step 47 g built: the head of a GEMM in parts runs without the tail split when the tails launch
# beside it (sm90_grouped_gemm.cpp), and Mixtral's gemm1 window reaches 184 rows (T=736). $1 = the
# commit; carry build/carry and `tar -xJf build/carry/deps.tar.xz` first; give the device tool this
# script alone. The session's last device seconds (about 330).
# 1. The GPU tests of the parts and the split (TwoPartsCoverEveryRow, TallTailsGiveTheSameLayer,
#    TailSplitMatchesTheReferenceAndRepeatsItsBits, TallTailRule, the refusals).
# 2. `moekit explain` at the window's new end (T = 736, 740).
# 3. The rule against gemm1's tails off at T = 736 and 720. Predicted from calls 7-8 (the same plans
#    through knobs): -3..-4% at 736, -4..-6% at 720.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-290}" "$1" moekit gpu_tests
device_ctest_gpu r/ctest-parts.txt -R 'TwoPartsCoverEveryRow|TallTailsGiveTheSameLayer|TailSplitMatchesTheReference|TallTailRule|RejectsBadArguments'
for t in 736 740; do
  echo "T=$t $($B explain --arch sm90 --preset mixtral-8x7b --tokens $t --gate-up interleaved | grep -E 'gemm[12]\.tall_tail' | awk '{printf "%s=%s ", $1, $2}')"
done
for t in 736 720; do
  [ "$(device_left)" -lt 25 ] && { echo "# skipped T=$t"; continue; }
  device_ab r/ab/mixtral-8x7b-$t-rule mixtral-8x7b $t "" "gemm1.tall_tail=off"
done
echo "# total $((SECONDS - DEVICE_START))s"
