#!/usr/bin/env bash
# Step 45: the tall tails on a shared grid (gemm{1,2}.tall_tail=wide_shared: the head launch on
# sm_count - g CTAs, the tail launch on g from the start, g from sm90_shared_tail_sms), against the
# tails beside the heads' last round (wide) and against one launch (off). $1 = the commit; carry
# build/carry and `tar -xJf build/carry/deps.tar.xz` first; give the device tool this script alone.
# Predicted (perf-notes step 45 a): where experts are split between the parts (257-320 rows) the
# shared grid reads a split expert's weights once, so wide_shared beats wide there and at least
# matches off: balanced 272 rows (all split) -3..-8% against off; uniform Qwen3 T=4096, Mixtral
# T=1024, GPT-OSS T=8192 (48% split) level with off or better; in step 42's window (no expert split
# at GPT-OSS, some at DeepSeek-V3) level with wide, or slower by the static split's imbalance (1-2%).
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-560}" "$1" moekit gpu_tests
off="gemm1.tall_tail=off;gemm2.tall_tail=off"
wide="gemm1.tall_tail=wide;gemm2.tall_tail=wide"
shared="gemm1.tall_tail=wide_shared;gemm2.tall_tail=wide_shared"
pin="gemm1.tile=sm90_m128n256k64_c1x1;gemm2.tile=sm90_m128n256k64_c1x1"
$B explain --arch sm90 --preset qwen3-30b-a3b --tokens 4096 --gate-up interleaved --choice "$shared" > "$OUT/r/explain-qwen3-4096-shared.txt" 2>&1
for pt in qwen3-30b-a3b:4352 gpt-oss-120b:8704 mixtral-8x7b:1088; do
  [ "$(device_left)" -lt 330 ] && { echo "# skipped balanced $pt"; continue; }
  DEVICE_AB_ARGS="--popularity balanced" device_ab "r/ab/balanced-${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "$pin;$off" "$pin;$wide" "$pin;$shared"
done
for pt in qwen3-30b-a3b:4096 mixtral-8x7b:1024 gpt-oss-120b:8192; do
  [ "$(device_left)" -lt 260 ] && { echo "# skipped $pt"; continue; }
  device_ab "r/ab/${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "" "$wide" "$shared"
done
for pt in gpt-oss-120b:4096 deepseek-v3:3072 gpt-oss-120b:5664; do
  [ "$(device_left)" -lt 150 ] && { echo "# skipped $pt"; continue; }
  device_ab "r/ab/${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "" "$shared"
done
echo "# A/B done at $((SECONDS - DEVICE_START))s"
device_ctest_gpu r/ctest-parts.txt -R 'TallTailRule|SharedGridSplitsTheSmsByWork|TwoPartsCoverEveryRow|TallTailsGiveTheSameLayer|Sm90GroupedGemm.RejectsBadArguments'
echo "# total $((SECONDS - DEVICE_START))s"
