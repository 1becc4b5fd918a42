#!/usr/bin/env bash
# Step 42, call 4 ($1 = the commit; carry build/carry, `tar -xJf build/carry/deps.tar.xz` first): the
# one gpu test call 3's time cut off, in the session's last ~250 s of device time.
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-190}" "$1" test_sm90_gemm
device_ctest_gpu r/ctest-tailsplit.txt -R TailSplitMatchesTheReferenceAndRepeatsItsBits
echo "# total $((SECONDS - DEVICE_START))s"
