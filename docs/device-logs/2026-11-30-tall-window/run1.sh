#!/usr/bin/env bash
# Step 46: in the 192 x 128 tile's window (gemm1 136-176 rows an expected expert, gemm2 144-168;
# Mixtral's gemm1 144-168), the heuristic runs every M tile on 192 x 128, where the tall-tail knobs
# do nothing. Step 44 f's balanced routing put 128 x 256 + wide tails at -4..-14% against 128 x 256
# alone at 160 rows an expert, with every expert a whole tail on the 192 x 256 tile (1.5 head tiles
# for 2x the 192 x 128 tile's outputs); against the 192 x 128 tile it was never measured. $1 = the
# commit; carry build/carry and `tar -xJf build/carry/deps.tar.xz` first; give the device tool this
# script alone.
# Variants: v0 the heuristic (192 x 128 on both GEMMs where their windows hold), v1 both GEMMs on
# 128 x 256 with wide tails, v2 gemm1 only so (gemm2 the heuristic's).
# Predicted (perf-notes step 46 a): v1 -3..-8% at GPT-OSS and Mixtral, where experts hold 129-192 rows
# (no split); at Qwen3 T=2560 level or worse (small experts, step 36 a: the 192 x 256 layout lost there).
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-470}" "$1" moekit
wide="gemm1.tile=sm90_m128n256k64_c1x1;gemm2.tile=sm90_m128n256k64_c1x1;gemm1.tall_tail=wide;gemm2.tall_tail=wide"
wide1="gemm1.tile=sm90_m128n256k64_c1x1;gemm1.tall_tail=wide"
$B explain --arch sm90 --preset gpt-oss-120b --tokens 5120 --gate-up interleaved > "$OUT/r/explain-gpt-oss-5120.txt" 2>&1
$B explain --arch sm90 --preset mixtral-8x7b --tokens 640 --gate-up interleaved > "$OUT/r/explain-mixtral-640.txt" 2>&1
for pt in gpt-oss-120b:5120 mixtral-8x7b:640 gpt-oss-120b:4608 mixtral-8x7b:576 qwen3-30b-a3b:2560; do
  [ "$(device_left)" -lt 60 ] && { echo "# skipped $pt"; continue; }
  device_ab "r/ab/${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "" "$wide" "$wide1"
done
echo "# total $((SECONDS - DEVICE_START))s"
