#!/usr/bin/env bash
# Call 2 ($1 = the commit): gemm1's first weight stages under the expand (docs/perf-notes.md step 28;
# MOEKIT_SM90_OVERLAP 1 = step 27 c's overlap of gemm2 alone, 2 = also gemm1 under the expand with
# both setups before the expand, 3 = the same with both setups in one kernel, the new default).
# Every gpu test (the setup kernel is new for every sm_90a launch), then the three levels in two
# turns, the order reversed in the second, where the rule takes the overlap.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((585 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout 260 ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
for turn in 1 2; do
  order="1 2 3"; [ $turn = 2 ] && order="3 2 1"
  for p in qwen3-30b-a3b:16,32,64,128,256,512 gpt-oss-120b:64,256; do
    for v in $order; do
      [ "$(left)" -lt 25 ] && break 3
      T0=$SECONDS
      MOEKIT_SM90_OVERLAP=$v timeout $(( $(left) - 12 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline \
        --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/ab-${p%%:*}-v$v-$turn.csv" > "$OUT/r/ab-${p%%:*}-v$v-$turn.txt" 2>&1
      echo "# ${p%%:*} level=$v turn $turn rc=$? $((SECONDS - T0))s"
    done
  done
done
python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r" | grep moekit | tee "$OUT/r/summary.txt"
pack
