#!/usr/bin/env bash
# Call 7 ($1 = the commit): what uneven experts cost the layer: `moekit bench --popularity uniform`
# (random routing, as every table) against `--popularity balanced` (every expert exactly T*K/E rows)
# a second turn, balanced first this time, with each step timed (--stages), at the points where
# call 6 moved.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((250 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
for p in mixtral-8x7b:1024,4096 qwen3-30b-a3b:1024,4096,16384 gpt-oss-120b:4096,16384; do
  for pop in balanced uniform; do
    [ "$(left)" -lt 20 ] && break 2
    timeout $(( $(left) - 5 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 1 --reps 3 --no-baseline --stages \
      --popularity $pop --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/pop-${p%%:*}-$pop.csv" > "$OUT/r/pop-${p%%:*}-$pop.txt" 2>&1
    echo "# ${p%%:*} $pop rc=$? at $((SECONDS - START))s"; grep -E "^ +[0-9]+ +moekit" "$OUT/r/pop-${p%%:*}-$pop.txt" | awk '{print $1, $3, $6, $9}'
  done
done
pack
