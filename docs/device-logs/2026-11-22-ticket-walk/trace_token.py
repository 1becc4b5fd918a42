# Summarizes a MOEKIT_TRACE dump of the one-token kernel (trace.cuh marks; the last graph replay).
import sys, statistics
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
# keep the last replay: the dump holds one value per (kernel, CTA, mark), the last written
# marks of the trace patch of calls 2-4 (the first kernel), of call 10 (TOKEN_MARKS=v2), or of
# 2026-11-22-ticket-walk (TOKEN_MARKS=v3)
import os
if os.environ.get("TOKEN_MARKS") == "v3":
    names = {1: ("reset", ["entry", "waited", "filled"]),
             0: ("token", ["entry", "logits in", "rounds done", "routed", "synced (x, ids)", "compacted", "pdl waited",
                           "warp0 1st item in", "warp0 gemm1 done", "warp0 gemm2 done", "warp0 combine done", "CTA end",
                           "full path: loads in", "full path: sigmoids", "full path: group scores", "compacted (warp 0)",
                           "full path: groups chosen", "full path: experts barred", "full path: experts chosen"])}
elif os.environ.get("TOKEN_MARKS") == "v2":
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
