#!/usr/bin/env bash
# Step 41, call 2 ($1 = the commit; carry build/carry and run `tar -xJf build/carry/deps.tar.xz`
# first). Call 1: both GEMMs in parts lost 9-13% at Qwen3 T = 2048, 4096 and Mixtral T = 512, 1024
# and won 5.8% at GPT-OSS T=4096, where gemm1 alone in parts won 9.0% (gemm2 in parts costs). So:
# gemm1 alone in parts (v1) and gemm2 alone (v2, GPT-OSS) against the heuristic, at 112 and 128
# rows an expected expert on every preset whose gemm1 runs the 128 x 256 tile there; then each step
# alone (--stages) at GPT-OSS T=4096 with and without.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-470}" "$1" moekit
g1="gemm1.tall_tail=on"
device_ab r/ab/gpt-oss gpt-oss-120b 3584,4096 "" "$g1" "gemm2.tall_tail=on"
device_ab r/ab/qwen3 qwen3-30b-a3b 1792,2048,4096 "" "$g1"
device_ab r/ab/mixtral mixtral-8x7b 448,512,1024 "" "$g1"
device_ab r/ab/deepseek deepseek-v3 4096 "" "$g1"
mkdir -p "$OUT/r/stages"
for v in off on; do
  timeout 120 "$B" bench --backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3 --stages \
    --preset gpt-oss-120b --tokens 4096 --choice "gemm1.tall_tail=$v" --csv "$OUT/r/stages/gpt-oss-4096-$v.csv" \
    > "$OUT/r/stages/gpt-oss-4096-$v.txt" 2>&1
  echo "stages gemm1.tall_tail=$v:"; grep -E "^ +4096 " "$OUT/r/stages/gpt-oss-4096-$v.txt" | cut -c1-120
done | tee -a "$OUT/r/summary.txt"
echo "# total $((SECONDS - DEVICE_START))s"
