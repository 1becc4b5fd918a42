#!/usr/bin/env bash
# Step 19, device call 3 ($1 = the commit): what a tiled weight layout would stream at. BulkB
# variants read each stage's weight tile as one contiguous block with one cp.async.bulk (timing only:
# the bytes are not laid out for the MMA), against CUTLASS's TMA loads, on the three tiles.
# Every n is a multiple of 256 (BulkB indexes whole blocks): GPT-OSS-like uses 5632, not 5760.
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
  echo "== $name (rc $?)"; grep -v "^#\|^check" "$OUT/r/$name.txt"
}
run synth --experts 1 --rows 64 --n 131072 --k 768 --variants 0,10,6,11,8,12,3
run qwen3-64 --experts 128 --rows 64 --n 1536 --k 2048 --variants 0,10,6,11,8,12,3
run deepseek-64 --experts 128 --rows 64 --n 4096 --k 7168 --variants 0,10,6,11,8,12
run deepseek-32 --experts 128 --rows 32 --n 4096 --k 7168 --variants 6,11,0,10
run qwen3-16 --experts 128 --rows 16 --n 1536 --k 2048 --variants 6,11
run mixtral-256 --experts 8 --rows 256 --n 28672 --k 4096 --variants 0,10
run gptoss-64 --experts 128 --rows 64 --n 5632 --k 2880 --variants 0,10,8,12
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
