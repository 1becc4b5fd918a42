#!/usr/bin/env bash
# Call 8 ($1 = the commit): where a short-K GEMM's time goes on the cooperative 128 x 256 tile
# (step 25 g's open question). ncu on the first gemm1 and gemm2 launch of one layer call: time, the
# tensor pipes' busy share of active cycles, SM active cycles, the SM clock during the kernel, DRAM
# bytes; Qwen3 T=16384 (gemm2 K = 768) and T=4096 against Mixtral T=16384 (K = 4096, 14336) and
# GPT-OSS T=16384 (K = 2880).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
NCU="ncu --clock-control none --kernel-name-base demangled --kernel-name regex:MoeGroupShape --launch-count 2 --csv --print-units base \
  --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed"
for p in qwen3-30b-a3b:16384 qwen3-30b-a3b:4096 mixtral-8x7b:16384 gpt-oss-120b:16384; do
  [ "$(left)" -lt 40 ] && break
  T0=$SECONDS
  timeout 120 $NCU $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} \
    --sets 1 --reps 1 --iters 1 --warmup 0 --no-baseline > "$OUT/r/ncu-${p%%:*}-${p##*:}.csv" 2> "$OUT/r/ncu-${p%%:*}-${p##*:}.err"
  echo "# ncu $p rc=$? $((SECONDS - T0))s"
done
python3 docs/device-logs/2026-11-26-h200-rules/summarize.py "$OUT/r" | tee "$OUT/r/summary.txt"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
