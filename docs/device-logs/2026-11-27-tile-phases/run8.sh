#!/usr/bin/env bash
# Call 8 ($1 = the commit): the split tail (the last wave's tiles split along K, partials added in
# piece order; sm90_overlap 25 plain = 15 split, 26 gated = 0 split) at gemm1's and gemm2's prefill
# shapes, rows spread by 3% as random routing spreads them, and exact for Mixtral's gemm2 (its
# ceiling). Each run under a 30 s limit (a piece that waits forever would show as a timeout).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((300 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" sm90_overlap -- -DCMAKE_CUDA_FLAGS= -DMOEKIT_BUILD_EXPERIMENTS=ON || { pack; exit 1; }
X=build/device/bin/sm90_overlap
run_shape() {  # name variants spread experts rows n k
  [ "$(left)" -lt 35 ] && return
  timeout 30 $X --experts $4 --rows $5 --n $6 --k $7 --spread $3 --variants $2 --rounds 3 --reps 5 > "$OUT/r/split-$1-s$3.txt" 2>&1
  echo "# $1 spread $3 rc=$?"; grep -E "^(check|128x256|plain|gated|# experts)" "$OUT/r/split-$1-s$3.txt"
}
run_shape mixtral-g2 15,25 0.03 8 1024 4096 14336
run_shape gptoss-g2 15,25 0.03 128 512 2880 2880
run_shape mixtral-g1 0,26 0.03 8 1024 28672 4096
run_shape qwen3-g2 15,25 0.03 128 1024 2048 768
run_shape qwen3-g1 0,26 0.03 128 1024 1536 2048
run_shape mixtral-g2 15,25 0 8 1024 4096 14336
pack
