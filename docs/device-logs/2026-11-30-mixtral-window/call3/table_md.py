#!/usr/bin/env python3
"""Call 3's table (b7a1afa) as docs/benchmarks.md prints it: this run, its --deterministic twin, the
best peer (../shared/PERFORMANCE.md, as in the tables before) and e527833's table
(2026-11-29-wide-tail/call7)."""
import csv, pathlib
here = pathlib.Path(__file__).parent
def load(p):
    return {(r["preset"], int(r["tokens"])): r for r in csv.DictReader(open(p)) if r["method"] == "moekit"}
cur, det = load(here / "r/table.csv"), load(here / "r/det.csv")
old = load(here / "../../2026-11-29-wide-tail/call7/r/table.csv")
names = {"mixtral-8x7b": "Mixtral-8x7B", "qwen3-30b-a3b": "Qwen3-30B-A3B",
         "deepseek-v3": "DeepSeek-V3 shape, bf16", "gpt-oss-120b": "GPT-OSS-120B shape, bf16"}
peers = {("mixtral-8x7b", 1): 245, ("mixtral-8x7b", 64): 729, ("mixtral-8x7b", 1024): 1802,
         ("mixtral-8x7b", 16384): 21600, ("qwen3-30b-a3b", 1): 97, ("qwen3-30b-a3b", 64): 388,
         ("qwen3-30b-a3b", 1024): 548, ("qwen3-30b-a3b", 16384): 3331, ("deepseek-v3", 1): 260,
         ("deepseek-v3", 64): 4824, ("deepseek-v3", 1024): 8306, ("deepseek-v3", 16384): 41150,
         ("gpt-oss-120b", 1): 127, ("gpt-oss-120b", 64): 1383, ("gpt-oss-120b", 1024): 2503,
         ("gpt-oss-120b", 16384): 10920}
print("| preset | T | moekit µs | % floor (bound) | target | spread | refcheck | deterministic µs (change) | best peer µs | e527833 µs (its %) | change |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
met = faster = 0
last = None
for key, r in cur.items():
    p, t = key
    us, pct = float(r["median_us"]), float(r["percent_of_floor"])
    target = 90 if r["bound"] == "memory" else 80
    ok = pct >= target; met += ok
    d, o = float(det[key]["median_us"]), old[key]
    ou = float(o["median_us"])
    peer = peers.get(key, "")
    if peer: faster += us < peer
    # Two decimals where one would round a miss up to the target (GPT-OSS T=1024's 89.96%).
    shown = f"{pct:.2f}" if round(pct, 1) >= target > pct else f"{pct:.1f}"
    print(f"| {names[p] if p != last else ''} | {t} | {us:.1f} | {shown}% ({r['bound']}) | {target}%: {'met' if ok else 'no'} "
          f"| {100 * float(r['spread']):.1f}% | {float(r['refcheck']):.2e} | {d:.1f} ({100 * (d / us - 1):+.1f}%) | {peer} "
          f"| {ou:.1f} ({float(o['percent_of_floor']):.1f}%) | {100 * (us / ou - 1):+.1f}% |")
    last = p
print(f"\n{met} of {len(cur)} points at the target; faster than the best peer at {faster} of {len(peers)} public points")
