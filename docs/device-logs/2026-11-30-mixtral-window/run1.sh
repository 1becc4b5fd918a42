#!/usr/bin/env bash
# Step 47: how wide Mixtral's window for the wide tall tails is. Step 46 gives Mixtral-8x7B (experts
# of 59M and 117M elements) 128 x 256 with `wide` tails only inside the 192 x 128 tile's Mixtral
# window, 144-168 rows an expected expert (T = 576..672); outside it both knobs are off. Step 43 had
# `wide` at -1.2% at T=512 (128 rows) and +15% at T=1024 (256 rows, most experts split).
# $1 = the commit; carry build/carry and `tar -xJf build/carry/deps.tar.xz` first; give the device
# tool this script alone.
# Variants: v0 the heuristic (128 x 256, tails off at every point here), v1 both GEMMs `wide`, v2
# gemm1 only (step 37: Mixtral's gemm2 lost on 192-row tiles at 176 rows).
# Predicted (perf-notes step 47 a): v1 -2..-6% at 136-140 rows (T = 544, 560; about half the experts
# past 128 rows, each then one 192-row tile instead of two 128-row ones), -1..-3% at 128 (T=512);
# at 172-176 rows (T = 688, 704) -1..-4%, fading as experts past 192 rows (split, weights read
# twice) grow common; at 184 (T=736) level or slower.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-540}" "$1" moekit
wide="gemm1.tile=sm90_m128n256k64_c1x1;gemm2.tile=sm90_m128n256k64_c1x1;gemm1.tall_tail=wide;gemm2.tall_tail=wide"
wide1="gemm1.tile=sm90_m128n256k64_c1x1;gemm2.tile=sm90_m128n256k64_c1x1;gemm1.tall_tail=wide"
for t in 544 688 560 704 512 736; do
  $B explain --arch sm90 --preset mixtral-8x7b --tokens $t --gate-up interleaved > "$OUT/r/explain-mixtral-$t.txt" 2>&1
done
for t in 544 688 560 704 512 736; do
  [ "$(device_left)" -lt 50 ] && { echo "# skipped T=$t"; continue; }
  device_ab "r/ab/mixtral-8x7b-$t" mixtral-8x7b "$t" "" "$wide" "$wide1"
done
echo "# total $((SECONDS - DEVICE_START))s"
