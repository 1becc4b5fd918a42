#!/usr/bin/env bash
# First device call ($1 = the commit): moekit and the one-token test binary; the one-token tests with
# the default walk; then T=1 on the four presets under MOEKIT_TOKEN_WALK="counters,static rounds"
# (0 counters: the static walk of e52d903), in turns.
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
( time cmake --build build/device -j 16 --target moekit test_decode_token_cuda ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
build/device/bin/test_decode_token_cuda > "$OUT/test-decode-token.txt" 2>&1; tail -3 "$OUT/test-decode-token.txt"
B=build/device/bin/moekit
for round in 1 2; do
  for walk in 0,1 8,1 4,1 16,1 8,2; do
    rm -f /tmp/x.csv
    MOEKIT_TOKEN_WALK=$walk $B bench --backend cuda --quant none --no-baseline --refcheck --csv /tmp/x.csv --sets 2 --reps 5 --tokens 1 > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
    grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/round$round,walk=$walk,/"
  done
done | tee "$OUT/bench.txt" | grep ",layer,"
