import sys, statistics
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
items1 = int(sys.argv[2]); route_ctas = int(sys.argv[3])
t0 = min(r[2] for r in rows if r[0] == 1)
def show(title, sel, names):
    print(f"{title}: {len(sel)} CTAs (us from reset entry: min / median / max)")
    for m, name in enumerate(names):
        v = sorted((r[2 + m] - t0) / 1e3 for r in sel if r[2 + m] and r[2 + m] >= t0)
        if v: print(f"   {name:14s} {v[0]:8.2f} {statistics.median(v):8.2f} {v[-1]:8.2f}")
show("reset/plan", [r for r in rows if r[0] == 1], ["entry", "waited", "end"])
names = ["entry", "waited", "plan", "done1 ok", "k done", "end"]
k0 = [r for r in rows if r[0] == 0]
show("gemm1 (routing)", [r for r in k0 if r[1] < items1 and r[1] < route_ctas], names)
show("gemm1 (reader)", [r for r in k0 if r[1] < items1 and r[1] >= route_ctas], names)
show("gemm2 (routing)", [r for r in k0 if r[1] >= items1 and r[1] < route_ctas], names)
show("gemm2 (reader)", [r for r in k0 if r[1] >= items1 and r[1] >= route_ctas], names)
