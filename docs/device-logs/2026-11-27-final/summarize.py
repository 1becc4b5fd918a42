#!/usr/bin/env python3
"""A/B runs of this directory's calls (ab-PRESET-vVARIANT-TURN.csv, VARIANT a MOEKIT_SM90_OVERLAP
level): for each (preset, T, method) the median of each variant in each turn, and each variant's best
turn against the base variant's best (argv[2], default 1), with % of the floor for the whole layer.
Then the table's moekit rows when the call ran one (table.csv)."""
import collections, csv, glob, os, re, sys

d = sys.argv[1]
base_v = int(sys.argv[2]) if len(sys.argv) > 2 else 1
runs = collections.defaultdict(lambda: collections.defaultdict(list))
floor = {}
for f in sorted(glob.glob(d + "/ab-*.csv")):
    m = re.match(r"ab-(.+)-v(\d+)-(\d)\.csv$", os.path.basename(f))
    if not m: continue
    _, v, _ = m.groups()
    for r in csv.DictReader(open(f)):
        key = (r["preset"], int(r["tokens"]), r["method"].strip())
        runs[key][int(v)].append(float(r["median_us"]))
        if r["method"].strip() == "moekit": floor[key[:2]] = float(r["floor_us"])
def pct(k, xs):
    return " (%.1f%%)" % (100 * floor[k[:2]] / min(xs)) if k[2] == "moekit" and xs and k[:2] in floor else ""
for k in sorted(runs):
    base = runs[k].get(base_v, [])
    line = "%-14s T=%-5d %-10s v%d %s%s" % (k + (base_v, " ".join("%.1f" % x for x in base), pct(k, base)))
    for v in sorted(x for x in runs[k] if x != base_v):
        b = runs[k][v]
        ch = "%+.1f%%" % (100 * (min(b) / min(base) - 1)) if base and b else ""
        line += "  v%d %s %s%s" % (v, " ".join("%.1f" % x for x in b), ch, pct(k, b))
    print(line)
if os.path.exists(d + "/table.csv"):
    for r in csv.DictReader(open(d + "/table.csv")):
        if r["method"] == "moekit":
            print("table %-14s T=%-6s %10s us %6s%% (%s) refcheck %s" % (r["preset"], r["tokens"], r["median_us"],
                                                                     r["percent_of_floor"], r["bound"], r["refcheck"]))
