import sys, statistics
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
names = {0: "route+maps", 1: "expand", 2: "gemm1+act", 3: "gemm2", 4: "finalize"}
marks = {0: ["entry", "waited", "routed", "end"], 1: ["entry", "waited", "end"], 2: ["entry", "tile+w issued", "waited", "k done", "end"],
         3: ["entry", "tile+w issued", "waited", "k done", "end"], 4: ["entry", "waited", "end"]}
t0 = min(r[2] for r in rows if r[0] == 0)
for k in sorted(set(r[0] for r in rows)):
    sel = [r for r in rows if r[0] == k]
    print(f"{names.get(k, k)}: {len(sel)} CTAs (us from route entry: min / median / max)")
    for m, name in enumerate(marks.get(k, [])):
        v = sorted((r[2 + m] - t0) / 1e3 for r in sel if r[2 + m])
        if v:
            print(f"   {name:14s} {v[0]:8.2f} {statistics.median(v):8.2f} {v[-1]:8.2f}")
