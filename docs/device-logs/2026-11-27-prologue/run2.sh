#!/usr/bin/env bash
# Call 2: no build. cuBLAS (torch.bmm) on the layer's two GEMMs with uniform rows an expert, against
# the bench's floor with call 1's ceilings (3093 GB/s, 804 TFLOP/s): batched_ceiling.py.
set -uo pipefail
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
(while true; do nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/r/clocks.txt"; sleep 0.5; done) &
MON=$!
timeout 400 python3 docs/device-logs/2026-11-27-prologue/batched_ceiling.py 3093e9 804e12 "$OUT/r/batched_ceiling.json" 2>&1 | tee "$OUT/r/batched_ceiling.txt"
kill $MON
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
