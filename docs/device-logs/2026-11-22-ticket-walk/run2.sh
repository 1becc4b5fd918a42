#!/usr/bin/env bash
# Second device call ($1 = the commit + trace-v3 marks and MOEKIT_TOKEN_FLAGS diagnostics): moekit only.
# Qwen3 and GPT-OSS T=1 traced per CTA (flags 0, and 1 = no arithmetic on the weights), then T=1 on
# the four presets under flags 0 / 1 (no weight arithmetic) / 2 (fixed ids, no routing) / 4 (walk
# transposed: warp-major over CTAs) / 8 (no L2 cache hint) / 0 again.
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
( time cmake --build build/device -j 16 --target moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
B=build/device/bin/moekit
D=docs/device-logs/2026-11-22-ticket-walk
for f in 0 1; do
  for p in qwen3-30b-a3b gpt-oss-120b; do
    rm -f /tmp/tr.txt
    MOEKIT_TOKEN_FLAGS=$f MOEKIT_TRACE=/tmp/tr.txt $B bench --backend cuda --quant none --no-baseline --preset $p --tokens 1 --sets 1 --reps 3 > /dev/null 2>&1
    { echo "== $p flags $f"; TOKEN_MARKS=v3 python3 $D/trace_token.py /tmp/tr.txt; } | tee -a "$OUT/trace.txt"
  done
done
for f in 0 1 2 4 8 0; do
  rm -f /tmp/x.csv
  MOEKIT_TOKEN_FLAGS=$f $B bench --backend cuda --quant none --no-baseline --refcheck --csv /tmp/x.csv --sets 2 --reps 5 --tokens 1 > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/flags=$f,/"
done | tee "$OUT/bench.txt" | grep ",layer,"
