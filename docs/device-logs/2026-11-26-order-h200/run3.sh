#!/usr/bin/env bash
# Call 3 ($1 = the commit): is the claimed order a win wherever a GEMM runs the ping-pong tile
# without a cluster (sm90_m64n128k128_c1x1, lookahead 2)? Calls 1-2: GPT-OSS T=1024's gemm1 (that
# tile) -1.8% at every H and I; Qwen3 T=1024 (both GEMMs on it) -0.5%. (a) The default plans' other
# GEMMs on that tile, claimed only there; (b) both GEMMs forced onto it at other points. Fixed
# against claimed, two turns.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
PP="gemm1.tile=sm90_m64n128k128_c1x1;gemm2.tile=sm90_m64n128k128_c1x1;"
# name|preset|tokens|knobs before the orders|which GEMMs' order
POINTS="qwen3-dflt|qwen3-30b-a3b|1024||12
deepseek-dflt|deepseek-v3|512||12
gptoss-dflt-g2|gpt-oss-120b|2048||2
gptoss-dflt-g1|gpt-oss-120b|1024||1
qwen3-pp|qwen3-30b-a3b|256,512,2048,4096|$PP|12
deepseek-pp|deepseek-v3|256,1024,2048|$PP|12
gptoss-pp|gpt-oss-120b|256,512,4096|$PP|12
mixtral-pp|mixtral-8x7b|256,1024,4096|$PP|12"
for turn in 1 2; do
  while IFS='|' read -r name preset tokens knobs which; do
    for o in fixed claimed; do
      [ "$(left)" -lt 30 ] && break 3
      ch="$knobs"
      case $which in *1*) ch+="gemm1.order=$o;" ;; esac
      case $which in *2*) ch+="gemm2.order=$o;" ;; esac
      T0=$SECONDS
      timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --preset $preset --tokens $tokens --sets 2 --reps 5 \
        --no-baseline --choice "${ch%;}" --csv "$OUT/r/$name-$o$turn.csv" > "$OUT/r/$name-$o$turn.txt" 2>&1
      echo "# $name $o$turn rc=$? $((SECONDS - T0))s"
    done
  done <<< "$POINTS"
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, os, re, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1] + "/*-*[12].csv")):
    name, o = re.match(r"(.+)-(fixed|claimed)[12]\.csv", os.path.basename(f)).groups()
    for r in csv.DictReader(open(f)):
        if r["method"] == "moekit": d[(name, int(r["tokens"]))][o].append(float(r["median_us"]))
for k in sorted(d):
    f, c = d[k]["fixed"], d[k]["claimed"]
    ch = "%+.1f%%" % (100 * (min(c) / min(f) - 1)) if f and c else ""
    print("%-15s T=%-5d fixed %s claimed %s %s" % (k + (" ".join("%.1f" % x for x in f), " ".join("%.1f" % x for x in c), ch)))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
