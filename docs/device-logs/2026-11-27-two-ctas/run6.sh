#!/usr/bin/env bash
# Call 6 ($1 = the commit; src and tests as call 1's): call 5 found the 64 x 128 tile 7% faster than
# the heuristic's 128 x 256 at Mixtral T=192 (48 rows an expert) and 1.7% slower at T=256 (64). The
# rule gives large experts (N x K >= 12M) the 64 x 128 tile up to 32 rows an expected expert; here
# every point where a limit of 48 would change the tile (Mixtral T = 129..192, DeepSeek-V3 T =
# 513..768, GPT-OSS gemm1 T = 1025..1536) and two beyond (Mixtral T = 208, 224): the heuristic (v0)
# against both GEMMs on the 64 x 128 tile (v1), in two turns (v0 v1, then v1 v0).
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
SMALL="gemm1.tile=sm90_m64n128k128_c1x1;gemm2.tile=sm90_m64n128k128_c1x1"
one() {  # preset tokens variant turn
  local p=$1 t=$2 v=$3 turn=$4
  if [ $v = 0 ]; then ch=(); else ch=(--choice "$SMALL"); fi
  T0=$SECONDS
  timeout $(($(left) - 5)) $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$OUT/r/$p/ab-$p-v$v-$turn.csv" > "$OUT/r/$p/ab-$p-v$v-$turn.txt" 2>&1
  echo "== $p v$v turn $turn rc=$? ($((SECONDS - T0))s)"
}
for pt in mixtral-8x7b:144,160,176,192,208,224 deepseek-v3:576,640,704,768 gpt-oss-120b:1152,1280,1408,1536; do
  p=${pt%%:*}; t=${pt#*:}
  mkdir -p "$OUT/r/$p"
  one $p $t 0 1; one $p $t 1 1; one $p $t 1 2; one $p $t 0 2
  python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r/$p" 0 | grep moekit | tee -a "$OUT/r/summary.txt"
done
pack
