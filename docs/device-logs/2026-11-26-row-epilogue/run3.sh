#!/usr/bin/env bash
# Call 3, and call 4 with the cp.async gather modes ($1 = the commit): bench/probes/tma_gather_probe.cu, whether gemm1's producer could gather
# the routed rows with one TMA copy a row into the 128-byte-swizzled A stage (layout, then the rate).
set -uo pipefail
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/tma_gather_probe bench/probes/tma_gather_probe.cu > "$OUT/r/nvcc.txt" 2>&1 || { cat "$OUT/r/nvcc.txt"; exit 1; }
timeout 300 /tmp/tma_gather_probe 2>&1 | tee "$OUT/r/probe.txt"
echo "# rc=${PIPESTATUS[0]}"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
