#!/usr/bin/env bash
# Call 3 ($1 = the commit), with the session's last ~380 s of device time: deterministic mode's cost
# at the final rule's plans. Builds the CLI only (the kernels are 0f30117's, whose every gpu test
# passed in call 1), then the full table's 28 points in both modes, in turns (default, deterministic,
# deterministic, default), --sets 1 --reps 5, W13 interleaved, each run written as it ends.
set -uo pipefail
COMMIT=$1
START=$SECONDS
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || exit 1
echo "# built $((SECONDS - START))s"
B=build/device/bin/moekit
for mt in def:1 det:1 det:2 def:2; do
  m=${mt%%:*} turn=${mt#*:} flag=()
  [ $m = det ] && flag=(--deterministic)
  T0=$SECONDS
  timeout 70 $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 1 --reps 5 \
    --no-baseline --gate-up interleaved "${flag[@]}" --csv "$OUT/r/$m-$turn.csv" > "$OUT/r/$m-$turn.txt" 2>&1
  echo "== $m turn $turn rc=$? $((SECONDS - T0))s"
done
echo "# total $((SECONDS - START))s"
