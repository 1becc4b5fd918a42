#!/usr/bin/env bash
# Seventh device call ($1 = the commit + trace-v3 marks): gemm2's loads rolled as gemm1's (4-row items;
# flags 0) against gemm2 item at a time (MOEKIT_TOKEN_FLAGS=2). One-token tests; Qwen3 T=1 traced
# both ways; T=1 bench 0 / 2 / 0 / 2.
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
( time cmake --build build/device -j 16 --target moekit test_decode_token_cuda ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
for t in test_decode_token_cuda; do
  f=$(find build/device -name $t -type f -executable | head -1)
  $f > "$OUT/$t.txt" 2>&1; echo "$t: $(grep -E "PASSED|FAILED" "$OUT/$t.txt" | tr '\n' ' ')"
done
B=build/device/bin/moekit
D=docs/device-logs/2026-11-22-ticket-walk
for f in 0 2; do
  rm -f /tmp/tr.txt
  MOEKIT_TOKEN_FLAGS=$f MOEKIT_TRACE=/tmp/tr.txt $B bench --backend cuda --quant none --no-baseline --preset qwen3-30b-a3b --tokens 1 --sets 1 --reps 3 > /dev/null 2>&1
  { echo "== qwen3-30b-a3b flags $f"; TOKEN_MARKS=v3 python3 $D/trace_token.py /tmp/tr.txt; } | tee -a "$OUT/trace.txt"
done
for f in 0 2 0 2; do
  rm -f /tmp/x.csv
  MOEKIT_TOKEN_FLAGS=$f $B bench --backend cuda --quant none --no-baseline --refcheck --csv /tmp/x.csv --sets 2 --reps 5 --tokens 1 > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/flags=$f,/"
done | tee "$OUT/bench.txt" | grep ",layer,"
