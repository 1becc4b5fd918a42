set -x
B=build/device/bin/moekit
for p in qwen3-30b-a3b:192:264 gpt-oss-120b:360:264 deepseek-v3:256:264; do
  n=${p%%:*}; rest=${p#*:}
  rm -f /tmp/t.txt; MOEKIT_TRACE=/tmp/t.txt $B bench --backend cuda --quant none --preset $n --tokens 1 --sets 1 --reps 3 --no-baseline --fusion whole_layer=on > /dev/null
  echo "== $n whole_layer=on T=1"; python3 trace_decode.py /tmp/t.txt ${rest%%:*} ${rest#*:}
done
