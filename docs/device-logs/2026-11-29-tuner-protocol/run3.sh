#!/usr/bin/env bash
# Not run yet: for the next session's first call ($1 = the commit; carry build/carry and run
# `tar -xJf build/carry/deps.tar.xz` first). Step 40 h: the worker now times on the bench's whole
# set inputs (hidden states and DeepSeek-V3's correction bias too), so its heuristic times should
# come within about 1% of `moekit bench --sets 4` at the same points (call 2 left them 2.5% and 6.5%
# apart at Mixtral T=8 and DeepSeek-V3 T=256). 1. the tests of the change; 2. `moekit tune --compare`
# at the three points (summary: the tuner's heuristic and tuned times); 3. the bench --sets 4 with
# the heuristic at the same points, twice; 4. every gpu test in the time left.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit gpu_tests
device_ctest_gpu r/ctest-new.txt -R "GraphReplays|TuneWorkerCuda|BenchCuda"
cp bench/tune/h200.csv "$OUT/r/h200.csv"
t0=$SECONDS
timeout 200 "$B" tune -i bench/tune/retune_h200_protocol.csv -o "$OUT/r/h200.csv" --journal "$OUT/r/tune.journal" \
  --reference-cache /tmp/moekit-refs --compare --no-progress > "$OUT/r/tune.txt" 2>&1
echo "# tune rc=$? $((SECONDS - t0))s"
grep -E "^shape|heuristic|speedup|timed:" "$OUT/r/tune.txt" | cut -c1-200 | tee -a "$OUT/r/summary.txt"
mkdir -p "$OUT/r/bench"
for turn in 1 2; do
  for p in "mixtral-8x7b 8" "deepseek-v3 256" "gpt-oss-120b 8"; do
    set -- $p
    timeout 100 "$B" bench --backend cuda --quant none --gate-up interleaved --no-baseline --sets 4 --reps 3 \
      --preset "$1" --tokens "$2" --csv "$OUT/r/bench/$1-$2-$turn.csv" > "$OUT/r/bench/$1-$2-$turn.txt" 2>&1
    echo "bench $1 T=$2 turn $turn: $(grep -E "^ +$2  moekit" "$OUT/r/bench/$1-$2-$turn.txt" | awk '{print $3, "hit", $6}')"
  done
done | tee -a "$OUT/r/summary.txt"
device_ctest_gpu r/ctest-gpu.txt -E "GraphReplays|TuneWorkerCuda|BenchCuda"
echo "# total $((SECONDS - DEVICE_START))s"
