#!/usr/bin/env bash
# Step 18, device call 8 ($1 = the commit): `moekit run --choice` on the GPU: a forced sm_90a tile
# with --refcheck, and a refused value.
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
T="sm90_m128n128k128_c1x1"
$B run --preset qwen3-30b-a3b -T 77 --quant none --backend cuda --gate-up interleaved --refcheck --choice "gemm1.tile=$T;gemm2.tile=$T" 2>&1 | tee "$OUT/run-choice.txt"
echo "rc=${PIPESTATUS[0]}"
$B explain --preset qwen3-30b-a3b -T 77 --quant none --arch auto --gate-up interleaved --choice "gemm1.tile=$T;gemm2.tile=$T" 2>&1 | grep -E "tile" | tee "$OUT/explain-choice.txt"
$B run --preset qwen3-30b-a3b -T 77 --quant none --backend cuda --choice "gemm1.tile=m1n1" 2>&1 | tee "$OUT/run-bad-choice.txt"
echo "rc=${PIPESTATUS[0]}"
