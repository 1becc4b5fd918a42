#!/usr/bin/env bash
# Twelfth device call ($1 = the commit): the routing tests only (the new EarlyIdsAreTheFinalIds among them).
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
( time cmake --build build/device -j 16 --target test_routing_cuda ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
build/device/tests/gpu/test_routing_cuda > "$OUT/test_routing_cuda.txt" 2>&1
grep -E "^\[ *(OK|FAILED|PASSED) " "$OUT/test_routing_cuda.txt"; grep -E "Failure|Expected|Which is|token" "$OUT/test_routing_cuda.txt" | head -20
