#!/usr/bin/env bash
# Call 2 ($1 = the commit): tall tiles for gemm1 (docs/perf-notes.md step 36). sm90_overlap built with
# five variants only (0: the library's 128 x 256 tile; 27: 192 x 256 and 28: 192 x 128 with the two
# consumer warpgroups side by side along N; 29: CUTLASS's cooperative 256 x 128; 30: 128 x 256 side by
# side, the control), each timed on the gated gemm1 of a preset at a point where random routing gives
# experts 128-270 rows (--random 1: the rows of a uniform routing, a multinomial draw).
set -uo pipefail
COMMIT=$1
START=$SECONDS
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" sm90_overlap -- -DCMAKE_CUDA_FLAGS= -DMOEKIT_BUILD_EXPERIMENTS=ON \
  "-DMOEKIT_OVERLAP_VARIANTS=0;27;28;29;30" || { pack; exit 1; }
X=build/device/bin/sm90_overlap
# name experts rows n k: gemm1 of the layer at that point (n = 2 I interleaved, k = H).
for pt in "mixtral-T512 8 128 28672 4096" "mixtral-T640 8 160 28672 4096" "mixtral-T1024 8 256 28672 4096" \
          "qwen3-T2048 128 128 1536 2048" "qwen3-T2560 128 160 1536 2048" "gptoss-T4096 128 128 5760 2880" \
          "deepseek-T4096-121hit 121 271 4096 7168" "deepseek-T2048-121hit 121 135 4096 7168"; do
  read -r name e rows n k <<< "$pt"
  timeout 120 $X --experts $e --rows $rows --n $n --k $k --random 1 --variants 0,27,28,29,30 --rounds 3 --reps 10 \
    > "$OUT/r/$name.txt" 2>&1
  echo "== $name rc=$? ($((SECONDS - START))s)"; grep -E '^# M tiles|^check.*(differ from|NaN)|^[0-9a-z]+x[0-9]+' "$OUT/r/$name.txt"
done
echo "# total $((SECONDS - START))s"
pack
