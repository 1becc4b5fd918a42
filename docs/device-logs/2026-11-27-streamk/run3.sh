#!/usr/bin/env bash
# Call 3 ($1 = the commit): the tail split in the library (Sm90TailSplit, knobs gemm1.tail and
# gemm2.tail, default auto): test_sm90_gemm whole (the new TailSplitMatchesTheReferenceAndRepeatsItsBits
# first), then the layer with gemm2.tail (and gemm1.tail) auto against off in turns, Mixtral at
# T = 1024..8192 (where auto's rule fires on gemm2), then the other presets' prefill points once
# each way (where it should not fire: the same plan, so level).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((560 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit test_sm90_gemm -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
T=build/device/tests/gpu/test_sm90_gemm
timeout 120 $T --gtest_filter='*TailSplit*:*RejectsBad*' > "$OUT/r/test_sm90_gemm-tail.txt" 2>&1
echo "# tail tests rc=$?"; grep -E "^\[  (PASSED|FAILED) |Failure|Expected|Which is|actual|the CTAs|bits changed" "$OUT/r/test_sm90_gemm-tail.txt" | head -30
timeout 150 $T > "$OUT/r/test_sm90_gemm.txt" 2>&1
echo "# test_sm90_gemm rc=$?"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" "$OUT/r/test_sm90_gemm.txt" | head
B=build/device/bin/moekit
bench() {  # tag preset tokens choice
  [ "$(left)" -lt 25 ] && return
  timeout $(( $(left) - 5 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 1 --reps 3 --no-baseline \
    --preset $2 --tokens $3 ${4:+--choice "$4"} --csv "$OUT/r/$1.csv" > "$OUT/r/$1.txt" 2>&1
  echo "# $1 rc=$? at $((SECONDS - START))s"; grep -E "^ +[0-9]+ +moekit" "$OUT/r/$1.txt" | awk '{print $1, $3, $6, $9}'
}
for turn in 1 2; do
  bench mixtral-auto-$turn mixtral-8x7b 1024,2048,4096,8192
  bench mixtral-off-$turn mixtral-8x7b 1024,2048,4096,8192 "gemm1.tail=off;gemm2.tail=off"
done
for p in gpt-oss-120b:4096 deepseek-v3:4096 qwen3-30b-a3b:4096; do
  bench ${p%%:*}-auto ${p%%:*} ${p#*:}
  bench ${p%%:*}-off ${p%%:*} ${p#*:} "gemm1.tail=off;gemm2.tail=off"
done
pack
