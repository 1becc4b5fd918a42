#!/usr/bin/env bash
# Fourth device call ($1 = the commit): moekit only (no tests: the kernels are run3's), then the
# sm_90a kernel's 64 x 128 ping-pong tile forced against the heuristic's 128 x 256 cooperative one at
# prefill (more than 96 rows per expert).
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
cmake --build build/device -j 16 --target moekit > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
B=build/device/bin/moekit
run() {  # label, then bench arguments
  local label=$1
  shift
  rm -f /tmp/x.csv
  $B bench --backend cuda --quant none --no-baseline --refcheck --csv /tmp/x.csv "$@" > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/$label,/"
}
S64="gemm1.tile=sm90_m64n128k128;gemm2.tile=sm90_m64n128k128"
S128="gemm1.tile=sm90_m128n256k64;gemm2.tile=sm90_m128n256k64"
{
  echo "label,preset,T,method,kind,median_us,spread,experts_hit,pct_floor,refcheck"
  for p in qwen3-30b-a3b gpt-oss-120b mixtral-8x7b deepseek-v3; do
    run s128 --sets 2 --reps 5 --preset $p --tokens 4096,16384 --choice "$S128"
    run s64 --sets 2 --reps 5 --preset $p --tokens 4096,16384 --choice "$S64"
  done
  run s128 --sets 2 --reps 5 --preset qwen3-30b-a3b --tokens 2048 --choice "$S128"
  run s64 --sets 2 --reps 5 --preset qwen3-30b-a3b --tokens 2048 --choice "$S64"
} > "$OUT/bench.txt" 2>&1
cat "$OUT/bench.txt"
