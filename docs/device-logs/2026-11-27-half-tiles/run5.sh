#!/usr/bin/env bash
# Call 5 ($1 = the commit; run with half-tiles.patch applied to the working tree, not committed):
# are half tiles faster where every tile is one (so no CTA runs ahead of the others)? Every expert at
# exactly 64 (Mixtral T=256) or 32 (GPT-OSS T=1024) rows (`--popularity balanced`), both GEMMs forced
# to the 128 x 256 cooperative tile, the tail split off, half tiles off against on (off, on, on, off),
# by step.
set -uo pipefail
COMMIT=$1
START=$SECONDS
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
T="gemm1.tile=sm90_m128n256k64_c1x1;gemm2.tile=sm90_m128n256k64_c1x1;gemm1.tail=off;gemm2.tail=off"
turn=0
for mode in off on on off; do
  turn=$((turn + 1))
  for p in mixtral-8x7b:256 gpt-oss-120b:1024; do
    tag=${p%%:*}-$mode-$turn
    timeout 30 $B bench --backend cuda --quant none --gate-up interleaved --sets 1 --reps 3 --no-baseline --stages \
      --popularity balanced --preset ${p%%:*} --tokens ${p#*:} --choice "$T;gemm1.half=$mode;gemm2.half=$mode" \
      --csv "$OUT/r/$tag.csv" > "$OUT/r/$tag.txt" 2>&1
    echo "# $tag rc=$? at $((SECONDS - START))s"
    grep -E "^ +[0-9]+ +(moekit|  cuda.gemm)" "$OUT/r/$tag.txt" | awk '{printf "%s %s %s\n", $1, $2, $3}'
  done
done
pack
