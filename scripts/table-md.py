#!/usr/bin/env python3
"""A device call's full table (device_tables in scripts/device-ab.sh: table.csv and its --deterministic
twin det.csv) as the markdown table docs/benchmarks.md shows, beside an earlier table, with the count
of points at issue 7's target (90% of the floor where memory-bound, 80% where compute-bound).

  scripts/table-md.py CALL_R_DIR EARLIER_TABLE_CSV EARLIER_LABEL
  e.g. scripts/table-md.py docs/device-logs/2026-11-30-mixtral-window/call14/r \\
         docs/device-logs/2026-11-30-mixtral-window/call11/r/table.csv 893be5c

Compare tables of the same GPU model only: the floors come from each machine's own ceilings."""
import csv
import pathlib
import sys

if len(sys.argv) != 4:
    sys.exit(__doc__)
run, earlier, label = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]


def load(path):
    return {(r["preset"], int(r["tokens"])): r for r in csv.DictReader(open(path)) if r["method"] == "moekit"}


def target(row):
    return 90 if row["bound"] == "memory" else 80


cur, det, old = load(run / "table.csv"), load(run / "det.csv"), load(earlier)
names = {"mixtral-8x7b": "Mixtral-8x7B", "qwen3-30b-a3b": "Qwen3-30B-A3B",
         "deepseek-v3": "DeepSeek-V3 shape, bf16", "gpt-oss-120b": "GPT-OSS-120B shape, bf16"}
print(f"| preset | T | moekit µs | % floor (bound) | target | spread | refcheck | deterministic µs (change) | {label} µs (its %) | change |")
print("|---|---|---|---|---|---|---|---|---|---|")
met = old_met = 0
last = None
for key, r in cur.items():
    preset, tokens = key
    us, pct = float(r["median_us"]), float(r["percent_of_floor"])
    ok = pct >= target(r)
    met += ok
    d, o = float(det[key]["median_us"]), old[key]
    ou, opct = float(o["median_us"]), float(o["percent_of_floor"])
    old_met += opct >= target(o)
    print(f"| {names.get(preset, preset) if preset != last else ''} | {tokens} | {us:.1f} | {pct:.1f}% ({r['bound']}) "
          f"| {target(r)}%: {'met' if ok else 'no'} | {100 * float(r['spread']):.1f}% | {float(r['refcheck']):.2e} "
          f"| {d:.1f} ({100 * (d / us - 1):+.1f}%) | {ou:.1f} ({opct:.1f}%) | {100 * (us / ou - 1):+.1f}% |")
    last = preset
print(f"\n{met} of {len(cur)} points at the target ({label}'s table: {old_met})")
