#!/usr/bin/env bash
# Step 19, device call 5 ($1 = the commit): the heuristic runs the 64 x 128 tile without its 1 x 2
# cluster above 16 rows per expected expert (kSm90ClusterMaxRows). Build every gpu test; ctest -L gpu
# -j 3; then the new heuristic against the old choice (the clustered tile forced on both GEMMs) at
# T = 300, 384, 512 on DeepSeek-V3, Qwen3 and GPT-OSS, two runs of each in turns, with stage times.
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
OLD="gemm1.tile=sm90_m64n128k128_c1x2;gemm2.tile=sm90_m64n128k128_c1x2"
for i in 1 2; do
  for v in new old; do
    extra=""; [ $v = old ] && extra="--choice $OLD"
    for preset in deepseek-v3 qwen3-30b-a3b gpt-oss-120b; do
      timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --preset $preset --tokens 300,384,512 --sets 2 --reps 5 --no-baseline --stages $extra \
        --csv "$OUT/r/ab-$preset-$v$i.csv" > "$OUT/r/ab-$preset-$v$i.txt" 2>&1
      echo "$preset $v$i: $(grep -E '^\s+[0-9]+\s+(moekit|  cuda.gemm)' "$OUT/r/ab-$preset-$v$i.txt" | awk '{printf "%s %s %s | ", $1, substr($2,6,5), $3}')"
    done
  done
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
