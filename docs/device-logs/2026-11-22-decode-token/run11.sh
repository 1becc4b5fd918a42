#!/usr/bin/env bash
# Eleventh device call ($1 = the commit): moekit only; T=1 on the four presets with gemm2 items of
# 4 rows x 4 chunks (default), 5 x 3 and 6 x 3 (MOEKIT_TOKEN_G2), then Qwen3 alone again in turns.
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
  $B bench --backend cuda --quant none --no-baseline --refcheck --csv /tmp/x.csv "$@" > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/$label,/"
}
{
  echo "label,preset,T,method,kind,median_us,spread,experts_hit,pct_floor,refcheck"
  for g in 4 5 6; do MOEKIT_TOKEN_G2=$g run g2-$g --sets 2 --reps 5 --tokens 1; done
  for g in 4 5 6 4 5 6; do MOEKIT_TOKEN_G2=$g run g2-$g-again --sets 2 --reps 5 --tokens 1 --preset qwen3-30b-a3b; done
} > "$OUT/bench.txt" 2>&1
grep ",layer," "$OUT/bench.txt"
