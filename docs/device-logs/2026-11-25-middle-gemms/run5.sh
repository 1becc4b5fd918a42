#!/usr/bin/env bash
# Step 18, device call 5 ($1 = the commit): does changing expert between tiles cost the sm_90a kernel?
# Two gemm1s with the same weight bytes (201 MB), the same 512 tiles of 128 x 256 (forced), the same
# rows per expert and a short K (H = 768: 12 k-blocks a tile): one expert of N = 2I = 131072 (every
# CTA's tiles in one group: its TMA descriptors are written once) against eight experts of N = 16384
# (64 tiles an expert, dealt 132 apart: every tile of a CTA changes expert). T x top_k / E = 64, then
# 128 rows an expert. Stage times, two runs of each in turns.
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
mkdir -p "$OUT/r"
B=build/device/bin/moekit
TILE="--choice gemm1.tile=sm90_m128n256k64_c1x1;gemm2.tile=sm90_m128n256k64_c1x1"
run() {  # name, experts, intermediate, tokens
  timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --experts $2 --top-k 1 --hidden 768 --intermediate $3 \
    --tokens $4 --sets 2 --reps 5 --no-baseline --stages $TILE --csv "$OUT/r/$1.csv" > "$OUT/r/$1.txt" 2>&1
  echo "$1: $(grep -E '^\s+[0-9]+\s+(moekit|  cuda.gemm1)' "$OUT/r/$1.txt" | awk '{printf "%s %s %s | ", $1, substr($2,1,10), $3}')"
}
for i in 1 2; do
  run one-expert-$i 1 65536 64,128
  run eight-experts-$i 8 8192 512,1024
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
