#!/usr/bin/env bash
# Call 1 ($1 = the commit): step 34's two follow-ups, measured (no library change; overlap-limit.patch
# applied for (B) only: MOEKIT_SM90_OVERLAP_MAX_ROWS overrides kSm90OverlapMaxRowsPerExpert, default 32).
# (A) The 64 x 128 tile beyond 48 rows an expected expert: the heuristic (v0, 128 x 256 for large
#     experts there) against both GEMMs forced onto sm90_m64n128k128_c1x1 (v1), at 50-62 rows:
#     Mixtral T = 208..248, DeepSeek-V3 T = 800..896, GPT-OSS T = 1600..1792 (gemm1 only is large).
# (B) gemm2's weights under gemm1's tail at 33-48 rows an expected expert (gemm2 on the 64 x 128 tile
#     there since fac1f9d): limit 32 (v0, the library's) against 48 (v1), same binary.
# Two turns each (v0 v1, then v1 v0), one set of three samples.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((585 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
git apply docs/device-logs/2026-11-28-rules/overlap-limit.patch || { echo "patch failed"; exit 1; }
scripts/device-build.sh "$COMMIT+overlap-limit" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3"
SMALL="gemm1.tile=sm90_m64n128k128_c1x1;gemm2.tile=sm90_m64n128k128_c1x1"
one() {  # dir preset tokens variant turn experiment
  local d=$1 p=$2 t=$3 v=$4 turn=$5 x=$6
  local ch=() env=()
  if [ $x = A ] && [ $v = 1 ]; then ch=(--choice "$SMALL"); fi
  if [ $x = B ] && [ $v = 1 ]; then env=(MOEKIT_SM90_OVERLAP_MAX_ROWS=48); fi
  [ $(left) -lt 30 ] && { echo "== skip $d $p v$v turn $turn (time)"; return; }
  T0=$SECONDS
  env "${env[@]}" timeout $(($(left) - 5)) $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$d/ab-$p-v$v-$turn.csv" > "$d/ab-$p-v$v-$turn.txt" 2>&1
  echo "== $x $p v$v turn $turn rc=$? ($((SECONDS - T0))s)"
}
run() {  # experiment preset:tokens...
  local x=$1; shift
  for pt in "$@"; do
    p=${pt%%:*}; t=${pt#*:}
    d="$OUT/r/$x/$p"; mkdir -p "$d"
    one $d $p $t 0 1 $x; one $d $p $t 1 1 $x; one $d $p $t 1 2 $x; one $d $p $t 0 2 $x
    python3 docs/device-logs/2026-11-27-final/summarize.py "$d" 0 | grep moekit | sed "s/^/$x /" | tee -a "$OUT/r/summary.txt"
  done
}
run A mixtral-8x7b:208,216,224,232,240,248 deepseek-v3:800,832,896 gpt-oss-120b:1600,1664,1792
run B qwen3-30b-a3b:544,640,768 mixtral-8x7b:144,176,192 gpt-oss-120b:1152,1408,1536 deepseek-v3:576,704,768
echo "# total $((SECONDS - START))s"
pack
