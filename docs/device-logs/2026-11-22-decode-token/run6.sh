#!/usr/bin/env bash
# Sixth device call ($1 = the commit): moekit and the one-token tests; run them; then T=1 on the four
# presets with gemm2's first item staged in shared memory (the default where it fits: Qwen3 here)
# against the register preload of its first group (MOEKIT_TOKEN_STAGE=0), in turns.
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
( time cmake --build build/device -j 16 --target moekit test_decode_token_cuda ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
for v in 1 0; do
  MOEKIT_TOKEN_STAGE=$v timeout 200 build/device/tests/gpu/test_decode_token_cuda > "$OUT/test_decode_token_cuda-stage$v.txt" 2>&1; echo "stage=$v rc=$?"
  grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" "$OUT/test_decode_token_cuda-stage$v.txt" | head -12
done
B=build/device/bin/moekit
run() {  # label, then bench arguments
  local label=$1
  shift
  rm -f /tmp/x.csv
  $B bench --backend cuda --quant none --no-baseline --refcheck --csv /tmp/x.csv "$@" > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/$label,/"
}
{
  echo "label,preset,T,method,kind,median_us,spread,experts_hit,pct_floor,refcheck"
  for round in 1 2; do
    MOEKIT_TOKEN_STAGE=1 run staged --sets 2 --reps 5 --tokens 1
    MOEKIT_TOKEN_STAGE=0 run registers --sets 2 --reps 5 --tokens 1
  done
} > "$OUT/bench.txt" 2>&1
grep ",layer," "$OUT/bench.txt"
