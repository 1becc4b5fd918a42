#!/usr/bin/env bash
# Call 6 ($1 = the commit): the gather probe again with 64 gather threads and with the tile's token
# indices kept in shared memory (one warp's __ldg gather was too slow at call 5).
set -uo pipefail
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/tma_gather_probe bench/probes/tma_gather_probe.cu > "$OUT/r/nvcc.txt" 2>&1 || { cat "$OUT/r/nvcc.txt"; exit 1; }
timeout 120 /tmp/tma_gather_probe > "$OUT/r/probe.txt" 2>&1; echo "# probe rc=$?"; cat "$OUT/r/probe.txt"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
