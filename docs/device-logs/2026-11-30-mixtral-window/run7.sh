#!/usr/bin/env bash
# Step 47 g: the head launch's tail split against the tails beside it. $1 = the commit; carry
# build/carry and `tar -xJf build/carry/deps.tar.xz` first; give the device tool this script alone.
# Call 6's ncu: at Mixtral T=736 gemm1's head (2 experts of 193-256 rows, 448 tiles of 128 x 256:
# 3 rounds and 52 tiles on 132 CTAs) takes 197.3 us and its tails (6 experts, 672 tiles of 192 x 256:
# 5 rounds and 12) 505.5, 702.8 together against 693.0 for the one launch (14 rounds): each launch
# pays its own last round. PDL should let the tails' CTAs fill the SMs the head's last round
# leaves, but the head runs that last round stream-K (the tail split: 3 rounds, 52 <= 132 / 2), which
# spreads it over all 132 CTAs, so none leaves early. gemm1.tail=off turns the split off (the tails'
# own launch never splits: claimed order, and a 192 x 256 partial does not fit a slot).
# Predicted: with the head's split off, gemm1 in parts at T=736 about (448 x 49.4 + 672 x 84.5) / 132
# + half a tail tile, 640 us against 693: the layer -3..-6% against the heuristic (tails off); level
# where the head is empty or has no split (T = 560, 624); unknown at GPT-OSS T=4096.
# Variants, Mixtral interleaved: v0 the heuristic, v1 gemm1 wide, v2 gemm1 wide with gemm1.tail=off.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-500}" "$1" moekit
g1="gemm1.tall_tail=wide"
g1o="gemm1.tall_tail=wide;gemm1.tail=off"
both_o="gemm1.tall_tail=wide;gemm2.tall_tail=wide;gemm1.tail=off;gemm2.tail=off"
for t in 736 800 864; do
  [ "$(device_left)" -lt 60 ] && { echo "# skipped T=$t"; continue; }
  device_ab r/ab/mixtral-8x7b-$t mixtral-8x7b $t "" "$g1" "$g1o"
done
# Inside the window: the rule (v0) against the rule with the split off in the heads (v1).
for pt in mixtral-8x7b:720 mixtral-8x7b:512 mixtral-8x7b:560; do
  [ "$(device_left)" -lt 60 ] && { echo "# skipped $pt"; continue; }
  device_ab "r/ab/${pt%%:*}-${pt#*:}-rule" "${pt%%:*}" "${pt#*:}" "" "gemm1.tail=off;gemm2.tail=off"
done
for t in 960 1024; do
  [ "$(device_left)" -lt 60 ] && { echo "# skipped T=$t"; continue; }
  device_ab r/ab/mixtral-8x7b-$t mixtral-8x7b $t "" "$g1o" "$both_o"
done
for pt in mixtral-8x7b:480 gpt-oss-120b:4096 deepseek-v3:3072; do
  [ "$(device_left)" -lt 60 ] && { echo "# skipped $pt"; continue; }
  v1="gemm1.tail=off;gemm2.tail=off"
  [ "${pt%%:*}" = mixtral-8x7b ] && v1="$g1o"
  device_ab "r/ab/${pt%%:*}-${pt#*:}-split" "${pt%%:*}" "${pt#*:}" "" "$v1"
done
echo "# total $((SECONDS - DEVICE_START))s"
