#!/usr/bin/env bash
# Not run yet: for the next session's first call ($1 = the commit; carry build/carry and run
# `tar -xJf build/carry/deps.tar.xz` first). What step 38 left:
#   1. the eight gpu tests that call 4 did not reach at 4350b70, then every other gpu test;
#   2. Qwen3-30B-A3B T=1, which ran 9% slower in calls 2 and 4 (29.0-29.6 µs) than in step 37's
#      calls (26.6-26.7) with the same plan: four runs of --sets 2 --reps 5 at this commit, to
#      compare with step 37's on the same machine's ceilings (if it stays at 29, build 93a002d next);
#   3. the cluster at 12 rows for the large experts (DeepSeek-V3 T=192, GPT-OSS T=384): v0 the
#      heuristic (no cluster: above the 8-row limit), v1 both large GEMMs on the cluster.
# Everything under $OUT/r comes back packed in r.tgz (`tar -xzf r.tgz` into call5/).
set -uo pipefail
source scripts/device-ab.sh
device_call_start "${LIMIT:-585}"
trap device_pack EXIT
scripts/device-build.sh "$1" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || exit 1
B=build/device/bin/moekit
UNREACHED='MoeCuda\.(Gemm2OverlapKeepsTheBits|TallTileGivesTheSameLayer)|Sm90GroupedGemm\.(SixteenBitOutputIsTheFloat32OutputRounded|TailSplitMatchesTheReferenceAndRepeatsItsBits|LaunchWithoutSetupReusesTheLastSetup|SetupRejectsBadJobs|TwoSetupsInOneLaunch)|BenchCuda\.BatchedReferenceMultipliesEvenlySpreadRows'
device_ctest_gpu r/ctest-unreached.txt -R "$UNREACHED"
for i in 1 2 3 4; do
  timeout 60 "$B" bench --backend cuda --quant none --gate-up interleaved --no-baseline --sets 2 --reps 5 \
    --preset qwen3-30b-a3b --tokens 1 --csv "$OUT/r/qwen3-T1-$i.csv" > "$OUT/r/qwen3-T1-$i.txt" 2>&1
  grep -E "^ *qwen3|moekit" "$OUT/r/qwen3-T1-$i.txt" | head -2
done
device_ab r/ab/deepseek-192 deepseek-v3 192 "" "gemm1.tile=sm90_m64n128k128_c1x2;gemm2.tile=sm90_m64n128k128_c1x2"
device_ab r/ab/gptoss-384 gpt-oss-120b 384 "" "gemm1.tile=sm90_m64n128k128_c1x2"
device_ctest_gpu r/ctest-gpu.txt -E "$UNREACHED"
echo "# total $((SECONDS - DEVICE_START))s"
