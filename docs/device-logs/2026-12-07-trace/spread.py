#!/usr/bin/env python3
"""Splits the one-token kernel's per-warp spread (warps-*.csv from run3.sh: every warp's stamps, us
from the reset kernel's entry) into a part between SMs (one CTA an SM) and a part inside an SM.

    python3 spread.py call3/r/warps-qwen3-30b-a3b.csv
"""
import csv
import statistics as st
import sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
for col in ("gemm1_done", "gemm2_done", "end"):
    by_cta = defaultdict(list)
    for r in rows:
        by_cta[int(r["cta"])].append(float(r[col]))
    allv = [v for vs in by_cta.values() for v in vs]
    means = {c: st.mean(vs) for c, vs in by_cta.items()}
    within = st.mean(st.pstdev(vs) for vs in by_cta.values())
    ranges = sorted(max(vs) - min(vs) for vs in by_cta.values())
    m = sorted(means.values())
    q = lambda v, f: v[int(f * (len(v) - 1))]
    print(f"{col}: all warps sd {st.pstdev(allv):.2f} us (p10 {q(sorted(allv), .1):.2f} p90 {q(sorted(allv), .9):.2f}); "
          f"CTA means sd {st.pstdev(m):.2f} (p10 {q(m, .1):.2f} p90 {q(m, .9):.2f}); "
          f"inside a CTA sd {within:.2f}, range p50 {q(ranges, .5):.2f} p90 {q(ranges, .9):.2f}")
    slow = sorted(means, key=means.get)[-5:]
    print(f"  slowest CTAs (mean): " + ", ".join(f"{c}: {means[c]:.2f}" for c in slow))
