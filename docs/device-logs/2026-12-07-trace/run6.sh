#!/usr/bin/env bash
# Prepared in session 34, not run (no device time left): the one-token kernel with its gated
# activation chosen at launch (act-template.patch: a kernel instance for SwiGLU, whose lane-0 step
# after each gemm1 item's reduction is then straight-line code; the gemm1 loop 684 SASS
# instructions instead of 869, 122 registers, no spills) against main's, at T=1. Step 50 (d) put
# about a tenth of Qwen3-30B-A3B T=1's stall samples on instruction fetch at the branches into the
# activation's choice. The same activation function, so the same bits: checked here with `moekit
# run --output` of both binaries compared byte for byte, and --refcheck, at bf16 and f16, for
# SwiGLU presets (the new instance) and GPT-OSS and GeGLU (the general one).
#
# Carry build/carry: prebuilt.tar.xz (main, scripts/prepare-device-prebuilt.sh) and moekit-act.xz
# (scripts/prepare-device-variant.sh act docs/device-logs/2026-12-07-trace/act-template.patch).
# Two binaries, so the A/B alternates processes: 4 rounds at Qwen3, 2 at DeepSeek-V3 and Mixtral.
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-300}" "$1"
xz -dc build/carry/moekit-act.xz > /tmp/moekit-act && chmod +x /tmp/moekit-act
same() {  # NAME ARGS...: main's and the variant's outputs, byte for byte
  local n=$1; shift
  "$B" run --backend cuda -T 1 --seed 7 "$@" --output "/tmp/main-$n.npy" > "$OUT/r/run-main-$n.txt" 2>&1
  /tmp/moekit-act run --backend cuda -T 1 --seed 7 --refcheck "$@" --output "/tmp/act-$n.npy" > "$OUT/r/run-act-$n.txt" 2>&1
  local rc=$?
  if cmp -s "/tmp/main-$n.npy" "/tmp/act-$n.npy"; then echo "== $n: identical, refcheck rc=$rc"; else echo "== $n: DIFFERENT (refcheck rc=$rc)"; fi
}
same qwen3-bf16 --preset qwen3-30b-a3b --quant none
same qwen3-f16 --preset qwen3-30b-a3b --quant none --dtype f16
same deepseek --preset deepseek-v3 --quant none
same mixtral --preset mixtral-8x7b --quant none
same gptoss --preset gpt-oss-120b --quant none
same geglu --preset qwen3-30b-a3b --quant none --activation geglu
same qwen3-bias --preset qwen3-30b-a3b --quant none --biases
one() {  # BINARY NAME PRESET ROUND
  timeout 60 "$1" bench --backend cuda --quant none --preset "$3" --tokens 1 --sets 2 --reps 5 --no-baseline > "$OUT/r/ab-$3-$2-$4.txt" 2>&1
  printf "%-14s %-5s %s %s\n" "$3" "$2" "$4" "$(grep -E '^ +1 +moekit' "$OUT/r/ab-$3-$2-$4.txt" | awk '{print $3}')"
}
for r in 1 2 3 4; do one "$B" main qwen3-30b-a3b $r; one /tmp/moekit-act act qwen3-30b-a3b $r; done
for p in deepseek-v3 mixtral-8x7b; do for r in 1 2; do one /tmp/moekit-act act $p $r; one "$B" main $p $r; done; done
echo "# total $((SECONDS - DEVICE_START))s"
