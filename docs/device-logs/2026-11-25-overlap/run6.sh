#!/usr/bin/env bash
# Step 19, device call 6 ($1 = the commit): the committed rule (no 1 x 2 cluster on the 64 x 128 tile
# above 16 rows per expected expert, for large experts only) and the review mends. Build with
# scripts/device-build.sh; test_sm90_gemm and test_maps_cuda (DeviceBuffer now in gpu_test_util.h),
# test_moe_cuda's interleave (two cudaMemcpy3D) and sm_90a tests; explain's tiles at the rule's edges;
# new against old (the clustered tile forced) at GPT-OSS T = 768, 1024 and DeepSeek-V3 T=512, twice in
# turns.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit test_sm90_gemm test_maps_cuda test_moe_cuda || exit 1
mkdir -p "$OUT/r"
T=build/device/tests/gpu
B=build/device/bin/moekit
for t in "test_sm90_gemm" "test_maps_cuda" "test_moe_cuda --gtest_filter=*InterleaveGateUp*:*Sm90*:*GraphReplays*"; do
  name=${t%% *}
  SECONDS=0
  $T/$t > "$OUT/r/$name.txt" 2>&1; echo "$t rc=$? (${SECONDS}s): $(grep -E '^\[  (PASSED|FAILED)' "$OUT/r/$name.txt" | tr '\n' ' ')"
done
for q in "deepseek-v3 256" "deepseek-v3 300" "deepseek-v3 512" "qwen3-30b-a3b 512" "gpt-oss-120b 1024"; do
  set -- $q
  echo "explain $1 T=$2: $($B explain --preset $1 --quant none -T $2 --gate-up interleaved 2>&1 | grep -E 'gemm[12].tile' | awk '{printf "%s %s | ", $1, $2}')"
done
OLD="gemm1.tile=sm90_m64n128k128_c1x2;gemm2.tile=sm90_m64n128k128_c1x2"
for i in 1 2; do
  for v in new old; do
    extra=""; [ $v = old ] && extra="--choice $OLD"
    for pt in "gpt-oss-120b 768,1024" "deepseek-v3 512"; do
      set -- $pt
      timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --preset $1 --tokens $2 --sets 2 --reps 5 --no-baseline --stages $extra \
        --csv "$OUT/r/ab-$1-$v$i.csv" > "$OUT/r/ab-$1-$v$i.txt" 2>&1
      echo "$1 $v$i: $(grep -E '^\s+[0-9]+\s+(moekit|  cuda.gemm)' "$OUT/r/ab-$1-$v$i.txt" | awk '{printf "%s %s %s | ", $1, substr($2,6,5), $3}')"
    done
  done
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
