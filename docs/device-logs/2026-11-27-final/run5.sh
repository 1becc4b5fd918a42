#!/usr/bin/env bash
# Call 5 ($1 = the commit): the review's changes (launch_sm90_setups checks its jobs; the overlapped
# pair's rule needs rows, so a layer with T = 0 on forced sm_90a tiles has no pair to set up): the
# sm_90a GEMM's tests and the layer's sm_90a tile tests (T = 0 among them), within what is left of
# the session's device time.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" test_sm90_gemm test_moe_cuda -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
T0=$SECONDS  # the two binaries side by side, to fit the device time left
timeout 120 build/device/tests/gpu/test_sm90_gemm --gtest_filter='Sm90GroupedGemm.TwoSetupsInOneLaunch:Sm90GroupedGemm.SetupRejectsBadJobs:Sm90GroupedGemm.LaunchWithoutSetupReusesTheLastSetup:Sm90GroupedGemm.F16:Sm90GroupedGemm.GraphCaptureAndReplay' > "$OUT/r/test_sm90_gemm.txt" 2>&1 &
timeout 120 build/device/tests/gpu/test_moe_cuda --gtest_filter='MoeCuda.Sm90TilesGiveTheSameLayer' > "$OUT/r/test_moe_cuda.txt" 2>&1
echo "# test_moe_cuda rc=$? $((SECONDS - T0))s"
wait; echo "# both done $((SECONDS - T0))s"
grep -hE "^\[ *(PASSED|FAILED|SKIPPED|  OK|RUN) " "$OUT/r/test_sm90_gemm.txt" "$OUT/r/test_moe_cuda.txt" | grep -v "RUN" | head -20
pack
