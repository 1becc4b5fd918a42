#!/usr/bin/env python3
"""The layer.prefetch A/B of this directory's calls: for each (preset, T), the whole layer's median per
prefetch value and turn (ab-PRESET-pMB-TURN.csv), and each value's best turn against 0 MB's best;
the floor and its percentage from the 0 MB run. Also the stage rows when the runs timed stages."""
import collections, csv, glob, os, re, sys

d = sys.argv[1]
runs = collections.defaultdict(lambda: collections.defaultdict(list))
floor = {}
for f in sorted(glob.glob(d + "/ab-*.csv")):
    m = re.match(r"ab-(.+)-p(\d+)-(\d)\.csv$", os.path.basename(f))
    if not m: continue
    preset, mb, _ = m.groups()
    for r in csv.DictReader(open(f)):
        key = (r["preset"], int(r["tokens"]), r["method"].strip())
        runs[key][int(mb)].append(float(r["median_us"]))
        if r["method"].strip() == "moekit": floor[key[:2]] = float(r["floor_us"])
for k in sorted(runs):
    base = runs[k].get(0, [])
    line = "%-14s T=%-5d %-22s 0MB %s" % (k + (" ".join("%.1f" % x for x in base),))
    if k[2] == "moekit" and base and k[:2] in floor:
        line += " (%.1f%%)" % (100 * floor[k[:2]] / min(base))
    for mb in sorted(v for v in runs[k] if v != 0):
        b = runs[k][mb]
        ch = "%+.1f%%" % (100 * (min(b) / min(base) - 1)) if base and b else ""
        pct = " (%.1f%%)" % (100 * floor[k[:2]] / min(b)) if k[2] == "moekit" and b and k[:2] in floor else ""
        line += "  %dMB %s %s%s" % (mb, " ".join("%.1f" % x for x in b), ch, pct)
    print(line)
