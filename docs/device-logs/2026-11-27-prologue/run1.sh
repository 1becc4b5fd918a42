#!/usr/bin/env bash
# Call 1 ($1 = the commit): the review's cleanups (one place for the scratch arrays' addresses, the
# setup's error prefix built on errors only, run_case on the paired test's operands) and the chunked
# maps in one launch (chunk_place_kernel<true>, up to 8192 entries) under every gpu test; ncu's
# duration of every kernel of one eager layer call (moekit run) at three middle points; the maps in
# one launch against two (MOEKIT_MAPS_ONE_LAUNCH=0; 32768 extends it), stage times, two turns.
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
timeout 270 ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
for pt in qwen3-30b-a3b:256 qwen3-30b-a3b:1024 gpt-oss-120b:1024; do
  [ "$(left)" -lt 150 ] && break
  p=${pt%%:*}; t=${pt#*:}
  timeout 40 ncu --clock-control none --csv --print-units base --metrics gpu__time_duration.sum \
    $B run --preset $p -T $t --backend cuda --quant none --gate-up interleaved --iters 2 > "$OUT/r/ncu-$p-$t.csv" 2> "$OUT/r/ncu-$p-$t.err"
  echo "# ncu $p T=$t rc=$?"
done
for turn in 1 2; do
  for v in 0 8192 32768; do
    for p in qwen3-30b-a3b:64,256,1024,4096 gpt-oss-120b:1024,4096 mixtral-8x7b:256,1024; do
      [ "$(left)" -lt 15 ] && break 3
      MOEKIT_MAPS_ONE_LAUNCH=$v timeout $(( $(left) - 8 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 \
        --no-baseline --stages --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/ab-${p%%:*}-v$v-$turn.csv" > "$OUT/r/ab-${p%%:*}-v$v-$turn.txt" 2>&1
      echo "# ${p%%:*} v$v turn $turn rc=$?"
    done
  done
done
pack
