#!/usr/bin/env bash
# Step 18, device call 4 ($1 = the commit): rows.cu's expand-by-token and finalize kernels share their
# staging loop (in_staged_passes; the same loads and arithmetic). Build every gpu test; ctest -L gpu
# -j 3; stage times at T = 256, 1024, 4096 with W13 interleaved, to set beside call 1's
# (sweep-heuristic: the same points, the previous rows.cu, another H100).
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0)
TARGETS="moekit test_maps_cuda test_moe_cuda test_decode_layer_cuda test_decode_token_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target $TARGETS ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
mkdir -p "$OUT/r"
B=build/device/bin/moekit
SECONDS=0
ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest ${SECONDS}s"; grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/r/ctest-gpu.txt" | head -20
SECONDS=0
timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --tokens 256,1024,4096 --sets 1 --reps 3 --no-baseline --stages \
  --csv "$OUT/r/stages.csv" > "$OUT/r/stages.txt" 2>&1
echo "== stages (${SECONDS}s)"; grep -E "^\s+[0-9]+\s+(moekit|  cuda.expand|  cuda.gemm2|  cuda.finalize)" "$OUT/r/stages.txt" | awk '{printf "%s %s %s | ", $1, substr($2,6,8), $3}'; echo
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
