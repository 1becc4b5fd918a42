#!/usr/bin/env bash
# Not run yet: for the next session's first call ($1 = the commit; carry build/carry and run
# `tar -xJf build/carry/deps.tar.xz` first). Step 39's rule (kSm90HugeExpertMinRows = 16: Mixtral's
# experts on the sm_90a 64 x 128 tile in its 1 x 2 cluster from 16 routed rows, T >= 8) came from the
# tuner's measurement at T=8 alone (call 2). In the bench's protocol, v0 the heuristic against v1 the
# plan before the rule (the stream tiles: stream_n8k128 up to 4 rows an expert, stream_n16k128 to 10)
# at T = 8, 12, 16, 24; at T=4 (8 routed rows, outside the rule) v1 both GEMMs on the cluster tile,
# to see whether the rule should start lower. Then every gpu test in the time left.
set -uo pipefail
source scripts/device-ab.sh
device_call_start "${LIMIT:-585}"
trap device_pack EXIT
scripts/device-build.sh "$1" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || exit 1
B=build/device/bin/moekit
C=sm90_m64n128k128_c1x2
device_ab r/ab/mixtral-4 mixtral-8x7b 4 "" "gemm1.tile=$C;gemm2.tile=$C"
for T in 8 12 16; do device_ab r/ab/mixtral-$T mixtral-8x7b $T "" "gemm1.tile=stream_n8k128;gemm2.tile=stream_n8k128"; done
device_ab r/ab/mixtral-24 mixtral-8x7b 24 "" "gemm1.tile=stream_n16k128;gemm2.tile=stream_n16k128"
device_ctest_gpu r/ctest-gpu.txt
echo "# total $((SECONDS - DEVICE_START))s"
