#!/usr/bin/env bash
# Call 7 ($1 = the commit): the final tree, with step 34's rule (the 64 x 128 tile up to 48 rows an
# expected expert, kSm90SmallTileMaxRows). Every gpu test, then the new heuristic (v0) against the
# old rule's tiles forced (v1: 128 x 256 for the large experts' GEMMs) where the rule acts, two turns.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((585 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout 280 ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3"
LARGE="gemm1.tile=sm90_m128n256k64_c1x1;gemm2.tile=sm90_m128n256k64_c1x1"
one() {  # preset tokens variant turn old-choice
  local p=$1 t=$2 v=$3 turn=$4 old=$5
  if [ $v = 0 ]; then ch=(); else ch=(--choice "$old"); fi
  timeout $(($(left) - 5)) $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$OUT/r/$p/ab-$p-v$v-$turn.csv" > "$OUT/r/$p/ab-$p-v$v-$turn.txt" 2>&1
  echo "== $p v$v turn $turn rc=$?"
}
for pt in mixtral-8x7b:160,192 deepseek-v3:640,768 gpt-oss-120b:1280,1536; do
  p=${pt%%:*}; t=${pt#*:}
  old=$LARGE; [ $p = gpt-oss-120b ] && old="gemm1.tile=sm90_m128n256k64_c1x1"
  mkdir -p "$OUT/r/$p"
  one $p $t 0 1 "$old"; one $p $t 1 1 "$old"; one $p $t 1 2 "$old"; one $p $t 0 2 "$old"
  python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r/$p" 0 | grep moekit | tee -a "$OUT/r/summary.txt"
done
$B explain --preset mixtral-8x7b --quant none --gate-up interleaved -T 192 > "$OUT/r/explain-mixtral-T192.txt" 2>&1
grep -E "gemm[12]\.tile" "$OUT/r/explain-mixtral-T192.txt"
pack
