#!/usr/bin/env bash
# Step 17, device call 1 ($1 = the commit): build moekit and the two tests the gated epilogue touches;
# run them; then, in turns, the layer with the gated epilogue (--gate-up interleaved: every preset's
# W13 read as interleaved gate/up rows, GPT-OSS's own layout) against the same layout with the
# activation unfused (--fusion gemm1_activation=off: gemm1 into 16-bit rows, then the activation
# kernel, the kernels of step 16), T = 64 .. 16384; stage times of both at T = 1024, 4096.
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target moekit test_sm90_gemm test_moe_cuda ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
mkdir -p "$OUT/r"
SECONDS=0
build/device/bin/test_sm90_gemm > "$OUT/r/test_sm90_gemm.txt" 2>&1; echo "test_sm90_gemm rc $? (${SECONDS}s)"
grep -E "^\[  (PASSED|FAILED) |Failure|error" "$OUT/r/test_sm90_gemm.txt" | head -20
SECONDS=0
build/device/bin/test_moe_cuda --gtest_filter='*Sm90*:*Deterministic*:*EveryGemmTile*' > "$OUT/r/test_moe_cuda.txt" 2>&1; echo "test_moe_cuda rc $? (${SECONDS}s)"
grep -E "^\[  (PASSED|FAILED) |Failure" "$OUT/r/test_moe_cuda.txt" | head -20
B=build/device/bin/moekit
table() {  # name, extra flags
  SECONDS=0
  timeout 120 $B bench --backend cuda --quant none --gate-up interleaved --tokens 64,256,1024,4096,16384 --sets 2 --reps 5 \
    --no-baseline --refcheck $2 --csv "$OUT/r/$1.csv" > "$OUT/r/$1.txt" 2>&1
  echo "== $1 (${SECONDS}s)"; cut -d, -f1,3,7,20,23 "$OUT/r/$1.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
}
table fused1 ""
table unfused1 "--fusion gemm1_activation=off"
table fused2 ""
table unfused2 "--fusion gemm1_activation=off"
for v in fused unfused; do
  f=""; [ $v = unfused ] && f="--fusion gemm1_activation=off"
  timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --tokens 1024,4096 --sets 1 --reps 3 --iters 10 --no-baseline --stages $f \
    > "$OUT/r/stages-$v.txt" 2>&1
  echo "== stages $v"; grep -E "cuda\.(gemm1|activation)" "$OUT/r/stages-$v.txt" | awk '{print $1,$2,$3}' | tr '\n' ';'; echo
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
