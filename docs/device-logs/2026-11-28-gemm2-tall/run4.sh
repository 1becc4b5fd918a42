#!/usr/bin/env bash
# Not run yet: the next session's first call ($1 = the commit; carry build/carry and run
# `tar -xJf build/carry/deps.tar.xz` first). Step 37 g found Mixtral T=64 7-10% and DeepSeek-V3 T=8
# 2-5% slower on the H200 than at 7e801fc, where both ran the 64 x 128 tile in a 1 x 2 cluster. Three
# H100-made rules act at these points since then; each is undone alone against the heuristic (v0):
#   v1  both GEMMs on the 64 x 128 tile in its 1 x 2 cluster (step 24 dropped the cluster to 32 rows)
#   v2  gemm2.overlap=off (step 27 c: gemm2's first weights under gemm1's tail)
#   v3  both orders fixed (steps 24-25: the automatic, claimed, tile order)
# Turns v0 v1 v2 v3 then v3 v2 v1 v0, one set of three samples each; summary.txt has each variant's
# best turn against v0's. Everything under $OUT/r is packed into r.tgz at the end and r/ removed
# (the device tool returns a handful of files).
set -uo pipefail
COMMIT=$1
START=$SECONDS
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$OUT/r"; }  # r/ left beside it would crowd r.tgz out
trap pack EXIT
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || exit 1
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3"
VARIANTS=(""
  "gemm1.tile=sm90_m64n128k128_c1x2;gemm2.tile=sm90_m64n128k128_c1x2"
  "gemm2.overlap=off"
  "gemm1.order=fixed;gemm2.order=fixed")
for pt in ${POINTS:-mixtral-8x7b:32,64,128 deepseek-v3:8,16,32}; do
  p=${pt%%:*} t=${pt#*:} d="$OUT/r/$p"
  mkdir -p "$d"
  for vt in 0:1 1:1 2:1 3:1 3:2 2:2 1:2 0:2; do
    v=${vt%%:*} turn=${vt#*:} ch=()
    [ -n "${VARIANTS[$v]}" ] && ch=(--choice "${VARIANTS[$v]}")
    timeout 120 $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$d/ab-$p-v$v-$turn.csv" > "$d/ab-$p-v$v-$turn.txt" 2>&1 \
      || echo "== $p v$v turn $turn rc=$?"
  done
  python3 docs/device-logs/2026-11-27-final/summarize.py "$d" 0 | grep moekit | tee -a "$OUT/r/summary.txt"
done
for t in 8 64; do
  for p in mixtral-8x7b deepseek-v3; do
    $B explain --preset $p --quant none --gate-up interleaved -T $t > "$OUT/r/explain-$p-T$t.txt" 2>&1
  done
done
echo "# total $((SECONDS - START))s"
