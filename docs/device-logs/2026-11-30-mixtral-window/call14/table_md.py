#!/usr/bin/env python3
"""Call 14's table (af77ce2, an H100) as docs/benchmarks.md prints it: this run, its --deterministic
twin, and 893be5c's table (call 11, the last full table on an H100; no kernel changed since). The
peers of ../shared/PERFORMANCE.md were measured on an H200, so they are not compared here."""
import csv, pathlib
here = pathlib.Path(__file__).parent
def load(p):
    return {(r["preset"], int(r["tokens"])): r for r in csv.DictReader(open(p)) if r["method"] == "moekit"}
cur, det = load(here / "r/table.csv"), load(here / "r/det.csv")
old = load(here / "../call11/r/table.csv")
names = {"mixtral-8x7b": "Mixtral-8x7B", "qwen3-30b-a3b": "Qwen3-30B-A3B",
         "deepseek-v3": "DeepSeek-V3 shape, bf16", "gpt-oss-120b": "GPT-OSS-120B shape, bf16"}
print("| preset | T | moekit µs | % floor (bound) | target | spread | refcheck | deterministic µs (change) | 893be5c µs (its %) | change |")
print("|---|---|---|---|---|---|---|---|---|---|")
met = old_met = 0
last = None
for key, r in cur.items():
    p, t = key
    us, pct = float(r["median_us"]), float(r["percent_of_floor"])
    target = 90 if r["bound"] == "memory" else 80
    ok = pct >= target; met += ok
    d, o = float(det[key]["median_us"]), old[key]
    ou, opct = float(o["median_us"]), float(o["percent_of_floor"])
    old_met += opct >= (90 if o["bound"] == "memory" else 80)
    print(f"| {names[p] if p != last else ''} | {t} | {us:.1f} | {pct:.1f}% ({r['bound']}) | {target}%: {'met' if ok else 'no'} "
          f"| {100 * float(r['spread']):.1f}% | {float(r['refcheck']):.2e} | {d:.1f} ({100 * (d / us - 1):+.1f}%) "
          f"| {ou:.1f} ({opct:.1f}%) | {100 * (us / ou - 1):+.1f}% |")
    last = p
print(f"\n{met} of {len(cur)} points at the target (893be5c's table: {old_met})")
