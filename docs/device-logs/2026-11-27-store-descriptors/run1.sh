#!/usr/bin/env bash
# Call 1 ($1 = the commit): the grouped epilogue's store descriptor in two alternating slots (v1,
# sm90_store_descriptors.cuh) against CUTLASS's one slot, which waits for every store of the tile
# before moving to another expert (v0, -DMOEKIT_SM90_ONE_STORE_DESCRIPTOR=1). Two builds of one
# commit; test_sm90_gemm and test_moe_cuda on v1; then both binaries in turns (order rotating), each
# stage timed, at the points where a CTA changes expert most often; the batched reference once (v0).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((580 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r" /tmp/bins
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r/v1" moekit test_sm90_gemm test_moe_cuda -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
cp build/device/bin/moekit /tmp/bins/v1
for t in test_sm90_gemm test_moe_cuda; do
  timeout 90 build/device/tests/gpu/$t > "$OUT/r/$t.txt" 2>&1
  echo "# $t rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/r/$t.txt" | tr '\n' ' ')"
done
scripts/device-build.sh "$COMMIT" "$OUT/r/v0" moekit -- -DCMAKE_CUDA_FLAGS=-DMOEKIT_SM90_ONE_STORE_DESCRIPTOR=1 || { pack; exit 1; }
cp build/device/bin/moekit /tmp/bins/v0
for turn in 1 2; do
  order="0 1"; [ $turn = 2 ] && order="1 0"
  for v in $order; do
    for p in qwen3-30b-a3b:1024,4096,16384 gpt-oss-120b:16384 mixtral-8x7b:4096 deepseek-v3:4096; do
      [ "$(left)" -lt 25 ] && break 3
      timeout $(( $(left) - 15 )) /tmp/bins/v$v bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline --stages \
        --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/ab-${p%%:*}-v$v-$turn.csv" > "$OUT/r/ab-${p%%:*}-v$v-$turn.txt" 2>&1
      echo "# ${p%%:*} v$v turn $turn rc=$? $(grep -h ',moekit,' "$OUT/r/ab-${p%%:*}-v$v-$turn.csv" | cut -d, -f3,7 | tr '\n' ' ')"
    done
  done
done
if [ "$(left)" -gt 40 ]; then
  timeout $(( $(left) - 10 )) /tmp/bins/v0 bench --backend cuda --quant none --gate-up interleaved --sets 1 --reps 3 --batched-reference \
    --preset qwen3-30b-a3b --tokens 256,16384 --csv "$OUT/r/batched.csv" > "$OUT/r/batched.txt" 2>&1
  echo "# batched reference rc=$?"; grep -E "cublas|moekit" "$OUT/r/batched.txt" | head -12
fi
python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r" 0 | tee "$OUT/r/summary.txt"
pack
