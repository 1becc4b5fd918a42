#!/usr/bin/env bash
# Step 21, device call 9 ($1 = the commit, with bench-pad.patch applied in the working tree): does
# where the weights land move the layer's time? Each point in its own process, after a pad of
# MOEKIT_BENCH_PAD_MB MiB allocated before the weights (0 = none), pads in turns, pad 0 first and last.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit || exit 1
mkdir -p "$OUT/r"
B=build/device/bin/moekit
SECONDS=0
for pad in 0 2 6 64 514 2050 0; do
  for spec in deepseek-v3:8 mixtral-8x7b:8 qwen3-30b-a3b:256; do
    p=${spec%%:*}; t=${spec#*:}
    MOEKIT_BENCH_PAD_MB=$pad timeout 90 $B bench --backend cuda --quant none --gate-up interleaved --preset $p --tokens $t --sets 2 --reps 5 --no-baseline \
      --csv "$OUT/r/pad-$p-$pad-$SECONDS.csv" > "$OUT/r/pad-$p-$pad-$SECONDS.txt" 2>&1
  done
  echo "# pad $pad (${SECONDS}s)"
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, sys, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/pad-*.csv"), key=lambda f: int(f.rsplit("-", 1)[1][:-4])):
    pad = f.rsplit("-", 2)[1]
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit": d[r["preset"] + " T=" + r["tokens"]].append("pad %s: %.1f" % (pad, float(r["median_us"])))
for k in sorted(d): print(k, " | ".join(d[k]))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
