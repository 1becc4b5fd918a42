#!/usr/bin/env bash
# Step 18, device call 2 ($1 = the commit): the new sm_90a tile sm90_m128n128k128_c1x1 (128 rows, a
# k-block of 128: 256 contiguous bytes of each weight row a stage). Build; its correctness
# (test_sm90_gemm, every tile; the layer on every sm_90a tile); then the layer with it forced on both
# GEMMs against the heuristic, in turns, at T = 128 .. 4096, W13 interleaved, with stage times; and
# Nsight Compute's DRAM throughput for DeepSeek-V3 T=1024's GEMMs on it.
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0)
TARGETS="moekit test_moe_cuda test_sm90_gemm"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target $TARGETS ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
mkdir -p "$OUT/r"
SECONDS=0
build/device/tests/gpu/test_sm90_gemm > "$OUT/r/test_sm90_gemm.txt" 2>&1; echo "test_sm90_gemm rc=$? (${SECONDS}s)"; tail -3 "$OUT/r/test_sm90_gemm.txt"
SECONDS=0
build/device/tests/gpu/test_moe_cuda --gtest_filter='*Sm90*' > "$OUT/r/test_moe_cuda.txt" 2>&1; echo "test_moe_cuda *Sm90* rc=$? (${SECONDS}s)"; tail -3 "$OUT/r/test_moe_cuda.txt"
B=build/device/bin/moekit
run() {  # name, extra flags
  SECONDS=0
  timeout 100 $B bench --backend cuda --quant none --gate-up interleaved --tokens 128,256,512,1024,2048,4096 --sets 1 --reps 3 --no-baseline --stages $2 \
    --csv "$OUT/r/$1.csv" > "$OUT/r/$1.txt" 2>&1
  echo "== $1 (${SECONDS}s)"; grep -E "^\s+[0-9]+\s+(moekit|  cuda.gemm)" "$OUT/r/$1.txt" | awk '{printf "%s %s %s | ", $1, substr($2,6,5), $3}'; echo
}
NEW="--choice gemm1.tile=sm90_m128n128k128_c1x1;gemm2.tile=sm90_m128n128k128_c1x1"
run heur1 ""
run new1 "$NEW"
run heur2 ""
run new2 "$NEW"
SECONDS=0
timeout 60 ncu --clock-control none -k regex:device_kernel -c 2 --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
  $B bench --backend cuda --preset deepseek-v3 --tokens 1024 --quant none --gate-up interleaved --sets 1 --reps 1 --iters 1 --warmup 0 --no-baseline $NEW > "$OUT/r/ncu-deepseek-v3-T1024-new.txt" 2>&1
echo "# ncu ${SECONDS}s"; grep -E "^\s+(Duration|DRAM Throughput|Registers Per|Dynamic Shared)" "$OUT"/r/ncu-*.txt | head -12
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
