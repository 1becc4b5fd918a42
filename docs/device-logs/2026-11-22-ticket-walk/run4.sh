#!/usr/bin/env bash
# Fourth device call ($1 = the commit + trace-v3 marks): the full routing path batched (loads) and its group
# scores over lanes; the compaction before the one barrier; no logits prefetch. Routing and one-token
# tests; Qwen3 and DeepSeek-V3 T=1 traced; T=1 bench twice; the stages at T=1 and 8.
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" -DMOEKIT_COMMIT=$1 > /dev/null 2>&1
( time cmake --build build/device -j 16 --target moekit test_routing_cuda test_decode_token_cuda ) > "$OUT/build.txt" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.txt" | head -40; exit 1; }
for t in test_routing_cuda test_decode_token_cuda; do
  f=$(find build/device -name $t -type f -executable | head -1)
  $f > "$OUT/$t.txt" 2>&1; echo "$t: $(grep -E "PASSED|FAILED" "$OUT/$t.txt" | tr '\n' ' ')"
done
B=build/device/bin/moekit
D=docs/device-logs/2026-11-22-ticket-walk
for p in qwen3-30b-a3b deepseek-v3; do
  rm -f /tmp/tr.txt
  MOEKIT_TRACE=/tmp/tr.txt $B bench --backend cuda --quant none --no-baseline --preset $p --tokens 1 --sets 1 --reps 3 > /dev/null 2>&1
  { echo "== $p"; TOKEN_MARKS=v3 python3 $D/trace_token.py /tmp/tr.txt; } | tee -a "$OUT/trace.txt"
done
run() {  # label, then bench arguments
  local label=$1
  shift
  rm -f /tmp/x.csv
  $B bench --backend cuda --quant none --no-baseline --refcheck --csv /tmp/x.csv "$@" > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt
  grep -v "^#" /tmp/x.csv | grep -v "^preset" | cut -d, -f1,3,5,6,7,12,14,20,23 | sed "s/^/$label,/"
}
{
  run token --sets 2 --reps 5 --tokens 1
  run token-again --sets 2 --reps 5 --tokens 1
  run stages --sets 2 --reps 5 --tokens 1,8 --fusion whole_layer=off
} | tee "$OUT/bench.txt" | grep ",layer,"
