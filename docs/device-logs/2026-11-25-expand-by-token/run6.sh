#!/usr/bin/env bash
# Step 16, device call 6 ($1 = the commit): build moekit; Nsight Compute's full set on the sm_90a
# GEMMs (the heuristic's 128 x 256 tile) of Qwen3 and Mixtral at T=4096: where the L2, TMA and
# tensor-pipe throughput stand (perf-notes step 16 d and f).
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
B=build/device/bin/moekit
SECONDS=0
for p in qwen3-30b-a3b mixtral-8x7b; do
  timeout 120 ncu --clock-control none -k regex:device_kernel -c 2 --set full \
    $B run --preset $p -T 4096 --quant none --backend cuda --iters 1 > "$OUT/ncu-full-$p.txt" 2>&1
  echo "== ncu $p rc $? (${SECONDS}s)"
  grep -E "^    (Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Executed Ipc Active|Issue Slots Busy)" "$OUT/ncu-full-$p.txt" | head -20
done
