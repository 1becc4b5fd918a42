#!/usr/bin/env bash
# Call 2 ($1 = the commit). Call 1 (H100): on the cooperative 128 x 256 tile claims won at GPT-OSS
# T=4096 (about one M tile an expert) and lost at 2-3 M tiles (Mixtral T=1024, DeepSeek-V3 T=4096,
# Qwen3 T=4096). Here: both GEMMs fixed against both claimed on the heuristic's own tiles (the
# cooperative tile at every point but GPT-OSS T=2048's gemm2) at 0.75 to 2 M tiles an expert and
# beyond, each GEMM timed alone (--stages), two turns. On an H200 it runs call 1 first.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [[ "$GPU" == *H200* ]]; then exec bash docs/device-logs/2026-11-26-h200-rules/run1.sh "$COMMIT"; fi
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
for turn in 1 2; do
  for p in qwen3-30b-a3b:1536,2048,3072,8192 mixtral-8x7b:384,512,768,2048 gpt-oss-120b:2048,3072,6144,8192 deepseek-v3:1024,1536,2048,3072; do
    for o in fixed claimed; do
      [ "$(left)" -lt 40 ] && break 3
      T0=$SECONDS
      timeout $(( $(left) - 10 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 5 --no-baseline --stages \
        --preset ${p%%:*} --tokens ${p#*:} --choice "gemm1.order=$o;gemm2.order=$o" \
        --csv "$OUT/r/colm-${p%%:*}-$o$turn.csv" > "$OUT/r/colm-${p%%:*}-$o$turn.txt" 2>&1
      echo "# ${p%%:*} $o$turn rc=$? $((SECONDS - T0))s"
    done
  done
done
python3 docs/device-logs/2026-11-26-h200-rules/summarize.py "$OUT/r" | tee "$OUT/r/summary.txt"
python3 - "$OUT/r" <<'PY' | tee -a "$OUT/r/summary.txt"
import csv, glob, sys
seen = set()
for f in sorted(glob.glob(sys.argv[1] + "/colm-*fixed1.csv")):
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit" and (r["preset"], r["tokens"]) not in seen:
            seen.add((r["preset"], r["tokens"]))
            print("rows an expert %-14s T=%-6s %.0f (%s experts)" % (r["preset"], r["tokens"], float(r["routed_rows"]) / float(r["experts_hit"]), r["experts_hit"]))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
