#!/usr/bin/env python3
"""run2.sh's ncu files (ncu-PRESET-VARIANT.csv under the folder given): each GEMM launch's time, DRAM
bytes read and L2 hit rate, then each file's totals (step 44 e: what the parts read twice)."""
import csv, glob, os, sys

for f in sorted(glob.glob(os.path.join(sys.argv[1], "ncu-*.csv"))):
    lines = open(f).read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    name = os.path.basename(f)[4:-4]
    if start is None:
        print(name, "no ncu rows")
        continue
    per = {}
    for r in csv.DictReader(lines[start:]):
        per.setdefault(r["ID"], {"kernel": r.get("Kernel Name", "")[:60]})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    total_bytes = total_ns = 0.0
    for i, m in per.items():
        b, ns = m.get("dram__bytes_read.sum", 0.0), m.get("gpu__time_duration.sum", 0.0)
        total_bytes += b
        total_ns += ns
        print(f"{name:28s} launch {i}: {ns / 1e3:8.1f} us  DRAM read {b / 1e9:6.3f} GB  L2 hit {m.get('lts__t_sector_hit_rate.pct', 0):5.1f}%  {m['kernel']}")
    print(f"{name:28s} total : {total_ns / 1e3:8.1f} us  DRAM read {total_bytes / 1e9:6.3f} GB")
