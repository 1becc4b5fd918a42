#!/usr/bin/env bash
# Tenth device call ($1 = the commit, da639e2: early weight loads): build everything, ctest -L gpu;
# a second moekit without the early loads (early-start-da639e2.patch reversed, in /tmp/prev); then
# T=1 on the four presets with each binary in turns, and Qwen3 T=1 four more times each.
set -uo pipefail
COMMIT=$1
D=docs/device-logs/2026-11-22-ticket-walk
TARGETS="moekit test_moe_cuda test_decode_layer_cuda test_decode_token_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
COMMIT=$COMMIT OUT=$OUT TARGETS="$TARGETS" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/ctest-cpu.txt" "$OUT/info.txt"
grep -E "tests passed|Failed|FAILED|\*\*\*" "$OUT/ctest-gpu.txt" | head -20
rm -rf /tmp/prev && mkdir -p /tmp/prev && tar --exclude=./build -cf - . | tar -xf - -C /tmp/prev
( cd /tmp/prev && patch -R -p1 < $D/early-start-da639e2.patch > /dev/null && export PATH="/usr/local/cuda/bin:$PATH" &&
  cmake -S . -B build/prev -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
    -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=${COMMIT}-without-early > /dev/null 2>&1 &&
  cmake --build build/prev -j 16 --target moekit > /dev/null 2>&1 ) || echo "the build without the early loads failed"
run() {  # label, binary, then bench arguments
  local label=$1 bin=$2
  shift 2
  rm -f /tmp/x.csv
  $bin bench --backend cuda --quant none --no-baseline "$@" --csv /tmp/x.csv > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/$label,/"
}
NEW=build/device/bin/moekit
OLD=/tmp/prev/build/prev/bin/moekit
{
  echo "label,preset,T,method,kind,median_us,spread,experts_hit,pct_floor,refcheck"
  for i in 1 2; do
    run early-$i $NEW --refcheck --sets 2 --reps 5 --tokens 1
    run late-$i $OLD --refcheck --sets 2 --reps 5 --tokens 1
  done
  for i in 1 2 3 4; do
    run qwen3-early-$i $NEW --preset qwen3-30b-a3b --sets 2 --reps 5 --tokens 1
    run qwen3-late-$i $OLD --preset qwen3-30b-a3b --sets 2 --reps 5 --tokens 1
  done
} > "$OUT/bench.txt" 2>&1
grep ",layer," "$OUT/bench.txt"
