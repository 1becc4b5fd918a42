#!/usr/bin/env bash
# Step 22, device call 2 ($1 = the commit): the skip with its ring in the mainloop's shared storage
# (call 1's static shared array moved the dynamic shared memory off its alignment). Builds the commit
# and the baseline (skip.patch reversed) side by side; the prefill points on both; the full table on
# the commit; every gpu test; a second A/B turn if time is left. Every step is bounded so that the
# call ends inside the device's 600 s.
set -uo pipefail
COMMIT=$1
D=docs/device-logs/2026-11-26-skip-empty-rows
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
rm -rf /tmp/base && mkdir -p /tmp/base
tar --exclude=./build --exclude=./.deps --exclude=./third_party -cf - . | (cd /tmp/base && tar xf -)
ln -s "$PWD/.deps" /tmp/base/.deps && ln -s "$PWD/third_party" /tmp/base/third_party
(cd /tmp/base && patch -s -R -p1 < "$D/skip.patch") || { echo "reverse patch failed"; exit 1; }
scripts/device-build.sh "$COMMIT" "$OUT" moekit gpu_tests > "$OUT/build-new.out" 2>&1 &
(cd /tmp/base && scripts/device-build.sh "base-$COMMIT" "$OUT/base" moekit) > "$OUT/build-base.out" 2>&1 &
wait
cat "$OUT/build-new.out" "$OUT/build-base.out"; echo "# both builds ${SECONDS}s"
[ -x build/device/bin/moekit ] && [ -x /tmp/base/build/device/bin/moekit ] || exit 1
echo "# ptxas C7517/C7518 lines (new, base): $(grep -c 'C7518\|C7517' "$OUT/build.txt") $(grep -c 'C7518\|C7517' "$OUT/base/build.txt")"
mkdir -p "$OUT/r"
ab() {  # $1 = turn
  for v in new base; do
    B=build/device/bin/moekit; [ $v = base ] && B=/tmp/base/build/device/bin/moekit
    timeout 100 $B bench --backend cuda --quant none --gate-up interleaved --tokens 1024,2048,4096,16384 --sets 2 --reps 5 \
      --no-baseline --csv "$OUT/r/ab-$v$1.csv" > "$OUT/r/ab-$v$1.txt" 2>&1
    echo "# ab $v$1 rc=$? at ${SECONDS}s"
  done
}
ab 1
timeout 150 build/device/bin/moekit bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline \
  --refcheck --gate-up interleaved --csv "$OUT/r/table.csv" --json "$OUT/r/table.json" > "$OUT/r/table.txt" 2>&1
echo "# table rc=$? at ${SECONDS}s"
(cd build/device && timeout $((560 - SECONDS)) ctest -L gpu -j 3 --output-on-failure) > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? at ${SECONDS}s: $(grep -E 'tests passed|tests failed' "$OUT/r/ctest-gpu.txt")"
grep -E "\*\*\*|FAILED  \]" "$OUT/r/ctest-gpu.txt" | head -10
[ $SECONDS -lt 470 ] && ab 2
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
