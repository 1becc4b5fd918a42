#!/usr/bin/env bash
# Session 25 (step 43), call 5 ($1 = the commit; carry build/carry): the rule (the tails wide by
# default in step 42's window) on the GPU as the default plan, on the machine call 4 left warm: the
# plan moekit explain prints, one bench turn at GPT-OSS T=4096 and DeepSeek-V3 T=4096 (deterministic),
# and the layer's tall-tail and determinism tests.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-170}" "$1" moekit test_moe_cuda
"$B" explain --preset gpt-oss-120b --quant none -T 4096 > "$OUT/r/explain-gpt-oss-4096.txt" 2>&1
grep -E "tall_tail" "$OUT/r/explain-gpt-oss-4096.txt"
timeout 40 "$B" bench --backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3 --preset gpt-oss-120b --tokens 4096 --refcheck > "$OUT/r/bench-gpt-oss-4096.txt" 2>&1
grep -E "^ +4096 " "$OUT/r/bench-gpt-oss-4096.txt"
timeout 60 "$B" bench --backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3 --preset deepseek-v3 --tokens 4096 --refcheck --deterministic > "$OUT/r/bench-deepseek-4096-det.txt" 2>&1
grep -E "^ +4096 " "$OUT/r/bench-deepseek-4096-det.txt"
device_ctest_gpu r/ctest-layer.txt -R "MoeCuda.TallTails|MoeCuda.Deterministic"
echo "# total $((SECONDS - DEVICE_START))s"
