#!/usr/bin/env bash
# Step 42, call 3 ($1 = the commit; carry build/carry, `tar -xJf build/carry/deps.tar.xz` first).
# The rule calls 1-2 chose (moe_launch.h kSm90TallTailMinRows etc.): the heuristic runs a GEMM's tall
# tails in parts, beside the heads, on the 128 x 256 tile at 112-256 rows an expected expert for
# experts of 6M to 48M elements (GPT-OSS-120B, DeepSeek-V3).
# 1. A/B in turns, v0 the heuristic (the rule), v1 the rule off (both knobs off), at points the rule
#    changes. Predictions: the measured ones as in calls 1-2 (GPT-OSS T=3584 -2%, T=4096 -6%, T=8192
#    about -1%; DeepSeek-V3 T=2048 about -1%, T=4096 -1.3%); not measured before: GPT-OSS T=4352
#    (136 rows, gemm2 alone in parts: -2..-4%), T=5664 (177 rows: -1..-3%), DeepSeek-V3 T=3072
#    (192 rows: about -1%), GPT-OSS's shape with I=1152 T=4096 (gemm1 alone: a 6.6M expert near the
#    bound, level to -2%).
# 2. the full table (docs/benchmarks.md's protocol, --refcheck: the rule's plans against the CPU
#    reference at GPT-OSS T=4096 and DeepSeek-V3 T=4096).
# 3. the layer's and the sm_90a GEMM's gpu tests in the time left.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-590}" "$1" moekit gpu_tests
off="gemm1.tall_tail=off;gemm2.tall_tail=off"
for pt in gpt-oss-120b:4096 gpt-oss-120b:3584 gpt-oss-120b:4352 gpt-oss-120b:5664 gpt-oss-120b:8192 deepseek-v3:2048 deepseek-v3:3072 deepseek-v3:4096; do
  device_ab "r/ab/${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "" "$off"
done
DEVICE_AB_ARGS="--intermediate 1152" device_ab r/ab/gpt-oss-i1152-4096 gpt-oss-120b 4096 "" "$off"
echo "# A/B done at $((SECONDS - DEVICE_START))s"
$B explain --preset gpt-oss-120b --quant none --gate-up interleaved -T 4096 > "$OUT/r/explain-gpt-oss-T4096.txt" 2>&1
T0=$SECONDS
timeout 120 $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
  --gate-up interleaved --csv "$OUT/r/table.csv" --json "$OUT/r/table.json" > "$OUT/r/table.txt" 2>&1
echo "== table rc=$? ($((SECONDS - T0))s)"; grep -E "ceiling" "$OUT/r/table.txt"
python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r" > "$OUT/r/table-summary.txt" 2>&1; head -40 "$OUT/r/table-summary.txt"
device_ctest_gpu r/ctest-gpu.txt -R "MoeCuda|Sm90GroupedGemm"
echo "# total $((SECONDS - DEVICE_START))s"
