#!/usr/bin/env bash
# Call 5 ($1 = the commit, branch exp/maps-chain): call 4 found that the maps in one launch gain
# without PDL and lose with it, and that an empty PDL link costs about 0.5 us. Reading: the next
# kernel (the expand, a block per token) is launched as soon as the maps kernel starts, and its
# waiting blocks share the SMs with the maps' work. Test: the maps kernels release the next launch
# at their end instead (MOEKIT_PLACE_LATE=1). Variants, layer only, two turns, order rotating:
#   v0 two launches, early release (main)   v1 one launch, early
#   v7 two launches, late release           v8 one launch, late
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((500 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit test_maps_cuda -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
for one in 0 8192; do
  MOEKIT_PLACE_LATE=1 MOEKIT_MAPS_ONE_LAUNCH=$one timeout 60 build/device/tests/gpu/test_maps_cuda --gtest_filter=*Contract* > "$OUT/r/test-maps-late-$one.txt" 2>&1
  echo "# test_maps_cuda late one=$one rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/r/test-maps-late-$one.txt" | tr '\n' ' ')"
done
env_of() {
  case $1 in
    0) echo "MOEKIT_MAPS_ONE_LAUNCH=0" ;; 1) echo "MOEKIT_MAPS_ONE_LAUNCH=8192" ;;
    7) echo "MOEKIT_MAPS_ONE_LAUNCH=0 MOEKIT_PLACE_LATE=1" ;; 8) echo "MOEKIT_MAPS_ONE_LAUNCH=8192 MOEKIT_PLACE_LATE=1" ;;
  esac
}
for turn in 1 2; do
  order="0 1 7 8"; [ $turn = 2 ] && order="8 7 1 0"
  for v in $order; do
    for p in qwen3-30b-a3b:16,32,64,256,1024 mixtral-8x7b:256,1024 gpt-oss-120b:1024; do
      [ "$(left)" -lt 20 ] && break 3
      env $(env_of $v) timeout 60 $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 3 --no-baseline \
        --preset ${p%%:*} --tokens ${p#*:} --csv "$OUT/r/ab-${p%%:*}-v$v-$turn.csv" > "$OUT/r/ab-${p%%:*}-v$v-$turn.txt" 2>&1
      echo "# ${p%%:*} v$v turn $turn rc=$? $(cut -d, -f3,7 "$OUT/r/ab-${p%%:*}-v$v-$turn.csv" | sed -n '2,6p' | tr '\n' ' ')"
    done
  done
done
python3 docs/device-logs/2026-11-27-final/summarize.py "$OUT/r" 0 | tee "$OUT/r/summary.txt"
pack
