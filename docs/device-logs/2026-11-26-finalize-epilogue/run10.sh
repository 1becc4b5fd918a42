#!/usr/bin/env bash
# Step 20, device call 10 ($1 = the commit): every sm_90a tile forced on both GEMMs against the
# heuristic, with stage times, at the middle and prefill points whose rules were set on H100s (steps
# 14-19): which tile each GEMM wants on this GPU. One set of 5 samples per point.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
scripts/device-build.sh "$COMMIT" "$OUT" moekit || exit 1
mkdir -p "$OUT/r"
B=build/device/bin/moekit
SECONDS=0
for tile in heuristic sm90_m64n128k128_c1x1 sm90_m64n128k128_c1x2 sm90_m128n128k128_c1x1 sm90_m128n256k64_c1x1 sm90_m128n256k64_c1x2; do
  extra=(); [ $tile != heuristic ] && extra=(--choice "gemm1.tile=$tile;gemm2.tile=$tile")
  for spec in qwen3-30b-a3b:256,2048,4096 mixtral-8x7b:256,512,1024 deepseek-v3:512,1024,2048 gpt-oss-120b:512,4096; do
    p=${spec%%:*}; t=${spec#*:}
    timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --preset $p --tokens $t --sets 1 --reps 5 --no-baseline --stages \
      "${extra[@]}" --csv "$OUT/r/sweep-$p-$tile.csv" > "$OUT/r/sweep-$p-$tile.txt" 2>&1
  done
  echo "# $tile done (${SECONDS}s)"
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, sys, collections
d = collections.defaultdict(dict)
for f in glob.glob(sys.argv[1] + "/sweep-*.csv"):
    tile = f.rsplit("-", 1)[1][:-4]
    for r in csv.DictReader(open(f)):
        k = (r["preset"], int(r["tokens"]))
        m = r["method"]
        if m == "moekit": d[k][(tile, "layer")] = float(r["median_us"])
        elif "gemm1" in m: d[k][(tile, "g1")] = float(r["median_us"])
        elif "gemm2" in m: d[k][(tile, "g2")] = float(r["median_us"])
tiles = ["heuristic", "sm90_m64n128k128_c1x1", "sm90_m64n128k128_c1x2", "sm90_m128n128k128_c1x1", "sm90_m128n256k64_c1x1", "sm90_m128n256k64_c1x2"]
print("point | " + " | ".join(t.replace("sm90_", "") for t in tiles) + "   (layer / gemm1 / gemm2 us)")
for k in sorted(d):
    print(f"{k[0]} T={k[1]} | " + " | ".join(f"{d[k].get((t,'layer'),0):.0f}/{d[k].get((t,'g1'),0):.0f}/{d[k].get((t,'g2'),0):.0f}" for t in tiles))
PY
echo "# sweep ${SECONDS}s"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
