#!/usr/bin/env bash
# Step 45 b: does a shared grid pay when its split is right? Branch exp/shared-grid-g (main's
# shared-grid.patch plus MOEKIT_EXPERIMENT_TAIL_SMS, which sets the tail launch's CTAs by hand for
# wide_shared; never on main). At balanced routing, 272 rows an expert, every expert is one head
# tile and one tail a weight column, so the right split is known: about 79 of 132 SMs for the tails
# (1.5 head tiles each) on both GEMMs of all three presets. $1 = the commit; carry build/carry and
# `tar -xJf build/carry/deps.tar.xz` first; give the device tool this script alone.
# Predicted (perf-notes step 45 b): if co-scheduling lets a split expert's two parts share its weight
# tiles through L2, wide_shared at g = 79 beats off (-5..-10%) where wide loses (+1..+12%), and the
# sweep is flat within a few % around 79; if it does not, wide_shared at g = 79 is no better than
# wide, and the step 45 idea (a device-decided split) is not worth building.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-470}" "$1" moekit
off="gemm1.tall_tail=off;gemm2.tall_tail=off"
wide="gemm1.tall_tail=wide;gemm2.tall_tail=wide"
shared="gemm1.tall_tail=wide_shared;gemm2.tall_tail=wide_shared"
pin="gemm1.tile=sm90_m128n256k64_c1x1;gemm2.tile=sm90_m128n256k64_c1x1"
sweep() {  # DIR PRESET TOKENS CHOICE G...
  local d="$OUT/$1" p=$2 t=$3 ch=$4 g
  shift 4
  mkdir -p "$d"
  for g in "$@"; do
    MOEKIT_EXPERIMENT_TAIL_SMS=$g timeout 100 "$B" bench --backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3 \
      --preset "$p" --tokens "$t" ${DEVICE_AB_ARGS:-} --choice "$ch" --csv "$d/g$g.csv" > "$d/g$g.txt" 2>&1
    echo "$p T=$t tail_sms=$g median_us $(python3 -c "import csv,sys; print([r['median_us'] for r in csv.DictReader(open(sys.argv[1])) if r['method'].strip()=='moekit'][0])" "$d/g$g.csv")" | tee -a "$OUT/r/summary.txt"
  done
}
for pt in qwen3-30b-a3b:4352 gpt-oss-120b:8704 mixtral-8x7b:1088; do
  [ "$(device_left)" -lt 90 ] && { echo "# skipped balanced $pt"; continue; }
  export DEVICE_AB_ARGS="--popularity balanced"
  export MOEKIT_EXPERIMENT_TAIL_SMS=79
  device_ab "r/ab/balanced-${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "$pin;$off" "$pin;$wide" "$pin;$shared"
  sweep "r/sweep/balanced-${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "$pin;$shared" 60 70 88 100
  unset DEVICE_AB_ARGS MOEKIT_EXPERIMENT_TAIL_SMS
done
[ "$(device_left)" -gt 60 ] && sweep r/sweep/qwen3-30b-a3b-4096 qwen3-30b-a3b 4096 "$shared" 30 42 55 70
echo "# total $((SECONDS - DEVICE_START))s"
