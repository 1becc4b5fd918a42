#!/usr/bin/env bash
# Call 2 of step 38 ($1 = the commit; carry build/carry and run `tar -xJf build/carry/deps.tar.xz`
# first): the rule call 1 chose (the 64 x 128 tile in its 1 x 2 cluster for experts of 12M elements
# or more up to 4 rows an expected expert, 48M or more up to 48 rows), checked, then the table:
#   1. A/B, turns v0 v1 v2 then v2 v1 v0, at the rule's edges:
#        v0  the heuristic (the new rule)
#        v1  both GEMMs on the 64 x 128 tile without a cluster (the tiles before the rule; order and
#            overlap by their rules)
#        v2  both GEMMs on the 64 x 128 tile in its 1 x 2 cluster
#   2. the full table (docs/benchmarks.md's protocol: --sets 2 --reps 5 --refcheck, W13 interleaved);
#   3. the layer's gpu tests (MoeCuda.*: the heuristic's plans, now with the cluster) in the time left
#      (LIMIT, default 570 s).
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
VARIANTS=(""
  "gemm1.tile=sm90_m64n128k128_c1x1;gemm2.tile=sm90_m64n128k128_c1x1"
  "gemm1.tile=sm90_m64n128k128_c1x2;gemm2.tile=sm90_m64n128k128_c1x2")
for pt in ${POINTS:-mixtral-8x7b:32,64,128,160,192 deepseek-v3:8,64,128 gpt-oss-120b:16,64,128,256}; do
  p=${pt%%:*} t=${pt#*:} d="$OUT/r/ab/$p"
  mkdir -p "$d"
  for vt in 0:1 1:1 2:1 2:2 1:2 0:2; do
    v=${vt%%:*} turn=${vt#*:} ch=()
    [ -n "${VARIANTS[$v]}" ] && ch=(--choice "${VARIANTS[$v]}")
    timeout 100 $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$d/ab-$p-v$v-$turn.csv" > "$d/ab-$p-v$v-$turn.txt" 2>&1 \
      || echo "== $p v$v turn $turn rc=$?"
  done
  python3 docs/device-logs/2026-11-27-final/summarize.py "$d" 0 | grep moekit | tee -a "$OUT/r/summary.txt"
done
for pt in mixtral-8x7b:64 deepseek-v3:64 gpt-oss-120b:128; do
  $B explain --preset ${pt%%:*} --quant none --gate-up interleaved -T ${pt#*:} > "$OUT/r/explain-${pt%%:*}-T${pt#*:}.txt" 2>&1
done
echo "# A/B done $((SECONDS - START))s"
pack ab
T0=$SECONDS
timeout $(($(left) - 60)) $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
  --gate-up interleaved --csv "$OUT/r/table.csv" --json "$OUT/r/table.json" > "$OUT/r/table.txt" 2>&1
echo "== table rc=$? ($((SECONDS - T0))s)"; grep -E "ceiling" "$OUT/r/table.txt"
python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r" > "$OUT/r/table-summary.txt" 2>&1; head -40 "$OUT/r/table-summary.txt"
pack table
T0=$SECONDS
timeout $(($(left) - 5)) ctest --test-dir build/device -L gpu -R "MoeCuda" -j 3 --output-on-failure > "$OUT/r/ctest-moe.txt" 2>&1
echo "# ctest (MoeCuda) rc=$? $((SECONDS - T0))s"; grep -E "tests passed|tests failed|Failed|Not Run|Timeout" "$OUT/r/ctest-moe.txt" | head -20
echo "# total $((SECONDS - START))s"
pack rest
