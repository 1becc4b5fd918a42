#!/usr/bin/env bash
# Sixth device call ($1 = the commit): build, the stream tiles' layer tests under variant 6 (512-byte
# runs of each weight row per stage, one CTA per SM), the bench at T = 8, 32, 64, 256 under variants
# 0 and 6, Mixtral T=64 in turns, and ncu of Mixtral T=64's two stream GEMMs under variant 6.
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr \
  -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0 -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target moekit test_moe_cuda ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
tail -3 "$OUT/build.txt"
T=build/device/bin/test_moe_cuda
[ -x $T ] || T=$(find build/device -name test_moe_cuda -type f | head -1)
for v in 6; do
  MOEKIT_STREAM_VARIANT=$v $T --gtest_filter='MoeCuda.EveryGemmTileGivesTheSameLayer:MoeCuda.StreamTilesAtEveryKSplit:MoeCuda.DeterministicModeIsBitwiseStable' > "$OUT/variant$v-tests.txt" 2>&1
  echo "variant $v: $(grep -E 'PASSED|FAILED' "$OUT/variant$v-tests.txt" | tr '\n' ' ')"
done
B=build/device/bin/moekit
run() {  # label, then bench arguments
  local label=$1
  shift
  rm -f /tmp/x.csv
  $B bench --backend cuda --quant none --no-baseline "$@" --csv /tmp/x.csv > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/$label,/"
}
{
  echo "label,preset,T,method,kind,median_us,spread,experts_hit,pct_floor,refcheck"
  for v in 0 6; do MOEKIT_STREAM_VARIANT=$v run v$v --refcheck --sets 2 --reps 5 --tokens 8,32,64,256; done
  for v in 6 0 6 0 6 0; do MOEKIT_STREAM_VARIANT=$v run v$v-mixtral --preset mixtral-8x7b --sets 2 --reps 5 --tokens 64; done
} > "$OUT/bench.txt" 2>&1
grep -E ",layer," "$OUT/bench.txt"
NCU="ncu --clock-control none --kernel-name regex:stream_gemm_kernel --launch-skip 4 --launch-count 2 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats"
MOEKIT_STREAM_VARIANT=6 $NCU $B bench --backend cuda --quant none --no-baseline --preset mixtral-8x7b --tokens 64 --sets 1 --reps 1 > "$OUT/ncu-v6.txt" 2>&1
grep -E "stream_gemm_kernel|Duration|DRAM Throughput|L2 Cache Throughput|Memory Throughput|Achieved Occupancy" "$OUT"/ncu-*.txt | cut -c1-200 | head -30
