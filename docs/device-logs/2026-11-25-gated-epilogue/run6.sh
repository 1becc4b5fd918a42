#!/usr/bin/env bash
# Step 17, device call 6 ($1 = the commit): deterministic mode's cost with the gated epilogue: Qwen3 and
# DeepSeek-V3, W13 interleaved, T = 64, 1024, 16384, default and --deterministic in turns.
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
table() {  # name, extra flags
  SECONDS=0
  timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --preset qwen3-30b-a3b,deepseek-v3 --tokens 64,1024,16384 \
    --sets 2 --reps 5 --no-baseline --refcheck $2 --csv "$OUT/r/$1.csv" > "$OUT/r/$1.txt" 2>&1
  echo "== $1 (${SECONDS}s)"; cut -d, -f1,3,7,20,23 "$OUT/r/$1.csv" | tail -n +2 | sed 's/-30b-a3b//' | tr '\n' ' '; echo
}
table default1 ""
table deterministic1 "--deterministic"
table default2 ""
table deterministic2 "--deterministic"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
