#!/usr/bin/env bash
# Call 4 ($1 = the commit): gemm2's weights under gemm1's tail (Sm90Overlap, MOEKIT_SM90_OVERLAP=1:
# both setups in gemm1's stage, gemm1 lets gemm2 launch after its wait, gemm2's producer streams its
# first weight stages before waiting for gemm1). A/B in one build, whole layer; turn 1, then every
# gpu test with the overlap on, then turn 2 if the time allows.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((585 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r/build" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
turn() {
  for p in qwen3-30b-a3b:64,256,1024,4096,16384 mixtral-8x7b:64,256,1024 gpt-oss-120b:64,256,1024,4096 deepseek-v3:256,1024; do
    for v in $2; do
      [ "$(left)" -lt 30 ] && return
      T0=$SECONDS
      MOEKIT_SM90_OVERLAP=$v timeout $(( $(left) - 15 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline \
        --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/ab-${p%%:*}-p$v-$1.csv" > "$OUT/r/ab-${p%%:*}-p$v-$1.txt" 2>&1
      echo "# ${p%%:*} overlap=$v turn $1 rc=$? $((SECONDS - T0))s"
    done
  done
}
turn 1 "0 1"
T0=$SECONDS
CT=$(( $(left) - 60 )); [ $CT -gt 300 ] && CT=300
MOEKIT_SM90_OVERLAP=1 timeout $CT ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu-overlap.txt" 2>&1
echo "# ctest (overlap on) rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu-overlap.txt" | head -20
turn 2 "1 0"
python3 docs/device-logs/2026-11-27-layer-prefetch/summarize.py "$OUT/r" | grep moekit | sed 's/ 1MB / overlap /' | tee "$OUT/r/summary.txt"
pack
