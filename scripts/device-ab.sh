# Functions for a device call's script (docs/device-logs/*/runN.sh), sourced after `set -uo pipefail`:
# the A/B in turns that every step since 30 has written out by hand, and `ctest -L gpu` in the time
# a call has left, longest tests first. Needs OUT (the device tool's output folder) and B (the moekit
# binary, after scripts/device-build.sh).
#
#   source scripts/device-ab.sh
#   device_call_begin 585 COMMIT moekit gpu_tests   # the clock, the pack at exit, the build, B
#   device_call_prebuilt 585 COMMIT                  # the same, on build/carry/prebuilt.tar.xz; or by hand:
#     device_call_start 585            # prints the GPU, starts the clock (seconds the call may use)
#     trap device_pack EXIT            # $OUT/r into $OUT/r.tgz at the end
#     scripts/device-build.sh COMMIT "$OUT/r" moekit gpu_tests && B=build/device/bin/moekit
#   device_ab r/ab/mixtral-32 mixtral-8x7b 32 "" "gemm1.tile=sm90_m64n128k128_c1x1"
#   device_ab_inproc r/ab/mixtral-736 mixtral-8x7b 736 "" "gemm1.tall_tail=off"   # one process, paired by set
#   device_ctest_gpu r/ctest-gpu.txt -R 'MoeCuda\.'
#   device_tables                                       # the full table and its deterministic twin
#
# device_ab runs the variants (v0 the first, usually "" for the heuristic; each a --choice string)
# in turns, forward then backward, one set of three samples each, and appends each variant's best
# turn against v0's to $OUT/r/summary.txt (docs/device-logs/2026-11-27-final/summarize.py).
# DEVICE_AB_ARGS, when set, goes to every bench run (e.g. "--intermediate 704" for a preset's shape
# with another I); DEVICE_AB_GATE_UP sets W13's layout (default interleaved, the tables' layout).

device_call_start() {
  DEVICE_LIMIT=$1
  DEVICE_START=$SECONDS
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader
  mkdir -p "$OUT/r"
}

