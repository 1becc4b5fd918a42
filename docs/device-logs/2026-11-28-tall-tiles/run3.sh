#!/usr/bin/env bash
# Call 3 ($1 = the commit): the 192 x 128 tile in the library (gemm1 with the gated epilogue only;
# the heuristic takes it from 120 to 176 rows an expected expert). First the gpu tests that run it
# (Sm90GroupedGemm.*, MoeCuda.TallTileGivesTheSameLayer); then the layer, the heuristic (v0) against
# gemm1 forced back onto 128 x 256 (v1), two turns, at 128 and 160 rows an expected expert for every
# preset; then every other gpu test in the time left (LIMIT, default 570 s from the start).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((${LIMIT:-570} - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
FIRST='Sm90GroupedGemm|TallTile'
T0=$SECONDS
ctest --test-dir build/device -L gpu -R "$FIRST" -j 3 --output-on-failure > "$OUT/r/ctest-tall.txt" 2>&1
echo "# ctest (tall) rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-tall.txt" | head -20
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3"
one() {  # preset tokens variant turn
  local p=$1 t=$2 v=$3 turn=$4 ch=()
  [ $v = 1 ] && ch=(--choice "gemm1.tile=sm90_m128n256k64_c1x1")
  timeout 60 $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$OUT/r/$p/ab-$p-v$v-$turn.csv" > "$OUT/r/$p/ab-$p-v$v-$turn.txt" 2>&1
  echo "== $p v$v turn $turn rc=$?"
}
for pt in ${POINTS:-gpt-oss-120b:4096,5120 qwen3-30b-a3b:2048,2560 mixtral-8x7b:512,640 deepseek-v3:2048,2560}; do
  p=${pt%%:*}; t=${pt#*:}
  mkdir -p "$OUT/r/$p"
  one $p $t 0 1; one $p $t 1 1; one $p $t 1 2; one $p $t 0 2
  python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r/$p" 0 | grep moekit | tee -a "$OUT/r/summary.txt"
done
echo "# A/B done $((SECONDS - START))s"
$B explain --preset gpt-oss-120b --quant none --gate-up interleaved -T 4096 > "$OUT/r/explain-gptoss-T4096.txt" 2>&1
grep -E "gemm[12]\.tile" "$OUT/r/explain-gptoss-T4096.txt"
T0=$SECONDS
timeout $(($(left) - 5)) ctest --test-dir build/device -L gpu -E "$FIRST" -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest (the rest) rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
echo "# total $((SECONDS - START))s"
pack
