#!/usr/bin/env bash
# Call 3 of step 38 ($1 = the commit; carry build/carry and run `tar -xJf build/carry/deps.tar.xz`
# first), at the rule call 2 checked:
#   1. A/B, turns v0 v1 then v1 v0, where call 2 left a question:
#        DeepSeek-V3 T = 96, 128 and GPT-OSS-120B T = 192, 256 (6 and 8 rows an expected expert; call 2
#        found the cluster 0.6% faster at 8): v1 = the cluster on the large experts' GEMMs;
#        Mixtral T = 208, 248 (52, 62 rows; call 1 found the fixed order without the overlap 2.1%
#        faster at 248): v1 = gemm1.order=fixed;gemm2.order=fixed;gemm2.overlap=off;
#   2. deterministic mode's cost at the new plans: the table's 28 points, --sets 1 --reps 5,
#      deterministic then default;
#   3. every gpu test (ctest -L gpu) in the time left (LIMIT, default 570 s).
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
BOTH="gemm1.tile=sm90_m64n128k128_c1x2;gemm2.tile=sm90_m64n128k128_c1x2"
ab deepseek-v3 96 "$BOTH"
ab deepseek-v3 128 "$BOTH"
ab gpt-oss-120b 192 "gemm1.tile=sm90_m64n128k128_c1x2"
ab gpt-oss-120b 256 "gemm1.tile=sm90_m64n128k128_c1x2"
FIXED="gemm1.order=fixed;gemm2.order=fixed;gemm2.overlap=off"
ab mixtral-8x7b 208 "$FIXED"
ab mixtral-8x7b 248 "$FIXED"
echo "# A/B done $((SECONDS - START))s"
for mt in det:1 def:1; do
  m=${mt%%:*} turn=${mt#*:} flag=()
  [ $m = det ] && flag=(--deterministic)
  T0=$SECONDS
  timeout 70 $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 1 --reps 5 \
    --no-baseline --gate-up interleaved "${flag[@]}" --csv "$OUT/r/$m-$turn.csv" > "$OUT/r/$m-$turn.txt" 2>&1
  echo "== $m turn $turn rc=$? $((SECONDS - T0))s"
done
pack ab
T0=$SECONDS
timeout $(($(left) - 5)) ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest -L gpu rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-gpu.txt" | head -20
echo "# total $((SECONDS - START))s"
pack rest
