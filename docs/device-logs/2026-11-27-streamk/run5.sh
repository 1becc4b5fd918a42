#!/usr/bin/env bash
# Call 5 ($1 = the commit): where auto's rule should not fire (many whole rounds), auto against off
# in the order auto, off, off, auto (call 4 had auto first in each turn and saw +2.5% twice where
# the plan is the same): Mixtral T = 8192, 16384, GPT-OSS T = 4096, 16384, Qwen3 T = 4096, 16384,
# DeepSeek-V3 T = 4096, with `--stages`. First sm90_overlap's split variant (Sm90TailSplit::kAlways
# since call 3) once, to see it still runs.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit sm90_overlap -- -DCMAKE_CUDA_FLAGS= -DMOEKIT_BUILD_EXPERIMENTS=ON || { pack; exit 1; }
timeout 30 build/device/bin/sm90_overlap --experts 8 --rows 512 --n 4096 --k 14336 --spread 0.03 --variants 15,25 --rounds 3 --reps 5 \
  > "$OUT/r/overlap-mixtral-g2-r512.txt" 2>&1
echo "# sm90_overlap rc=$?"; grep -E "^(check|128x256|plain|# )" "$OUT/r/overlap-mixtral-g2-r512.txt"
B=build/device/bin/moekit
bench() {  # tag preset tokens choice
  [ "$(left)" -lt 40 ] && return
  timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --sets 1 --reps 3 --no-baseline --stages \
    --preset $2 --tokens $3 ${4:+--choice "$4"} --csv "$OUT/r/$1.csv" > "$OUT/r/$1.txt" 2>&1
  echo "# $1 rc=$? at $((SECONDS - START))s"
  grep -E "^ +[0-9]+ +(moekit|  cuda.gemm)" "$OUT/r/$1.txt" | awk '{printf "%s %s %s%s", $1, $2, $3, ($2=="moekit" ? " " $9 "\n" : "\n")}'
}
turn=0
for mode in auto off off auto; do
  turn=$((turn + 1))
  choice=""; [ $mode = off ] && choice="gemm1.tail=off;gemm2.tail=off"
  for p in mixtral-8x7b:8192,16384 gpt-oss-120b:4096,16384 qwen3-30b-a3b:4096,16384 deepseek-v3:4096; do
    bench ${p%%:*}-$mode-$turn ${p%%:*} ${p#*:} "$choice"
  done
done
pack
