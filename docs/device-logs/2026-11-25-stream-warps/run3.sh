#!/usr/bin/env bash
# Third device call ($1 = the commit): build, the stream tiles' layer tests with the weights asked of
# L2 4 stages ahead (MOEKIT_STREAM_PREFETCH=4) under variants 0 and 1, then the bench at T = 8, 32,
# 64, 256 on every preset with 0, 2, 4, 8 stages of prefetch, and Mixtral T=64 in turns again.
set -uo pipefail
COMMIT=$1
TARGETS="moekit test_moe_cuda test_decode_layer_cuda test_decode_token_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr \
  -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0 -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target moekit test_moe_cuda ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
tail -3 "$OUT/build.txt"
T=build/device/bin/test_moe_cuda
[ -x $T ] || T=$(find build/device -name test_moe_cuda -type f | head -1)
for v in 0 1; do
  MOEKIT_STREAM_PREFETCH=4 MOEKIT_STREAM_VARIANT=$v $T --gtest_filter='MoeCuda.EveryGemmTileGivesTheSameLayer:MoeCuda.StreamTilesAtEveryKSplit:MoeCuda.DeterministicModeIsBitwiseStable' > "$OUT/variant$v-tests.txt" 2>&1
  echo "variant $v: $(grep -E 'PASSED|FAILED' "$OUT/variant$v-tests.txt" | tr '\n' ' ')"
done
B=build/device/bin/moekit
run() {  # label, then bench arguments
  local label=$1
  shift
  rm -f /tmp/x.csv
  $B bench --backend cuda --quant none --no-baseline "$@" --csv /tmp/x.csv > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/$label,/"
}
{
  echo "label,preset,T,method,kind,median_us,spread,experts_hit,pct_floor,refcheck"
  for p in 0 2 4 8; do MOEKIT_STREAM_PREFETCH=$p run p$p --refcheck --sets 2 --reps 5 --tokens 8,32,64,256; done
  for p in 4 0 8 2 0 4 2 8; do MOEKIT_STREAM_PREFETCH=$p run p$p-mixtral --preset mixtral-8x7b --sets 2 --reps 5 --tokens 64; done
  for p in 0 4; do MOEKIT_STREAM_PREFETCH=$p MOEKIT_STREAM_VARIANT=1 run v1p$p-mixtral --preset mixtral-8x7b --sets 2 --reps 5 --tokens 64; done
} > "$OUT/bench.txt" 2>&1
grep -E ",layer,|took" "$OUT/bench.txt"
