#!/usr/bin/env bash
# Step 17, device call 2 ($1 = the commit): call 1 found the first gated epilogue 1.5-2.8x slower than
# gemm1 plus the activation kernel (its SASS: 21,600 straight-line instructions per tile, every
# activation and bias type inlined per element). This build chooses the activation and bias type
# once per tile. Build; the two tests (call 1 ran them from a wrong path); the layer with the gated
# epilogue against the activation unfused, in turns; the gated epilogue on the 64 x 128 ping-pong
# tile (one warpgroup's epilogue under the other's mainloop); Nsight Compute on Qwen3 T=4096's gemm1.
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target moekit test_sm90_gemm test_moe_cuda ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
mkdir -p "$OUT/r"
B=build/device/bin/moekit
table() {  # name, tokens, extra flags
  SECONDS=0
  timeout 120 $B bench --backend cuda --quant none --gate-up interleaved --tokens $2 --sets 2 --reps 5 \
    --no-baseline --refcheck $3 --csv "$OUT/r/$1.csv" > "$OUT/r/$1.txt" 2>&1
  echo "== $1 (${SECONDS}s)"; cut -d, -f1,3,7,20,23 "$OUT/r/$1.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
}
T=64,256,1024,4096,16384
table fused1 $T ""
table unfused1 $T "--fusion gemm1_activation=off"
table fused-pp 1024,4096,16384 "--choice gemm1.tile=sm90_m64n128k128_c1x2"
table unfused-pp 1024,4096,16384 "--fusion gemm1_activation=off --choice gemm1.tile=sm90_m64n128k128_c1x2"
SECONDS=0
timeout 100 ncu --clock-control none -k regex:device_kernel -c 1 --section SpeedOfLight --section WarpStateStats --section InstructionStats \
  $B run --preset qwen3-30b-a3b -T 4096 --quant none --backend cuda --iters 1 --gate-up interleaved > "$OUT/r/ncu-fused.txt" 2>&1
echo "== ncu rc $? (${SECONDS}s)"
grep -E "Duration|Compute \(SM\) Throughput|DRAM Throughput|Executed Instructions  |Issue Slots Busy|No Eligible" "$OUT/r/ncu-fused.txt" | head
SECONDS=0
timeout 150 build/device/tests/gpu/test_sm90_gemm > "$OUT/r/test_sm90_gemm.txt" 2>&1; echo "test_sm90_gemm rc $? (${SECONDS}s)"
grep -E "^\[  (PASSED|FAILED) |Failure|error" "$OUT/r/test_sm90_gemm.txt" | head -20
SECONDS=0
timeout 150 build/device/tests/gpu/test_moe_cuda --gtest_filter='*Sm90*:*Deterministic*' > "$OUT/r/test_moe_cuda.txt" 2>&1; echo "test_moe_cuda rc $? (${SECONDS}s)"
grep -E "^\[  (PASSED|FAILED) |Failure" "$OUT/r/test_moe_cuda.txt" | head -20
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
