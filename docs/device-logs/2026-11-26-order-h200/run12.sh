#!/usr/bin/env bash
# Call 12 ($1 = the commit): the session's last code (moekit check; MoeRunner::plan(inputs) and
# plan_kernels shared by run, check and the tune worker). Every gpu test, then `moekit check` and
# `moekit run --refcheck` on the CUDA backend.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit gpu_tests || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
T0=$SECONDS
timeout 300 ctest --test-dir build/device -L gpu -j 3 --output-on-failure > "$OUT/r/ctest-gpu.txt" 2>&1
echo "# ctest $((SECONDS - T0))s"; grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/r/ctest-gpu.txt" | head -20
timeout 30 $B check --preset gpt-oss-120b --quant none --gate-up interleaved --hidden 1024 --intermediate 1024 --tokens 0,1,3,77,1024 > "$OUT/r/check.txt" 2>&1
echo "# check rc=$?"; grep -E "^(T=|result)" "$OUT/r/check.txt" | cut -c1-120
timeout 30 $B run --preset qwen3-30b-a3b --quant none --tokens 300 --refcheck > "$OUT/r/run.txt" 2>&1
echo "# run rc=$?"; grep -E "^(plan|refcheck)" "$OUT/r/run.txt" | cut -c1-160
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
