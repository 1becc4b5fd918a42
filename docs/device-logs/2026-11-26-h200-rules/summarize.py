#!/usr/bin/env python3
"""Summaries of this directory's device calls: pairs of runs (auto/fixed, dflt/c1x2, fixed/claimed;
turns 1 and 2) at each (preset, T, method), the change of the best run of the second against the
first; the ncu rows (time, DRAM bytes, L2 hit rate per GEMM launch); the table's moekit rows."""
import collections, csv, glob, os, re, sys

d = sys.argv[1]
PAIRS = {"order": ("fixed", "auto"), "tile": ("dflt", "c1x2"), "coop": ("fixed", "claimed"),
         "colm": ("fixed", "claimed"), "sweep": ("dflt", None)}  # None: every other variant
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(d + "/*.csv")):
    m = re.match(r"(order|tile|coop|colm|sweep)-(?:(.+)-)?([a-z0-9]+?)([12])\.csv$", os.path.basename(f))
    if not m: continue
    kind, _, variant, _ = m.groups()
    for r in csv.DictReader(open(f)):
        meth = r["method"].strip()
        if meth == "moekit" or "gemm" in meth:
            runs[(kind, r["preset"], int(r["tokens"]), meth)][variant].append(float(r["median_us"]))
for k in sorted(runs):
    base, other = PAIRS[k[0]]
    a = runs[k][base]
    line = "%-5s %-14s T=%-6d %-22s %s %s" % (k + (base, " ".join("%.1f" % x for x in a)))
    for o in ([other] if other else sorted(v for v in runs[k] if v != base)):
        b = runs[k][o]
        ch = "%+.1f%%" % (100 * (min(b) / min(a) - 1)) if a and b else ""
        line += "  %s %s  %s" % (o, " ".join("%.1f" % x for x in b), ch)
    print(line)
for f in sorted(glob.glob(d + "/ncu-*.csv")):
    lines = open(f).read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None: print(os.path.basename(f), "no ncu rows"); continue
    per = {}
    for r in csv.DictReader(lines[start:]): per.setdefault(r["ID"], {})[r["Metric Name"]] = r["Metric Value"]
    for i, m in per.items():
        print(os.path.basename(f)[4:-4], "launch", i, " ".join("%s=%s" % (k.split("__")[1], v) for k, v in sorted(m.items())))
if os.path.exists(d + "/table.csv"):
    for r in csv.DictReader(open(d + "/table.csv")):
        if r["method"] == "moekit":
            print("table %-14s T=%-6s %10s us %6s%% (%s) refcheck %s" % (r["preset"], r["tokens"], r["median_us"],
                                                                     r["percent_of_floor"], r["bound"], r["refcheck"]))
