#!/usr/bin/env bash
# Call 2 ($1 = the commit): the final rule (gemm1's 192 x 128 window at 136-176 rows an expected
# expert, 144-168 for Mixtral-sized experts; gemm2's at 144-168), the last call of the session:
#   1. gemm2's window at its two ends, which call 1 did not measure: the heuristic (v0, gemm2 on
#      192 x 128) against gemm2 forced onto 128 x 256 (v1), two turns, at 144 and 168 rows;
#   2. the full table (docs/benchmarks.md's protocol: --sets 2 --reps 5 --refcheck, W13 interleaved);
#   3. the layer's gpu tests (MoeCuda.*: the heuristic's plans) in the time left (LIMIT, default 570 s).
# Call 1 ran every gpu test at 0f30117, whose kernels these are; only host rules changed since.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((${LIMIT:-570} - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/$1.tgz" r && rm -rf "$OUT/r" && mkdir -p "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || { pack build; exit 1; }
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3"
ab() {  # dir preset tokens choice-of-v1
  local d=$1 p=$2 t=$3 c=$4
  mkdir -p "$OUT/r/$d/$p"
  for vt in 0:1 1:1 1:2 0:2; do
    local v=${vt%%:*} turn=${vt#*:} ch=()
    [ $v = 1 ] && ch=(--choice "$c")
    timeout 60 $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$OUT/r/$d/$p/ab-$p-v$v-$turn.csv" > "$OUT/r/$d/$p/ab-$p-v$v-$turn.txt" 2>&1 || echo "== $d $p $t v$v turn $turn rc=$?"
  done
  python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r/$d/$p" 0 | grep moekit | sed "s/^/$d /" | tee -a "$OUT/r/summary.txt"
}
for pt in ${G2_POINTS:-qwen3-30b-a3b:2304,2688 gpt-oss-120b:4608,5376 mixtral-8x7b:576,672}; do
  ab g2 ${pt%%:*} ${pt#*:} "gemm2.tile=sm90_m128n256k64_c1x1"
done
$B explain --preset gpt-oss-120b --quant none --gate-up interleaved -T 5120 > "$OUT/r/explain-gptoss-T5120.txt" 2>&1
grep -E "gemm[12]\.tile" "$OUT/r/explain-gptoss-T5120.txt"
echo "# A/B done $((SECONDS - START))s"
pack ab
T0=$SECONDS
timeout $(($(left) - 60)) $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
  --gate-up interleaved --csv "$OUT/r/table.csv" --json "$OUT/r/table.json" > "$OUT/r/table.txt" 2>&1
echo "== table rc=$? ($((SECONDS - T0))s)"; grep -E "ceiling" "$OUT/r/table.txt"
python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r" > "$OUT/r/table-summary.txt" 2>&1; cat "$OUT/r/table-summary.txt" | head -40
pack table
T0=$SECONDS
timeout $(($(left) - 5)) ctest --test-dir build/device -L gpu -R "MoeCuda" -j 3 --output-on-failure > "$OUT/r/ctest-moe.txt" 2>&1
echo "# ctest (MoeCuda) rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-moe.txt" | head -20
echo "# total $((SECONDS - START))s"
pack rest
