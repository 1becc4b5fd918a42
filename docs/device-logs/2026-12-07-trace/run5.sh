#!/usr/bin/env bash
# Session 34, fifth call: are the fast CTAs of step 50 (c) fast SMs? bench/probes/sm_rate_probe.cu
# (built on the CPU machine into build/carry/sm_rate_probe) times each SM's share of a plain stream
# by SM id, every SM streaming and then every other CTA; then the one-token kernel's per-warp
# stamps with each warp's SM id (trace-csv-smid.patch, build/carry/moekit-trace.xz) at Qwen3 and
# Mixtral T=1, to set the kernel's fast CTAs beside the probe's fast SMs. On an H200, the full
# table in the time left (none on an H200 since b7a1afa).
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-240}" "$1"
timeout 60 build/carry/sm_rate_probe > "$OUT/r/sm-rate-probe.txt" 2>&1
echo "== probe rc=$?"; grep -E "^#|^==|^per-SM time,|^SMs more|^launches" "$OUT/r/sm-rate-probe.txt" | cut -c1-400
xz -dc build/carry/moekit-trace.xz > /tmp/moekit-trace && chmod +x /tmp/moekit-trace
for p in qwen3-30b-a3b mixtral-8x7b; do
  MOEKIT_DECODE_TRACE=1 MOEKIT_DECODE_TRACE_CSV="$OUT/r/warps-$p.csv" timeout 60 /tmp/moekit-trace bench --backend cuda --quant none \
    --preset $p --tokens 1 --sets 2 --reps 5 --no-baseline > "$OUT/r/trace-$p.txt" 2>&1
  echo "== trace $p rc=$?"; grep -E "^ +1 +moekit|gemm1 items done" "$OUT/r/trace-$p.txt"
done
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ "$(device_left)" -gt 120 ]; then device_tables; fi
echo "# total $((SECONDS - DEVICE_START))s"