# The device tool returns about eight files of $OUT and leaves the rest out (step 38's call 4 lost its
# A/B folders so), so a call packs $OUT/r into one archive and removes it.
device_pack() { tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$OUT/r"; }

# The usual start of a call's script, in one line: the clock, the pack at exit, the build of TARGETs
# at COMMIT (scripts/device-build.sh; the call ends here if it fails), and B.
device_call_begin() {  # LIMIT COMMIT TARGET...
  device_call_start "$1"
  trap device_pack EXIT
  scripts/device-build.sh "$2" "$OUT/r" "${@:3}" -- -DCMAKE_CUDA_FLAGS= || exit 1
  B=build/device/bin/moekit
}

# The same start for a call that runs this machine's build instead of building
# (scripts/prepare-device-prebuilt.sh packed it into build/carry/prebuilt.tar.xz): no build time, B
# and device_ctest_gpu on that build. COMMIT labels the call; the pack names the commit it was built at.
device_call_prebuilt() {  # LIMIT COMMIT
  device_call_start "$1"
  trap device_pack EXIT
  tar -xJf build/carry/prebuilt.tar.xz || exit 1
  DEVICE_BUILD_DIR=$(dirname "$(tar -tJf build/carry/prebuilt.tar.xz | grep -m1 /PREBUILT_COMMIT)")
  echo "# prebuilt $DEVICE_BUILD_DIR at $(cat "$DEVICE_BUILD_DIR/PREBUILT_COMMIT"), call label $2"
  B=$DEVICE_BUILD_DIR/bin/moekit
  # The CTest files name the programs by absolute path: the pack runs only where the checkout sits
  # at the path it was built at (/work/main on both machines so far).
  grep -q "^# Source directory: $PWD\$" "$DEVICE_BUILD_DIR/CTestTestfile.cmake" \
    || echo "# $DEVICE_BUILD_DIR was built at another path than $PWD: $(grep -m1 'Source directory' "$DEVICE_BUILD_DIR/CTestTestfile.cmake")"
  # cuBLAS (moekit and the bench test) was linked here from /usr/local/cuda/lib (the RUNPATH);
  # wherever the device's toolkit keeps it, the loader finds it so.
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:/usr/local/cuda/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  ldd "$B" | grep "not found" && echo "# $B cannot load a library above"
}

device_left() { echo $((DEVICE_LIMIT - (SECONDS - DEVICE_START))); }

device_ab() {  # DIR (under $OUT) PRESET TOKENS VARIANT...
  local d="$OUT/$1" p=$2 t=$3
  shift 3
  local variants=("$@") n=$#
  local order=() i
  for ((i = 0; i < n; i++)); do order+=("$i:1"); done
  for ((i = n - 1; i >= 0; i--)); do order+=("$i:2"); done
  mkdir -p "$d"
  local vt v turn ch
  for vt in "${order[@]}"; do
    v=${vt%%:*} turn=${vt#*:} ch=()
    [ -n "${variants[$v]}" ] && ch=(--choice "${variants[$v]}")
    timeout 100 "$B" bench --backend cuda --quant none --gate-up "${DEVICE_AB_GATE_UP:-interleaved}" --no-baseline --sets 1 --reps 3 \
      --preset "$p" --tokens "$t" ${DEVICE_AB_ARGS:-} "${ch[@]}" --csv "$d/ab-$p-v$v-$turn.csv" > "$d/ab-$p-v$v-$turn.txt" 2>&1 \
      || echo "== $p T=$t v$v turn $turn rc=$?"
  done
  python3 docs/device-logs/2026-11-27-final/summarize.py "$d" 0 | grep moekit | tee -a "$OUT/r/summary.txt"
}

# The same comparison in one bench process (`moekit bench --ab`, docs/bench.md; session 29, first
# run on a GPU by run10.sh of docs/device-logs/2026-11-30-mixtral-window): the variants in turns
# within each of DEVICE_AB_SETS sets (default 6) of three samples, paired by set. Appends the
# `moekit vN` rows (each vN's note: its change against v0, the smallest and largest set, the sets
# slower or faster and the sign test's p) to
# $OUT/r/summary.txt.
device_ab_inproc() {  # DIR (under $OUT) PRESET TOKENS VARIANT...
  local d="$OUT/$1" p=$2 t=$3
  shift 3
  local IFS='|'
  local ab="$*"
  unset IFS
  mkdir -p "$d"
  timeout 150 "$B" bench --backend cuda --quant none --gate-up "${DEVICE_AB_GATE_UP:-interleaved}" --no-baseline --sets "${DEVICE_AB_SETS:-6}" \
    --reps 3 --preset "$p" --tokens "$t" ${DEVICE_AB_ARGS:-} --ab "$ab" --csv "$d/ab-$p-$t.csv" > "$d/ab-$p-$t.txt" 2>&1 \
    || echo "== $p T=$t --ab rc=$?"
  grep -E "^ +$t +moekit v[0-9]" "$d/ab-$p-$t.txt" | sed "s/^/$p /" | tee -a "$OUT/r/summary.txt"
}

# ctest -L gpu, four at a time, the longest first (ctest reads earlier costs from
# Testing/Temporary/CTestCostData.txt, "name runs seconds", and updates it after each run; a fresh
# build's file is seeded once from step 38's call 4), in the call's time left less 5 s. Extra
# arguments go to ctest (e.g. -R to run some).
device_ctest_gpu() {  # LOG (under $OUT) [CTEST_ARG...]
  local dir=${DEVICE_BUILD_DIR:-build/device}
  local log="$OUT/$1" costs=$dir/Testing/Temporary/CTestCostData.txt
  shift
  if [ ! -f "$costs" ]; then
    mkdir -p "$(dirname "$costs")"
    { grep -E "Test +#" docs/device-logs/2026-11-28-cluster/call4/r/ctest-gpu.txt | awk '{print $4, 1, $(NF-1)}'
      echo "---"; } > "$costs"
  fi
  local t0=$SECONDS
  timeout $(($(device_left) - 5)) ctest --test-dir "$dir" -L gpu -j 4 --output-on-failure "$@" > "$log" 2>&1
  echo "# ctest -L gpu $* rc=$? $((SECONDS - t0))s"
  grep -E "tests passed|tests failed|Failed|Not Run|Timeout|Total Test" "$log" | head -20
}

# The full table and its deterministic twin (docs/benchmarks.md's protocol: the four presets at the
# seven token counts, two sets of five samples, --refcheck, W13 interleaved), each skipped when less
# than 60 s are left and cut 5 s before the call's end: $OUT/r/{table,det}.{txt,csv,json}.
# scripts/table-md.py prints them as docs/benchmarks.md's markdown table beside an earlier one.
device_tables() {
  local mode t0 extra
  for mode in table det; do
    [ "$(device_left)" -lt 60 ] && { echo "# skipped $mode"; continue; }
    t0=$SECONDS
    extra=(); [ $mode = det ] && extra=(--deterministic)
    timeout $(($(device_left) - 5)) "$B" bench --backend cuda --quant none --tokens 1,8,64,256,1024,4096,16384 --sets 2 --reps 5 \
      --no-baseline --refcheck --gate-up interleaved "${extra[@]}" --csv "$OUT/r/$mode.csv" --json "$OUT/r/$mode.json" > "$OUT/r/$mode.txt" 2>&1
    echo "== $mode rc=$? ($((SECONDS - t0))s)"
  done
}

# What an H200 owes since session 29, run only when the call got one and more than 200 s are left:
# bench/tune/h200.csv's rows against the heuristic ($OUT/r/tune-rows.txt), then device_tables.
device_h200_owed() {
  nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "# not an H200: tuned rows and table skipped"; return; }
  [ "$(device_left)" -gt 200 ] || { echo "# $(device_left) s left: tuned rows and table skipped"; return; }
  local t0=$SECONDS
  timeout $(($(device_left) - 150)) "$B" tune --run-config bench/tune/h200.csv --compare --backend cuda --no-progress \
    --reference-cache /tmp/refs > "$OUT/r/tune-rows.txt" 2>&1
  echo "== tune --run-config bench/tune/h200.csv --compare rc=$? ($((SECONDS - t0))s)"
  device_tables
}

# The one-token kernel's per-warp trace at T=1 with a traced moekit (TRACED: a binary built with a
# docs/device-logs/2026-12-07-trace/trace-csv*.patch, scripts/prepare-device-variant.sh): the
# quantiles on stdout, every warp's stamps in $OUT/r/warps-PRESET.csv.
device_trace_warps() {  # TRACED PRESET...
  local traced=$1 p; shift
  for p in "$@"; do
    MOEKIT_DECODE_TRACE=1 MOEKIT_DECODE_TRACE_CSV="$OUT/r/warps-$p.csv" timeout 60 "$traced" bench --backend cuda --quant none \
      --preset "$p" --tokens 1 --sets 2 --reps 5 --no-baseline > "$OUT/r/trace-$p.txt" 2>&1
    echo "== trace $p rc=$?"; grep -E "^ +1 +moekit|gemm1 items done|gemm2 items done" "$OUT/r/trace-$p.txt"
  done
}
