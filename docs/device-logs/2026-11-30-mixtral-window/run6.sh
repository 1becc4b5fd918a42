#!/usr/bin/env bash
# Step 47 e (the concatenated gemm1 on gemm1's window) checked, and step 47 f: why the tails lose
# past 180 rows. $1 = the commit; carry build/carry and `tar -xJf build/carry/deps.tar.xz` first;
# give the device tool this script alone.
# 1. `moekit explain`, concatenated W13, at gemm1's ends (T = 492, 496, 720, 724).
# 2. Concatenated W13: the rule (v0) against gemm1 off (v1) at T = 496 (124 rows) and 720 (180);
#    gemm1 wide (v1) against the rule at T = 480 (120) and 736 (184). Predicted from the interleaved
#    gemm1 (step 47 b) and call 5's -6.6..-8.1%: -5..-8% at the ends, level or slower outside.
# 3. Mixtral interleaved, each GEMM launch alone under ncu (time, DRAM bytes read, L2 hit rate): T=736
#    (184 rows) tails off, gemm1 wide, both wide; T=624 (156) off and both wide; T=1024 (256) off and
#    both wide. Under ncu the launches run one at a time, so the head and tail launches' times add up
#    to what the two parts cost without sharing the GPU. If at T=736 head + tail < the one launch,
#    the loss is in how the launches share the GPU (step 47's reading); if not, in the tiles.
# 4. The same plans at T = 736 and 1024 with PDL (the tails beside the heads) and without
#    (MOEKIT_PDL=0: the tails after the heads, every stage serialised) in device_ab turns.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-480}" "$1" moekit
for t in 492 496 720 724; do
  echo "concatenated T=$t $($B explain --arch sm90 --preset mixtral-8x7b --tokens $t --gate-up concatenated | grep -E 'gemm[12]\.tall_tail' | awk '{printf "%s=%s ", $1, $2}')"
done
export DEVICE_AB_GATE_UP=concatenated
device_ab r/ab/mixtral-8x7b-496-concatenated mixtral-8x7b 496 "" "gemm1.tall_tail=off"
device_ab r/ab/mixtral-8x7b-720-concatenated mixtral-8x7b 720 "" "gemm1.tall_tail=off"
device_ab r/ab/mixtral-8x7b-480-concatenated mixtral-8x7b 480 "" "gemm1.tall_tail=wide"
device_ab r/ab/mixtral-8x7b-736-concatenated mixtral-8x7b 736 "" "gemm1.tall_tail=wide"
unset DEVICE_AB_GATE_UP
echo "# concatenated done at $((SECONDS - DEVICE_START))s"
off="gemm1.tall_tail=off;gemm2.tall_tail=off"
g1="gemm1.tall_tail=wide;gemm2.tall_tail=off"
both="gemm1.tall_tail=wide;gemm2.tall_tail=wide"
NCU="ncu --clock-control none --kernel-name-base demangled --kernel-name regex:MoeGroupShape --csv --print-units base \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct"
for run in "736 off 2 $off" "736 g1 3 $g1" "736 both 4 $both" "624 off 2 $off" "624 both 4 $both" "1024 off 2 $off" "1024 both 4 $both"; do
  [ "$(device_left)" -lt 120 ] && { echo "# skipped ncu $run"; continue; }
  read -r t name launches choice <<< "$run"
  timeout 90 $NCU --launch-count $launches $B bench --backend cuda --quant none --gate-up interleaved --preset mixtral-8x7b --tokens $t \
    --sets 1 --reps 1 --iters 1 --warmup 0 --no-baseline --choice "$choice" > "$OUT/r/ncu-T$t-$name.csv" 2> "$OUT/r/ncu-T$t-$name.err"
  echo "# ncu T=$t $name rc=$?"
done
python3 docs/device-logs/2026-11-29-tails-first/ncu_summary.py "$OUT/r" | tee "$OUT/r/ncu-summary.txt"
echo "# ncu done at $((SECONDS - DEVICE_START))s"
for t in 736 1024; do
  [ "$(device_left)" -lt 60 ] && { echo "# skipped T=$t"; continue; }
  device_ab r/ab/mixtral-8x7b-$t-pdl mixtral-8x7b $t "$off" "$g1" "$both"
  [ "$(device_left)" -lt 60 ] && { echo "# skipped T=$t without PDL"; continue; }
  MOEKIT_PDL=0 device_ab r/ab/mixtral-8x7b-$t-nopdl mixtral-8x7b $t "$off" "$g1" "$both"
done
echo "# total $((SECONDS - DEVICE_START))s"
