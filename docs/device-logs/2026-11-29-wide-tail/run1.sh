#!/usr/bin/env bash
# Session 25, call 1 ($1 = the commit; carry build/carry, `tar -xJf build/carry/deps.tar.xz` first).
# 1. every gpu test at 166e264 (session 24 ran all 100 only at 4928b44, before the tall-tail rule,
#    and only the layer's and the GEMM's 33 at the rule's code).
# 2. where the time goes at the two weakest compute-bound table points, both at 256 rows an
#    expected expert where the tall tails lose (Qwen3-30B-A3B T=4096 50.9% of the floor, Mixtral
#    T=1024 62.8%): `moekit bench --stages`, one set.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit gpu_tests
for pt in "qwen3-30b-a3b 4096" "mixtral-8x7b 1024"; do
  set -- $pt
  timeout 60 "$B" bench --backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3 \
    --preset "$1" --tokens "$2" --stages > "$OUT/r/stages-$1-$2.txt" 2>&1 || echo "== stages $1 $2 rc=$?"
done
echo "# stages done at $((SECONDS - DEVICE_START))s"
device_ctest_gpu r/ctest-gpu.txt
echo "# total $((SECONDS - DEVICE_START))s"
