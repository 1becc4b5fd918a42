#!/usr/bin/env bash
# Call 6 ($1 = the commit; the session's last device time): bench/probes/bulk_reduce_probe.cu (gemm2's
# epilogue traffic alone: bf16 row stores against bulk reduce-adds into the tokens' rows, Qwen3 shapes,
# T = 1024, 4096, 16384); then, while time is left, moekit built and the finalize timed as its own
# step at Qwen3 T = 1024, 4096 (the same protocol as call 3's budget runs).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((240 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/bulk_reduce_probe bench/probes/bulk_reduce_probe.cu > "$OUT/r/probe-build.txt" 2>&1 || { cat "$OUT/r/probe-build.txt"; exit 1; }
timeout 60 /tmp/bulk_reduce_probe 2>&1 | tee "$OUT/r/bulk_reduce_probe.txt"
[ "$(left)" -lt 170 ] && exit 0
timeout $(( $(left) - 40 )) scripts/device-build.sh "$COMMIT" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || exit 0
timeout $(( $(left) - 5 )) build/device/bin/moekit bench --backend cuda --quant none --gate-up interleaved --sets 1 --reps 3 --no-baseline \
  --stages --fusion gemm2_finalize=off --preset qwen3-30b-a3b --tokens 1024,4096 --csv "$OUT/r/finalize-qwen3.csv" > "$OUT/r/finalize-qwen3.txt" 2>&1
echo "# rc=$?"; grep -E "moekit|cuda\." "$OUT/r/finalize-qwen3.txt"
