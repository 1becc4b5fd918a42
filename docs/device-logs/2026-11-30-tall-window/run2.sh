#!/usr/bin/env bash
# Step 46 b: the rule as the default plan (experts of 6M elements or more take 128 x 256 with wide
# tall tails in the 192 x 128 tile's windows), at the windows' far ends, which call 1 did not measure:
# v0 the new heuristic, v1 the old plan pinned (GPT-OSS T=5632, 176 rows: gemm1 on 192 x 128, gemm2
# 128 x 256 wide; Mixtral T=672, 168 rows: both GEMMs on 192 x 128). Then the host tests of the rule
# (Knobs.*, the explain goldens, the committed tables). $1 = the commit; carry build/carry and
# `tar -xJf build/carry/deps.tar.xz` first; give the device tool this script alone.
# Predicted: v0 faster by 2-5% at both (call 1: -5.3% at 144 rows, -0.7% at 160 for GPT-OSS; -8.4%,
# -5.0% for Mixtral at 144 and 160).
set -uo pipefail
source scripts/device-ab.sh
device_call_begin "${LIMIT:-255}" "$1" moekit test_tune test_committed_tables
$B explain --arch sm90 --preset gpt-oss-120b --tokens 5632 --gate-up interleaved > "$OUT/r/explain-gpt-oss-5632.txt" 2>&1
$B explain --arch sm90 --preset mixtral-8x7b --tokens 672 --gate-up interleaved > "$OUT/r/explain-mixtral-672.txt" 2>&1
grep -E "tall_tail|\.tile" "$OUT/r/explain-gpt-oss-5632.txt" "$OUT/r/explain-mixtral-672.txt"
old_gpt="gemm1.tile=sm90_m192n128k64_c1x1;gemm1.tall_tail=off"
old_mix="gemm1.tile=sm90_m192n128k64_c1x1;gemm2.tile=sm90_m192n128k64_c1x1;gemm1.tall_tail=off;gemm2.tall_tail=off"
timeout 30 ctest --test-dir build/device -R 'Knobs|CommittedTables' > "$OUT/r/ctest-host.txt" 2>&1
echo "# host tests rc=$?"; grep -E "tests passed|tests failed|Failed" "$OUT/r/ctest-host.txt" | head
[ "$(device_left)" -gt 60 ] && device_ab r/ab/mixtral-8x7b-672 mixtral-8x7b 672 "" "$old_mix"
[ "$(device_left)" -gt 45 ] && device_ab r/ab/gpt-oss-120b-5632 gpt-oss-120b 5632 "" "$old_gpt"
echo "# total $((SECONDS - DEVICE_START))s"
