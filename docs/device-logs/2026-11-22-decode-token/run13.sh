#!/usr/bin/env bash
# Thirteenth device call ($1 = the commit): moekit only; T=1 on the four presets twice (gemm1
# software-pipelined), with the refcheck.
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
( time cmake --build build/device -j 16 --target moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
B=build/device/bin/moekit
for round in 1 2; do
  rm -f /tmp/x.csv
  $B bench --backend cuda --quant none --no-baseline --refcheck --csv /tmp/x.csv --sets 2 --reps 5 --tokens 1 > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/round$round,/"
done | tee "$OUT/bench.txt"
