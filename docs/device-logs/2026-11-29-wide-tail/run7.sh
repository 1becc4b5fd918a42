#!/usr/bin/env bash
# Call 6 (run6.sh) ran in full, but the command around it packed an empty r.tgz over the one
# device_pack had made at exit (`tar -czf r.tgz r` after the trap had removed r/), so only its printed
# lines came back (call6/output-tail.txt: the A/B summary; the tables and the ctest log were lost).
# This call repeats what was lost, at the same commit ($1): the full table, its deterministic twin,
# then `ctest -L gpu` in the time left (the longest first). Run it as the README says, nothing after.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-585}" "$1" moekit gpu_tests
for mode in table det; do
  T0=$SECONDS
  extra=(); [ $mode = det ] && extra=(--deterministic)
  timeout 120 $B bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 --no-baseline --refcheck \
    --gate-up interleaved "${extra[@]}" --csv "$OUT/r/$mode.csv" --json "$OUT/r/$mode.json" > "$OUT/r/$mode.txt" 2>&1
  echo "== $mode rc=$? ($((SECONDS - T0))s)"
done
grep -E "ceiling" "$OUT/r/table.txt"
device_ctest_gpu r/ctest-gpu.txt
echo "# total $((SECONDS - DEVICE_START))s"
