#!/usr/bin/env bash
# Call 5 ($1 = the commit): the gemm2.overlap knob (auto, on, off). Its A/B through the knob: Qwen3
# T=640 (the pair under auto) with gemm2.overlap=off, DeepSeek-V3 T=576 (no pair under auto) with
# gemm2.overlap=on, each against the default, two turns; then the gpu tests, the new
# MoeCuda.Gemm2OverlapKeepsTheBits among them, MoeCuda.Sm90TilesGiveTheSameLayer (about 140 s; it
# passed at 5e475da, call 4) last and only if the session's device time allows.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((${LIMIT:-460} - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3"
one() {  # preset tokens variant turn knob-for-v1
  local p=$1 t=$2 v=$3 turn=$4 ch=()
  [ $v = 1 ] && ch=(--choice "$5")
  timeout 60 $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$OUT/r/$p/ab-$p-v$v-$turn.csv" > "$OUT/r/$p/ab-$p-v$v-$turn.txt" 2>&1
  echo "== $p v$v turn $turn rc=$?"
}
for pk in qwen3-30b-a3b:640:gemm2.overlap=off deepseek-v3:576:gemm2.overlap=on; do
  IFS=: read -r p t k <<< "$pk"
  mkdir -p "$OUT/r/$p"
  one $p $t 0 1 $k; one $p $t 1 1 $k; one $p $t 1 2 $k; one $p $t 0 2 $k
  python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r/$p" 0 | grep moekit | tee -a "$OUT/r/summary.txt"
done
$B explain --preset qwen3-30b-a3b --quant none --gate-up interleaved -T 640 --choice "gemm2.overlap=off" > "$OUT/r/explain-qwen3-T640-off.txt" 2>&1
grep -E "overlap" "$OUT/r/explain-qwen3-T640-off.txt"
T0=$SECONDS
timeout $(($(left) - 5)) ctest --test-dir build/device -L gpu -j 3 -E Sm90TilesGiveTheSameLayer --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
grep -E "Gemm2OverlapKeepsTheBits" "$OUT/r/ctest-gpu.txt" | tail -1
if [ $(left) -gt 170 ]; then
  T0=$SECONDS
  timeout $(($(left) - 5)) ctest --test-dir build/device -R Sm90TilesGiveTheSameLayer --output-on-failure > "$OUT/r/ctest-sm90-tiles.txt" 2>&1
  echo "# Sm90TilesGiveTheSameLayer rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed" "$OUT/r/ctest-sm90-tiles.txt"
else
  echo "# Sm90TilesGiveTheSameLayer not run: $(left)s left"
fi
echo "# total $((SECONDS - START))s"
pack
