#!/usr/bin/env bash
# Call 7 ($1 = the commit): the layer (not `--stages`) at Mixtral T = 512..4096 with gemm2's tail
# auto against off (gemm1 at its default in both), ABAB three times, three sets of five samples each:
# calls 3 and 4 read the layer's median slower with auto at T=1024 in 4 of 5 pairs while the gemm2
# step was 2% faster.
set -uo pipefail
COMMIT=$1
START=$SECONDS
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
for turn in 1 2 3; do
  for mode in auto off; do
    choice=""; [ $mode = off ] && choice="gemm2.tail=off"
    timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --sets 3 --reps 5 --no-baseline \
      --preset mixtral-8x7b --tokens 512,1024,2048,4096 ${choice:+--choice "$choice"} --csv "$OUT/r/layer-$mode-$turn.csv" > "$OUT/r/layer-$mode-$turn.txt" 2>&1
    echo "# $mode $turn rc=$? at $((SECONDS - START))s: $(grep -E '^ +[0-9]+ +moekit' "$OUT/r/layer-$mode-$turn.txt" | awk '{printf "%s %s %s; ", $1, $3, $9}')"
  done
done
pack
