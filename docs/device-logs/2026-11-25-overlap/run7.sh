#!/usr/bin/env bash
# Step 19, device call 7 ($1 = the commit): the 64 x 128 tile with and without its 1 x 2 cluster
# under skewed routing (the bench's --popularity zipf), where the rule keeps the cluster (Qwen3
# T=512) and where it drops it (GPT-OSS T=1024 gemm1): heuristic, both GEMMs c1x1, both c1x2.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit || exit 1
mkdir -p "$OUT/r"
B=build/device/bin/moekit
C1="gemm1.tile=sm90_m64n128k128_c1x1;gemm2.tile=sm90_m64n128k128_c1x1"
C2="gemm1.tile=sm90_m64n128k128_c1x2;gemm2.tile=sm90_m64n128k128_c1x2"
for s in 0.6 1.2; do
  for pt in "qwen3-30b-a3b 512" "gpt-oss-120b 1024"; do
    set -- $pt
    for v in heur c1 c2; do
      extra=""; [ $v = c1 ] && extra="--choice $C1"; [ $v = c2 ] && extra="--choice $C2"
      timeout 40 $B bench --backend cuda --quant none --gate-up interleaved --preset $1 --tokens $2 --popularity zipf --zipf-s $s \
        --sets 2 --reps 5 --no-baseline --stages $extra --csv "$OUT/r/zipf$s-$1-$v.csv" > "$OUT/r/zipf$s-$1-$v.txt" 2>&1
      echo "zipf $s $1 $v: $(grep -E '^\s+[0-9]+\s+(moekit|  cuda.gemm)' "$OUT/r/zipf$s-$1-$v.txt" | awk '{printf "%s %s %s | ", $1, substr($2,6,5), $3}')"
    done
  done
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
