#!/usr/bin/env bash
# Step 17, device call 5 ($1 = the commit, the session's last library code): rows.cu's two expand
# kernels share their weight-scaling helper (the same arithmetic); the checkpoint loader's gate_up
# option (host code). Build every gpu test; ctest -L gpu -j 3; then, with W13 interleaved, gemm1 on
# the 128 x 256 tile with the 1 x 2 cluster (A multicast) against the heuristic's 1 x 1 at
# T = 1024 .. 16384, in turns.
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
SECONDS=0
ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest ${SECONDS}s"; grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/r/ctest-gpu.txt" | head -20
B=build/device/bin/moekit
table() {  # name, extra flags
  SECONDS=0
  timeout 100 $B bench --backend cuda --quant none --gate-up interleaved --tokens 1024,4096,16384 --sets 2 --reps 5 --no-baseline $2 \
    --csv "$OUT/r/$1.csv" > "$OUT/r/$1.txt" 2>&1
  echo "== $1 (${SECONDS}s)"; cut -d, -f1,3,7,20 "$OUT/r/$1.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
}
table c1x1 ""
table c1x2 "--choice gemm1.tile=sm90_m128n256k64_c1x2"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
