#!/usr/bin/env bash
# Call 7 ($1 = the commit): the expand in gemm1's A load (sm90_gather_mainloop.cuh, knob
# gemm1.gather). Build; registers of the new kernel; test_sm90_gemm's gather tests and the tests
# around it; test_moe_cuda's GatheredGemm1RowsGiveTheSameLayer; then the layer with gemm1.gather=off
# against =on (the same binary, in turns, two turns, stage times) at the prefill points.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r/build" moekit test_sm90_gemm test_moe_cuda -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
cuobjdump -res-usage build/device/bin/moekit 2>/dev/null | grep -A1 "GatherAMainloop" | grep -o "REG:[0-9]* STACK:[0-9]* SHARED:[0-9]* LOCAL:[0-9]*" | sort | uniq -c > "$OUT/r/res-usage-gather.txt"
cat "$OUT/r/res-usage-gather.txt"
T0=$SECONDS
timeout 150 build/device/tests/gpu/test_sm90_gemm --gtest_filter="*Gather*:*LastTile*:*SixteenBit*:*GatedEpilogueEvery*" > "$OUT/r/test-sm90.txt" 2>&1
echo "# test_sm90_gemm rc=$? $((SECONDS - T0))s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" "$OUT/r/test-sm90.txt" | head
T0=$SECONDS
timeout 120 build/device/tests/gpu/test_moe_cuda --gtest_filter="*Gathered*:*Sm90Tiles*" > "$OUT/r/test-moe.txt" 2>&1
echo "# test_moe_cuda rc=$? $((SECONDS - T0))s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$OUT/r/test-moe.txt" | head
for turn in 1 2; do
  for p in qwen3-30b-a3b:2048,4096,16384 deepseek-v3:4096 gpt-oss-120b:4096,16384 mixtral-8x7b:4096; do
    for v in off on; do
      [ "$(left)" -lt 30 ] && break 3
      T0=$SECONDS
      timeout $(( $(left) - 15 )) build/device/bin/moekit bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline --stages \
        --choice "gemm1.gather=$v" --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/sweep-${p%%:*}-$v$turn.csv" > "$OUT/r/sweep-${p%%:*}-$v$turn.txt" 2>&1
      echo "# ${p%%:*} $v$turn rc=$? $((SECONDS - T0))s"
    done
  done
done
build/device/bin/moekit explain --preset qwen3-30b-a3b --quant none --gate-up interleaved -T 4096 --choice "gemm1.gather=on" > "$OUT/r/explain-qwen3-4096.txt" 2>&1
sed 's/"sweep": ("dflt", None)/"sweep": ("off", None)/' docs/device-logs/2026-11-26-h200-rules/summarize.py > /tmp/summarize.py
python3 /tmp/summarize.py "$OUT/r" | tee "$OUT/r/summary.txt"
pack
