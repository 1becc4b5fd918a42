#!/usr/bin/env bash
# Call 4 ($1 = the commit): with the automatic order claiming on the cooperative tiles while every
# expert fits 128 rows (call 3), is the cooperative tile now faster than the heuristic's ping-pong
# 64 x 128 tile where experts hold 33-64 rows (there the ping-pong tile keeps the fixed order once
# one expert passes 64)? The default against both GEMMs forced onto sm90_m128n256k64_c1x1 (co256)
# and sm90_m128n128k128_c1x1 (co128), each GEMM timed alone (--stages), two turns.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
for turn in 1 2; do
  for p in qwen3-30b-a3b:768,1024 gpt-oss-120b:1536,2048 mixtral-8x7b:128 deepseek-v3:512; do
    for v in dflt co256 co128; do
      [ "$(left)" -lt 30 ] && break 3
      case $v in dflt) ch=() ;; co256) ch=(--choice "gemm1.tile=sm90_m128n256k64_c1x1;gemm2.tile=sm90_m128n256k64_c1x1") ;;
                  co128) ch=(--choice "gemm1.tile=sm90_m128n128k128_c1x1;gemm2.tile=sm90_m128n128k128_c1x1") ;; esac
      T0=$SECONDS
      timeout $(( $(left) - 10 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 5 --no-baseline --stages \
        --preset ${p%%:*} --tokens ${p#*:} "${ch[@]}" --csv "$OUT/r/sweep-${p%%:*}-$v$turn.csv" > "$OUT/r/sweep-${p%%:*}-$v$turn.txt" 2>&1
      echo "# ${p%%:*} $v$turn rc=$? $((SECONDS - T0))s"
    done
  done
done
python3 docs/device-logs/2026-11-26-h200-rules/summarize.py "$OUT/r" | tee "$OUT/r/summary.txt"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
