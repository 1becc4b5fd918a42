#!/usr/bin/env bash
# Call 11 ($1 = the commit): step 25 h's question by instruction. ncu's PC sampling (SourceCounters,
# SASS) on gemm2 of one layer call at Qwen3 T=16384 (tensor pipes 68% busy) and Mixtral T=16384
# (98%); the instructions holding the most stall samples, with the reason.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
for p in qwen3-30b-a3b:16384 mixtral-8x7b:16384; do
  T0=$SECONDS
  timeout 200 ncu --clock-control none --kernel-name-base demangled --kernel-name regex:MoeGroupShape --launch-skip 1 --launch-count 1 \
    --section SourceCounters --page source --print-source sass --csv \
    $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} --sets 1 --reps 1 --iters 1 --warmup 0 \
    --no-baseline > "$OUT/r/sass-${p%%:*}.csv" 2> "$OUT/r/sass-${p%%:*}.err"
  echo "# ncu $p rc=$? $((SECONDS - T0))s $(wc -l < "$OUT/r/sass-${p%%:*}.csv") lines"
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/sass-*.csv")):
    lines = open(f).read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"Address"') or l.startswith('"#"')), None)
    if start is None: print(os.path.basename(f), "no rows:", lines[:3]); continue
    rows = list(csv.DictReader(lines[start:]))
    cols = list(rows[0].keys()) if rows else []
    key = next((c for c in cols if "Sampling (All" in c), None) or next((c for c in cols if "Samples" in c), None)
    print("==", os.path.basename(f), len(rows), "instructions; columns:", "; ".join(cols)[:600])
    if not key: continue
    num = lambda v: float(str(v).replace(",", "") or 0)
    total = sum(num(r[key]) for r in rows)
    for r in sorted(rows, key=lambda r: -num(r[key]))[:25]:
        print("  %5.1f%%  %-10s %s" % (100 * num(r[key]) / max(total, 1), r.get("Address", ""), r.get("Source", "")[:90]))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
