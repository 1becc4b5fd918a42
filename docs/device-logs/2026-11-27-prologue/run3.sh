#!/usr/bin/env bash
# Call 3: no build. cuBLAS (torch.bmm) at the prefill points again, first as in call 2 (10 timed
# after 3 warm-ups) and then after 400 ms of the same GEMMs back to back (the clock under the power
# limit, as the bench's replays see it), with the SM clock and power sampled every 100 ms; the
# cuBLAS kernels' names.
set -uo pipefail
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
(while true; do echo "$(date +%s.%N | cut -c1-14) $(nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader)" >> "$OUT/r/clocks.txt"; sleep 0.1; done) &
MON=$!
P=qwen3-30b-a3b:4096,qwen3-30b-a3b:16384,gpt-oss-120b:16384,deepseek-v3:16384,mixtral-8x7b:4096,mixtral-8x7b:16384
for s in 0 400; do
  echo "== sustain ${s} ms  $(date +%s.%N | cut -c1-14)"
  SUSTAIN_MS=$s POINTS=$P KERNELS=$([ $s = 0 ] && echo 1) timeout 200 python3 docs/device-logs/2026-11-27-prologue/batched_ceiling.py 3093e9 804e12 \
    "$OUT/r/batched-sustain$s.json" 2>&1 | tee "$OUT/r/batched-sustain$s.txt"
done
kill $MON
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
