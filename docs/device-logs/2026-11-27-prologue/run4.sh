#!/usr/bin/env bash
# Call 4 ($1 = the commit, the experiment's knobs on a branch): why the maps in one launch made the
# layer slower (call 1). Variants by environment, layer only, two turns, order rotating:
#   v0 two launches (main)        v1 one launch (MOEKIT_MAPS_ONE_LAUNCH=8192)
#   v2 one launch + an empty PDL kernel after the maps (MOEKIT_MAPS_PAD=1)   v3 two launches + one empty kernel
#   v4 v0 without PDL (MOEKIT_PDL=0)   v5 v1 without PDL
# Then the 1 x 2 cluster tile on both GEMMs at the prefill points against the heuristic (v6 against v0).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((560 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit test_maps_cuda -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
for one in 0 8192; do
  MOEKIT_MAPS_ONE_LAUNCH=$one timeout 60 build/device/tests/gpu/test_maps_cuda > "$OUT/r/test-maps-$one.txt" 2>&1
  echo "# test_maps_cuda one=$one rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/r/test-maps-$one.txt" | tr '\n' ' ')"
done
env_of() {
  case $1 in
    0) echo "MOEKIT_MAPS_ONE_LAUNCH=0" ;; 1) echo "MOEKIT_MAPS_ONE_LAUNCH=8192" ;;
    2) echo "MOEKIT_MAPS_ONE_LAUNCH=8192 MOEKIT_MAPS_PAD=1" ;; 3) echo "MOEKIT_MAPS_ONE_LAUNCH=0 MOEKIT_MAPS_PAD=1" ;;
    4) echo "MOEKIT_MAPS_ONE_LAUNCH=0 MOEKIT_PDL=0" ;; 5) echo "MOEKIT_MAPS_ONE_LAUNCH=8192 MOEKIT_PDL=0" ;;
  esac
}
for turn in 1 2; do
  order="0 1 2 3 4 5"; [ $turn = 2 ] && order="5 4 3 2 1 0"
  for v in $order; do
    [ "$(left)" -lt 200 ] && break 2
    env $(env_of $v) timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline \
      --preset qwen3-30b-a3b --tokens 64,256,1024 --csv "$OUT/r/ab-qwen3-30b-a3b-v$v-$turn.csv" > "$OUT/r/ab-qwen3-30b-a3b-v$v-$turn.txt" 2>&1
    echo "# qwen3 v$v turn $turn rc=$? $(cut -d, -f3,7 "$OUT/r/ab-qwen3-30b-a3b-v$v-$turn.csv" | sed -n '2,4p' | tr '\n' ' ')"
  done
done
C1X2="gemm1.tile=sm90_m128n256k64_c1x2;gemm2.tile=sm90_m128n256k64_c1x2"
for turn in 1 2; do
  for p in qwen3-30b-a3b:16384 gpt-oss-120b:16384 mixtral-8x7b:4096 deepseek-v3:16384; do
    for v in 0 6; do
      [ "$(left)" -lt 25 ] && break 3
      ch=(); [ $v = 6 ] && ch=(--choice "$C1X2")
      timeout $(( $(left) - 10 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline \
        --preset ${p%%:*} --tokens ${p#*:} "${ch[@]}" --csv "$OUT/r/ab-${p%%:*}-v$v-$turn.csv" > "$OUT/r/ab-${p%%:*}-v$v-$turn.txt" 2>&1
      echo "# ${p%%:*} v$v turn $turn rc=$? $(cut -d, -f3,7 "$OUT/r/ab-${p%%:*}-v$v-$turn.csv" | sed -n '2p')"
    done
  done
done
python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r" 0 | tee "$OUT/r/summary.txt"
pack
