#!/usr/bin/env bash
# Call 7 ($1 = the commit): one more try for an H200. On anything else it stops at once (no build).
# On an H200: steps 24 and 25's rules there (the automatic order against both GEMMs fixed on the
# ping-pong tile's points and on the cooperative tile's; the 64 x 128 tile without its cluster
# against its 1 x 2 form at T = 16..512), two turns, then the full table.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
if [[ "$GPU" != *H200* ]]; then echo "not an H200: nothing run" | tee "$OUT/r/skipped.txt"; tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 0; fi
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
bench() {  # name, then bench arguments
  local name=$1; shift
  [ "$(left)" -lt 25 ] && return 1
  local T0=$SECONDS
  timeout $(( $(left) - 10 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 5 --no-baseline \
    --csv "$OUT/r/$name.csv" "$@" > "$OUT/r/$name.txt" 2>&1
  echo "# $name rc=$? $((SECONDS - T0))s"
}
C2="gemm1.tile=sm90_m64n128k128_c1x2;gemm2.tile=sm90_m64n128k128_c1x2"
for turn in 1 2; do
  for p in gpt-oss-120b:1024,2048,3072 qwen3-30b-a3b:600,1536; do
    for o in auto fixed; do bench "order-${p%%:*}-$o$turn" --preset ${p%%:*} --tokens ${p#*:} --choice "gemm1.order=$o;gemm2.order=$o" || break 3; done
  done
  bench "tile-dflt$turn" --tokens 16,64,256,512 || break
  bench "tile-c1x2$turn" --tokens 16,64,256,512 --choice "$C2" || break
done
bench table --tokens 1,8,64,256,1024,4096,16384 --refcheck --json "$OUT/r/table.json"
python3 docs/device-logs/2026-11-26-h200-rules/summarize.py "$OUT/r" | tee "$OUT/r/summary.txt"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
