#!/usr/bin/env bash
# Call 4 ($1 = the commit): step 35's rules as call 3 extended them (Mixtral-sized experts keep the
# 64 x 128 tile up to 63 rows; the overlapped pair up to 64 rows where gemm2's expert weight is below
# 4M). run2.sh at the points where the extensions act: the new heuristic (v0) against the old
# behaviour (v1: Mixtral both GEMMs on 128 x 256; Qwen3 MOEKIT_SM90_OVERLAP=0), two turns; then every
# gpu test.
POINTS="mixtral-8x7b:252 qwen3-30b-a3b:896,1024" EXPLAIN_T=252 bash docs/device-logs/2026-11-28-rules/run2.sh "$1"
