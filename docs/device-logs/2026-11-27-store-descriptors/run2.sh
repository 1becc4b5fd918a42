#!/usr/bin/env bash
# Call 2 ($1 = the commit): the TMA-store epilogue with 4 subtiles in flight (v4,
# -DMOEKIT_SM90_STORE_STAGES=4; the mainloop keeps its 4 stages at 16-bit D) against CUTLASS's 2 (v0,
# main). Two builds of one commit; test_moe_cuda on v4; both binaries in turns (order rotating),
# each stage timed, at call 1's points. Then, on v0: Qwen3's shapes with 8 experts (every token to
# each: 16384 rows an expert, CTAs rarely change expert) against 128 at T=16384, and the batched
# reference (the mended set_batched).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((580 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r" /tmp/bins
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r/v4" moekit test_moe_cuda -- -DCMAKE_CUDA_FLAGS=-DMOEKIT_SM90_STORE_STAGES=4 || { pack; exit 1; }
cp build/device/bin/moekit /tmp/bins/v4
timeout 60 build/device/tests/gpu/test_moe_cuda > "$OUT/r/test_moe_cuda-v4.txt" 2>&1
echo "# test_moe_cuda v4 rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/r/test_moe_cuda-v4.txt" | tr '\n' ' ')"
scripts/device-build.sh "$COMMIT" "$OUT/r/v0" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
cp build/device/bin/moekit /tmp/bins/v0
B="--backend cuda --quant none --gate-up interleaved --no-baseline"
timeout 40 /tmp/bins/v0 bench $B --sets 2 --reps 3 --stages --preset qwen3-30b-a3b --experts 8 --tokens 16384 \
  --csv "$OUT/r/probe-e8.csv" > "$OUT/r/probe-e8.txt" 2>&1
echo "# probe E=8 rc=$?"; grep -E "cuda\.|moekit" "$OUT/r/probe-e8.txt" | head -8
for turn in 1 2; do
  order="0 4"; [ $turn = 2 ] && order="4 0"
  for v in $order; do
    for p in qwen3-30b-a3b:1024,4096,16384 gpt-oss-120b:16384 mixtral-8x7b:4096 deepseek-v3:4096; do
      [ "$(left)" -lt 60 ] && break 3
      timeout $(( $(left) - 50 )) /tmp/bins/v$v bench $B --sets 2 --reps 3 --stages \
        --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/ab-${p%%:*}-v$v-$turn.csv" > "$OUT/r/ab-${p%%:*}-v$v-$turn.txt" 2>&1
      echo "# ${p%%:*} v$v turn $turn rc=$? $(grep -h ',moekit,' "$OUT/r/ab-${p%%:*}-v$v-$turn.csv" | cut -d, -f3,7 | tr '\n' ' ')"
    done
  done
done
timeout $(( $(left) - 5 )) /tmp/bins/v0 bench --backend cuda --quant none --gate-up interleaved --sets 1 --reps 3 --batched-reference \
  --preset qwen3-30b-a3b --tokens 256,16384 --csv "$OUT/r/batched.csv" > "$OUT/r/batched.txt" 2>&1
echo "# batched reference rc=$?"; grep -E "cublas|moekit" "$OUT/r/batched.txt" | head -12
python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r" 0 | tee "$OUT/r/summary.txt"
pack
