#!/usr/bin/env bash
# Step 20, device call 1 ($1 = the commit): gemm2 with the finalize in the sm_90a kernel's epilogue.
# Build moekit and the two GPU test binaries that exercise it; the finalize epilogue's own tests and
# the layer tests on the sm_90a tiles; then, per preset, the layer with the fusion forced on (the
# epilogue) against forced off (gemm2's rows, then the fixed-order finalize), with stage times, at
# token counts whose float32 accumulator (T x H x 4) spans 2 to 117 MB (the L2 holds 50).
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit test_sm90_gemm test_moe_cuda || exit 1
mkdir -p "$OUT/r"
B=build/device/bin/moekit
T90=$(find build/device -name test_sm90_gemm -type f -perm -u+x | head -1)
TMOE=$(find build/device -name test_moe_cuda -type f -perm -u+x | head -1)
SECONDS=0
$T90 --gtest_filter='*Finalize*:*Gated*' > "$OUT/r/test-sm90-epilogues.txt" 2>&1
echo "# test_sm90_gemm epilogues (${SECONDS}s): $(grep -E '^\[  (PASSED|FAILED)' "$OUT/r/test-sm90-epilogues.txt" | tr '\n' ' ')"
grep -E "Failure|error" -A3 "$OUT/r/test-sm90-epilogues.txt" | head -30
SECONDS=0
$TMOE --gtest_filter='*Sm90Tiles*:*Deterministic*:*EveryFusionSwitch*:*GraphReplays*' > "$OUT/r/test-moe-cuda.txt" 2>&1
echo "# test_moe_cuda (${SECONDS}s): $(grep -E '^\[  (PASSED|FAILED)' "$OUT/r/test-moe-cuda.txt" | tr '\n' ' ')"
grep -E "Failure" -A6 "$OUT/r/test-moe-cuda.txt" | head -40
ab() {  # preset, tokens, run
  for v in on off; do
    timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --preset $1 --tokens $2 --sets 2 --reps 5 --no-baseline --stages \
      --choice "fusion.gemm2_finalize=$v" --csv "$OUT/r/ab-$1-$v$3.csv" > "$OUT/r/ab-$1-$v$3.txt" 2>&1
    echo "$1 $v$3: $(grep -E '^\s+[0-9]+\s+(moekit|  cuda.gemm2|  cuda.finalize)' "$OUT/r/ab-$1-$v$3.txt" | awk '{printf "%s %s %s | ", $1, substr($2,6,9), $3}')"
  done
}
SECONDS=0
ab qwen3-30b-a3b 256,1024,2048,4096,8192 1
ab deepseek-v3 256,512,1024,2048,4096 1
ab mixtral-8x7b 256,1024,2048,4096 1
ab gpt-oss-120b 256,1024,2048,4096 1
echo "# a/b ${SECONDS}s"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
