#!/usr/bin/env bash
# Step 21, device call 12 ($1 = the commit): the whole-layer kernels' tests after their shared case
# lists (moe_case.h: routing_method_cases, every_activation_case, prerouted_f16_relu2_case).
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" test_decode_tokens_cuda test_decode_token_cuda test_decode_layer_cuda test_moe_cuda || exit 1
mkdir -p "$OUT/r"
SECONDS=0
(cd build/device && timeout 400 ctest -L gpu -R "DecodeTokens|DecodeToken|DecodeLayer|MoeCuda" -j 3 --output-on-failure) > "$OUT/r/ctest-decode.txt" 2>&1
echo "$(grep -E 'tests passed|tests failed' "$OUT/r/ctest-decode.txt") (${SECONDS}s)"
grep -E "\*\*\*|Failed|FAILED" "$OUT/r/ctest-decode.txt" | head -10
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
