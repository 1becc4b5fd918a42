#!/usr/bin/env bash
# Call 3 ($1 = the commit, call 2's): were call 2's prefill losses of the sm_90a PDL launches
# (GPT-OSS and DeepSeek-V3 T=4096 +1.1..2.1%, Qwen3 T=16384 +1.1%) the launches or the order of the
# processes (MOEKIT_SM90_PDL=0 always ran first)? Three turns, the order alternating (PDL first in
# turns 1 and 3), with the SM clock and power sampled every 100 ms beside the runs.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((585 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r/build" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 100 > "$OUT/r/smi.csv" &
SMI=$!
for turn in 1 2 3; do
  order="1 0"; [ $turn = 2 ] && order="0 1"
  for p in gpt-oss-120b:1024,4096 deepseek-v3:4096 qwen3-30b-a3b:64,256,16384; do
    for v in $order; do
      [ "$(left)" -lt 30 ] && break 3
      T0=$SECONDS
      echo "$(date +%H:%M:%S.%N) start ${p%%:*} pdl=$v turn $turn" >> "$OUT/r/marks.txt"
      MOEKIT_SM90_PDL=$v timeout $(( $(left) - 15 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline \
        --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/ab-${p%%:*}-p$v-$turn.csv" > "$OUT/r/ab-${p%%:*}-p$v-$turn.txt" 2>&1
      echo "# ${p%%:*} pdl=$v turn $turn rc=$? $((SECONDS - T0))s"
    done
  done
done
kill $SMI
python3 docs/device-logs/2026-11-27-layer-prefetch/summarize.py "$OUT/r" | grep moekit | sed 's/ 1MB / pdl /' | tee "$OUT/r/summary.txt"
pack
