#!/usr/bin/env bash
# Call 1 ($1 = the commit): the split tail as stream-K over the last wave (sm90_overlap 25 = 15 with
# it, plain epilogue; 26 = 0 with it, gated) at gemm1's and gemm2's prefill shapes, rows spread by 3%
# as random routing spreads them, Mixtral's gemm2 also at exact rows and at 3 rows an expert (every
# CTA two pieces: the correctness stress); outputs against the unsplit kernel's and run to run. Then
# every gpu test of the branch (the split is off in the library, so they test main's kernels plus
# the fourth claim word). Each shape under a 30 s limit (a piece that waited forever would show as a
# timeout).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" gpu_tests sm90_overlap -- -DCMAKE_CUDA_FLAGS= -DMOEKIT_BUILD_EXPERIMENTS=ON || { pack; exit 1; }
X=build/device/bin/sm90_overlap
run_shape() {  # name variants spread experts rows n k
  [ "$(left)" -lt 260 ] && return
  timeout 30 $X --experts $4 --rows $5 --n $6 --k $7 --spread $3 --variants $2 --rounds 3 --reps 5 > "$OUT/r/streamk-$1-s$3.txt" 2>&1
  echo "# $1 spread $3 rc=$?"; grep -E "^(check|128x256|plain|gated|# experts)" "$OUT/r/streamk-$1-s$3.txt"
}
run_shape mixtral-g2-r3 15,25 0 8 3 4096 14336
run_shape mixtral-g2 15,25 0.03 8 1024 4096 14336
run_shape mixtral-g2 15,25 0 8 1024 4096 14336
run_shape gptoss-g2 15,25 0.03 128 512 2880 2880
run_shape qwen3-g2 15,25 0.03 128 1024 2048 768
run_shape deepseek-g2 15,25 0.03 256 128 7168 2048
run_shape mixtral-g1 0,26 0.03 8 1024 28672 4096
run_shape gptoss-g1 0,26 0.03 128 512 5760 2880
run_shape qwen3-g1 0,26 0.03 128 1024 1536 2048
run_shape deepseek-g1 0,26 0.03 256 128 4096 7168
echo "# ctest with $(left) s left"
(cd build/device && timeout $(( $(left) - 5 )) ctest -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1; echo "# ctest rc=$?")
tail -5 "$OUT/r/ctest-gpu.txt"; grep -E "Failed|\*\*\*" "$OUT/r/ctest-gpu.txt" | head
pack
