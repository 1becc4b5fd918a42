#!/usr/bin/env bash
# Run in session 22 (call3/). $1 = the commit; carry build/carry and run
# `tar -xJf build/carry/deps.tar.xz` first. Step 39 left two questions that only the bench's
# protocol (CUDA-graph replay over rotated weight copies) can settle:
#   1. Mixtral's experts on the sm_90a 64 x 128 tile in its 1 x 2 cluster below 64 routed rows: the
#      tuner measured it 3% faster at T=8 (call 2: 628 against 647 us) and 4% at 1677791, where the
#      bench then measured it level (+0.3%). v0 the heuristic (stream_n8k128 up to 4 rows an expert,
#      stream_n16k128 to 10), v1 both GEMMs on the cluster tile, at T = 4, 8, 12, 16, 24.
#   2. The re-tuned rows of bench/tune/h200.csv with a tuner gain of 1% or more (DeepSeek-V3 T=256,
#      Mixtral T=256, GPT-OSS T=8): the bench with the table against without, two turns each.
# Then every gpu test in the time left.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit gpu_tests
C=sm90_m64n128k128_c1x2
for T in 4 8 12 16 24; do device_ab r/ab/mixtral-$T mixtral-8x7b $T "" "gemm1.tile=$C;gemm2.tile=$C"; done
mkdir -p "$OUT/r/table"
for turn in 1 2; do
  for p in "deepseek-v3 256" "mixtral-8x7b 256" "gpt-oss-120b 8"; do
    set -- $p
    for v in heur table; do
      env_table=()
      [ "$v" = table ] && env_table=(env MOEKIT_TUNING_TABLE=bench/tune/h200.csv)
      "${env_table[@]}" timeout 100 "$B" bench --backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3 \
        --preset "$1" --tokens "$2" --csv "$OUT/r/table/$1-$2-$v-$turn.csv" > "$OUT/r/table/$1-$2-$v-$turn.txt" 2>&1
      echo "$1 T=$2 $v turn $turn: $(grep -E "^ +$2  moekit" "$OUT/r/table/$1-$2-$v-$turn.txt" | awk '{print $3}')"
    done
  done
done | tee -a "$OUT/r/summary.txt"
device_ctest_gpu r/ctest-gpu.txt
echo "# total $((SECONDS - DEVICE_START))s"
