#!/usr/bin/env bash
# Call 12 ($1 = the commit, branch exp/epi-tile): step 25 h's PC sampling put a third of a short-K
# gemm2's consumer samples in the TMA-store epilogue, which stores a 128 x 256 tile in eight 128 x 32
# rounds (shared memory, fence, barrier, TMA store). Two builds, the same code: CUTLASS's epilogue
# subtile (base) and 128 x 64 (epi64, -DMOEKIT_SM90_EPI_N=64, cooperative tiles only); the plain
# epilogue runs in gemm2 (gemm1 has the gated one). test_sm90_gemm on epi64; then the two binaries
# in turns, each GEMM timed alone, at Qwen3 T = 4096, 16384, GPT-OSS T=16384, Mixtral T=4096.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r" /tmp/bins
scripts/device-build.sh "$COMMIT" "$OUT/r/base" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
cp build/device/bin/moekit /tmp/bins/base
scripts/device-build.sh "$COMMIT" "$OUT/r/epi64" moekit test_sm90_gemm -- -DCMAKE_CUDA_FLAGS=-DMOEKIT_SM90_EPI_N=64 || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
cp build/device/bin/moekit /tmp/bins/epi64
T0=$SECONDS
timeout 100 build/device/tests/gpu/test_sm90_gemm --gtest_filter="*LastTile*:*ClaimedTileOrder*:*Graph*" > "$OUT/r/test-sm90.txt" 2>&1
echo "# test_sm90_gemm rc=$? $((SECONDS - T0))s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$OUT/r/test-sm90.txt" | head
for turn in 1 2; do
  for p in qwen3-30b-a3b:4096,16384 gpt-oss-120b:16384 mixtral-8x7b:4096; do
    for v in base epi64; do
      [ "$(left)" -lt 25 ] && break 3
      T0=$SECONDS
      timeout $(( $(left) - 10 )) /tmp/bins/$v bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline --stages \
        --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/sweep-${p%%:*}-$v$turn.csv" > "$OUT/r/sweep-${p%%:*}-$v$turn.txt" 2>&1
      echo "# ${p%%:*} $v$turn rc=$? $((SECONDS - T0))s"
    done
  done
done
sed -i 's/"sweep": ("dflt", None)/"sweep": ("base", None)/' docs/device-logs/2026-11-26-h200-rules/summarize.py
python3 docs/device-logs/2026-11-26-h200-rules/summarize.py "$OUT/r" | tee "$OUT/r/summary.txt"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
