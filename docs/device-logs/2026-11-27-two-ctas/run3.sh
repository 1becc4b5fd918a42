#!/usr/bin/env bash
# Call 3 ($1 = the commit; src and tests as call 1's): the steps (--stages) from T = 512 to 16384,
# every preset, with the bench's random routing (uniform) and with every expert at exactly T*K/E
# rows (balanced), for the partial-tile model of step 34.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((585 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3 --stages"
TOK=512,768,1024,1536,2048,3072,4096,6144,8192,12288,16384
for pop in uniform balanced; do
  for p in qwen3-30b-a3b gpt-oss-120b mixtral-8x7b deepseek-v3; do
    T0=$SECONDS
    timeout $(($(left) - 5)) $B bench $COMMON --popularity $pop --preset $p --tokens $TOK --csv "$OUT/r/stages-$p-$pop.csv" > "$OUT/r/stages-$p-$pop.txt" 2>&1
    echo "== $p $pop rc=$? ($((SECONDS - T0))s)"
  done
done
pack
