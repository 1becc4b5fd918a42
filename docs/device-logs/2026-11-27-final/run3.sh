#!/usr/bin/env bash
# Call 3 ($1 = the commit): level 4 added (step 27 c's overlap with both setups in one kernel, in
# gemm1's stage) and made the default. Every gpu test; then MOEKIT_SM90_OVERLAP 1, 3, 4 in three
# turns (the order rotating) where the rule takes the overlap, Qwen3 T=1024 outside it as a control;
# then, as time allows, 1 against 4 at Mixtral T=64 and DeepSeek-V3 T = 64, 256.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((580 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout 260 ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
ab() {  # preset tokens level turn
  [ "$(left)" -lt 20 ] && return 1
  local T0=$SECONDS
  MOEKIT_SM90_OVERLAP=$3 timeout $(( $(left) - 8 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline \
    --preset $1 --tokens $2 --csv "$OUT/r/ab-$1-v$3-$4.csv" > "$OUT/r/ab-$1-v$3-$4.txt" 2>&1
  echo "# $1 level=$3 turn $4 rc=$? $((SECONDS - T0))s"
}
for turn in 1 2 3; do
  case $turn in 1) order="1 3 4";; 2) order="4 1 3";; 3) order="3 4 1";; esac
  for v in $order; do
    ab qwen3-30b-a3b 16,32,64,128,256,512,1024 $v $turn || break 2
    ab gpt-oss-120b 64,256 $v $turn || break 2
  done
done
for turn in 1 2; do
  order="1 4"; [ $turn = 2 ] && order="4 1"
  for v in $order; do
    ab mixtral-8x7b 64 $v $turn || break 2
    ab deepseek-v3 64,256 $v $turn || break 2
  done
done
python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r" | grep moekit | tee "$OUT/r/summary.txt"
pack
