#!/usr/bin/env bash
# Third device call ($1 = the commit + a trace patch): moekit only; Qwen3 T=1 traced per CTA
# (src/cuda/common/trace.cuh, last replay) with the first ticket from the warp index (flags 1) and every
# ticket from the warp index, no atomics (flags 3); then the four presets at T=1 with each.
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
( time cmake --build build/device -j 16 --target moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
B=build/device/bin/moekit
D=docs/device-logs/2026-11-22-decode-token
for f in 1 3; do
  rm -f /tmp/tr.txt
  MOEKIT_TOKEN_FLAGS=$f MOEKIT_TRACE=/tmp/tr.txt $B bench --backend cuda --quant none --no-baseline --preset qwen3-30b-a3b --tokens 1 --sets 1 --reps 3 > /dev/null 2>&1
  { echo "== flags $f"; python3 $D/trace_token.py /tmp/tr.txt; } | tee -a "$OUT/trace.txt"
done
run() {  # label, then bench arguments
  local label=$1
  shift
  rm -f /tmp/x.csv
  $B bench --backend cuda --quant none --no-baseline --refcheck --csv /tmp/x.csv "$@" > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/$label,/"
}
{
  MOEKIT_TOKEN_FLAGS=3 run flags3 --sets 2 --reps 5 --tokens 1
  MOEKIT_TOKEN_FLAGS=1 run flags1 --sets 2 --reps 5 --tokens 1
} > "$OUT/bench.txt" 2>&1
grep ",layer," "$OUT/bench.txt"
