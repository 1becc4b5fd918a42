#!/usr/bin/env python3
"""Sets the one-token kernel's per-SM gemm1 end (warps-*.csv with an smid column, trace-csv-smid.patch)
beside the SMs that bench/probes/sm_rate_probe.cu found fast (call 1: SMs 32-43, 78-87, 126-127).

    python3 smjoin.py call1/r-run5/warps-mixtral-8x7b.csv call1/r-run5/warps-qwen3-30b-a3b.csv
"""
import csv, statistics as st, sys
from collections import defaultdict
fast = {32,33,34,35,36,37,38,39,40,41,42,43,78,79,80,81,82,83,84,85,86,87,126,127}
for f in sys.argv[1:]:
    rows = list(csv.DictReader(open(f)))
    by = defaultdict(list)
    for r in rows: by[int(r["smid"])].append(float(r["gemm1_done"]))
    means = {s: st.mean(v) for s, v in by.items()}
    order = sorted(means, key=means.get)
    k = len(fast)
    top = set(order[:k])
    print(f, "SMs", len(means), "fastest-24 by gemm1 overlap with probe fast set:", len(top & fast))
    print("  fast-set mean gemm1 %.2f, rest %.2f" % (st.mean(means[s] for s in means if s in fast), st.mean(means[s] for s in means if s not in fast)))
    ends = defaultdict(list)
    for r in rows: ends[int(r["smid"])].append(float(r["end"]))
    print("  fast-set mean end %.2f, rest %.2f, max %.2f" % (st.mean(st.mean(ends[s]) for s in ends if s in fast), st.mean(st.mean(ends[s]) for s in ends if s not in fast), max(max(v) for v in ends.values())))
