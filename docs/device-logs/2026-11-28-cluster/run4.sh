#!/usr/bin/env bash
# Call 4 of step 38 ($1 = the commit; carry build/carry and run `tar -xJf build/carry/deps.tar.xz`
# first), at the rule with the large experts' cluster limit moved from 4 to 8 rows an expected expert
# (call 3 measured it; its logs were lost with the session that ran it, so this call measures again):
#   1. deterministic mode's cost at the new plans: the table's 28 points, --sets 1 --reps 5,
#      deterministic then default;
#   2. A/B, turns v0 v1 then v1 v0: v0 = the heuristic (the cluster on the large experts' GEMMs),
#      v1 = the tile without it (the old rule) at DeepSeek-V3 T = 96, 128 (6, 8 rows) and GPT-OSS-120B
#      T=192 (6 rows, gemm1);
#   3. every gpu test (ctest -L gpu -j 4, the longest first from the costs of an earlier run) in the
#      time left (LIMIT, default 585 s).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((${LIMIT:-585} - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests -- -DCMAKE_CUDA_FLAGS= || exit 1
B=build/device/bin/moekit
for m in det def; do
  flag=()
  [ $m = det ] && flag=(--deterministic)
  T0=$SECONDS
  timeout 70 $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 1 --reps 5 \
    --no-baseline --gate-up interleaved "${flag[@]}" --csv "$OUT/r/$m-1.csv" > "$OUT/r/$m-1.txt" 2>&1
  echo "== $m rc=$? $((SECONDS - T0))s"
done
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3"
ab() {  # preset tokens choice-of-v1
  local p=$1 t=$2 c=$3 d="$OUT/r/ab/$1-$2"
  mkdir -p "$d"
  for vt in 0:1 1:1 1:2 0:2; do
    local v=${vt%%:*} turn=${vt#*:} ch=()
    [ $v = 1 ] && ch=(--choice "$c")
    timeout 60 $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$d/ab-$p-v$v-$turn.csv" > "$d/ab-$p-v$v-$turn.txt" 2>&1 || echo "== $p $t v$v turn $turn rc=$?"
  done
  python3 docs/device-logs/2026-11-27-final/summarize.py "$d" 0 | grep moekit | tee -a "$OUT/r/summary.txt"
}
SINGLE="gemm1.tile=sm90_m64n128k128_c1x1;gemm2.tile=sm90_m64n128k128_c1x1"
ab deepseek-v3 96 "$SINGLE"
ab gpt-oss-120b 192 "gemm1.tile=sm90_m64n128k128_c1x1"
ab deepseek-v3 128 "$SINGLE"
echo "# A/B done $((SECONDS - START))s"
# Longest first: ctest reads earlier costs from Testing/Temporary/CTestCostData.txt ("name runs cost").
mkdir -p build/device/Testing/Temporary
grep -E "Test +#" docs/device-logs/2026-11-26-h200-rules/call5/r/ctest-gpu.txt |
  awk '{print $4, 1, $(NF-1)}' > build/device/Testing/Temporary/CTestCostData.txt
echo "MoeCuda.DeterministicModeIsBitwiseStableOnTheClusterTile 1 100" >> build/device/Testing/Temporary/CTestCostData.txt
echo "---" >> build/device/Testing/Temporary/CTestCostData.txt
T0=$SECONDS
timeout $(($(left) - 3)) ctest --test-dir build/device -L gpu -j 4 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest -L gpu rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout|Total Test" "$OUT/r/ctest-gpu.txt" | head -20
echo "# total $((SECONDS - START))s"
