#!/usr/bin/env bash
# Call 2 ($1 = the commit): the stream-K tail after call 1's fix (a CTA's two pieces looked up in
# increasing tile order; the plan starting over from the scheduler as constructed): the shapes that
# failed in call 1 (Mixtral gemm2 at 3 rows an expert: illegal instruction; GPT-OSS gemm2: an
# unwritten output) and odd row counts; then Mixtral's gemm2 at several rows and spreads (how many
# tiles the last round holds decides the gain), and GPT-OSS gemm1 again (call 1: +2.5%).
set -uo pipefail
COMMIT=$1
START=$SECONDS
left() { echo $((500 - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"; }
scripts/device-build.sh "$COMMIT" "$OUT/r" sm90_overlap -- -DCMAKE_CUDA_FLAGS= -DMOEKIT_BUILD_EXPERIMENTS=ON || { pack; exit 1; }
X=build/device/bin/sm90_overlap
run_shape() {  # name variants spread experts rows n k
  [ "$(left)" -lt 30 ] && return
  timeout 30 $X --experts $4 --rows $5 --n $6 --k $7 --spread $3 --variants $2 --rounds 3 --reps 5 > "$OUT/r/streamk-$1-s$3.txt" 2>&1
  echo "# $1 spread $3 rc=$?"; grep -E "^(check|128x256|plain|gated|# )" "$OUT/r/streamk-$1-s$3.txt" | grep -v "run to run: 0 of\|NaN or unwritten outputs: 0 of"
}
run_shape mixtral-g2-r3 15,25 0 8 3 4096 14336
run_shape mixtral-g2-r1 15,25 0 8 1 4096 14336
run_shape mixtral-g2-r77 15,25 0.3 8 77 4096 14336
run_shape gptoss-g2 15,25 0.03 128 512 2880 2880
run_shape gptoss-g2-r77 15,25 0.3 128 77 2880 2880
run_shape mixtral-g1-r3 0,26 0 8 3 28672 4096
for s in 0.01 0.03 0.06 0.1; do run_shape mixtral-g2 15,25 $s 8 1024 4096 14336; done
for r in 256 512 2048; do run_shape mixtral-g2-r$r 15,25 0.03 8 $r 4096 14336; done
run_shape gptoss-g1 0,26 0.03 128 512 5760 2880
pack
