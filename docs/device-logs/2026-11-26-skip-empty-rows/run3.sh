#!/usr/bin/env bash
# Step 22, device call 3 ($1 = the commit): why the skip is slower (call 2: +2..+16% at the prefill
# points). Three moekit builds side by side: the commit (skip), "mech" (the same code with every
# warpgroup active: the ring, its barrier and the branch, no skipping) and the baseline (skip.patch
# reversed); then the points that lost most, on each binary, two runs in turns.
set -uo pipefail
COMMIT=$1
D=docs/device-logs/2026-11-26-skip-empty-rows
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
for v in base mech; do
  rm -rf /tmp/$v && mkdir -p /tmp/$v
  tar --exclude=./build --exclude=./.deps --exclude=./third_party -cf - . | (cd /tmp/$v && tar xf -)
  ln -s "$PWD/.deps" /tmp/$v/.deps && ln -s "$PWD/third_party" /tmp/$v/third_party
done
(cd /tmp/base && patch -s -R -p1 < "$D/skip.patch") || { echo "reverse patch failed"; exit 1; }
sed -i 's/      active_ = rows > wg \* kRowsPerWarpGroup;/      active_ = rows >= 0;  \/\/ mech: never skip/' /tmp/mech/src/cuda/moe/sm90_skip_empty_rows.cuh
grep -c "mech: never skip" /tmp/mech/src/cuda/moe/sm90_skip_empty_rows.cuh || exit 1
scripts/device-build.sh "$COMMIT" "$OUT" moekit > "$OUT/build-skip.out" 2>&1 &
for v in base mech; do (cd /tmp/$v && scripts/device-build.sh "$v-$COMMIT" "/tmp/log-$v" moekit) > "$OUT/build-$v.out" 2>&1 & done
wait
cat "$OUT"/build-*.out; echo "# builds ${SECONDS}s"
mkdir -p "$OUT/r"
for turn in 1 2; do
  for v in skip mech base; do
    B=build/device/bin/moekit; [ $v != skip ] && B=/tmp/$v/build/device/bin/moekit
    for p in deepseek-v3:16384 mixtral-8x7b:4096 gpt-oss-120b:16384; do
      timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} --sets 2 --reps 5 \
        --no-baseline --csv "$OUT/r/$v$turn-${p%%:*}.csv" > "$OUT/r/$v$turn-${p%%:*}.txt" 2>&1
    done
    echo "# $v$turn at ${SECONDS}s"
  done
done
python3 - "$OUT/r" <<'PY' | tee "$OUT/r/summary.txt"
import csv, glob, os, sys, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/*.csv")):
    v = os.path.basename(f).split("-")[0][:-1]
    for r in csv.DictReader(open(f)):
        d[(r["preset"], r["tokens"], r["method"], v)].append(float(r["median_us"]))
for k in sorted(d): print(*k, " ".join("%.1f" % x for x in d[k]))
PY
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
