#!/usr/bin/env bash
# Call 3 ($1 = the commit, step 35's rules in the library): where each of the two rules might go
# further. overlap-limit-2.patch applied: MOEKIT_SM90_OVERLAP_MAX_ROWS overrides the pair's limit.
# (C) The overlapped pair at 49-64 rows an expected expert for small gemm2s (on the 64 x 128 tile up
#     to 64 rows): the library (v0, no pair above 48) against a limit of 64 (v1): Qwen3 T = 832 ..
#     1024, GPT-OSS T = 1664 .. 2048.
# (D) Mixtral at 63 rows (T=252, the first T past the new 62-row limit): the heuristic (v0, 128 x 256)
#     against both GEMMs on 64 x 128 (v1).
# Two turns each (v0 v1, then v1 v0), one set of three samples.
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((585 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
git apply docs/device-logs/2026-11-28-rules/overlap-limit-2.patch || { echo "patch failed"; exit 1; }
scripts/device-build.sh "$COMMIT+overlap-limit-2" "$OUT/r" moekit -- -DCMAKE_CUDA_FLAGS= || { pack; exit 1; }
B=build/device/bin/moekit
COMMON="--backend cuda --quant none --gate-up interleaved --no-baseline --sets 1 --reps 3"
SMALL="gemm1.tile=sm90_m64n128k128_c1x1;gemm2.tile=sm90_m64n128k128_c1x1"
one() {  # dir preset tokens variant turn experiment
  local d=$1 p=$2 t=$3 v=$4 turn=$5 x=$6 ch=() env=()
  if [ $x = D ] && [ $v = 1 ]; then ch=(--choice "$SMALL"); fi
  if [ $x = C ] && [ $v = 1 ]; then env=(MOEKIT_SM90_OVERLAP_MAX_ROWS=64); fi
  [ $(left) -lt 30 ] && { echo "== skip $d $p v$v turn $turn (time)"; return; }
  env "${env[@]}" timeout 90 $B bench $COMMON --preset $p --tokens $t "${ch[@]}" --csv "$d/ab-$p-v$v-$turn.csv" > "$d/ab-$p-v$v-$turn.txt" 2>&1
  echo "== $x $p v$v turn $turn rc=$?"
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
run C qwen3-30b-a3b:832,896,960,1024 gpt-oss-120b:1664,1792,2048
run D mixtral-8x7b:252
echo "# total $((SECONDS - START))s"
pack
