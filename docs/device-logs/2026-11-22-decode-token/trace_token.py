# Summarizes a MOEKIT_TRACE dump of the one-token kernel (trace.cuh marks; the last graph replay).
import sys, statistics
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
# keep the last replay: the dump holds one value per (kernel, CTA, mark), the last written
# marks of the trace patch of calls 2-4 (the first kernel), or of call 10 (TOKEN_MARKS=v2)
import os
if os.environ.get("TOKEN_MARKS") == "v2":
    names = {1: ("reset", ["entry", "waited", "filled"]),
             0: ("token", ["entry", "routed", "pdl waited", "warp0 gemm1 done", "warp0 gemm2 done", "warp0 combine done"])}
else:
    names = {1: ("reset", ["entry", "waited"]),
             0: ("token", ["entry", "routed", "pdl waited", "warp0 gemm1 done", "CTA gemm1 done", "all gemm1 + act", "warp0 gemm2 done"])}
t0 = min(r[2] for r in rows)
for k in (1, 0):
    sel = [r for r in rows if r[0] == k]
    if not sel: continue
    print(f"{names[k][0]}: {len(sel)} CTAs (us from the first entry: min / median / max)")
    for m, name in enumerate(names[k][1]):
        v = sorted((r[2 + m] - t0) / 1e3 for r in sel if r[2 + m] and r[2 + m] >= t0)
        if v: print(f"   {name:18s} {v[0]:8.2f} {statistics.median(v):8.2f} {v[-1]:8.2f}  ({len(v)})")
