#!/usr/bin/env bash
# Call 5 ($1 = the commit): the overlap as it lands (on by the stages' rule: gemm2 on the 64 x 128
# tile without a cluster at up to 32 rows an expert; MOEKIT_SM90_OVERLAP=0 turns it off). Every gpu
# test (the new LaunchWithoutSetupReusesTheLastSetup among them), then the layer off/default in two
# turns, the order alternating, at the points the rule takes and around them.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((585 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r/build" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout 290 ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
for turn in 1 2; do
  order="0 1"; [ $turn = 2 ] && order="1 0"
  for p in qwen3-30b-a3b:16,32,64,128,256,512,1024 gpt-oss-120b:64,256,1024 mixtral-8x7b:64,256 deepseek-v3:64,256; do
    for v in $order; do
      [ "$(left)" -lt 25 ] && break 3
      T0=$SECONDS
      MOEKIT_SM90_OVERLAP=$v timeout $(( $(left) - 12 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline \
        --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/ab-${p%%:*}-p$v-$turn.csv" > "$OUT/r/ab-${p%%:*}-p$v-$turn.txt" 2>&1
      echo "# ${p%%:*} overlap=$v turn $turn rc=$? $((SECONDS - T0))s"
    done
  done
done
python3 docs/device-logs/2026-11-27-layer-prefetch/summarize.py "$OUT/r" | grep moekit | sed 's/ 1MB / default /' | tee "$OUT/r/summary.txt"
pack
