#!/usr/bin/env bash
# Session 34, third call: where the one-token kernel's warps stall, per SASS instruction (call 2's
# ncu put 35% of the stall cycles on instruction fetch, "no instruction", in a kernel of 343 KB of
# code whose routing runs once per CTA), at Qwen3-30B-A3B T=1 on main's build; the source page
# (executed instructions and stall samples per instruction) as CSV, and the report itself. Then, on
# an H200 only, what is owed there since session 29: the four rows of bench/tune/h200.csv against
# the heuristic, and the full table with its deterministic twin. First, every warp's trace stamps as
# CSV at Qwen3 and Mixtral T=1 (build/carry/moekit-trace.xz: main's moekit with trace-csv.patch,
# which is ../2026-12-07-handoff/trace.patch plus MOEKIT_DECODE_TRACE_CSV), to tell a spread between
# SMs from one inside an SM.
set -uo pipefail
source scripts/device-ab.sh
device_call_prebuilt "${LIMIT:-500}" "$1"
src() {  # PRESET
  [ "$(device_left)" -lt 60 ] && { echo "# skipped source $1"; return; }
  timeout $(($(device_left) - 30)) ncu --clock-control none --kernel-name-base demangled --kernel-name regex:decode_token_kernel \
    --launch-skip 3 --launch-count 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source no \
    --export "$OUT/r/src-$1" "$B" bench --backend cuda --quant none --preset "$1" --tokens 1 --sets 1 --reps 1 --iters 1 --warmup 3 \
    --no-baseline > "$OUT/r/src-$1-run.txt" 2>&1
  echo "== ncu source $1 rc=$?"
  ncu --import "$OUT/r/src-$1.ncu-rep" --page source --print-source sass --csv > "$OUT/r/src-$1-sass.csv" 2> "$OUT/r/src-$1-sass.err"
  echo "== source page rc=$? $(wc -l < "$OUT/r/src-$1-sass.csv") lines"; head -c 600 "$OUT/r/src-$1-sass.err"
  ncu --import "$OUT/r/src-$1.ncu-rep" --page details --print-details all > "$OUT/r/src-$1-details.txt" 2>&1
  grep -iE "stall|no instruction" "$OUT/r/src-$1-details.txt" | head -20
}
xz -dc build/carry/moekit-trace.xz > /tmp/moekit-trace && chmod +x /tmp/moekit-trace
for p in qwen3-30b-a3b mixtral-8x7b; do
  MOEKIT_DECODE_TRACE=1 MOEKIT_DECODE_TRACE_CSV="$OUT/r/warps-$p.csv" timeout 60 /tmp/moekit-trace bench --backend cuda --quant none \
    --preset $p --tokens 1 --sets 2 --reps 5 --no-baseline > "$OUT/r/trace-$p.txt" 2>&1
  echo "== trace $p rc=$?"; grep -E "^ +1 +moekit|gemm1 items done|gemm2 items done" "$OUT/r/trace-$p.txt"
done
src qwen3-30b-a3b
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ "$(device_left)" -gt 200 ]; then
  t0=$SECONDS
  timeout $(($(device_left) - 150)) "$B" tune --run-config bench/tune/h200.csv --compare --backend cuda --no-progress \
    --reference-cache /tmp/refs > "$OUT/r/tune-rows.txt" 2>&1
  echo "== tune --run-config bench/tune/h200.csv --compare rc=$? ($((SECONDS - t0))s)"
  device_tables
fi
echo "# total $((SECONDS - DEVICE_START))s"
