#!/usr/bin/env bash
# Call 9 ($1 = the commit): the final commit. Every gpu test (the tests' CMake changed since call 6:
# the discovery timeout); then the default against both order knobs claimed at GPT-OSS T = 1024, 4096.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
SECONDS=0
timeout 300 ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest rc=$? ${SECONDS}s"; grep -E "tests passed|Failed|\*\*\*" "$OUT/r/ctest-gpu.txt" | head -10
for c in "gemm1.order=fixed;gemm2.order=fixed" "gemm1.order=claimed;gemm2.order=claimed"; do
  timeout 40 build/device/bin/moekit bench --backend cuda --quant none --gate-up interleaved --preset gpt-oss-120b --tokens 1024,4096 \
    --sets 2 --reps 5 --no-baseline --refcheck --choice "$c" > "$OUT/r/bench-${c%%;*}.txt" 2>&1
  echo "# $c"; grep -E "^ +(1024|4096) +moekit" "$OUT/r/bench-${c%%;*}.txt"
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
