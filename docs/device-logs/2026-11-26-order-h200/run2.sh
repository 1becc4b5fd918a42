#!/usr/bin/env bash
# Call 2 ($1 = the commit): which shape property makes the claimed tile order win at GPT-OSS and
# lose elsewhere (docs/perf-notes.md step 24)? GPT-OSS's layer with H and I changed one at a time
# (2880 = 22.5 x 128; 2944 = 23 x 128; 2816 = 11 x 256; 3072 = 12 x 256; 2048), both GEMMs fixed
# against both claimed, two turns, T = 1024, 4096.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
for turn in 1 2; do
  for hi in 2880:2880 2944:2944 2816:2816 3072:3072 2880:2048 2048:2880 3072:2880 2880:3072; do
    for c in fixed claimed; do
      [ "$(left)" -lt 30 ] && break 3
      T0=$SECONDS
      timeout 40 $B bench --backend cuda --quant none --gate-up interleaved --preset gpt-oss-120b --hidden ${hi%%:*} \
        --intermediate ${hi##*:} --tokens 1024,4096 --sets 2 --reps 5 --no-baseline \
        --choice "gemm1.order=$c;gemm2.order=$c" --csv "$OUT/r/h${hi%%:*}-i${hi##*:}-$c$turn.csv" > "$OUT/r/h${hi%%:*}-i${hi##*:}-$c$turn.txt" 2>&1
      echo "# H=${hi%%:*} I=${hi##*:} $c$turn rc=$? $((SECONDS - T0))s"
    done
  done
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, os, re, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + "/h*-*[12].csv")):
    h, i, c = re.match(r"h(\d+)-i(\d+)-(fixed|claimed)", os.path.basename(f)).groups()
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit": d[(int(h), int(i), int(r["tokens"]))][c].append(float(r["median_us"]))
for k in sorted(d):
    f, c = d[k]["fixed"], d[k]["claimed"]
    ch = "%+.1f%%" % (100 * (min(c) / min(f) - 1)) if f and c else ""
    print("H=%d I=%d T=%d fixed %s claimed %s %s" % (k + (" ".join("%.1f" % x for x in f), " ".join("%.1f" % x for x in c), ch)))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
