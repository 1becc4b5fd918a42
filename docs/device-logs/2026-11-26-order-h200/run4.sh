#!/usr/bin/env bash
# Call 4 ($1 = the commit): which GEMM gains or loses from the claimed order where call 3 saw it win
# (one M tile per expert: DeepSeek-V3 T=256, GPT-OSS T=512, 1024, Qwen3 T=512, 1024) and lose
# (DeepSeek-V3 T=512, Mixtral T=256): each step timed alone (--stages), both fixed, gemm1 claimed,
# gemm2 claimed; two turns.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
PP="gemm1.tile=sm90_m64n128k128_c1x1;gemm2.tile=sm90_m64n128k128_c1x1;"
POINTS="deepseek-pp|deepseek-v3|256|$PP
deepseek-dflt|deepseek-v3|512|
gptoss-pp|gpt-oss-120b|512,1024|$PP
qwen3-pp|qwen3-30b-a3b|512|$PP
qwen3-dflt|qwen3-30b-a3b|1024|
mixtral-pp|mixtral-8x7b|256|$PP"
for turn in 1 2; do
  while IFS='|' read -r name preset tokens knobs; do
    for o in fixed g1 g2; do
      [ "$(left)" -lt 30 ] && break 3
      case $o in fixed) ch="gemm1.order=fixed;gemm2.order=fixed" ;; g1) ch="gemm1.order=claimed;gemm2.order=fixed" ;;
                  g2) ch="gemm1.order=fixed;gemm2.order=claimed" ;; esac
      T0=$SECONDS
      timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --preset $preset --tokens $tokens --sets 2 --reps 5 \
        --stages --no-baseline --choice "$knobs$ch" --csv "$OUT/r/$name-$o$turn.csv" > "$OUT/r/$name-$o$turn.txt" 2>&1
      echo "# $name $o$turn rc=$? $((SECONDS - T0))s"
    done
  done <<< "$POINTS"
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, os, re, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + "/*-*[12].csv")):
    name, o = re.match(r"(.+)-(fixed|g1|g2)[12]\.csv", os.path.basename(f)).groups()
    for r in csv.DictReader(open(f)):
        m = r["method"].strip()
        if m == "moekit" or "gemm" in m: d[(name, int(r["tokens"]), m)][o].append(float(r["median_us"]))
for k in sorted(d):
    f = d[k]["fixed"]
    line = "%-13s T=%-5d %-22s fixed %s" % (k + (" ".join("%.1f" % x for x in f),))
    for o in ("g1", "g2"):
        v = d[k][o]
        if v and f: line += "  %s %s (%+.1f%%)" % (o, " ".join("%.1f" % x for x in v), 100 * (min(v) / min(f) - 1))
    print(line)
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
