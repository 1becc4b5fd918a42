#!/usr/bin/env bash
# Second device call ($1 = the commit): build moekit; at T = 8 .. 128 on every preset, the
# heuristic's plan against the sm_90a tiles without the 2 x 1 cluster, forced on both GEMMs or on one.
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr \
  -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0 -DMOEKIT_COMMIT=$COMMIT > /tmp/configure.txt 2>&1 || { tail -20 /tmp/configure.txt; exit 1; }
( time cmake --build build/device -j 16 --target moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
B=build/device/bin/moekit
mkdir -p "$OUT/r"
SECONDS=0
run() {  # name, extra bench arguments...
  local name=$1; shift
  $B bench --backend cuda --quant none --tokens 8,16,32,64,128 --sets 1 --reps 3 --iters 10 --no-baseline "$@" \
    --csv "$OUT/r/$name.csv" > "$OUT/r/$name.txt" 2>&1
  echo "== $name (${SECONDS}s)"; cut -d, -f1,3,7,20 "$OUT/r/$name.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
}
run heuristic
for t in sm90_m64n128k128_c1x1 sm90_m64n128k128_c1x2 sm90_m128n256k64_c1x1; do
  run both-$t --fusion whole_layer=off --choice "gemm1.tile=$t;gemm2.tile=$t"
done
run gemm1-sm90_m64n128k128_c1x1 --fusion whole_layer=off --choice "gemm1.tile=sm90_m64n128k128_c1x1"
run gemm2-sm90_m64n128k128_c1x1 --fusion whole_layer=off --choice "gemm2.tile=sm90_m64n128k128_c1x1"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
