#!/usr/bin/env bash
# Call 11 ($1 = the commit): `moekit check` on the GPU (the CUDA backend against the CPU reference at
# T = 0, 1, 3, 77 and more, outputs poisoned with NaN first), on three presets in bf16.
set -uo pipefail
COMMIT=$1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
mkdir -p "$OUT/r"
scripts/device-build.sh "$COMMIT" "$OUT/r" moekit || { tar -C "$OUT" -czf "$OUT/results.tgz" r; exit 1; }
B=build/device/bin/moekit
i=0
for args in "--preset qwen3-30b-a3b --quant none --tokens 0,1,3,77,300,1024" \
            "--preset gpt-oss-20b --quant none --gate-up interleaved --biases --tokens 0,1,3,77,600" \
            "--preset deepseek-v3 --quant none --hidden 1024 --intermediate 256 --tokens 0,1,3,8,77,520" \
            "--preset mixtral-8x7b --quant none --hidden 1024 --intermediate 1408 --deterministic --tokens 1,77,2048"; do
  i=$((i + 1))
  T0=$SECONDS
  timeout 100 $B check $args > "$OUT/r/check$i.txt" 2>&1
  echo "# check$i rc=$? $((SECONDS - T0))s: $args"; grep -E "^(device|T=|result)" "$OUT/r/check$i.txt" | cut -c1-170
done
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
