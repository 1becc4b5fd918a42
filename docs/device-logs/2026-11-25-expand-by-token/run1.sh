#!/usr/bin/env bash
# Step 16, device call 1 ($1 = the commit): build moekit (this commit) and, in a copy of the tree with
# step16.patch reversed, the previous kernels (0ddceda's: the row-major expand, counting maps up to
# 1024 entries); the full table with the new build, T = 64 .. 16384 with the old one; stage times of
# both; then Nsight Compute on the sm_90a GEMMs of Qwen3 and DeepSeek-V3 at T=4096 (where prefill is
# furthest from the floor) to see where their time goes.
set -uo pipefail
COMMIT=$1
HERE=docs/device-logs/2026-11-25-expand-by-token
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
mkdir -p /tmp/old && tar --exclude=./build --exclude=./.git -cf - . | tar -C /tmp/old -xf -
( cd /tmp/old && patch -R -p1 -s < "$HERE/step16.patch" && cmake -S . -B build/old "${CONF[@]}" -DMOEKIT_COMMIT=0ddceda > /tmp/old-configure.txt 2>&1 \
  && cmake --build build/old -j 6 --target moekit > /tmp/old-build.txt 2>&1; echo "old build rc $?" ) > "$OUT/old-build.txt" 2>&1 &
OLD=$!
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 12 --target moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
wait $OLD; cat "$OUT/old-build.txt"; tail -3 /tmp/old-build.txt
mkdir -p "$OUT/r"
B=build/device/bin/moekit; O=/tmp/old/build/old/bin/moekit
table() {  # name, binary, tokens
  SECONDS=0
  timeout 150 "$2" bench --backend cuda --quant none --tokens $3 --sets 2 --reps 5 --no-baseline --refcheck \
    --csv "$OUT/r/$1.csv" --json "$OUT/r/$1.json" > "$OUT/r/$1.txt" 2>&1
  echo "== $1 (${SECONDS}s)"; cut -d, -f1,3,7,20,23 "$OUT/r/$1.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
}
table new $B 1,8,64,256,1024,4096,16384
[ -x $O ] && table old $O 64,256,1024,4096,16384
stages() {  # name, binary
  SECONDS=0
  timeout 90 "$2" bench --backend cuda --quant none --tokens 64,256,1024,4096 --sets 1 --reps 3 --iters 10 --no-baseline --stages \
    --csv "$OUT/r/stages-$1.csv" > "$OUT/r/stages-$1.txt" 2>&1
  echo "== stages $1 (${SECONDS}s)"; grep -E "cuda\.(expand|build_maps)" "$OUT/r/stages-$1.txt" | awk '{print $1,$2,$3}' | tr '\n' ';'; echo
}
stages new $B
[ -x $O ] && stages old $O
SECONDS=0
for p in qwen3-30b-a3b deepseek-v3; do
  timeout 100 ncu --clock-control none -k regex:device_kernel -c 2 --section SpeedOfLight --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section SchedulerStats \
    $B run --preset $p -T 4096 --backend cuda --iters 1 > "$OUT/r/ncu-$p.txt" 2>&1
  echo "== ncu $p rc $? (${SECONDS}s)"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Grid Size|Registers|Issue Slots|No Eligible|Warp Cycles Per Issued" "$OUT/r/ncu-$p.txt" | head -30
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
