#!/usr/bin/env bash
# Re-tune ($1 = the commit, $2 = a shapes CSV of this folder, $3 = the table to start from, default
# bench/tune/h200.csv): moekit only, then `moekit tune` into a copy of the table under $OUT (its
# journal beside it, so a cut-short call keeps its rows). Calls 5 and 6.
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
cmake --build build/device -j 16 --target moekit > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
rm -f "$OUT/build.txt"
cp "${3:-bench/tune/h200.csv}" "$OUT/h200.csv"
( time timeout ${TUNE_LIMIT:-450} build/device/bin/moekit tune -i "docs/device-logs/2026-11-25-sm90-clusters/$2" -o "$OUT/h200.csv" --compare --no-progress ) > "$OUT/retune.txt" 2>&1
grep -E "^E=|heuristic: .* speedup|^real" "$OUT/retune.txt"
