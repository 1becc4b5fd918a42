#!/usr/bin/env bash
# Call 1 ($1 = the commit): the 192 x 128 tile with a plain epilogue (64-row subtiles as wide as the
# tile, built by hand: Config::SideBySidePlainEpilogueOf), so gemm2 can run it.
#   1. the gpu tests that run the tile (Sm90GroupedGemm.*, MoeCuda.TallTileGivesTheSameLayer, and
#      MoeCuda.Sm90TilesGiveTheSameLayer, which now lists it);
#   2. A/B, two turns each, best of two: (g1) gemm1's rule at 128-160 rows an expected expert, the
#      heuristic (v0) against gemm1 forced onto 128 x 256 (v1); (g2) gemm2 forced onto 192 x 128
#      (v1) against the heuristic (v0) where gemm1's tile gained;
#   3. every other gpu test in the time left (LIMIT, default 575 s).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((${LIMIT:-575} - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/$1.tgz" r && rm -rf "$OUT/r" && mkdir -p "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack build; exit 1; }
FIRST='Sm90GroupedGemm|TallTile|Sm90TilesGive'
T0=$SECONDS
ctest --test-dir build/device -L gpu -R "$FIRST" -j 3 --output-on-failure > "$OUT/r/ctest-tall.txt" 2>&1
echo "# ctest (tall) rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-tall.txt" | head -20
pack tests
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3"
ab() {  # dir preset tokens choice-of-v1
  local d=$1 p=$2 t=$3 c=$4
  mkdir -p "$OUT/r/$d/$p"
  for vt in 0:1 1:1 1:2 0:2; do
    local v=${vt%%:*} turn=${vt#*:} ch=()
    [ $v = 1 ] && ch=(--choice "$c")
    timeout 60 $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$OUT/r/$d/$p/ab-$p-v$v-$turn.csv" > "$OUT/r/$d/$p/ab-$p-v$v-$turn.txt" 2>&1 || echo "== $d $p $t v$v turn $turn rc=$?"
  done
  python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r/$d/$p" 0 | grep moekit | sed "s/^/$d /" | tee -a "$OUT/r/summary.txt"
}
G1="gemm1.tile=sm90_m128n256k64_c1x1"
G2="gemm2.tile=sm90_m192n128k64_c1x1"
for pt in ${G1_POINTS:-gpt-oss-120b:4096,4608 qwen3-30b-a3b:2048,2304}; do
  ab g1 ${pt%%:*} ${pt#*:} "$G1"
done
for pt in ${G2_POINTS:-gpt-oss-120b:4096,5120,5632 qwen3-30b-a3b:2048,2560,2816 mixtral-8x7b:640,704}; do
  ab g2 ${pt%%:*} ${pt#*:} "$G2"
done
echo "# A/B done $((SECONDS - START))s"
pack ab
T0=$SECONDS
timeout $(($(left) - 5)) ctest --test-dir build/device -L gpu -E "$FIRST" -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest (the rest) rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
echo "# total $((SECONDS - START))s"
pack rest
