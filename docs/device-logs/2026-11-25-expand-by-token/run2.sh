#!/usr/bin/env bash
# Step 16, device call 2 ($1 = the commit): build moekit and every gpu test; meanwhile, in a copy of
# the tree with pingpong-128x128.patch applied (two experiment tiles: 128 x 128 x 64 ping-pong, 1 x 1
# and 1 x 2 clusters), moekit and test_moe_cuda. ctest -L gpu on the commit; the experiment tiles'
# layer test; each experiment tile forced on both GEMMs against the heuristic (T = 256 .. 16384);
# --deterministic against the default on Qwen3 and DeepSeek-V3.
set -uo pipefail
COMMIT=$1
HERE=docs/device-logs/2026-11-25-expand-by-token
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0)
TARGETS="moekit test_maps_cuda test_moe_cuda test_decode_layer_cuda test_decode_token_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target $TARGETS ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
mkdir -p /tmp/exp && tar --exclude=./build --exclude=./.git -cf - . | tar -C /tmp/exp -xf -
( cd /tmp/exp && patch -p1 -s < "$HERE/pingpong-128x128.patch" && cmake -S . -B build/exp "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT-pp > /tmp/exp-configure.txt 2>&1 \
  && cmake --build build/exp -j 8 --target moekit test_moe_cuda > /tmp/exp-build.txt 2>&1; echo "exp build rc $?" ) > "$OUT/exp-build.txt" 2>&1 &
EXP=$!
SECONDS=0
ctest --test-dir build/device -L gpu --output-on-failure > "$OUT/ctest-gpu.txt" 2>&1
echo "# ctest ${SECONDS}s"; grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/ctest-gpu.txt" | head -20
wait $EXP; cat "$OUT/exp-build.txt"; grep -E "error" -A3 /tmp/exp-build.txt | head -20
mkdir -p "$OUT/r"
E=/tmp/exp/build/exp/bin/moekit; B=build/device/bin/moekit
if [ -x /tmp/exp/build/exp/tests/gpu/test_moe_cuda ]; then
  timeout 120 /tmp/exp/build/exp/tests/gpu/test_moe_cuda --gtest_filter='*Sm90Tiles*' > "$OUT/r/exp-tiles-test.txt" 2>&1; echo "== exp tile test rc $?"; tail -3 "$OUT/r/exp-tiles-test.txt"
fi
SECONDS=0
for tile in heuristic sm90_m128n128k64_pp sm90_m128n128k64_pp_c1x2; do
  choice=(); [ $tile != heuristic ] && choice=(--choice "gemm1.tile=$tile;gemm2.tile=$tile")
  [ -x $E ] && timeout 60 $E bench --backend cuda --quant none --tokens 256,1024,4096,16384 --sets 1 --reps 3 --iters 10 --no-baseline \
    "${choice[@]}" --csv "$OUT/r/tile-$tile.csv" > "$OUT/r/tile-$tile.txt" 2>&1
  echo "== $tile (${SECONDS}s)"; cut -d, -f1,3,7,20 "$OUT/r/tile-$tile.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
done
for m in default deterministic; do
  flag=(); [ $m = deterministic ] && flag=(--deterministic)
  timeout 60 $B bench --backend cuda --quant none --preset qwen3-30b-a3b,deepseek-v3 --tokens 64,1024,16384 --sets 2 --reps 5 --no-baseline \
    "${flag[@]}" --csv "$OUT/r/$m.csv" > "$OUT/r/$m.txt" 2>&1
  echo "== $m"; cut -d, -f1,3,7 "$OUT/r/$m.csv" | tail -n +2 | sed 's/-30b-a3b//' | tr '\n' ' '; echo
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
