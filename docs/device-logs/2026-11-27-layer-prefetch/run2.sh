#!/usr/bin/env bash
# Call 2 ($1 = the commit): programmatic dependent launch for the sm_90a GEMM's setup kernel and
# CUTLASS kernel (the kernel waits in its scheduler's first base). A/B in one build:
# MOEKIT_SM90_PDL=0 (both launched as before, without PDL) against the default, whole layer, every
# preset at its sm_90a points; turn 1, then every gpu test, then turn 2 if the time allows.
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
  for p in qwen3-30b-a3b:64,256,1024,4096,16384 mixtral-8x7b:64,256,1024,4096 gpt-oss-120b:64,256,1024,4096 deepseek-v3:64,256,1024,4096; do
    for v in 0 1; do
      [ "$(left)" -lt 30 ] && return
      T0=$SECONDS
      MOEKIT_SM90_PDL=$v timeout $(( $(left) - 15 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline \
        --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/ab-${p%%:*}-p$v-$1.csv" > "$OUT/r/ab-${p%%:*}-p$v-$1.txt" 2>&1
      echo "# ${p%%:*} pdl=$v turn $1 rc=$? $((SECONDS - T0))s"
    done
  done
}
turn 1
T0=$SECONDS
CT=$(( $(left) - 60 )); [ $CT -gt 320 ] && CT=320
timeout $CT ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
turn 2
python3 docs/device-logs/2026-11-27-layer-prefetch/summarize.py "$OUT/r" | grep moekit | sed 's/ 1MB / pdl /' | tee "$OUT/r/summary.txt"
pack
