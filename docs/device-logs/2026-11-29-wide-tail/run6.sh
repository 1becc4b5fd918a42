#!/usr/bin/env bash
# Step 43's hand-off, for the next session's first call ($1 = the commit; carry build/carry, `tar -xJf
# build/carry/deps.tar.xz` first). Not run in session 25 (its device time was spent). What step 43
# left unmeasured at its final code (b4d06dd's rule: the tall tails wide by default in step 42's
# window):
# 1. the full table (docs/benchmarks.md's protocol), then the same with --deterministic: the rule's
#    plans at GPT-OSS T=4096 and DeepSeek-V3 T=4096 against the CPU reference, and deterministic
#    mode's cost at every point since ecf75e2's last measurement (prediction: GPT-OSS T=4096 about
#    1950-2050 µs, 68-72% of the floor; the other points as in 79fc928's table within their spread;
#    deterministic mode level, nothing in the parts adds atomics);
# 2. wide against on at GPT-OSS T = 3584, 4096, 5664 and DeepSeek-V3 T=3072 a third time, now with v0
#    the rule (prediction: v1 `on` +1..+2% on average);
# 3. `ctest -L gpu` in the time left (the longest first; the rest of it ran at 2ec4e09).
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit gpu_tests
T0=$SECONDS
timeout 120 $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
  --gate-up interleaved --csv "$OUT/r/table.csv" --json "$OUT/r/table.json" > "$OUT/r/table.txt" 2>&1
echo "== table rc=$? ($((SECONDS - T0))s)"; grep -E "ceiling" "$OUT/r/table.txt"
T0=$SECONDS
timeout 120 $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
  --gate-up interleaved --deterministic --csv "$OUT/r/det.csv" > "$OUT/r/det.txt" 2>&1
echo "== deterministic table rc=$? ($((SECONDS - T0))s)"
on="gemm1.tall_tail=on;gemm2.tall_tail=on"
for pt in gpt-oss-120b:4096 gpt-oss-120b:3584 gpt-oss-120b:5664 deepseek-v3:3072; do
  device_ab "r/ab/${pt%%:*}-${pt#*:}" "${pt%%:*}" "${pt#*:}" "" "$on"
done
echo "# A/B done at $((SECONDS - DEVICE_START))s"
device_ctest_gpu r/ctest-gpu.txt
echo "# total $((SECONDS - DEVICE_START))s"
