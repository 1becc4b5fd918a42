#!/usr/bin/env bash
# Configures and builds moekit for the GPU machine: build/device, Release, CUDA on, sm_90a unless a
# CMAKE_ARG sets MOEKIT_CUDA_ARCHS, the dependencies from .deps and CUTLASS from
# third_party/cutlass-4.2.0 (carry both to the machine).
# Run from the repository root by a device script (docs/device-logs/*/runN.sh).
#
#   scripts/device-build.sh COMMIT LOG_DIR TARGET... [-- CMAKE_ARG...]
#
# TARGET gpu_tests (tests/gpu/CMakeLists.txt) builds every test with label gpu. Writes LOG_DIR/configure.txt and
# LOG_DIR/build.txt, prints the build's wall time, and on failure the first errors (exit 1).
set -uo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 COMMIT LOG_DIR TARGET... [-- CMAKE_ARG...]" >&2
  exit 2
fi
COMMIT=$1
LOG=$2
shift 2
TARGETS=()
EXTRA=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; EXTRA=("$@"); break; fi
  TARGETS+=("$1")
  shift
done
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$LOG"
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEKIT_CUDA=ON -DMOEKIT_CUDA_ARCHS=90a \
  -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DMOEKIT_CUTLASS_DIR="$PWD/third_party/cutlass-4.2.0" \
  -DMOEKIT_COMMIT="$COMMIT" "${EXTRA[@]}" > "$LOG/configure.txt" 2>&1 || { tail -20 "$LOG/configure.txt"; exit 1; }
SECONDS=0
cmake --build build/device -j "$(nproc)" --target "${TARGETS[@]}" > "$LOG/build.txt" 2>&1 || {
  grep -E "error|FAILED" -A5 "$LOG/build.txt" | head -40
  exit 1
}
echo "# build ${SECONDS}s: ${TARGETS[*]}"
