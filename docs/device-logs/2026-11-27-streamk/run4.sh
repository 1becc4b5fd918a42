#!/usr/bin/env bash
# Call 4 ($1 = the commit): the tail split's layer effect by step (`--stages`), Mixtral at
# T = 512..8192 with both GEMMs' tail auto against off, three turns; then every gpu test (the tail
# test lightened: call 3's took 44 s of float64 reference on the host).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
bench() {  # tag choice
  timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --sets 1 --reps 3 --no-baseline --stages \
    --preset mixtral-8x7b --tokens 512,1024,2048,4096,8192 ${2:+--choice "$2"} --csv "$OUT/r/$1.csv" > "$OUT/r/$1.txt" 2>&1
  echo "# $1 rc=$? at $((SECONDS - START))s"
  grep -E "^ +[0-9]+ +(moekit|  cuda.gemm)" "$OUT/r/$1.txt" | awk '{printf "%s %s %s%s", $1, $2, $3, ($2=="moekit" ? " " $9 "\n" : "\n")}'
}
for turn in 1 2 3; do
  bench stages-auto-$turn
  bench stages-off-$turn "gemm1.tail=off;gemm2.tail=off"
done
echo "# ctest with $(left) s left"
(cd build/device && timeout $(( $(left) - 5 )) ctest -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1; echo "# ctest rc=$?")
tail -4 "$OUT/r/ctest-gpu.txt"; grep -E "Failed|\*\*\*|tests passed" "$OUT/r/ctest-gpu.txt" | head
pack
