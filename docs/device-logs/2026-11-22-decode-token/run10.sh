#!/usr/bin/env bash
# Tenth device call ($1 = the commit + the trace marks of trace-v2.patch): moekit only; Qwen3 and
# GPT-OSS T=1 traced per CTA (last replay), then the T=1 bench of the four presets.
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
( time cmake --build build/device -j 16 --target moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
B=build/device/bin/moekit
D=docs/device-logs/2026-11-22-decode-token
for p in qwen3-30b-a3b gpt-oss-120b; do
  rm -f /tmp/tr.txt
  MOEKIT_TRACE=/tmp/tr.txt $B bench --backend cuda --quant none --no-baseline --preset $p --tokens 1 --sets 1 --reps 3 > /dev/null 2>&1
  { echo "== $p"; TOKEN_MARKS=v2 python3 $D/trace_token.py /tmp/tr.txt; } | tee -a "$OUT/trace.txt"
done
rm -f /tmp/x.csv
$B bench --backend cuda --quant none --no-baseline --refcheck --csv /tmp/x.csv --sets 2 --reps 5 --tokens 1 > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
grep -v "^#" /tmp/x.csv | cut -d, -f1,3,5,6,7,12,14,20,23 | tee "$OUT/bench.txt"
