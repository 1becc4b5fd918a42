#!/usr/bin/env bash
# First device call ($1 = the commit): build moekit and the decode tests, run them, then T=1 on the
# four presets with the one-token kernel (the default) against the stages (whole_layer off).
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
( time cmake --build build/device -j 16 --target moekit test_decode_token_cuda test_decode_layer_cuda test_moe_cuda ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
for t in test_decode_token_cuda test_decode_layer_cuda test_moe_cuda; do
  timeout 200 build/device/tests/gpu/$t > "$OUT/$t.txt" 2>&1; echo "$t rc=$?"
  grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" "$OUT/$t.txt" | head -12
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
  run token --sets 2 --reps 5 --tokens 1
  run stages --sets 2 --reps 5 --tokens 1 --fusion whole_layer=off
  run token-biases --sets 2 --reps 5 --tokens 1 --preset gpt-oss-120b --biases
} > "$OUT/bench.txt" 2>&1
grep ",layer," "$OUT/bench.txt"
