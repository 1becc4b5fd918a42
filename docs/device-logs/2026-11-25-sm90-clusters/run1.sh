#!/usr/bin/env bash
# First device call ($1 = the commit): build moekit and the sm_90a tests; the sm_90a GEMM and layer
# tests of every tile; then each sm_90a tile forced on both GEMMs at T = 256, 1024, 4096, 16384 on
# every preset, and the heuristic's plan with --stages at T = 1024, 4096, 16384.
set -uo pipefail
COMMIT=$1
TARGETS="moekit test_moe_cuda test_sm90_gemm"
COMMIT=$COMMIT OUT=$OUT TARGETS="$TARGETS" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/ctest-cpu.txt" "$OUT/info.txt"
grep real "$OUT/build.txt"
ctest --test-dir build/device -R "Sm90" --output-on-failure > "$OUT/ctest-sm90.txt" 2>&1
grep -E "tests passed|Failed|FAILED|\*\*\*|Test time" "$OUT/ctest-sm90.txt" | head -20
B=build/device/bin/moekit
SECONDS=0
for tile in sm90_m128n256k64 sm90_m128n256k64_c1x2 sm90_m128n256k64_c1x1 sm90_m64n128k128 sm90_m64n128k128_c1x2 sm90_m64n128k128_c1x1; do
  $B bench --backend cuda --quant none --tokens 256,1024,4096,16384 --sets 1 --reps 3 --iters 10 --no-baseline \
    --choice "gemm1.tile=$tile;gemm2.tile=$tile" --csv "$OUT/tile-$tile.csv" > "$OUT/tile-$tile.txt" 2>&1
  echo "== $tile (${SECONDS}s)"; cut -d, -f1,3,7,20 "$OUT/tile-$tile.csv" | tail -n +2 | tr '\n' ' '; echo
done
$B bench --backend cuda --quant none --tokens 1024,4096,16384 --sets 1 --reps 3 --iters 10 --no-baseline --stages \
  --csv "$OUT/stages.csv" > "$OUT/stages.txt" 2>&1
echo "== stages (${SECONDS}s)"; grep -E "^ +[0-9]+ +(moekit|  cuda)" "$OUT/stages.txt" | awk '{print $1,$2,$3}' | tr '\n' ';'
