#!/usr/bin/env bash
# For a build machine that cannot reach a package registry (the team's GPU machine): downloads the
# Debian -dev packages moekit builds against and unpacks them into .deps/root (ignored by git).
# Also packs .deps/root and the CUTLASS headers into build/carry/deps.tar.xz (under 2 MB; the unpacked
# pair is 31 MB, and with the tracked device logs the working tree passed the device tool's 64 MiB limit):
# carry build/carry and run `tar -xJf build/carry/deps.tar.xz` there first. Or carry .deps and
# third_party directly, and configure with
#   -DCMAKE_PREFIX_PATH=$PWD/.deps/root/usr -DMOEKIT_CUTLASS_DIR=$PWD/third_party/cutlass-4.2.0
# Only header-only libraries and static archives are used from here (fmt header-only, libgtest.a),
# so the binaries do not depend on this machine's shared libraries.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="$ROOT/.deps"
PACKAGES=(libgtest-dev libcli11-dev nlohmann-json3-dev libfmt-dev libfmt9 libdlpack-dev)
mkdir -p "$DEPS/debs" "$DEPS/root"
cd "$DEPS/debs"
if ! ls ./*.deb >/dev/null 2>&1; then
  apt-get download "${PACKAGES[@]}"
fi
for deb in ./*.deb; do dpkg-deb -x "$deb" "$DEPS/root"; done
echo "unpacked into $DEPS/root: $(ls "$DEPS/debs" | tr '\n' ' ')"
if [ -d "$ROOT/third_party/cutlass-4.2.0" ]; then
  mkdir -p "$ROOT/build/carry"
  tar -C "$ROOT" -cJf "$ROOT/build/carry/deps.tar.xz" .deps/root third_party/cutlass-4.2.0
  echo "packed into build/carry/deps.tar.xz ($(du -h "$ROOT/build/carry/deps.tar.xz" | cut -f1))"
fi
