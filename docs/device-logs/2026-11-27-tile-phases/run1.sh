#!/usr/bin/env bash
# Call 1 ($1 = the commit): the new BenchCuda test; then where a tile's time goes on the cooperative
# 128 x 256 tile with gemm2's plain TMA-store epilogue (sm90_overlap variants 15 and 16: CUTLASS's
# and the same with per-tile timestamps), at gemm2's shapes of Qwen3 T=16384 (12 k-blocks a tile),
# GPT-OSS T=16384 (45) and Mixtral T=4096 (224); then gemm2's time across Mixtral's token counts
# around 4096 (partial M tiles and the last wave).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((560 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit test_bench_cuda sm90_overlap -- -DCMAKE_CUDA_FLAGS= -DMOEKIT_BUILD_EXPERIMENTS=ON || { pack; exit 1; }
timeout 60 build/device/tests/gpu/test_bench_cuda > "$OUT/r/test_bench_cuda.txt" 2>&1
echo "# test_bench_cuda rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$OUT/r/test_bench_cuda.txt"
X=build/device/bin/sm90_overlap
run_shape() {  # name experts rows n k
  [ "$(left)" -lt 40 ] && return
  timeout 60 $X --experts $2 --rows $3 --n $4 --k $5 --spread 0.03 --variants 15,16 --rounds 3 --reps 5 \
    --trace "$OUT/r/trace-$1.bin" > "$OUT/r/overlap-$1.txt" 2>&1
  echo "# $1 rc=$?"; cat "$OUT/r/overlap-$1.txt"
  python3 bench/sm90_overlap/analyze_tiles.py "$OUT/r/trace-$1.bin" > "$OUT/r/tiles-$1.txt" 2>&1; cat "$OUT/r/tiles-$1.txt"
  python3 bench/sm90_overlap/analyze_trace.py "$OUT/r/trace-$1.bin" > "$OUT/r/stages-$1.txt" 2>&1; head -8 "$OUT/r/stages-$1.txt"
  [ "$1" = qwen3-g2 ] || rm -f "$OUT/r/trace-$1.bin"  # 13 MB each: keep one for a second reading
}
run_shape qwen3-g2 128 1024 2048 768
run_shape gptoss-g2 128 512 2880 2880
run_shape mixtral-g2 8 1024 4096 14336
B=build/device/bin/moekit
[ "$(left)" -gt 120 ] && {
  timeout $(( $(left) - 10 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 1 --reps 3 --no-baseline --stages \
    --fusion gemm2_finalize=off --preset mixtral-8x7b --tokens 3584,3840,3968,4096,4224,4352,4608 \
    --csv "$OUT/r/mixtral-scan.csv" > "$OUT/r/mixtral-scan.txt" 2>&1
  echo "# mixtral scan rc=$?"; grep -E "^ +[0-9]+ +(moekit|  cuda)" "$OUT/r/mixtral-scan.txt" | awk '{print $1, $2, $3, $(NF-2)}' | head -40
}
pack
