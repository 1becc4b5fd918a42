#!/usr/bin/env bash
# Step 20, device call 6 ($1 = the commit): the committed table (bench/tune/h200.csv, call 5's rows
# that beat the heuristic) plus GPT-OSS T=2048 with W13 interleaved tuned into a copy; then the layer
# with that copy and without (the heuristic) at 33-64 rows per expert for small experts (Qwen3 T =
# 600, 800, 1024; GPT-OSS T = 1536, 2048), where the heuristic takes the 128 x 128 tile (step 18, H100).
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit || exit 1
mkdir -p "$OUT/r"
B=build/device/bin/moekit
cp bench/tune/h200.csv /tmp/h200.csv
printf 'preset,quant,gate_up,tokens\ngpt-oss-120b,none,interleaved,2048\n' > /tmp/shapes.csv
SECONDS=0
timeout 240 $B tune -i /tmp/shapes.csv -o /tmp/h200.csv --journal "$OUT/r/tune.journal" --reference-cache /tmp/refs --timeout 200 \
  --no-progress > "$OUT/r/tune.txt" 2>&1
echo "# tune rc=$? ${SECONDS}s"; grep -E "^shape|speedup|tuned|heuristic" "$OUT/r/tune.txt" | head
cp /tmp/h200.csv "$OUT/r/h200.csv"
SECONDS=0
for i in 1 2; do
  for v in table heur; do
    for spec in qwen3-30b-a3b:600,800,1024 gpt-oss-120b:1536,2048; do
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
