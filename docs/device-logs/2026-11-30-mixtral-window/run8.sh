#!/usr/bin/env bash
# Step 47 g, second call: where the head's tail split off pays. $1 = the commit; carry build/carry
# and `tar -xJf build/carry/deps.tar.xz` first; give the device tool this script alone.
# Call 7: gemm1 wide with gemm1.tail=off against the heuristic (tails off) -3.0% at T=736, -1.0% at
# 800, +4.0% at 864; its rule checks at T = 512 and 720 turned gemm2's split off too (gemm2 runs in
# one launch there, where the split pays: step 32), so they say nothing about the heads.
# 1. Mixtral interleaved, T = 736..832 in steps of 16: v0 the heuristic, v1 gemm1 wide, v2 gemm1 wide
#    with its split off. Predicted from call 7: v2 -1..-3% up to about 800, level or slower past.
# 2. Inside gemm1's window, gemm1's split alone off (v1) against the rule (v0): T = 512, 720; and
#    both off where both GEMMs run in parts, T = 544, 688. Predicted level to -2%.
# 3. Concatenated W13 at T = 736 and 800: v0 the heuristic, v1 gemm1 wide with its split off.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-480}" "$1" moekit
g1="gemm1.tall_tail=wide"
g1o="gemm1.tall_tail=wide;gemm1.tail=off"
for t in 736 752 768 784 800 816 832; do
  [ "$(device_left)" -lt 40 ] && { echo "# skipped T=$t"; continue; }
  device_ab r/ab/mixtral-8x7b-$t mixtral-8x7b $t "" "$g1" "$g1o"
done
for pt in 512:gemm1.tail=off 720:gemm1.tail=off "544:gemm1.tail=off;gemm2.tail=off" "688:gemm1.tail=off;gemm2.tail=off"; do
  [ "$(device_left)" -lt 30 ] && { echo "# skipped $pt"; continue; }
  device_ab "r/ab/mixtral-8x7b-${pt%%:*}-rule" mixtral-8x7b "${pt%%:*}" "" "${pt#*:}"
done
export DEVICE_AB_GATE_UP=concatenated
for t in 736 800; do
  [ "$(device_left)" -lt 30 ] && { echo "# skipped concatenated T=$t"; continue; }
  device_ab r/ab/mixtral-8x7b-$t-concatenated mixtral-8x7b $t "" "$g1o"
done
echo "# total $((SECONDS - DEVICE_START))s"
