#!/usr/bin/env bash
# Call 8 ($1 = the commit, branch exp/gather: gather-mainloop.patch applied): why the gathered gemm1
# of call 7 is 38-45% slower. ncu on the first gemm1 launch of one layer call at Qwen3 T=4096,
# gemm1.gather off and on: time, tensor pipes' busy share, L2 and DRAM traffic; then PC sampling
# (SourceCounters, SASS) of the gathered gemm1: where its warps' samples sit.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r/build" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
RUN="bench --backend cuda --quant none --gate-up interleaved --preset qwen3-30b-a3b --tokens 4096 --sets 1 --reps 1 --iters 1 --warmup 0 --no-baseline"
for v in off on; do
  T0=$SECONDS
  timeout 120 ncu --clock-control none --kernel-name-base demangled --kernel-name regex:MoeGroupShape --launch-count 1 --csv --print-units base \
    --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,lts__t_bytes.sum,dram__bytes_read.sum,smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum \
    $B $RUN --choice "gemm1.gather=$v" > "$OUT/r/ncu-$v.csv" 2> "$OUT/r/ncu-$v.err"
  echo "# ncu $v rc=$? $((SECONDS - T0))s"; grep -E "gpu__time|hmma|lts__t_bytes|dram__bytes|inst_executed|ldgsts" "$OUT/r/ncu-$v.csv" | awk -F'","' '{print $(NF-2), $NF}' | head -8
done
T0=$SECONDS
timeout 200 ncu --clock-control none --kernel-name-base demangled --kernel-name regex:MoeGroupShape --launch-count 1 \
  --section SourceCounters --page source --print-source sass --csv $B $RUN --choice "gemm1.gather=on" > "$OUT/r/sass-gather.csv" 2> "$OUT/r/sass-gather.err"
echo "# ncu sass rc=$? $((SECONDS - T0))s"
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, sys
lines = open(sys.argv[1] + "/sass-gather.csv").read().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith('"Address"') or l.startswith('"#"')), None)
if start is None: print("no rows:", lines[:3]); sys.exit()
rows = list(csv.DictReader(lines[start:]))
cols = list(rows[0].keys())
key = next((c for c in cols if "Sampling (All" in c), None) or next((c for c in cols if "Samples" in c), None)
num = lambda v: float(str(v).replace(",", "") or 0)
total = sum(num(r[key]) for r in rows)
print(len(rows), "instructions;", key)
for r in sorted(rows, key=lambda r: -num(r[key]))[:30]:
    print("  %5.1f%%  %-10s %s" % (100 * num(r[key]) / max(total, 1), r.get("Address", ""), r.get("Source", "")[:100]))
PY
pack
