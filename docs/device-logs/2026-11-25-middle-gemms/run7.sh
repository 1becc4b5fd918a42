#!/usr/bin/env bash
# Step 18, device call 7 ($1 = the commit): call 5's one-expert gemm1 (201 MB of weights, K = 768,
# 64 rows) on each sm_90a tile, twice in turns: if loads and MMAs add up, the 64-row tiles (half the
# MMA time: no padding rows) should take about 65 + 14 µs where the 128-row ones take 65 + 29. Then
# Nsight Compute (speed of light, warp state, memory) on it with the 128 x 256 and the 64 x 128 1 x 2
# tiles: the SM clock under tensor load and where the warps wait.
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
mkdir -p "$OUT/r"
B=build/device/bin/moekit
SHAPE="--backend cuda --quant none --gate-up interleaved --experts 1 --top-k 1 --hidden 768 --intermediate 65536 --tokens 64 --no-baseline"
for i in 1 2; do
  for t in sm90_m128n256k64_c1x1 sm90_m128n128k128_c1x1 sm90_m64n128k128_c1x1 sm90_m64n128k128_c1x2; do
    timeout 40 $B bench $SHAPE --sets 2 --reps 5 --stages --choice "gemm1.tile=$t;gemm2.tile=$t" --csv "$OUT/r/$t-$i.csv" > "$OUT/r/$t-$i.txt" 2>&1
    echo "$t $i: $(grep -E '^\s+[0-9]+\s+(  cuda.gemm1)' "$OUT/r/$t-$i.txt" | awk '{printf "%s %s", substr($2,1,10), $3}')"
  done
done
for t in sm90_m128n256k64_c1x1 sm90_m64n128k128_c1x2; do
  timeout 60 ncu --clock-control none -k regex:device_kernel -c 1 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --print-details all \
    $B bench $SHAPE --sets 1 --reps 1 --iters 1 --warmup 0 --choice "gemm1.tile=$t;gemm2.tile=$t" > "$OUT/r/ncu-$t.txt" 2>&1
  echo "ncu $t: $(grep -E '^\s+(Duration|SM Frequency|DRAM Throughput) ' "$OUT/r/ncu-$t.txt" | awk '{printf "%s %s %s | ", $1, $(NF-1), $NF}')"
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
