#!/usr/bin/env bash
# Step 19, device call 1 ($1 = the commit): the overlap experiment (bench/sm90_overlap). Builds
# sm90_overlap only, then on five synthetic gemm1 shapes times the variants (CUTLASS's mainloop, L2
# prefetch 4 and 8 k-tiles ahead, loads alone, MMAs on L2-hot operands, the traced loop; three tiles)
# and writes the traced variant's per-stage timeline.
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0 -DMOEKIT_BUILD_EXPERIMENTS=ON)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target sm90_overlap ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
mkdir -p "$OUT/r"
X=build/device/bin/sm90_overlap
run() {  # name, then sm90_overlap's arguments
  local name=$1; shift
  timeout 120 $X "$@" > "$OUT/r/$name.txt" 2>&1
  echo "== $name (rc $?)"; grep -v "^#" "$OUT/r/$name.txt"
  if [ -f "$OUT/r/$name.trace" ]; then
    python3 bench/sm90_overlap/analyze_trace.py "$OUT/r/$name.trace" --events 30 > "$OUT/r/$name-trace.txt" 2>&1
    head -8 "$OUT/r/$name-trace.txt"; gzip "$OUT/r/$name.trace"
  fi
}
run synth --experts 1 --rows 64 --n 131072 --k 768 --variants 0,1,2,3,4,5,6,7,8,9 --trace "$OUT/r/synth.trace"
run qwen3-64 --experts 128 --rows 64 --n 1536 --k 2048 --variants 0,1,3,4,5,6,7,8,9 --trace "$OUT/r/qwen3-64.trace"
run deepseek-64 --experts 128 --rows 64 --n 4096 --k 7168 --variants 0,1,2,3,4,5,8,9 --trace "$OUT/r/deepseek-64.trace"
run mixtral-256 --experts 8 --rows 256 --n 28672 --k 4096 --variants 0,1,2,3,4,5 --trace "$OUT/r/mixtral-256.trace"
run qwen3-16 --experts 128 --rows 16 --n 1536 --k 2048 --variants 6,7,0,1
