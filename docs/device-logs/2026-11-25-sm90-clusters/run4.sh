#!/usr/bin/env bash
# Fourth device call ($1 = the commit): two more sm_90a tiles (64 x 256 ping-pong, 128 x 128
# cooperative, no cluster) against 128 x 256 (no cluster), forced on both GEMMs at T = 256 .. 16384;
# then deterministic mode against the default at T = 64, 1024, 16384 (Qwen3, DeepSeek-V3).
set -uo pipefail
COMMIT=$1
TARGETS="moekit test_moe_cuda test_sm90_gemm"
COMMIT=$COMMIT OUT=$OUT TARGETS="$TARGETS" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > "$OUT/check.txt" 2>&1
rm -f "$OUT/info.json" "$OUT/configure.txt" "$OUT/ctest-cpu.txt" "$OUT/info.txt" "$OUT/ctest-gpu.txt"
grep real "$OUT/build.txt"
ctest --test-dir build/device -R "Sm90" --output-on-failure > "$OUT/ctest-sm90.txt" 2>&1
grep -E "tests passed|Failed|FAILED|\*\*\*|Total Test" "$OUT/ctest-sm90.txt" | head -20
B=build/device/bin/moekit
mkdir -p "$OUT/r"
SECONDS=0
run() {  # name, tokens, extra bench arguments...
  local name=$1 tokens=$2; shift 2
  $B bench --backend cuda --quant none --tokens "$tokens" --sets 1 --reps 3 --iters 10 --no-baseline "$@" \
    --csv "$OUT/r/$name.csv" > "$OUT/r/$name.txt" 2>&1
  echo "== $name (${SECONDS}s)"; cut -d, -f1,3,7,20 "$OUT/r/$name.csv" | tail -n +2 | sed 's/-30b-a3b\|-8x7b\|-120b//' | tr '\n' ' '; echo
}
for t in sm90_m128n256k64_c1x1 sm90_m64n256k64_c1x1 sm90_m128n128k64_c1x1; do
  run both-$t 256,1024,4096,16384 --choice "gemm1.tile=$t;gemm2.tile=$t"
done
run default 64,1024,16384 --preset qwen3-30b-a3b,deepseek-v3 --sets 2 --reps 5 --iters 20
run deterministic 64,1024,16384 --preset qwen3-30b-a3b,deepseek-v3 --sets 2 --reps 5 --iters 20 --deterministic
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
