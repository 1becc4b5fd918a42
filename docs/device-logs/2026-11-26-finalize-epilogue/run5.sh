#!/usr/bin/env bash
# Step 20, device call 5 ($1 = the commit): tune the memory-bound points near the 90% target with W13
# interleaved (bench/tune/near_target_interleaved.csv) into bench/tune/h200.csv, then the layer at
# those points with the table and without it (the heuristic), in turns.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit || exit 1
mkdir -p "$OUT/r"
B=build/device/bin/moekit
SECONDS=0
timeout 330 $B tune -i bench/tune/near_target_interleaved.csv -o bench/tune/h200.csv --journal "$OUT/r/tune.journal" \
  --reference-cache /tmp/refs --timeout 200 --no-progress > "$OUT/r/tune.txt" 2>&1
echo "# tune rc=$? ${SECONDS}s"; grep -E "^shape|speedup|tuned|heuristic" "$OUT/r/tune.txt" | head -60
cp bench/tune/h200.csv "$OUT/r/h200.csv"
SECONDS=0
for i in 1 2; do
  for v in table heur; do
    for spec in mixtral-8x7b:8,64,256 gpt-oss-120b:8,1024 deepseek-v3:1,8 qwen3-30b-a3b:64,256,1024; do
      p=${spec%%:*}; t=${spec#*:}
      if [ $v = table ]; then export MOEKIT_TUNING_TABLE=bench/tune/h200.csv; else unset MOEKIT_TUNING_TABLE; fi
      timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --preset $p --tokens $t --sets 2 --reps 5 --no-baseline \
        --csv "$OUT/r/ab-$p-$v$i.csv" > "$OUT/r/ab-$p-$v$i.txt" 2>&1
      echo "$p $v$i: $(cut -d, -f3,7,20 "$OUT/r/ab-$p-$v$i.csv" | tail -n +2 | tr '\n' ' ')"
    done
  done
  [ $SECONDS -gt 150 ] && break
done
unset MOEKIT_TUNING_TABLE
echo "# a/b ${SECONDS}s"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
