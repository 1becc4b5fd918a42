#!/usr/bin/env bash
# Step 22, device call 1 ($1 = the commit): the cooperative tiles' empty warpgroups skip their MMAs
# (sm90_skip_empty_rows.cuh). Builds the commit and, beside it, the same tree with skip.patch reversed
# (the baseline); runs the sm_90a GEMM, stage-pipeline and decode tests (the restored GEMV refactor);
# then the prefill points on both binaries, two runs each in turns.
set -uo pipefail
COMMIT=$1
D=docs/device-logs/2026-11-26-skip-empty-rows
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
rm -rf /tmp/base && mkdir -p /tmp/base
tar --exclude=./build --exclude=./.deps --exclude=./third_party -cf - . | (cd /tmp/base && tar xf -)
ln -s "$PWD/.deps" /tmp/base/.deps && ln -s "$PWD/third_party" /tmp/base/third_party
(cd /tmp/base && patch -s -R -p1 < "$D/skip.patch") || { echo "reverse patch failed"; exit 1; }
SECONDS=0
scripts/device-build.sh "$COMMIT" "$OUT" moekit gpu_tests > "$OUT/build-new.out" 2>&1 &
(cd /tmp/base && scripts/device-build.sh "base-$COMMIT" "$OUT/base" moekit) > "$OUT/build-base.out" 2>&1 &
wait
cat "$OUT/build-new.out" "$OUT/build-base.out"; echo "# both builds ${SECONDS}s"
[ -x build/device/bin/moekit ] && [ -x /tmp/base/build/device/bin/moekit ] || exit 1
grep -c "C7518\|C7517" "$OUT/build.txt" "$OUT/base/build.txt"
mkdir -p "$OUT/r"
SECONDS=0
(cd build/device && timeout 300 ctest -L gpu -R "Sm90|MoeCuda|DecodeTokens|DecodeToken|DecodeLayer" -j 3 --output-on-failure) > "$OUT/r/ctest.txt" 2>&1
echo "$(grep -E 'tests passed|tests failed' "$OUT/r/ctest.txt") (${SECONDS}s)"; grep -E "\*\*\*|Failed|FAILED" "$OUT/r/ctest.txt" | head -10
SECONDS=0
for turn in 1 2; do
  for v in new base; do
    B=build/device/bin/moekit; [ $v = base ] && B=/tmp/base/build/device/bin/moekit
    timeout 150 $B bench --backend cuda --quant none --gate-up interleaved --tokens 1024,2048,4096,16384 --sets 2 --reps 5 \
      --no-baseline --csv "$OUT/r/ab-$v$turn.csv" > "$OUT/r/ab-$v$turn.txt" 2>&1
    echo "# $v$turn ${SECONDS}s"
  done
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, sys, collections, statistics
d = collections.defaultdict(lambda: collections.defaultdict(list))
for v in ("new", "base"):
    for t in (1, 2):
        try: rows = list(csv.DictReader(open(f"{sys.argv[1]}/ab-{v}{t}.csv")))
        except OSError: continue
        for r in rows:
            if r["method"] == "moekit": d[(r["preset"], int(r["tokens"]))][v].append((float(r["median_us"]), r["percent_of_floor"]))
for k in sorted(d):
    n = d[k]["new"]; b = d[k]["base"]
    if n and b:
        mn = statistics.mean(x for x, _ in n); mb = statistics.mean(x for x, _ in b)
        print(k[0], "T=%d" % k[1], "new", " ".join("%.1f (%s)" % x for x in n), "| base", " ".join("%.1f (%s)" % x for x in b), "| %+.1f%%" % (100 * (mn / mb - 1)))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
