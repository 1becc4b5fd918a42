#!/usr/bin/env bash
# Call 1 ($1 = the commit): the routing kernel's L2 prefetch of W13's first MB (layer.prefetch).
# One build; then, in two turns, every preset at its stage-pipeline points from T=16 to 1024 with
# layer.prefetch = 0, 16, 32, 48 (whole layer timed: the prefetch costs the routing and saves
# gemm1). Then the gpu tests, if the time allows.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((580 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r/build" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
for turn in 1 2; do
  for p in qwen3-30b-a3b:16,32,64,128,256,512,1024 mixtral-8x7b:64,256,1024 gpt-oss-120b:64,256,1024 deepseek-v3:256,1024; do
    for v in 0 16 32 48; do
      [ "$(left)" -lt 40 ] && break 3
      T0=$SECONDS
      timeout $(( $(left) - 20 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline \
        --choice "layer.prefetch=$v" --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/ab-${p%%:*}-p$v-$turn.csv" > "$OUT/r/ab-${p%%:*}-p$v-$turn.txt" 2>&1
      echo "# ${p%%:*} p$v turn $turn rc=$? $((SECONDS - T0))s"
    done
  done
done
python3 docs/device-logs/2026-11-27-layer-prefetch/summarize.py "$OUT/r" | tee "$OUT/r/summary.txt"
pack
