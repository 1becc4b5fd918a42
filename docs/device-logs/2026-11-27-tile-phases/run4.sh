#!/usr/bin/env bash
# Call 4 ($1 = the commit): both consumer warpgroups' epilogue timestamps (how far apart the two
# halves of a tile reach store(), which waits for both at its first barrier) at gemm2's three
# shapes (sm90_overlap 15, 16); then every gpu test on this code (the library's Config gained an
# epilogue-wrapper parameter; BenchCuda's new test).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((570 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests sm90_overlap -- -DCMAKE_CUDA_FLAGS= -DMOEKIT_BUILD_EXPERIMENTS=ON || { pack; exit 1; }
X=build/device/bin/sm90_overlap
run_shape() {  # name experts rows n k
  timeout 40 $X --experts $2 --rows $3 --n $4 --k $5 --spread 0.03 --variants 15,16 --rounds 2 --reps 5 \
    --trace "$OUT/r/trace-$1" > "$OUT/r/overlap-$1.txt" 2>&1
  echo "# $1 rc=$?"; grep -E "^(check|128x256)" "$OUT/r/overlap-$1.txt"
  python3 bench/sm90_overlap/analyze_tiles.py "$OUT/r/trace-$1-v16.bin" > "$OUT/r/tiles-$1-v16.txt" 2>&1
  cat "$OUT/r/tiles-$1-v16.txt"; rm -f "$OUT/r/trace-$1-v16.bin"
}
run_shape qwen3-g2 128 1024 2048 768
run_shape gptoss-g2 128 512 2880 2880
run_shape mixtral-g2 8 1024 4096 14336
T0=$SECONDS
timeout $(( $(left) - 15 )) ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
pack
