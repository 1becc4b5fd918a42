#!/usr/bin/env bash
# Step 20, device call 7 ($1 = the commit): tune the memory-bound middle with W13 interleaved
# (bench/tune/middle_interleaved.csv) into a copy of bench/tune/h200.csv, then the layer with that
# copy and without it (the heuristic) at those points, two runs of each in turns, with stage times.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit || exit 1
mkdir -p "$OUT/r"
B=build/device/bin/moekit
cp bench/tune/h200.csv /tmp/h200.csv
SECONDS=0
timeout 300 $B tune -i bench/tune/middle_interleaved.csv -o /tmp/h200.csv --journal "$OUT/r/tune.journal" --reference-cache /tmp/refs \
  --timeout 200 --no-progress > "$OUT/r/tune.txt" 2>&1
echo "# tune rc=$? ${SECONDS}s"; grep -E "^shape|tuned|heuristic" "$OUT/r/tune.txt" | head -20
cp /tmp/h200.csv "$OUT/r/h200.csv"
SECONDS=0
for i in 1 2; do
  for v in table heur; do
    for spec in qwen3-30b-a3b:512,2048 gpt-oss-120b:512,2048 deepseek-v3:512; do
      p=${spec%%:*}; t=${spec#*:}
      if [ $v = table ]; then export MOEKIT_TUNING_TABLE=/tmp/h200.csv; else unset MOEKIT_TUNING_TABLE; fi
      timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --preset $p --tokens $t --sets 2 --reps 5 --no-baseline --stages \
        --csv "$OUT/r/ab-$p-$v$i.csv" > "$OUT/r/ab-$p-$v$i.txt" 2>&1
      echo "$p $v$i: $(grep -E '^\s+[0-9]+\s+(moekit|  cuda.gemm)' "$OUT/r/ab-$p-$v$i.txt" | awk '{printf "%s %s %s | ", $1, substr($2,6,9), $3}')"
    done
  done
done
unset MOEKIT_TUNING_TABLE
echo "# a/b ${SECONDS}s"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
