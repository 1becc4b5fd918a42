#!/usr/bin/env bash
# Call 1 ($1 = the commit; the library's src and tests are b939985's): no kernel change, so no
# gpu tests (call 4 of docs/device-logs/2026-11-27-half-tiles/ ran them on the same src and tests).
# (1) Between the table's points: every preset at 23 token counts the table skips, one set of three
# samples each (one process per preset, so a timeout keeps the finished presets). (2) Deterministic
# mode's cost at the table's points: --deterministic against the default, in turns, same protocol.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((585 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3"
SCAN=2,3,4,5,6,7,12,16,24,32,48,96,128,192,384,512,768,1536,2048,3072,6144,8192,12288
for p in qwen3-30b-a3b gpt-oss-120b mixtral-8x7b deepseek-v3; do
  T0=$SECONDS
  timeout $(($(left) - 200)) $B bench $COMMON --preset $p --tokens $SCAN --csv "$OUT/r/scan-$p.csv" > "$OUT/r/scan-$p.txt" 2>&1
  echo "== scan $p rc=$? ($((SECONDS - T0))s)"
done
TABLE=1,8,64,256,1024,4096,16384
for turn in 1 2; do
  for mode in det def; do
    flag=""; [ $mode = det ] && flag=--deterministic
    T0=$SECONDS
    timeout $(($(left) - 10)) $B bench $COMMON $flag --tokens $TABLE --csv "$OUT/r/$mode-$turn.csv" > "$OUT/r/$mode-$turn.txt" 2>&1
    echo "== $mode turn $turn rc=$? ($((SECONDS - T0))s)"
  done
done
grep -h "ceiling" "$OUT/r/scan-qwen3-30b-a3b.txt" | head -3
pack
