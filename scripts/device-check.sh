#!/usr/bin/env bash
# One call on the GPU machine: configure, build, run the gpu tests (and the cpu tests built), and
# record the environment, with every log under $OUT. The machine has no package registry: carry
# .deps (scripts/prepare-device-deps.sh) and third_party/cutlass-4.2.0 (scripts/bootstrap.sh).
#   TARGETS   build targets (default: all)
#   ARCHS     CUDA archs (default: 90a;80)
#   CPU_TESTS regex of cpu tests to run as well (default: all)
#   COMMIT    the commit the tree is (default: git's HEAD here; the GPU machine's copy may carry a
#             stale .git, so pass it from the caller: COMMIT=$(git rev-parse --short HEAD))
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/.device-out}"
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
BUILD=build/device
{
  echo "== $(date -u +%FT%TZ) commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  nvcc --version | tail -2; cmake --version | head -1; ${CXX:-c++} --version | head -1; nproc
} 2>&1 | tee "$OUT/env.txt"

# shellcheck disable=SC2086
./scripts/device-build.sh "${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}" "$OUT" ${TARGETS:-all} \
  -- -DMOEKIT_CUDA_ARCHS="${ARCHS:-90a;80}" || exit 1
set +e
"$BUILD/bin/moekit" info | tee "$OUT/info.txt"
"$BUILD/bin/moekit" info --json > "$OUT/info.json"
ctest --test-dir "$BUILD" -L gpu --output-on-failure 2>&1 | tee "$OUT/ctest-gpu.txt" | tail -15
ctest --test-dir "$BUILD" -L cpu -j 8 ${CPU_TESTS:+-R "$CPU_TESTS"} 2>&1 | tee "$OUT/ctest-cpu.txt" | tail -6
