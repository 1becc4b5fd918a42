#!/usr/bin/env bash
# Call 2 ($1 = the commit): call 1 again without its tests, the base build configured with an empty
# CMAKE_CUDA_FLAGS (call 1 left the row flag in the CMake cache, so its "base" was the row build too).
# Two builds of one commit: the TMA-store epilogue for gemm2 (base) and the register epilogue (row,
# -DMOEKIT_SM90_ROW_EPILOGUE=1); then both binaries in turns, each stage timed, at the prefill and
# middle points of every preset. (Comment tidied after the run; the commands are as run.)
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r" /tmp/bins
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r/row" moekit -- -DCMAKE_CUDA_FLAGS=-DMOEKIT_SM90_ROW_EPILOGUE=1 || { pack; exit 1; }
cp build/device/bin/moekit /tmp/bins/row
cuobjdump -res-usage build/device/bin/moekit 2>/dev/null | grep -A1 "MoeGroupShape" | grep -o "REG:[0-9]* STACK:[0-9]* SHARED:[0-9]* LOCAL:[0-9]*" | sort | uniq -c > "$OUT/r/res-usage-row.txt"
scripts/device-build.sh "$COMMIT" "$OUT/r/base" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
cp build/device/bin/moekit /tmp/bins/base
for turn in 1 2; do
  for p in qwen3-30b-a3b:256,1024,4096,16384 gpt-oss-120b:1024,4096,16384 mixtral-8x7b:1024,4096 deepseek-v3:1024,4096; do
    for v in base row; do
      [ "$(left)" -lt 30 ] && break 3
      T0=$SECONDS
      timeout $(( $(left) - 15 )) /tmp/bins/$v bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline --stages \
        --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/sweep-${p%%:*}-$v$turn.csv" > "$OUT/r/sweep-${p%%:*}-$v$turn.txt" 2>&1
      echo "# ${p%%:*} $v$turn rc=$? $((SECONDS - T0))s"
    done
  done
done
sed 's/"sweep": ("dflt", None)/"sweep": ("base", None)/' docs/device-logs/2026-11-26-h200-rules/summarize.py > /tmp/summarize.py
python3 /tmp/summarize.py "$OUT/r" | tee "$OUT/r/summary.txt"
pack
