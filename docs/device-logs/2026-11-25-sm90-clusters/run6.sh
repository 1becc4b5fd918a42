#!/usr/bin/env bash
# Sixth device call ($1 = the commit): deterministic mode against the default at T = 64, 1024, 16384
# (Qwen3, DeepSeek-V3), then the re-tune of the T = 1024 and 4096 rows (run5.sh, retune-large.csv).
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
cmake --build build/device -j 16 --target moekit > "$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
B=build/device/bin/moekit
for mode in default deterministic; do
  $B bench --backend cuda --quant none --preset qwen3-30b-a3b,deepseek-v3 --tokens 64,1024,16384 --sets 2 --reps 5 --no-baseline \
    $([ $mode = deterministic ] && echo --deterministic) --csv "$OUT/$mode.csv" > "$OUT/$mode.txt" 2>&1
  echo "== $mode"; cut -d, -f1,3,7,12 "$OUT/$mode.csv" | tail -n +2 | tr '\n' ' '; echo
done
TUNE_LIMIT=380 bash docs/device-logs/2026-11-25-sm90-clusters/run5.sh $1 retune-large.csv
