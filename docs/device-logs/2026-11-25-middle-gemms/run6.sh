#!/usr/bin/env bash
# Step 18, device call 6 ($1 = the commit): the 128 x 256 tile with a k-block of 32
# (sm90_m128n256k32_c1x1: stages of 24 KB, twice as many), on call 5's reading that the consumers
# hold two of the 4 stages and leave too few bytes in flight. test_sm90_gemm (every tile); the layer
# test on every sm_90a tile; call 5's one-expert gemm1 on it against 128 x 256 x 64; then the
# presets at T = 256, 1024, 4096 with it forced on both GEMMs against the heuristic, in turns.
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target moekit test_sm90_gemm test_moe_cuda ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
mkdir -p "$OUT/r"
B=build/device/bin/moekit
one() {  # name, tile
  timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --experts 1 --top-k 1 --hidden 768 --intermediate 65536 \
    --tokens 64,128 --sets 2 --reps 5 --no-baseline --stages --choice "gemm1.tile=$2;gemm2.tile=$2" --csv "$OUT/r/$1.csv" > "$OUT/r/$1.txt" 2>&1
  echo "$1: $(grep -E '^\s+[0-9]+\s+(  cuda.gemm1)' "$OUT/r/$1.txt" | awk '{printf "%s %s %s | ", $1, substr($2,1,10), $3}')"
}
one one-k64 sm90_m128n256k64_c1x1
one one-k32 sm90_m128n256k32_c1x1
mid() {  # name, extra flags
  SECONDS=0
  timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --tokens 256,1024,4096 --sets 1 --reps 3 --no-baseline --stages $2 \
    --csv "$OUT/r/$1.csv" > "$OUT/r/$1.txt" 2>&1
  echo "== $1 (${SECONDS}s)"; grep -E "^\s+[0-9]+\s+(moekit|  cuda.gemm)" "$OUT/r/$1.txt" | awk '{printf "%s %s %s | ", $1, substr($2,6,5), $3}'; echo
}
mid heur1 ""
mid k32-1 "--choice gemm1.tile=sm90_m128n256k32_c1x1;gemm2.tile=sm90_m128n256k32_c1x1"
mid heur2 ""
mid k32-2 "--choice gemm1.tile=sm90_m128n256k32_c1x1;gemm2.tile=sm90_m128n256k32_c1x1"
SECONDS=0
build/device/tests/gpu/test_sm90_gemm > "$OUT/r/test_sm90_gemm.txt" 2>&1; echo "test_sm90_gemm rc=$? (${SECONDS}s)"; tail -1 "$OUT/r/test_sm90_gemm.txt"
build/device/tests/gpu/test_moe_cuda --gtest_filter='*Sm90*' > "$OUT/r/test_moe_cuda.txt" 2>&1; echo "test_moe_cuda *Sm90* rc=$?"; tail -1 "$OUT/r/test_moe_cuda.txt"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
