#!/usr/bin/env bash
# Call 3 ($1 = the commit): the plain TMA-store epilogue's variants in sm90_overlap, each untraced
# (timing) and traced (the per-tile phases): CUTLASS's as built (15, 16), four subtiles in flight
# (17, 18), eight (19, 20: the whole tile; the mainloop drops to three stages), and the delayed TMA
# store that CUTLASS's builder gives dense kernels (21, 22); at gemm2's shapes of Qwen3 T=16384,
# GPT-OSS T=16384 and Mixtral T=4096. Outputs compared bitwise with variant 15's.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((560 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" sm90_overlap -- -DCMAKE_CUDA_FLAGS= -DMOEKIT_BUILD_EXPERIMENTS=ON || { pack; exit 1; }
X=build/device/bin/sm90_overlap
run_shape() {  # name experts rows n k
  [ "$(left)" -lt 60 ] && return
  timeout 120 $X --experts $2 --rows $3 --n $4 --k $5 --spread 0.03 --variants 15,16,17,18,19,20,21,22 --rounds 3 --reps 5 \
    --trace "$OUT/r/trace-$1" > "$OUT/r/overlap-$1.txt" 2>&1
  echo "# $1 rc=$?"; grep -vE "^trace:" "$OUT/r/overlap-$1.txt"
  for v in 16 18 20 22; do
    python3 bench/sm90_overlap/analyze_tiles.py "$OUT/r/trace-$1-v$v.bin" > "$OUT/r/tiles-$1-v$v.txt" 2>&1
    echo "## v$v"; grep -E "^(tiles|period|waits|mma|acquire|store|after)" "$OUT/r/tiles-$1-v$v.txt"
    rm -f "$OUT/r/trace-$1-v$v.bin"
  done
}
run_shape qwen3-g2 128 1024 2048 768
run_shape gptoss-g2 128 512 2880 2880
run_shape mixtral-g2 8 1024 4096 14336
pack
