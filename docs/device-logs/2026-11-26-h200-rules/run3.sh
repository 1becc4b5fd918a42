#!/usr/bin/env bash
# Call 3 ($1 = the commit): the automatic order extended to the cooperative tiles (claimed while every
# expert fits one 128-row M tile). test_sm90_gemm's order tests; then the default (auto) against
# both GEMMs fixed, each GEMM timed alone (--stages), two turns, where the heuristic runs the
# 128 x 256 tile and experts are small (Mixtral T = 256..512, Qwen3 T = 1536, 2048, GPT-OSS
# T = 2048..4096, DeepSeek-V3 T = 1024, 1536) and, as controls, where auto must stay fixed
# (Qwen3 T=4096, Mixtral T=1024).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit test_sm90_gemm || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout 120 build/device/tests/gpu/test_sm90_gemm --gtest_filter="*TileOrder*:*ClaimedTileOrder*:*Graph*" > "$OUT/r/test-sm90.txt" 2>&1
echo "# test_sm90_gemm rc=$? $((SECONDS - T0))s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|OK \] |Failure|rows" "$OUT/r/test-sm90.txt" | head -30
for turn in 1 2; do
  for p in mixtral-8x7b:256,384,512,1024 qwen3-30b-a3b:1536,2048,4096 gpt-oss-120b:2048,3072,4096 deepseek-v3:1024,1536; do
    for o in fixed auto; do
      [ "$(left)" -lt 30 ] && break 3
      T0=$SECONDS
      timeout $(( $(left) - 10 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 5 --no-baseline --stages \
        --preset ${p%%:*} --tokens ${p#*:} --choice "gemm1.order=$o;gemm2.order=$o" \
        --csv "$OUT/r/order-${p%%:*}-$o$turn.csv" > "$OUT/r/order-${p%%:*}-$o$turn.txt" 2>&1
      echo "# ${p%%:*} $o$turn rc=$? $((SECONDS - T0))s"
    done
  done
done
python3 docs/device-logs/2026-11-26-h200-rules/summarize.py "$OUT/r" | tee "$OUT/r/summary.txt"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
