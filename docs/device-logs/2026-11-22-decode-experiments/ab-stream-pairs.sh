COMMIT=$1 OUT=$OUT TARGETS="moekit test_moe_cuda test_decode_layer_cuda test_routing_cuda" ARCHS=90a CPU_TESTS='^$' ./scripts/device-check.sh > $OUT/check.txt 2>&1
rm -f $OUT/info.json $OUT/configure.txt $OUT/env.txt $OUT/ctest-cpu.txt
grep -E "tests passed|Failed|FAILED|\*\*\*" $OUT/ctest-gpu.txt | head -20
B=build/device/bin/moekit
run() { label=$1; shift; $B bench --backend cuda --quant none --sets 2 --reps 5 --no-baseline --refcheck --csv /tmp/x.csv "$@" > /tmp/x.txt 2>&1 || tail -5 /tmp/x.txt; grep -v "^#" /tmp/x.csv | grep ",layer," | cut -d, -f1,3,7,20,23 | sed "s/^/$label,/"; }
{
run pairs --tokens 1,2,4,8,64
MOEKIT_STREAM_PAIRS=0 run nopairs --tokens 1,2,4,8,64
run pairs2 --tokens 1,2,4,8,64
} > $OUT/bench.txt 2>&1
paste -d' ' <(grep "^pairs," $OUT/bench.txt) <(grep "^nopairs," $OUT/bench.txt | cut -d, -f4) <(grep "^pairs2," $OUT/bench.txt | cut -d, -f4)
