#!/usr/bin/env bash
# Fourth device call ($1 = the commit): build moekit, then the L2 prefetch of call 3 with other L2
# policies (MOEKIT_STREAM_PREFETCH_POLICY: 1 evict_normal, 2 evict_last): Mixtral T=64 in turns, the
# sweep at T = 8, 32, 64, 256 with 4 stages of each, and ncu of the two stream GEMMs of Mixtral
# T=64 without prefetch and with 4 stages at evict_normal.
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr \
  -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0 -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
tail -3 "$OUT/build.txt"
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
  for c in 0,0 2,1 4,1 2,2 4,2 0,0 4,1 2,1 4,2 2,2; do
    p=${c%,*}; q=${c#*,}
    MOEKIT_STREAM_PREFETCH=$p MOEKIT_STREAM_PREFETCH_POLICY=$q run p$p-pol$q-mixtral --preset mixtral-8x7b --sets 2 --reps 5 --tokens 64
  done
  for q in 1 2; do MOEKIT_STREAM_PREFETCH=4 MOEKIT_STREAM_PREFETCH_POLICY=$q run p4-pol$q --refcheck --sets 2 --reps 5 --tokens 8,32,64,256; done
} > "$OUT/bench.txt" 2>&1
grep -E ",layer," "$OUT/bench.txt"
NCU="ncu --clock-control none --kernel-name regex:stream_gemm_kernel --launch-skip 4 --launch-count 2 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats"
$NCU $B bench --backend cuda --quant none --no-baseline --preset mixtral-8x7b --tokens 64 --sets 1 --reps 1 > "$OUT/ncu-p0.txt" 2>&1
MOEKIT_STREAM_PREFETCH=4 MOEKIT_STREAM_PREFETCH_POLICY=1 $NCU $B bench --backend cuda --quant none --no-baseline --preset mixtral-8x7b --tokens 64 --sets 1 --reps 1 > "$OUT/ncu-p4-pol1.txt" 2>&1
grep -E "stream_gemm_kernel|Duration|DRAM Throughput|Memory Throughput|L2 Hit|Stall|Achieved Occupancy" "$OUT"/ncu-*.txt | cut -c1-200 | head -60
