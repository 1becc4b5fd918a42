#!/usr/bin/env bash
# Prepared in session 34, not run (no device time left): the one-token kernel with its gated
# activation chosen at launch (act-template.patch: a kernel instance for SwiGLU, whose lane-0 step
# after each gemm1 item's reduction is then straight-line code; the gemm1 loop 684 SASS
# instructions instead of 869, 122 registers, no spills) against main's, at T=1. The same
# activation function, so the same bits; the decode kernels' gpu tests check the patched build.
# Step 50 (d) put about a tenth of Qwen3-30B-A3B T=1's stall samples on instruction fetch at the
# branches into the activation's choice.
#
# Carry build/carry: prebuilt.tar.xz packed from the patched tree (git apply act-template.patch;
# scripts/prepare-device-prebuilt.sh), and moekit-main.xz (main's moekit, stripped, xz'd).
# Two binaries, so the A/B alternates processes: 4 rounds at Qwen3, 2 at Mixtral and DeepSeek-V3.
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-300}" "$1"
xz -dc build/carry/moekit-main.xz > /tmp/moekit-main && chmod +x /tmp/moekit-main
timeout 200 ctest --test-dir "$DEVICE_BUILD_DIR" -L gpu -R "Decode" -j 4 --output-on-failure > "$OUT/r/ctest-decode.txt" 2>&1
echo "== ctest -L gpu -R Decode rc=$? $(grep -E 'tests passed|tests failed' "$OUT/r/ctest-decode.txt")"
one() {  # BINARY NAME PRESET ROUND
  timeout 60 "$1" bench --backend cuda --quant none --preset "$3" --tokens 1 --sets 2 --reps 5 --no-baseline > "$OUT/r/ab-$3-$2-$4.txt" 2>&1
  printf "%-14s %-5s %s %s\n" "$3" "$2" "$4" "$(grep -E '^ +1 +moekit' "$OUT/r/ab-$3-$2-$4.txt" | awk '{print $3}')"
}
for r in 1 2 3 4; do one /tmp/moekit-main main qwen3-30b-a3b $r; one "$B" act qwen3-30b-a3b $r; done
for p in deepseek-v3 mixtral-8x7b; do for r in 1 2; do one "$B" act $p $r; one /tmp/moekit-main main $p $r; done; done
echo "# total $((SECONDS - DEVICE_START))s"
