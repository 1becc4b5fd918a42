#!/usr/bin/env bash
# Call 1 ($1 = the commit): every gpu test on session 14's final tree, whose test-harness fix
# (docs/perf-notes.md step 35 f: test_sm90_gemm's upload() through memcpy_sync, the attention tests'
# and the bench's poison waits) never ran on a GPU. Nothing else.
set -uo pipefail
COMMIT=$1
START=$SECONDS
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
T0=$SECONDS
timeout $((580 - (SECONDS - START))) ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
echo "# total $((SECONDS - START))s"
pack
