#!/usr/bin/env bash
# Call 1 ($1 = the commit). On an H200: step 24's two rules, made on H100s, checked there (the
# automatic order against both GEMMs fixed where the heuristic runs the 64 x 128 tile without
# cluster; that tile against its 1 x 2 cluster form at T = 16..512), then the full table. On an
# H100 (every call of the last two sessions): the claimed order on the cooperative 128 x 256 tile,
# each GEMM forced onto it and timed alone (--stages), fixed against claimed, two turns; then DRAM
# bytes of both orders under ncu at the points where claims lost (Mixtral T=1024, DeepSeek-V3
# T=4096) and won (GPT-OSS T=4096).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((575 - (SECONDS - START))); }
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
bench() {  # name, then bench arguments
  local name=$1; shift
  [ "$(left)" -lt 25 ] && return 1
  local T0=$SECONDS
  timeout $(( $(left) - 10 )) $B bench --backend cuda --quant none --gate-up interleaved --sets 2 --reps 5 --no-baseline \
    --csv "$OUT/r/$name.csv" "$@" > "$OUT/r/$name.txt" 2>&1
  echo "# $name rc=$? $((SECONDS - T0))s"
}
if [[ "$GPU" == *H200* ]]; then
  echo "== H200: the rules"
  C2="gemm1.tile=sm90_m64n128k128_c1x2;gemm2.tile=sm90_m64n128k128_c1x2"
  for turn in 1 2; do
    for p in gpt-oss-120b:1024,1100,1536 qwen3-30b-a3b:600,800 deepseek-v3:300,384; do
      for o in auto fixed; do bench "order-${p%%:*}-$o$turn" --preset ${p%%:*} --tokens ${p#*:} --choice "gemm1.order=$o;gemm2.order=$o" || break 3; done
    done
    bench "tile-dflt$turn" --tokens 16,32,64,128,256,512 || break
    bench "tile-c1x2$turn" --tokens 16,32,64,128,256,512 --choice "$C2" || break
  done
  bench table --tokens 1,8,64,256,1024,4096,16384 --refcheck --json "$OUT/r/table.json"
else
  echo "== $GPU: the order on the 128 x 256 tile"
  CO="gemm1.tile=sm90_m128n256k64_c1x1;gemm2.tile=sm90_m128n256k64_c1x1"
  for turn in 1 2; do
    for p in gpt-oss-120b:4096 deepseek-v3:4096 mixtral-8x7b:1024 qwen3-30b-a3b:4096,16384; do
      for o in fixed claimed; do bench "coop-${p%%:*}-$o$turn" --preset ${p%%:*} --tokens ${p#*:} --stages --choice "$CO;gemm1.order=$o;gemm2.order=$o" || break 3; done
    done
  done
  NCU="ncu --clock-control none --kernel-name-base demangled --kernel-name regex:MoeGroupShape --launch-count 2 --csv --print-units base \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct"
  for p in mixtral-8x7b:1024 deepseek-v3:4096 gpt-oss-120b:4096; do
    for o in fixed claimed; do
      [ "$(left)" -lt 40 ] && break 2
      T0=$SECONDS
      timeout 90 $NCU $B bench --backend cuda --quant none --gate-up interleaved --preset ${p%%:*} --tokens ${p##*:} \
        --sets 1 --reps 1 --iters 1 --warmup 0 --no-baseline --choice "$CO;gemm1.order=$o;gemm2.order=$o" \
        > "$OUT/r/ncu-${p%%:*}-$o.csv" 2> "$OUT/r/ncu-${p%%:*}-$o.err"
      echo "# ncu ${p%%:*} $o rc=$? $((SECONDS - T0))s"
    done
  done
fi
python3 docs/device-logs/2026-11-26-h200-rules/summarize.py "$OUT/r" | tee "$OUT/r/summary.txt"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
