#!/usr/bin/env bash
# Call 5 ($1 = the commit, main): every gpu test at the final code (test_sm90_gemm's new
# SixteenBitOutputIsTheFloat32OutputRounded on the TMA-store epilogue among them), then the gather
# probe with the one-warp and 128-thread cp.async gathers.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/tma_gather_probe bench/probes/tma_gather_probe.cu > "$OUT/r/nvcc.txt" 2>&1 || cat "$OUT/r/nvcc.txt"
timeout 120 /tmp/tma_gather_probe > "$OUT/r/probe.txt" 2>&1; echo "# probe rc=$?"; cat "$OUT/r/probe.txt"
scripts/device-build.sh "$COMMIT" "$OUT/r/build" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
T0=$SECONDS
timeout 330 ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run" "$OUT/r/ctest-gpu.txt" | head
grep -h "SixteenBit" build/device/Testing/Temporary/LastTest.log 2>/dev/null | head -3
pack
