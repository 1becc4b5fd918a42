#!/usr/bin/env bash
# Step 47 c: gemm1's window at 124-180 (b7a1afa) built and checked, and the full table at it.
# $1 = the commit; carry build/carry and `tar -xJf build/carry/deps.tar.xz` first; give the device
# tool this script alone.
# 1. `moekit explain` at gemm1's new ends (T = 492, 496, 720, 724).
# 2. The rule (v0) against tails off on both GEMMs (v1) at T = 496 and 720, where the widening acts
#    (predicted from call 2: -5..-8%).
# 3. The full table and its deterministic twin (the tables' protocol, run7.sh of
#    2026-11-29-wide-tail): no table point changed plan since e527833, so every point is predicted
#    within that table's run-to-run spread (and the machine's read bandwidth) of it.
# 4. Mixtral-8x7B from T=464 to 768 in steps of 16 at the default plans, one bench run, for the
#    curve the windows smooth.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-500}" "$1" moekit
for t in 492 496 720 724; do
  echo "T=$t $($B explain --arch sm90 --preset mixtral-8x7b --tokens $t --gate-up interleaved | grep -E 'gemm[12]\.tall_tail' | awk '{printf "%s=%s ", $1, $2}')"
done
off="gemm1.tall_tail=off;gemm2.tall_tail=off"
device_ab r/ab/mixtral-8x7b-496 mixtral-8x7b 496 "" "$off"
device_ab r/ab/mixtral-8x7b-720 mixtral-8x7b 720 "" "$off"
for mode in table det; do
  [ "$(device_left)" -lt 130 ] && { echo "# skipped $mode"; continue; }
  T0=$SECONDS
  extra=(); [ $mode = det ] && extra=(--deterministic)
  timeout 120 $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
    --gate-up interleaved "${extra[@]}" --csv "$OUT/r/$mode.csv" --json "$OUT/r/$mode.json" > "$OUT/r/$mode.txt" 2>&1
  echo "== $mode rc=$? ($((SECONDS - T0))s)"
done
grep -E "ceiling" "$OUT/r/table.txt"
if [ "$(device_left)" -gt 60 ]; then
  timeout $(($(device_left) - 10)) $B bench --backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3 \
    --preset mixtral-8x7b --tokens $(seq -s, 464 16 768) --csv "$OUT/r/mixtral-sweep.csv" > "$OUT/r/mixtral-sweep.txt" 2>&1
  echo "== sweep rc=$?"
fi
echo "# total $((SECONDS - DEVICE_START))s"
