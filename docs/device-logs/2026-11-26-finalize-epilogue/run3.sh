#!/usr/bin/env bash
# Step 20, device call 3 ($1 = the commit): (a) what the bf16 GEMM ceiling depends on
# (bench/probes/gemm_ceiling_probe.cu: constant against random operands, the first launches against
# launches after 1 s of load), with the SM clock and power sampled every 100 ms beside it; (b)
# deterministic mode's cost on the H200 (Qwen3 and DeepSeek-V3 at T = 64, 1024, 16384, both modes in
# turns); (c) Mixtral's long-K gemm2 (K = 14336) on the 64 x 128 tile without its cluster against the
# heuristic at T = 256 .. 2048, two runs of each in turns.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O2 -std=c++17 -arch=sm_90a -o build-probe bench/probes/gemm_ceiling_probe.cu -lcublas || exit 1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 100 > "$OUT/r/probe-clocks.csv" 2>&1 &
SMI=$!
./build-probe 1.0 | tee "$OUT/r/probe.txt"
kill $SMI
scripts/device-build.sh "$COMMIT" "$OUT" moekit || exit 1
B=build/device/bin/moekit
SECONDS=0
for i in 1 2; do
  for mode in default deterministic; do
    extra=""; [ $mode = deterministic ] && extra="--deterministic"
    timeout 120 $B bench --backend cuda --quant none --gate-up interleaved --preset qwen3-30b-a3b,deepseek-v3 --tokens 64,1024,16384 \
      --sets 2 --reps 5 --no-baseline $extra --csv "$OUT/r/det-$mode$i.csv" > "$OUT/r/det-$mode$i.txt" 2>&1
    echo "$mode$i: $(cut -d, -f1,3,7 "$OUT/r/det-$mode$i.csv" | tail -n +2 | sed 's/-30b-a3b//' | tr '\n' ' ')"
  done
done
echo "# det ${SECONDS}s"
SECONDS=0
for i in 1 2; do
  for v in heur t64; do
    extra=""; [ $v = t64 ] && extra="--choice gemm2.tile=sm90_m64n128k128_c1x1"
    timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --preset mixtral-8x7b --tokens 256,512,1024,2048 --sets 2 --reps 5 \
      --no-baseline --stages $extra --csv "$OUT/r/mix-$v$i.csv" > "$OUT/r/mix-$v$i.txt" 2>&1
    echo "mixtral $v$i: $(grep -E '^\s+[0-9]+\s+(moekit|  cuda.gemm2)' "$OUT/r/mix-$v$i.txt" | awk '{printf "%s %s %s | ", $1, substr($2,6,9), $3}')"
  done
done
echo "# mixtral ${SECONDS}s"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
