#!/usr/bin/env bash
# Session 34, fifth call: are the fast CTAs of step 50 (c) fast SMs? bench/probes/sm_rate_probe.cu
# (built on the CPU machine into build/carry/sm_rate_probe) times each SM's share of a plain stream
# by SM id, every SM streaming and then every other CTA; then the one-token kernel's per-warp
# stamps with each warp's SM id (trace-csv-smid.patch, build/carry/moekit-trace.xz) at Qwen3 and
# Mixtral T=1, to set the kernel's fast CTAs beside the probe's fast SMs. On an H200, with more
# than 200 s left, the tuned rows and the full table (device_h200_owed; none since b7a1afa).
# Carry build/carry: prebuilt.tar.xz, sm_rate_probe (nvcc, the probe's header line), and
# moekit-trace.xz (scripts/prepare-device-variant.sh trace docs/device-logs/2026-12-07-trace/trace-csv-smid.patch).
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-240}" "$1"
timeout 60 build/carry/sm_rate_probe > "$OUT/r/sm-rate-probe.txt" 2>&1
echo "== probe rc=$?"; grep -E "^#|^==|^per-SM time,|^SMs more|^launches" "$OUT/r/sm-rate-probe.txt" | cut -c1-400
xz -dc build/carry/moekit-trace.xz > /tmp/moekit-trace && chmod +x /tmp/moekit-trace
device_trace_warps /tmp/moekit-trace qwen3-30b-a3b mixtral-8x7b
device_h200_owed
echo "# total $((SECONDS - DEVICE_START))s"
