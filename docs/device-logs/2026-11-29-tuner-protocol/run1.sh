#!/usr/bin/env bash
# Step 40, call 1, run at 3c853bf (call1/) ($1 = the commit; carry build/carry and run `tar -xJf build/carry/deps.tar.xz`
# first): the tuner's worker now times as `moekit bench` does (cuda::GraphReplays over rotated weight
# copies). 1. the new GPU tests (GraphReplays, the worker, the bench's GPU side); 2. the bench after
# its move onto GraphReplays, at two of call 3's points (retune/call3: Mixtral T=8 678.9 us);
# 3. `moekit tune --compare` at the three points where the old protocol and the bench disagreed,
# into a copy of h200.csv; 4. the bench with that table against without there, two turns; 5. every
# gpu test in the time left.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit gpu_tests
device_ctest_gpu r/ctest-new.txt -R "GraphReplays|TuneWorkerCuda|BenchCuda"
bench() {  # PRESET T OUTNAME [env...]
  local p=$1 t=$2 n=$3
  shift 3
  env "$@" timeout 100 "$B" bench --backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3 \
    --preset "$p" --tokens "$t" --csv "$OUT/r/bench/$n.csv" > "$OUT/r/bench/$n.txt" 2>&1
  echo "$n: $(grep -E "^ +$t  moekit" "$OUT/r/bench/$n.txt" | awk '{print $3, $NF}')"
}
mkdir -p "$OUT/r/bench"
{ bench mixtral-8x7b 8 mixtral-8-sanity; bench qwen3-30b-a3b 1 qwen3-1-sanity; } | tee -a "$OUT/r/summary.txt"
cp bench/tune/h200.csv "$OUT/r/h200.csv"
t0=$SECONDS
timeout 240 "$B" tune -i bench/tune/retune_h200_protocol.csv -o "$OUT/r/h200.csv" --journal "$OUT/r/tune.journal" \
  --reference-cache /tmp/moekit-refs --compare --no-progress > "$OUT/r/tune.txt" 2>&1
echo "# tune rc=$? $((SECONDS - t0))s"
grep -E "^shape|heuristic|speedup|not valid" "$OUT/r/tune.txt" | cut -c1-200
for turn in 1 2; do
  for p in "mixtral-8x7b 8" "deepseek-v3 256" "gpt-oss-120b 8"; do
    set -- $p
    bench "$1" "$2" "$1-$2-heur-$turn" MOEKIT_TUNING_TABLE=
    bench "$1" "$2" "$1-$2-table-$turn" MOEKIT_TUNING_TABLE="$OUT/r/h200.csv"
  done
done | tee -a "$OUT/r/summary.txt"
device_ctest_gpu r/ctest-gpu.txt -E "GraphReplays|TuneWorkerCuda|BenchCuda"
echo "# total $((SECONDS - DEVICE_START))s"
