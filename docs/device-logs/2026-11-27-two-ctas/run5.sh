#!/usr/bin/env bash
# Call 5 ($1 = the commit; src and tests as call 1's): the memory-bound points nearest the target
# (call 1's scan: Mixtral T = 192, 256 at 85-86%; DeepSeek-V3 T = 384 .. 1024 at 82-90%; Qwen3
# T = 96 .. 256 at 87-90%) against other tiles and orders. Variant 0 and the last are the heuristic.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((585 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3 --stages"
both() { echo "gemm1.tile=$1;gemm2.tile=$1"; }
sweep() {  # preset tokens variant...
  local p=$1 t=$2; shift 2
  local i=0
  for v in "$@"; do
    T0=$SECONDS
    if [ "$v" = heuristic ]; then ch=(); else ch=(--choice "$v"); fi
    timeout $(($(left) - 5)) $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$OUT/r/ab-$p-v$i-1.csv" > "$OUT/r/ab-$p-v$i-1.txt" 2>&1
    echo "== $p v$i [$v] rc=$? ($((SECONDS - T0))s)"
    i=$((i + 1))
  done
}
sweep mixtral-8x7b 192,256 heuristic "$(both sm90_m64n128k128_c1x1)" "$(both sm90_m64n128k128_c1x2)" "$(both sm90_m128n128k128_c1x1)" heuristic
sweep qwen3-30b-a3b 96,128,192,256 heuristic "$(both sm90_m64n128k128_c1x2)" "$(both sm90_m128n128k128_c1x1)" "gemm1.order=fixed;gemm2.order=fixed" heuristic
sweep deepseek-v3 384,512,768,1024 heuristic "$(both sm90_m64n128k128_c1x1)" "$(both sm90_m128n128k128_c1x1)" "$(both sm90_m128n256k64_c1x1)" "gemm1.order=claimed;gemm2.order=claimed" heuristic
for p in mixtral-8x7b qwen3-30b-a3b deepseek-v3; do
  mkdir -p "$OUT/r/$p" && mv "$OUT/r"/ab-$p-* "$OUT/r/$p/"
  python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r/$p" 0 | grep moekit | tee -a "$OUT/r/summary.txt"
done
pack
