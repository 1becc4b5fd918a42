#!/usr/bin/env bash
# Call 1 of step 38 ($1 = the commit; carry build/carry and run `tar -xJf build/carry/deps.tar.xz`
# first). run4.sh of 2026-11-28-gemm2-tall found the 64 x 128 tile's 1 x 2 cluster 0.8-7.6% faster
# than the heuristic's tile without one at Mixtral T = 32..128 and DeepSeek-V3 T = 8..32 on the
# H200. Step 24 dropped it on an H100 at every preset's T = 16..512. This call sweeps every point
# where the heuristic runs the 64 x 128 tile, on all four presets:
#   v0  the heuristic (64 x 128 without a cluster, automatic order, overlap by its rule)
#   v1  both GEMMs on the 64 x 128 tile in its 1 x 2 cluster (fixed order, no overlap: the cluster
#       allows neither)
#   v2  the tile without a cluster, fixed order and no overlap (v1 without the cluster)
# Turns v0 v1 v2 then v2 v1 v0; summary.txt has each variant's best turn against v0's.
set -uo pipefail
COMMIT=$1
START=$SECONDS
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$OUT/r"; }
trap pack EXIT
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || exit 1
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3"
VARIANTS=(""
  "gemm1.tile=sm90_m64n128k128_c1x2;gemm2.tile=sm90_m64n128k128_c1x2"
  "gemm1.order=fixed;gemm2.order=fixed;gemm2.overlap=off")
for pt in ${POINTS:-qwen3-30b-a3b:16,64,256,512,1024 gpt-oss-120b:32,128,512,1024,1536 deepseek-v3:64,256,512,1024 mixtral-8x7b:32,64,192,248}; do
  p=${pt%%:*} t=${pt#*:} d="$OUT/r/$p"
  mkdir -p "$d"
  for vt in 0:1 1:1 2:1 2:2 1:2 0:2; do
    v=${vt%%:*} turn=${vt#*:} ch=()
    [ -n "${VARIANTS[$v]}" ] && ch=(--choice "${VARIANTS[$v]}")
    timeout 150 $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$d/ab-$p-v$v-$turn.csv" > "$d/ab-$p-v$v-$turn.txt" 2>&1 \
      || echo "== $p v$v turn $turn rc=$?"
  done
  python3 docs/device-logs/2026-11-27-final/summarize.py "$d" 0 | grep moekit | tee -a "$OUT/r/summary.txt"
done
for pt in qwen3-30b-a3b:1024 gpt-oss-120b:1536 deepseek-v3:1024 mixtral-8x7b:248; do
  $B explain --preset ${pt%%:*} --quant none --gate-up interleaved -T ${pt#*:} > "$OUT/r/explain-${pt%%:*}-T${pt#*:}.txt" 2>&1
done
echo "# total $((SECONDS - START))s"
