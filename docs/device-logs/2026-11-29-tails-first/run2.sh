#!/usr/bin/env bash
# Step 44 e's test, for the next session ($1 = a commit with whole-tails.patch applied: `git apply
# docs/device-logs/2026-11-29-tails-first/whole-tails.patch`, commit, then this; carry build/carry,
# `tar -xJf build/carry/deps.tar.xz` first; nothing after this script in the command). Written in
# session 26 and not run (its device time was spent). The reading: the parts read a split expert's
# weights twice (its head in one launch, its tail in the other).
# 1. ncu: DRAM bytes and time of each GEMM launch at Qwen3 T=4096 (48% of the experts split) with
#    both knobs off, wide and wide_whole, and at GPT-OSS T=4096 (none split) off and wide. Predicted:
#    wide reads about 0.58 GB more than off at Qwen3 (gemm1 0.40, gemm2 0.20), wide_whole about what
#    off reads; at GPT-OSS wide reads no more than off.
# 2. Balanced routing (every expert exactly T k / E rows): all tail at 160 rows (GPT-OSS T=5120,
#    Qwen3 T=2560, Mixtral T=640), all split at 272 (8704, 4352, 1088); off against wide, both GEMMs
#    pinned to 128 x 256 (at 160 rows the heuristic runs the 192 x 128 tile on both GEMMs, where the
#    tall-tail knobs do nothing: `moekit explain --arch sm90`). Predicted: wide wins at 160 and loses
#    at 272 on all three. Mixtral last, if time is left.
# 3. wide_whole against the heuristic (wide) in step 42's window, DeepSeek-V3 T = 3072, 4096 and
#    GPT-OSS T=4096, and against off at Qwen3 T=4096 and Mixtral T=1024. Predicted: level at GPT-OSS
#    (no expert split), better at DeepSeek-V3 (uneven routing splits some), level with off at Qwen3
#    and Mixtral.
# 4. The tests of the patch (TallTailRule, TwoPartsCoverEveryRow, TallTailsGiveTheSameLayer) in the
#    time left. The full `ctest -L gpu` wants a call of its own (about 370 s at 4 at a time).
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-570}" "$1" moekit gpu_tests
off="gemm1.tall_tail=off;gemm2.tall_tail=off"
wide="gemm1.tall_tail=wide;gemm2.tall_tail=wide"
whole="gemm1.tall_tail=wide_whole;gemm2.tall_tail=wide_whole"
# The GEMM launches of one layer call: 2 in one part each, 4 in two parts (step 24 f's method).
NCU="ncu --clock-control none --kernel-name-base demangled --kernel-name regex:MoeGroupShape --csv --print-units base \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct"
for run in "qwen3-30b-a3b 4096 off $off" "qwen3-30b-a3b 4096 wide $wide" "qwen3-30b-a3b 4096 whole $whole" \
           "gpt-oss-120b 4096 off $off" "gpt-oss-120b 4096 wide $wide"; do
  read -r p t name choice <<< "$run"
  launches=4; [ $name = off ] && launches=2
  timeout 90 $NCU --launch-count $launches $B bench --backend cuda --quant none --gate-up interleaved --preset $p --tokens $t \
    --sets 1 --reps 1 --iters 1 --warmup 0 --no-baseline --choice "$choice" > "$OUT/r/ncu-$p-$name.csv" 2> "$OUT/r/ncu-$p-$name.err"
  echo "# ncu $p $name rc=$?"
done
python3 docs/device-logs/2026-11-29-tails-first/ncu_summary.py "$OUT/r" | tee "$OUT/r/ncu-summary.txt"
echo "# ncu done at $((SECONDS - DEVICE_START))s"
pin="gemm1.tile=sm90_m128n256k64_c1x1;gemm2.tile=sm90_m128n256k64_c1x1"
for pt in gpt-oss-120b:5120 gpt-oss-120b:8704 qwen3-30b-a3b:2560 qwen3-30b-a3b:4352; do
  [ "$(device_left)" -lt 220 ] && { echo "# skipped balanced $pt"; continue; }
  DEVICE_AB_ARGS="--popularity balanced" device_ab "r/ab/balanced-${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "$pin;$off" "$pin;$wide"
done
for pt in deepseek-v3:3072 deepseek-v3:4096 gpt-oss-120b:4096; do
  [ "$(device_left)" -lt 150 ] && { echo "# skipped $pt"; continue; }
  device_ab "r/ab/${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "" "$whole"
done
for pt in qwen3-30b-a3b:4096 mixtral-8x7b:1024; do
  [ "$(device_left)" -lt 130 ] && { echo "# skipped $pt"; continue; }
  device_ab "r/ab/${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "" "$whole"
done
for pt in mixtral-8x7b:640 mixtral-8x7b:1088; do  # leaving the tests about 120 s
  [ "$(device_left)" -lt 250 ] && { echo "# skipped balanced $pt"; continue; }
  DEVICE_AB_ARGS="--popularity balanced" device_ab "r/ab/balanced-${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "$pin;$off" "$pin;$wide"
done
echo "# A/B done at $((SECONDS - DEVICE_START))s"
device_ctest_gpu r/ctest-parts.txt -R 'TallTailRule|TwoPartsCoverEveryRow|TallTailsGiveTheSameLayer'
echo "# total $((SECONDS - DEVICE_START))s"
