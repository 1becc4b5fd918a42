#!/usr/bin/env bash
# Packs this machine's CUDA build (default build/ci: Release, sm_90a) for a device call that runs it
# instead of building there: moekit, every `gpu`-labelled test program and the CTest files, stripped,
# into build/carry/prebuilt.tar.xz (about 5 MB: the test programs share most of their bytes, which
# one large xz dictionary finds). A cold build on the GPU machine takes about 170 s of a call's
# device time; unpacking this takes a few. The device checkout sits at the same path as this one,
# so the paths inside the CTest files hold there. It builds what is out of date first (a fresh
# build takes about 20 minutes on two cores) and refuses a build directory not made for sm_90a.
#
#   scripts/prepare-device-prebuilt.sh [BUILD_DIR]     # then carry build/carry, and in the call:
#   source scripts/device-ab.sh; device_call_prebuilt LIMIT COMMIT
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/ci}
source scripts/env.sh
if ! grep -q "^MOEKIT_CUDA_ARCHS:STRING=.*90a" "$BUILD/CMakeCache.txt"; then
  echo "$BUILD is not built for sm_90a (MOEKIT_CUDA_ARCHS)" >&2
  exit 1
fi
# Configure again, then build what is out of date: the commit label `moekit bench` prints is taken
# at configure time (a commit makes the next build configure again, but an edit since the last
# commit does not turn the label "-dirty"), and the pack must hold the tree as it is.
cmake -S . -B "$BUILD" > /dev/null
cmake --build "$BUILD" | tail -n 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
programs=("$BUILD/bin/moekit")
for f in "$BUILD"/tests/gpu/test_*; do
  [[ -f $f && -x $f && $f != *.cmake ]] && programs+=("$f")
done
cp --parents "${programs[@]}" "$tmp/"
find "$BUILD" \( -name CTestTestfile.cmake -o -name "*_include.cmake" -o -name "*_tests.cmake" \) -not -path "*/CMakeFiles/*" \
  -exec cp --parents {} "$tmp/" \;
for f in "${programs[@]}"; do strip --strip-unneeded "$tmp/$f"; done
label=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- src include tests tools CMakeLists.txt cmake || label+="+uncommitted"
echo "$label" > "$tmp/$BUILD/PREBUILT_COMMIT"
mkdir -p build/carry
tar -C "$tmp" -cf - "$BUILD" | xz -T1 --lzma2=preset=6,dict=512MiB > build/carry/prebuilt.tar.xz
echo "build/carry/prebuilt.tar.xz: $BUILD at $label, ${#programs[@]} programs, $(du -h build/carry/prebuilt.tar.xz | cut -f1)"
