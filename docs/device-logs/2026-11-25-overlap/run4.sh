#!/usr/bin/env bash
# Step 19, device call 4 ($1 = the commit): the tiles at 64 rows an expert with the rows spread
# log-normally (sm90_overlap --spread), A multicast (1 x 2 clusters); then the layer on every public
# preset at T = 256 .. 2048 with the 64 x 128 tiles forced on both GEMMs against the heuristic, with
# stage times (step 18 call 2 has the 128 x 128 tile's).
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0 -DMOEKIT_BUILD_EXPERIMENTS=ON)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target sm90_overlap moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
mkdir -p "$OUT/r"
X=build/device/bin/sm90_overlap
run() {  # name, then sm90_overlap's arguments
  local name=$1; shift
  timeout 120 $X "$@" > "$OUT/r/$name.txt" 2>&1
  echo "== $name (rc $?) $(grep '^# experts' "$OUT/r/$name.txt")"; grep -v "^#\|^check" "$OUT/r/$name.txt" | tail -n +2 | awk '{printf "%s %s | ", $1, $2}'; echo
}
for sp in 0 0.5 1; do
  run deepseek-64-s$sp --experts 128 --rows 64 --n 4096 --k 7168 --spread $sp --variants 0,14,6,13,8 --rounds 2
  run deepseek2-64-s$sp --experts 128 --rows 64 --n 7168 --k 2048 --spread $sp --variants 0,14,6,13,8 --rounds 2
  run qwen3-64-s$sp --experts 128 --rows 64 --n 1536 --k 2048 --spread $sp --variants 0,14,6,13,8 --rounds 2
done
B=build/device/bin/moekit
bench() {  # name, extra flags
  SECONDS=0
  timeout 100 $B bench --backend cuda --quant none --gate-up interleaved --tokens 256,512,1024,2048 --sets 1 --reps 3 --no-baseline --stages $2 \
    --csv "$OUT/r/$1.csv" > "$OUT/r/$1.txt" 2>&1
  echo "== $1 (${SECONDS}s)"; grep -E "^\s+[0-9]+\s+(moekit|  cuda.gemm)" "$OUT/r/$1.txt" | awk '{printf "%s %s %s | ", $1, substr($2,6,5), $3}'; echo
}
bench heur ""
bench t64c1 "--choice gemm1.tile=sm90_m64n128k128_c1x1;gemm2.tile=sm90_m64n128k128_c1x1"
bench t64c2 "--choice gemm1.tile=sm90_m64n128k128_c1x2;gemm2.tile=sm90_m64n128k128_c1x2"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
