#!/usr/bin/env bash
# Call 6 ($1 = the commit, branch exp/pingpong): two experiment tiles, ping-pong 128 x 128 x 64 and
# 64 x 256 x 64 (each warpgroup 128 accumulators a thread, as on the cooperative 128 x 256 tile), to
# hide the epilogue under the other warpgroup's mainloop where K is short. Their registers, spills
# and shared memory (cuobjdump); test_sm90_gemm on every tile; then the default against both GEMMs
# forced onto each experiment tile, each GEMM timed alone, at compute-bound points.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit test_sm90_gemm || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
for o in $(find build/device -name "sm90_tile_instance.cu.o" | grep -E "P1x1|kM128N256C1x1"); do
  echo "== $o"; cuobjdump -res-usage "$o" 2>&1 | grep -A1 "Function" | grep -B1 -E "REG" | grep -E "REG" | sort | uniq -c | head -8
done > "$OUT/r/res-usage.txt" 2>&1
cat "$OUT/r/res-usage.txt" | head -40
B=build/device/bin/moekit
T0=$SECONDS
timeout 150 build/device/tests/gpu/test_sm90_gemm > "$OUT/r/test-sm90.txt" 2>&1
echo "# test_sm90_gemm rc=$? $((SECONDS - T0))s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" "$OUT/r/test-sm90.txt" | head -20
for turn in 1 2; do
  for p in qwen3-30b-a3b:4096,16384 mixtral-8x7b:4096,16384 gpt-oss-120b:16384 deepseek-v3:16384; do
    for v in dflt pp128 pp256; do
      [ "$(left)" -lt 40 ] && break 3
      case $v in dflt) ch=() ;; pp128) ch=(--choice "gemm1.tile=sm90_m128n128k64_pp;gemm2.tile=sm90_m128n128k64_pp") ;;
                  pp256) ch=(--choice "gemm1.tile=sm90_m64n256k64_pp;gemm2.tile=sm90_m64n256k64_pp") ;; esac
      T0=$SECONDS
      timeout $(( $(left) - 10 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline --stages \
        --preset ${p%%:*} --tokens ${p#*:} "${ch[@]}" --csv "$OUT/r/sweep-${p%%:*}-$v$turn.csv" > "$OUT/r/sweep-${p%%:*}-$v$turn.txt" 2>&1
      echo "# ${p%%:*} $v$turn rc=$? $((SECONDS - T0))s"
    done
  done
done
python3 docs/device-logs/2026-11-26-h200-rules/summarize.py "$OUT/r" | tee "$OUT/r/summary.txt"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
