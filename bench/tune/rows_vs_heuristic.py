#!/usr/bin/env python3
"""Each row of a tuned table against today's heuristic, without a GPU.

For every row: the tuner's gain over the heuristic of its day (`heuristic_us - time_us`) beside the
row's own noise (`noise_us`), and the knobs whose value in the row differs from what
`moekit explain --arch sm90` gives now (tiles, splits, orders, tails, fusions). A row whose gain
is not larger than its noise is a tie that pins the plan of its day (docs/tune.md).

  bench/tune/rows_vs_heuristic.py [TABLE] [MOEKIT]   # defaults: bench/tune/h200.csv build/ci/bin/moekit
"""
import csv
import json
import subprocess
import sys

table = sys.argv[1] if len(sys.argv) > 1 else "bench/tune/h200.csv"
moekit = sys.argv[2] if len(sys.argv) > 2 else "build/ci/bin/moekit"
FUSIONS = {"routing+prologue": "fusion.routing_prologue", "gemm1+activation": "fusion.gemm1_activation",
           "gemm2+finalize": "fusion.gemm2_finalize"}

rows = list(csv.reader(line for line in open(table) if not line.startswith("#")))
col = {name: i for i, name in enumerate(rows[0])}
for r in rows[1:]:
    key = dict(f.split("=", 1) for f in r[col["problem"]].split())
    args = [moekit, "explain", "--arch", "sm90", "--json", "--quant", key["quant"], "-T", r[col["tokens"]],
            "--experts", key["E"], "--local-experts", key["EL"], "--local-begin", key["L0"], "--top-k", key["K"],
            "--hidden", key["H"], "--intermediate", key["I"], "--activation", key["act"], "--gate-up", key["gate_up"],
            "--routing", key["routing"], "--renormalize", "true" if key["renorm"] == "1" else "false",
            "--scaling", key["scale"], "--format", key["format"], "--dtype", key["dtype"]]
    if key["n_group"] != "0":
        args += ["--n-group", key["n_group"], "--topk-group", key["topk_group"]]
    if key["det"] == "1":
        args.append("--deterministic")
    plan = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    now = {k["name"]: k["value"] for k in plan["knobs"]}
    for f in plan["fusions"]:
        name = "fusion.whole_layer" if f["rule"] == "whole_layer" else FUSIONS.get(f["fusion"])
        if name:
            now[name] = "on" if f["on"] else "off"
    choice = dict(kv.split("=", 1) for kv in r[col["choice"]].split(";"))
    differs = {k: f"{v} (now {now.get(k, '?')})" for k, v in choice.items() if now.get(k) != v}
    gain = float(r[col["heuristic_us"]]) - float(r[col["time_us"]])
    noise = float(r[col["noise_us"]])
    print(f"E={key['E']} K={key['K']} H={key['H']} I={key['I']} {key['gate_up']} T={r[col['tokens']]}: "
          f"gain {gain:.1f} us, noise {noise:.1f} us{' (a tie)' if gain <= noise else ''}; "
          f"differs from today's heuristic: {'; '.join(f'{k}={v}' for k, v in differs.items()) or 'nothing'}")
