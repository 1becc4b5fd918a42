#!/usr/bin/env bash
# Step 44's one call ($1 = the commit; carry build/carry, `tar -xJf build/carry/deps.tar.xz` first;
# nothing after this script in the command: its exit packs $OUT/r into r.tgz). The tails first
# (gemm1.tall_tail / gemm2.tall_tail = wide_first, on_first) against the heuristic:
# 1. in step 42's window (heuristic wide): GPT-OSS T = 4096, 5664, 3584, DeepSeek-V3 T=3072
#    (prediction: wide_first -1..-3% against wide, the last round's 1.5-sized tiles gone);
# 2. the GEMM tests of the parts in both orders and the layer's (TwoPartsCoverEveryRow,
#    TallTailsGiveTheSameLayer with wide_first, RejectsBadArguments);
# 3. outside the window (heuristic off): Qwen3 T=4096 and Mixtral T=1024, off against wide,
#    wide_first and on_first (prediction: the tails first recover 2-4 of wide's +6..+15%, not all).
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-550}" "$1" moekit gpu_tests
wf="gemm1.tall_tail=wide_first;gemm2.tall_tail=wide_first"
for pt in gpt-oss-120b:4096 gpt-oss-120b:5664 deepseek-v3:3072 gpt-oss-120b:3584; do
  [ "$(device_left)" -lt 200 ] && { echo "# skipped $pt"; continue; }
  device_ab "r/ab/${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "" "$wf"
done
echo "# window A/B done at $((SECONDS - DEVICE_START))s"
LIMIT_SAVE=$DEVICE_LIMIT; DEVICE_LIMIT=$(( SECONDS - DEVICE_START + 150 < DEVICE_LIMIT ? SECONDS - DEVICE_START + 150 : DEVICE_LIMIT ))
device_ctest_gpu r/ctest-parts.txt -R 'TwoPartsCoverEveryRow|TallTailsGiveTheSameLayer|Sm90GroupedGemm.RejectsBadArguments'
DEVICE_LIMIT=$LIMIT_SAVE
for pt in qwen3-30b-a3b:4096 mixtral-8x7b:1024; do
  [ "$(device_left)" -lt 70 ] && { echo "# skipped $pt"; continue; }
  device_ab "r/ab/${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "" "gemm1.tall_tail=wide;gemm2.tall_tail=wide" "$wf" \
    "gemm1.tall_tail=on_first;gemm2.tall_tail=on_first"
done
echo "# total $((SECONDS - DEVICE_START))s"
