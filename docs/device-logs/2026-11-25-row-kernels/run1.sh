#!/usr/bin/env bash
# First device call ($1 = the commit): build moekit and every gpu test; meanwhile build moekit a
# second time without this session's kernels (row-kernels-and-maps.patch reversed: the activation,
# finalize and maps of a8dbe3c, whose library code is 39559b7's); ctest -L gpu on the new build; then
# the full table with each build in turns, and the new build's stage times.
set -uo pipefail
COMMIT=$1
HERE=docs/device-logs/2026-11-25-row-kernels
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0)
TARGETS="moekit test_maps_cuda test_moe_cuda test_decode_layer_cuda test_decode_token_cuda test_routing_cuda test_sm90_gemm test_bench_cuda test_random_fill_cuda test_tune_worker_cuda test_attention_cuda test_gpu_foundation"
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target $TARGETS ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
# The old kernels in a copy of the tree, built while the tests run.
mkdir -p /tmp/old && tar --exclude=./build --exclude=./.git -cf - . | tar -C /tmp/old -xf -
( cd /tmp/old && patch -R -p1 -s < "$HERE/row-kernels-and-maps.patch" && cmake -S . -B build/old "${CONF[@]}" -DMOEKIT_COMMIT=a8dbe3c > /tmp/old-configure.txt 2>&1 \
  && cmake --build build/old -j 8 --target moekit > /tmp/old-build.txt 2>&1; echo "old build rc $?" ) > "$OUT/old-build.txt" 2>&1 &
OLD=$!
SECONDS=0
ctest --test-dir build/device -L gpu --output-on-failure > "$OUT/ctest-gpu.txt" 2>&1
echo "# ctest ${SECONDS}s"; grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/ctest-gpu.txt" | head -20
wait $OLD; cat "$OUT/old-build.txt"; tail -3 /tmp/old-build.txt
mkdir -p "$OUT/r"
table() {  # name, binary
  SECONDS=0
  timeout 200 "$2" bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
    --csv "$OUT/r/$1.csv" --json "$OUT/r/$1.json" > "$OUT/r/$1.txt" 2>&1
  echo "== $1 (${SECONDS}s)"; cut -d, -f1,3,7,20,23 "$OUT/r/$1.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
}
table new build/device/bin/moekit
[ -x /tmp/old/build/old/bin/moekit ] && table old /tmp/old/build/old/bin/moekit
SECONDS=0
build/device/bin/moekit bench --backend cuda --quant none --tokens 64,256,1024,4096 --sets 1 --reps 3 --iters 10 --no-baseline --stages \
  --csv "$OUT/r/stages.csv" > "$OUT/r/stages.txt" 2>&1
echo "== stages (${SECONDS}s)"; grep -E "^ +[0-9]+ +(moekit|  cuda)" "$OUT/r/stages.txt" | awk '{print $1,$2,$3}' | tr '\n' ';'
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
