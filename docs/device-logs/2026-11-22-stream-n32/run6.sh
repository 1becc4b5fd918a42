#!/usr/bin/env bash
# Re-tune ($1 = the commit, $2 = a shapes CSV of this folder): moekit only, then `moekit tune` into a
# copy of bench/tune/h200.csv under $OUT (its journal beside it, so a cut-short call keeps its rows).
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
cmake --build build/device -j 16 --target moekit > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
rm -f "$OUT/build.txt"
cp bench/tune/h200.csv "$OUT/h200.csv"
( time build/device/bin/moekit tune -i "docs/device-logs/2026-11-22-stream-n32/$2" -o "$OUT/h200.csv" --compare --no-progress ) > "$OUT/retune.txt" 2>&1
grep -E "^shape|heuristic .* tuned|^real" "$OUT/retune.txt"
