#!/usr/bin/env bash
# Call 2 ($1 = the commit; src and tests as call 1's): the dips between the table's points (call 1's
# scan) against other kernel choices. Per preset two token counts, six variants in one process
# each: the heuristic (twice, first and last), both GEMMs on the 128 x 128 tile, gemm2 alone on it,
# both on the claimed tile order, both on the 64 x 128 ping-pong tile.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((585 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3 --stages"
V=("" "gemm1.tile=sm90_m128n128k128_c1x1;gemm2.tile=sm90_m128n128k128_c1x1" "gemm2.tile=sm90_m128n128k128_c1x1"
   "gemm1.order=claimed;gemm2.order=claimed" "gemm1.tile=sm90_m64n128k128_c1x1;gemm2.tile=sm90_m64n128k128_c1x1" "")
for pt in qwen3-30b-a3b:2048,3072 gpt-oss-120b:6144,8192 mixtral-8x7b:768,1536 deepseek-v3:2048,3072; do
  p=${pt%%:*}; t=${pt#*:}
  for i in 0 1 2 3 4 5; do
    T0=$SECONDS
    if [ -n "${V[$i]}" ]; then ch=(--choice "${V[$i]}"); else ch=(); fi
    timeout $(($(left) - 5)) $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$OUT/r/ab-$p-v$i-1.csv" > "$OUT/r/ab-$p-v$i-1.txt" 2>&1
    echo "== $p v$i rc=$? ($((SECONDS - T0))s)"
  done
done
python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r" 0 | grep moekit | tee "$OUT/r/summary.txt"
pack
