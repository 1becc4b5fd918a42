#!/usr/bin/env bash
# Step 16, device call 5 ($1 = the commit): in a copy of the tree with m256-tiles.patch applied (two
# experiment tiles: 256 x 128 x 64 cooperative, 1 x 1 and 1 x 2 clusters: each weight tile used by
# 256 rows in one CTA), build moekit and test_moe_cuda; the tiles' layer test; each forced on both
# GEMMs against the heuristic at T = 256 .. 16384, in turns.
set -uo pipefail
COMMIT=$1
HERE=docs/device-logs/2026-11-25-expand-by-token
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
mkdir -p /tmp/exp && tar --exclude=./build --exclude=./.git -cf - . | tar -C /tmp/exp -xf -
cd /tmp/exp && patch -p1 -s < "$HERE/m256-tiles.patch" || exit 2
cmake -S . -B build/exp "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT-m256 > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/exp -j 16 --target moekit test_moe_cuda ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
mkdir -p "$OUT/r"
timeout 120 build/exp/tests/gpu/test_moe_cuda --gtest_filter='*Sm90Tiles*' > "$OUT/r/exp-tiles-test.txt" 2>&1; echo "== tile test rc $?"; tail -2 "$OUT/r/exp-tiles-test.txt"
SECONDS=0
for tile in heuristic sm90_m256n128k64_c1x1 sm90_m256n128k64_c1x2 heuristic2; do
  choice=(); [ "${tile#heuristic}" = "$tile" ] && choice=(--choice "gemm1.tile=$tile;gemm2.tile=$tile")
  timeout 60 build/exp/bin/moekit bench --backend cuda --quant none --tokens 256,1024,4096,16384 --sets 1 --reps 3 --iters 10 --no-baseline \
    "${choice[@]}" --csv "$OUT/r/tile-$tile.csv" > "$OUT/r/tile-$tile.txt" 2>&1
  echo "== $tile (${SECONDS}s)"; cut -d, -f1,3,7,20 "$OUT/r/tile-$tile.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
