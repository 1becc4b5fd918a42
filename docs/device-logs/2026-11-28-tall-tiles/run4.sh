#!/usr/bin/env bash
# For the next session's first device call ($1 = the commit; not run in session 15, whose device
# time ended in call 3): every gpu test on the final tree, then step 36's narrowed rule at its edges,
# which no call measured: the heuristic (v0) against gemm1 forced onto 128 x 256 (v1), two turns, at
# Mixtral T = 576, 704 (144, 176 rows an expected expert), Qwen3 T = 1920, 2816 (120, 176) and
# GPT-OSS T = 3840, 5632 (120, 176); POINTS replaces them. LIMIT (default 580 s) bounds the call.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((${LIMIT:-580} - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
T0=$SECONDS
ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
pack  # the tests' results come back even if the A/B runs out of time
mkdir -p "$OUT/r"
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3"
one() {  # preset tokens variant turn
  local p=$1 t=$2 v=$3 turn=$4 ch=()
  [ $v = 1 ] && ch=(--choice "gemm1.tile=sm90_m128n256k64_c1x1")
  timeout 60 $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$OUT/r/$p/ab-$p-v$v-$turn.csv" > "$OUT/r/$p/ab-$p-v$v-$turn.txt" 2>&1
  echo "== $p v$v turn $turn rc=$?"
}
for pt in ${POINTS:-mixtral-8x7b:576,704 qwen3-30b-a3b:1920,2816 gpt-oss-120b:3840,5632}; do
  [ "$(left)" -lt 60 ] && { echo "# out of time before $pt"; break; }
  p=${pt%%:*}; t=${pt#*:}
  mkdir -p "$OUT/r/$p"
  one $p $t 0 1; one $p $t 1 1; one $p $t 1 2; one $p $t 0 2
  python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r/$p" 0 | grep moekit | tee -a "$OUT/r/summary.txt"
done
echo "# total $((SECONDS - START))s"
tar -C "$OUT" -czf "$OUT/ab.tgz" r && rm -rf "$OUT/r"
