#!/usr/bin/env bash
# Step 18, device call 3 ($1 = the commit): the heuristic takes the 128 x 128 tile above 32 and up to
# 64 rows per expert for expert weights below 12M elements. Build every gpu test; ctest -L gpu -j 3;
# the full table with W13 interleaved; then the new heuristic against the old one's choices (forced)
# at the points it changes, two runs of each in turns.
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
timeout 150 $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
  --gate-up interleaved --csv "$OUT/r/table.csv" --json "$OUT/r/table.json" > "$OUT/r/table.txt" 2>&1
echo "== table (${SECONDS}s)"; cut -d, -f1,3,7,20,23 "$OUT/r/table.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
ab() {  # name, preset, tokens, old choice
  for i in 1 2; do
    for v in new old; do
      extra=""; [ $v = old ] && extra="--choice $4"
      timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --preset $2 --tokens $3 --sets 2 --reps 5 --no-baseline --stages $extra \
        --csv "$OUT/r/ab-$1-$v$i.csv" > "$OUT/r/ab-$1-$v$i.txt" 2>&1
      echo "$1 $v$i: $(grep -E '^\s+[0-9]+\s+(moekit|  cuda.gemm)' "$OUT/r/ab-$1-$v$i.txt" | awk '{printf "%s %s %s | ", $1, substr($2,6,5), $3}')"
    done
  done
}
ab qwen3 qwen3-30b-a3b 600,1024 "gemm1.tile=sm90_m128n256k64_c1x1;gemm2.tile=sm90_m128n256k64_c1x1"
ab gptoss gpt-oss-120b 1536,2048 "gemm2.tile=sm90_m128n256k64_c1x1"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
