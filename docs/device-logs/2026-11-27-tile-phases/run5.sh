#!/usr/bin/env bash
# Call 5 ($1 = the commit): the weight tile multicast to two CTAs of an M pair (the 128 x 256 tile in
# 2 x 1 clusters, sm90_overlap 23 plain and 24 gated) against the library's 128 x 256 tile without a
# cluster (15 plain, 0 gated), at gemm2's and gemm1's prefill shapes: every expert exactly `rows`
# rows (--spread 0: an even M-tile count, so no padding tile) and rows spread by 3% (some experts
# odd, padded by CUTLASS's group scheduler).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((560 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" sm90_overlap -- -DCMAKE_CUDA_FLAGS= -DMOEKIT_BUILD_EXPERIMENTS=ON || { pack; exit 1; }
X=build/device/bin/sm90_overlap
run_shape() {  # name variants spread experts rows n k
  [ "$(left)" -lt 30 ] && return
  timeout 60 $X --experts $4 --rows $5 --n $6 --k $7 --spread $3 --variants $2 --rounds 3 --reps 5 \
    > "$OUT/r/mc-$1-s$3.txt" 2>&1
  echo "# $1 spread $3 rc=$?"; grep -vE "^trace:" "$OUT/r/mc-$1-s$3.txt" | grep -vE "^check .* NaN"
}
for s in 0 0.03; do
  run_shape qwen3-g2 15,23 $s 128 1024 2048 768
  run_shape mixtral-g2 15,23 $s 8 1024 4096 14336
  run_shape qwen3-g1 0,24 $s 128 1024 1536 2048
  run_shape mixtral-g1 0,24 $s 8 1024 28672 4096
  run_shape gptoss-g2 15,23 $s 128 512 2880 2880
done
pack
