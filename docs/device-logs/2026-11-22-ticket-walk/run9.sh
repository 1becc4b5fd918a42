#!/usr/bin/env bash
# Ninth device call ($1 = the commit): moekit only; Qwen3-30B-A3B T=1 eight times (each a fresh bench
# process, so fresh weight allocations), then four times with four weight sets instead of two.
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
( time cmake --build build/device -j 16 --target moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
B=build/device/bin/moekit
run() {  # label, then bench arguments
  local label=$1
  shift
  rm -f /tmp/x.csv
  $B bench --backend cuda --quant none --no-baseline --preset qwen3-30b-a3b --tokens 1 "$@" --csv /tmp/x.csv > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/$label,/"
}
{
  for i in 1 2 3 4 5 6 7 8; do run "sets2-run$i" --refcheck --sets 2 --reps 5; done
  for i in 1 2 3 4; do run "sets4-run$i" --sets 4 --reps 5; done
} > "$OUT/bench.txt" 2>&1
grep ",layer," "$OUT/bench.txt"
