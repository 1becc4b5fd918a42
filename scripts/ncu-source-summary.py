#!/usr/bin/env python3
"""Summarizes one kernel's SASS-level profile from Nsight Compute.

Input: the CSV of
    ncu --section SourceCounters --section WarpStateStats --page source --print-source sass --csv ...
for one kernel launch (--launch-count 1). Prints how many SASS instructions the kernel has, how many
of them ever executed (each distinct executed instruction is fetched at least once: the cost that
dominates code run once per launch, docs/perf-notes.md step 7), the warp instructions executed, and
the instructions with the most stall samples.

    python3 scripts/ncu-source-summary.py profile.csv [--top 25]
"""
import argparse
import csv
import sys


def find(header, *needles):
    for i, name in enumerate(header):
        if all(n.lower() in name.lower() for n in needles):
            return i
    return None


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    with open(args.csv, newline="") as f:
        rows = list(csv.reader(f))
    start = next((i for i, r in enumerate(rows) if find(r, "instructions executed") is not None), None)
    if start is None:
        sys.exit(f"{args.csv}: no header with an 'Instructions Executed' column")
    header, body = rows[start], rows[start + 1:]
    col_exec = find(header, "warp instructions executed") or find(header, "instructions executed")
    col_stall = find(header, "stall sampling", "all")
    col_src = find(header, "source")
    col_addr = find(header, "address")
    body = [r for r in body if len(r) == len(header)]
    executed = [r for r in body if number(r[col_exec]) > 0]
    total = sum(number(r[col_exec]) for r in body)
    stalls = sum(number(r[col_stall]) for r in body) if col_stall is not None else 0
    print(f"SASS instructions: {len(body)}; executed at least once: {len(executed)} "
          f"({len(executed) * 16 / 128:.0f} 128-byte lines); warp instructions executed: {total:.0f}; "
          f"stall samples: {stalls:.0f}")
    if col_stall is None:
        return
    print(f"top {args.top} by stall samples (address, samples, executed, source):")
    for r in sorted(body, key=lambda r: -number(r[col_stall]))[: args.top]:
        addr = r[col_addr] if col_addr is not None else "?"
        print(f"  {addr:>8}  {number(r[col_stall]):6.0f}  {number(r[col_exec]):6.0f}  {r[col_src].strip()[:90]}")


if __name__ == "__main__":
    main()
