#!/usr/bin/env bash
# Call 3 ($1 = the commit), as call 2 after its fixes (MMA warpgroups in join_half; half_mma into accum in place): half tiles (perf-notes step 33). The sm_90a GEMM tests that touch them
# (the new HalfTiles test, the rejections, the tail split, the rows around each warpgroup), then the
# layer by step (`--stages`) with both GEMMs' half tiles on against off, in the order off, on, on,
# off, at the points where experts end in a partial M tile of a cooperative tile.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((580 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit test_sm90_gemm -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
timeout 120 build/device/tests/gpu/test_sm90_gemm \
  --gtest_filter='*HalfTiles*:*Reject*:*LastTileRows*' > "$OUT/r/test-sm90.txt" 2>&1
echo "# test_sm90_gemm rc=$? at $((SECONDS - START))s"
grep -E "^\[  (FAILED|PASSED) |OK \]|Failure|Expected|Which is|actual|differ in" "$OUT/r/test-sm90.txt" | head -30
grep -c C7511 "$OUT/r/build.txt"
B=build/device/bin/moekit
bench() {  # tag preset tokens choice
  [ "$(left)" -lt 45 ] && return
  timeout 75 $B bench --backend cuda --quant none --gate-up interleaved --sets 1 --reps 3 --no-baseline --stages \
    --preset $2 --tokens $3 ${4:+--choice "$4"} --csv "$OUT/r/$1.csv" > "$OUT/r/$1.txt" 2>&1
  echo "# $1 rc=$? at $((SECONDS - START))s"
  grep -E "^ +[0-9]+ +(moekit|  cuda.gemm)" "$OUT/r/$1.txt" | awk '{printf "%s %s %s%s", $1, $2, $3, ($2=="moekit" ? " " $9 "\n" : "\n")}'
}
turn=0
for mode in off on on off; do
  turn=$((turn + 1))
  choice=""; [ $mode = on ] && choice="gemm1.half=on;gemm2.half=on"
  for p in mixtral-8x7b:1024,4096,16384 gpt-oss-120b:4096,16384 qwen3-30b-a3b:4096,16384 deepseek-v3:4096; do
    bench ${p%%:*}-$mode-$turn ${p%%:*} ${p#*:} "$choice"
  done
done
pack
