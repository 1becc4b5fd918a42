#!/usr/bin/env bash
# Step 40, call 2 ($1 = the commit; carry build/carry and run `tar -xJf build/carry/deps.tar.xz`
# first). Call 1 found the tuner and the bench still disagreeing under the same timing protocol, and
# why: the tuner's one routing draw hit other experts (Mixtral T=8: 7 against the bench's 8;
# DeepSeek-V3 T=256: 82 against 102). The worker now times on the bench's first four routing draws.
# 1. the GPU tests of the change; 2. `moekit tune --compare` at the same three points into a copy of
# h200.csv; 3. the bench with that table against without, two turns of two sets each.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-400}" "$1" moekit gpu_tests
device_ctest_gpu r/ctest-new.txt -R "GraphReplays|TuneWorkerCuda|BenchCuda"
bench() {  # PRESET T OUTNAME [env...]
  local p=$1 t=$2 n=$3
  shift 3
  if [ "$(device_left)" -lt 15 ]; then echo "$n: skipped (the call's time is spent)"; return; fi
  env "$@" timeout 100 "$B" bench --backend cuda --quant none --gate-up interleaved --no-baseline --sets 2 --reps 3 \
    --preset "$p" --tokens "$t" --csv "$OUT/r/bench/$n.csv" > "$OUT/r/bench/$n.txt" 2>&1
  echo "$n: $(grep -E "^ +$t  moekit" "$OUT/r/bench/$n.txt" | awk '{print $3, "hit", $6}')"
}
mkdir -p "$OUT/r/bench"
cp bench/tune/h200.csv "$OUT/r/h200.csv"
t0=$SECONDS
timeout 170 "$B" tune -i bench/tune/retune_h200_protocol.csv -o "$OUT/r/h200.csv" --journal "$OUT/r/tune.journal" \
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
echo "# total $((SECONDS - DEVICE_START))s"
