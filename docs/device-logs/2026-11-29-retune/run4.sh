#!/usr/bin/env bash
# Step 39, call 3 ($1 = the commit; carry build/carry, `tar -xJf build/carry/deps.tar.xz` first), in
# the session's last ~200 s of device time: the new rule at Mixtral T=8 in the bench's protocol, v0 the
# heuristic (both GEMMs on the 64 x 128 cluster tile) against v1 the plan before it (stream_n8k128).
# run3.sh is the full check.
set -uo pipefail
source scripts/device-ab.sh
device_call_start "${LIMIT:-150}"
trap device_pack EXIT
scripts/device-build.sh "$1" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || exit 1
B=build/device/bin/moekit
device_ab r/ab/mixtral-8 mixtral-8x7b 8 "" "gemm1.tile=stream_n8k128;gemm2.tile=stream_n8k128"
echo "# total $((SECONDS - DEVICE_START))s"
