#!/usr/bin/env bash
# Step 16, device call 3 ($1 = the commit): build moekit at this commit and, in a copy with
# few-rows.patch reversed, without the large-expert rule (6d67e13's heuristic); both at T = 4 .. 64
# in turns; then the full table at this commit.
set -uo pipefail
COMMIT=$1
HERE=docs/device-logs/2026-11-25-expand-by-token
export PATH=/usr/local/cuda/bin:$PATH
CONF=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr
      -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
mkdir -p /tmp/old && tar --exclude=./build --exclude=./.git -cf - . | tar -C /tmp/old -xf -
( cd /tmp/old && patch -R -p1 -s < "$HERE/few-rows.patch" && cmake -S . -B build/old "${CONF[@]}" -DMOEKIT_COMMIT=6d67e13 > /tmp/old-configure.txt 2>&1 \
  && cmake --build build/old -j 6 --target moekit > /tmp/old-build.txt 2>&1; echo "old build rc $?" ) > "$OUT/old-build.txt" 2>&1 &
OLD=$!
cmake -S . -B build/device "${CONF[@]}" -DMOEKIT_COMMIT=$COMMIT > "$OUT/configure.txt" 2>&1 || { tail -20 "$OUT/configure.txt"; exit 1; }
( time cmake --build build/device -j 10 --target moekit ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
grep real "$OUT/build.txt"
wait $OLD; cat "$OUT/old-build.txt"
mkdir -p "$OUT/r"
B=build/device/bin/moekit; O=/tmp/old/build/old/bin/moekit
run() {  # name, binary, tokens
  SECONDS=0
  timeout 150 "$2" bench --backend cuda --quant none --tokens $3 --sets 2 --reps 5 --no-baseline --refcheck \
    --csv "$OUT/r/$1.csv" --json "$OUT/r/$1.json" > "$OUT/r/$1.txt" 2>&1
  echo "== $1 (${SECONDS}s)"; cut -d, -f1,3,7,20,23 "$OUT/r/$1.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
}
for i in 1 2; do run small-new$i $B 4,8,16,32,64; [ -x $O ] && run small-old$i $O 4,8,16,32,64; done
run table $B 1,8,64,256,1024,4096,16384
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
