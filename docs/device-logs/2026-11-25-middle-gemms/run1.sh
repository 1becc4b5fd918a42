#!/usr/bin/env bash
# Step 18, device call 1 ($1 = the commit): build moekit and every gpu test at the session's start
# (the copy_kind refactor of 02bb0fb never ran on a GPU); ctest -L gpu -j 3; then where the memory-bound middle's GEMM time goes: stage times with each sm_90a tile
# forced on both GEMMs at T = 256 .. 4096, and Nsight Compute (full set, details) on DeepSeek-V3 and
# Qwen3 T=1024's two GEMMs.
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
sweep() {  # name, extra flags
  SECONDS=0
  timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --tokens 256,1024,4096 --sets 1 --reps 3 --no-baseline --stages $2 \
    --csv "$OUT/r/sweep-$1.csv" > "$OUT/r/sweep-$1.txt" 2>&1
  echo "== $1 (${SECONDS}s)"; grep -E "^\s+[0-9]+\s+(moekit|  cuda.gemm)" "$OUT/r/sweep-$1.txt" | awk '{printf "%s %s %s | ", $1, $2, $3}'; echo
}
sweep heuristic ""
for t in sm90_m128n256k64_c1x1 sm90_m128n256k64_c1x2 sm90_m64n128k128_c1x1 sm90_m64n128k128_c1x2; do
  sweep $t "--choice gemm1.tile=$t;gemm2.tile=$t"
done
SECONDS=0
for p in deepseek-v3 qwen3-30b-a3b; do
  timeout 75 ncu --clock-control none -k regex:device_kernel -c 2 --set full --print-details all \
    $B run --preset $p -T 1024 --quant none --backend cuda --iters 1 --gate-up interleaved > "$OUT/r/ncu-$p-T1024.txt" 2>&1
done
echo "# ncu ${SECONDS}s"; grep -E "^\s+(Duration|DRAM Throughput|Compute \(SM\) Throughput|L2 Hit Rate |Memory Throughput)" "$OUT"/r/ncu-*.txt | head -24
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
