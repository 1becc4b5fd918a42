#!/usr/bin/env bash
# Ninth device call ($1 = the commit): build moekit, then the full table: every preset at T = 1, 8,
# 64, 256, 1024, 4096, 16384 with the refcheck (the command of docs/benchmarks.md's tables).
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv > "$OUT/env.txt" 2>&1
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr \
  -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0 -DMOEKIT_COMMIT=$COMMIT > /tmp/configure.txt 2>&1 || { tail -20 /tmp/configure.txt; exit 1; }
( time cmake --build build/device -j 16 --target moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
tail -3 "$OUT/build.txt"
SECONDS=0
timeout 480 build/device/bin/moekit bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
  --csv "$OUT/bench-table.csv" --json "$OUT/bench-table.json" 2>&1 | tee "$OUT/bench-table.txt" | tail -45
echo "# bench took ${SECONDS}s"
