#!/usr/bin/env bash
# Step 20, device call 8 ($1 = the commit): the heuristic takes the 64 x 128 tile without its cluster
# (instead of 128 x 128) for small experts at 33-64 rows per expected expert. New heuristic against
# the old choice forced, two runs of each in turns, with stage times: Qwen3 T = 600, 800, 1024 (both
# GEMMs change), GPT-OSS T = 1100, 1536, 2048 (gemm2 changes; gemm1's 17M weight keeps 128 x 256).
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit || exit 1
mkdir -p "$OUT/r"
B=build/device/bin/moekit
$B explain --preset qwen3-30b-a3b -T 1024 --gate-up interleaved --quant none > "$OUT/r/explain-qwen3-1024.txt" 2>&1
grep -E "gemm[12].tile" "$OUT/r/explain-qwen3-1024.txt"
SECONDS=0
for i in 1 2; do
  for v in new old; do
    for spec in "qwen3-30b-a3b:600,800,1024:gemm1.tile=sm90_m128n128k128_c1x1;gemm2.tile=sm90_m128n128k128_c1x1" \
                "gpt-oss-120b:1100,1536,2048:gemm2.tile=sm90_m128n128k128_c1x1"; do
      p=${spec%%:*}; rest=${spec#*:}; t=${rest%%:*}; old=${rest#*:}
      extra=(); [ $v = old ] && extra=(--choice "$old")
      timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --preset $p --tokens $t --sets 2 --reps 5 --no-baseline --stages \
        "${extra[@]}" --csv "$OUT/r/ab-$p-$v$i.csv" > "$OUT/r/ab-$p-$v$i.txt" 2>&1
      echo "$p $v$i: $(grep -E '^\s+[0-9]+\s+(moekit|  cuda.gemm)' "$OUT/r/ab-$p-$v$i.txt" | awk '{printf "%s %s %s | ", $1, substr($2,6,9), $3}')"
    done
  done
done
echo "# a/b ${SECONDS}s"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
