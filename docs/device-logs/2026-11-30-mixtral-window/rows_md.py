#!/usr/bin/env python3
"""Call 13's check of bench/tune/h200.csv: one line per tuned row, its time with the row against the
heuristic's, from `moekit tune --run-config bench/tune/h200.csv --compare` (r/tune-rows.txt), whose
shape i is the table's data row i, as a markdown table.

  python3 rows_md.py CALL_DIR [TABLE_CSV]
"""
import csv, os, re, sys

call = sys.argv[1]
table = sys.argv[2] if len(sys.argv) > 2 else "bench/tune/h200.csv"
with open(table) as f:
    rows = list(csv.reader(line for line in f if not line.startswith("#")))[1:]
PRESETS = {("128", "2048", "768"): "Qwen3-30B-A3B", ("8", "4096", "14336"): "Mixtral-8x7B",
           ("256", "7168", "2048"): "DeepSeek-V3", ("128", "2880", "2880"): "GPT-OSS-120B"}
text = open(os.path.join(call, "r/tune-rows.txt")).read()
print("| row | preset | W13 | T | with the row µs | heuristic µs | speedup | the row's choice |")
print("|---|---|---|---|---|---|---|---|")
for block in re.split(r"^(?=shape \d+/\d+)", text, flags=re.M):
    m = re.match(r"shape (\d+)/", block)
    if not m:
        continue
    n = int(m.group(1))
    row = rows[n - 1]
    key = dict(kv.split("=", 1) for kv in row[3].split())
    preset = PRESETS.get((key["E"], key["H"], key["I"]), row[3][:30])
    w = re.search(r"with \S+: ([\d.]+) us \((.*)\)", block)
    h = re.search(r"heuristic: ([\d.]+) us\s+speedup ([\d.]+)x", block)
    used = w and "row" in w.group(2) and "no row" not in w.group(2)
    print(f"| {n} | {preset} | {key['gate_up']} | {row[4]} | {w.group(1) if w else 'FAILED'}{'' if used else ' (row not used)'} | "
          f"{h.group(1) if h else '-'} | {h.group(2) + 'x' if h else '-'} | `{row[5]}` |")
