#!/usr/bin/env bash
# Step 17, device call 4 ($1 = the commit): call 3's ctest -L gpu -j 3 failed MoeCuda.GraphReplaysWithNewRouting
# (replay 2: relative error 0.50). The reading: a test-harness race, not the kernels. The test wrote
# the new logits with cudaMemcpy (which returns before the DMA from pageable memory ends) and the
# poison with cudaMemset (asynchronous), both on the legacy stream, then replayed the graph on a
# non-blocking stream that does not wait for them; three tests sharing the GPU made the copy slow
# enough to lose. This build waits for the legacy stream in memcpy_sync / memcpy2d_sync and after
# the poison. Build every gpu test; the failing test 8 times in three concurrent processes; then
# ctest -L gpu -j 3 again.
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
T=build/device/tests/gpu/test_moe_cuda
for i in 1 2 3; do
  $T --gtest_filter='MoeCuda.GraphReplaysWithNewRouting' --gtest_repeat=8 > "$OUT/r/replays-$i.txt" 2>&1 &
done
wait
echo "== 3 x 8 concurrent replays (${SECONDS}s)"; grep -h -c "^\[       OK \]" "$OUT"/r/replays-*.txt | tr '\n' ' '; grep -h "FAILED  \]\|Failure" "$OUT"/r/replays-*.txt | sort | uniq -c | head
SECONDS=0
ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest ${SECONDS}s"; grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/r/ctest-gpu.txt" | head -20
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
