#!/usr/bin/env bash
# Call 9 ($1 = the commit, branch exp/gather): the gather with a lean copy loop (a pointer table,
# two swizzled addresses a k-block; call 8 counted 29 instructions a copy and consumers starved on
# the full barrier). Build; the gather tests; ncu time, tensor busy and instructions of gemm1 at
# Qwen3 T=4096 off/on; the layer off/on in turns at the prefill points.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((500 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r/build" moekit test_sm90_gemm test_moe_cuda -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout 60 build/device/tests/gpu/test_sm90_gemm --gtest_filter="*Gather*" > "$OUT/r/test-sm90.txt" 2>&1
echo "# test_sm90_gemm rc=$? $((SECONDS - T0))s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$OUT/r/test-sm90.txt" | head
timeout 60 build/device/tests/gpu/test_moe_cuda --gtest_filter="*Gathered*" > "$OUT/r/test-moe.txt" 2>&1
echo "# test_moe_cuda rc=$? $((SECONDS - T0))s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$OUT/r/test-moe.txt" | head
RUN="bench --backend cuda --quant none --gate-up interleaved --preset qwen3-30b-a3b --tokens 4096 --sets 1 --reps 1 --iters 1 --warmup 0 --no-baseline"
for v in off on; do
  timeout 60 ncu --clock-control none --kernel-name-base demangled --kernel-name regex:MoeGroupShape --launch-count 1 --csv --print-units base \
    --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,lts__t_bytes.sum \
    $B $RUN --choice "gemm1.gather=$v" > "$OUT/r/ncu-$v.csv" 2> "$OUT/r/ncu-$v.err"
  echo "# ncu $v"; grep -E "gpu__time|hmma|inst_executed|lts__t_bytes" "$OUT/r/ncu-$v.csv" | awk -F'","' '{print $(NF-2), $NF}'
done
for turn in 1 2; do
  for p in qwen3-30b-a3b:2048,4096,16384 deepseek-v3:4096 gpt-oss-120b:16384 mixtral-8x7b:4096; do
    for v in off on; do
      [ "$(left)" -lt 25 ] && break 3
      timeout $(( $(left) - 10 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline --stages \
        --choice "gemm1.gather=$v" --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/sweep-${p%%:*}-$v$turn.csv" > "$OUT/r/sweep-${p%%:*}-$v$turn.txt" 2>&1
      echo "# ${p%%:*} $v$turn rc=$?"
    done
  done
done
sed 's/"sweep": ("dflt", None)/"sweep": ("off", None)/' docs/device-logs/2026-11-26-h200-rules/summarize.py > /tmp/summarize.py
python3 /tmp/summarize.py "$OUT/r" | grep -v "cuda.route\|build_maps" | tee "$OUT/r/summary.txt"
pack
