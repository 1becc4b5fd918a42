#!/usr/bin/env bash
# Call 2 ($1 = the commit): the two rules of step 35 in the library (Mixtral-sized experts keep the
# 64 x 128 tile up to 62 rows an expected expert; gemm2 streams under gemm1's tail up to 48 rows where
# its expert weight is small). The new heuristic (v0) against the old behaviour (v1) where each acts,
# two turns: Mixtral T = 224, 248 with both GEMMs forced onto 128 x 256; Qwen3 T = 640, 768 and GPT-OSS
# T = 1408 with MOEKIT_SM90_OVERLAP=0 (no pair above 32 rows before). Then every gpu test.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((585 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3"
LARGE="gemm1.tile=sm90_m128n256k64_c1x1;gemm2.tile=sm90_m128n256k64_c1x1"
one() {  # preset tokens variant turn
  local p=$1 t=$2 v=$3 turn=$4 ch=() env=()
  if [ $v = 1 ]; then
    if [ $p = mixtral-8x7b ]; then ch=(--choice "$LARGE"); else env=(MOEKIT_SM90_OVERLAP=0); fi
  fi
  env "${env[@]}" timeout 60 $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$OUT/r/$p/ab-$p-v$v-$turn.csv" > "$OUT/r/$p/ab-$p-v$v-$turn.txt" 2>&1
  echo "== $p v$v turn $turn rc=$?"
}
# POINTS (call 4, run4.sh) replaces the points; unset, they are call 2's.
for pt in ${POINTS:-mixtral-8x7b:224,248 qwen3-30b-a3b:640,768 gpt-oss-120b:1408}; do
  p=${pt%%:*}; t=${pt#*:}
  mkdir -p "$OUT/r/$p"
  one $p $t 0 1; one $p $t 1 1; one $p $t 1 2; one $p $t 0 2
  python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r/$p" 0 | grep moekit | tee -a "$OUT/r/summary.txt"
done
XT=${EXPLAIN_T:-248}
$B explain --preset mixtral-8x7b --quant none --gate-up interleaved -T $XT > "$OUT/r/explain-mixtral-T$XT.txt" 2>&1
grep -E "gemm[12]\.tile" "$OUT/r/explain-mixtral-T$XT.txt"
T0=$SECONDS
timeout $(($(left) - 10)) ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
echo "# total $((SECONDS - START))s"
pack
