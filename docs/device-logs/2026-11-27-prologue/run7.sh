#!/usr/bin/env bash
# Call 7 ($1 = the commit): `moekit bench --batched-reference` (the two GEMMs alone as cuBLAS
# strided-batched GEMMs at evenly spread rows) at the points step 29 d measured with torch, the
# session's last 289 s of device time: build moekit only, then one short bench run per preset.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((230 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
for p in qwen3-30b-a3b:256,4096,16384 mixtral-8x7b:4096 gpt-oss-120b:16384; do
  [ "$(left)" -lt 25 ] && break
  timeout $(( $(left) - 8 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 1 --reps 3 --no-baseline --batched-reference \
    --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/ref-${p%%:*}.csv" > "$OUT/r/ref-${p%%:*}.txt" 2>&1
  echo "# ${p%%:*} rc=$?"; grep -E "^ +[0-9]+  (moekit|cublas)" "$OUT/r/ref-${p%%:*}.txt"
done
pack
