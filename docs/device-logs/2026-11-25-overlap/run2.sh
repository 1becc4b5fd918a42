#!/usr/bin/env bash
# Step 19, device call 2 ($1 = the commit): DRAM streaming by address pattern (dram_patterns: plain
# loads, 32 KB stages read as 256 rows x 128 bytes, ..., or contiguous), and the loads alone
# (NoMma, now freeing each stage as soon as it arrives) against CUTLASS's mainloop.
set -uo pipefail
COMMIT=$1
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0 -DMOEKIT_BUILD_EXPERIMENTS=ON)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 16 --target sm90_overlap dram_patterns ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
mkdir -p "$OUT/r"
D=build/device/bin/dram_patterns
X=build/device/bin/sm90_overlap
for args in "--k 2048 --stages-in-flight 2" "--k 2048 --stages-in-flight 1" "--k 2048 --stages-in-flight 4" \
            "--k 2048 --ctas-per-sm 1 --stages-in-flight 4" "--k 7168 --stages-in-flight 2" "--k 768 --stages-in-flight 2"; do
  name=dram-$(echo $args | tr -d ' -' )
  timeout 60 $D $args > "$OUT/r/$name.txt" 2>&1
  echo "== dram_patterns $args"; cat "$OUT/r/$name.txt" | tr '\n' ';'; echo
done
run() {  # name, then sm90_overlap's arguments
  local name=$1; shift
  timeout 120 $X "$@" > "$OUT/r/$name.txt" 2>&1
  echo "== $name (rc $?)"; grep -v "^#\|^check" "$OUT/r/$name.txt"
}
run synth --experts 1 --rows 64 --n 131072 --k 768 --variants 0,3,6
run qwen3-64 --experts 128 --rows 64 --n 1536 --k 2048 --variants 0,3,8
run deepseek-64 --experts 128 --rows 64 --n 4096 --k 7168 --variants 0,3,8
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
