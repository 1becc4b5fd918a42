#!/usr/bin/env python3
"""Step 34's partial-tile model (docs/perf-notes.md). For gemm1 (+ the gated activation) of each
preset and T in call 3's --stages runs: the M tiles the heuristic's tile executes, by simulating the
bench's uniform routing (each token K distinct experts drawn uniformly; 8 draws, mean) or, balanced,
exactly T*K/E rows an expert; then the rate on the routed rows' FLOPs and on the executed tiles'.
DeepSeek-V3 is left out: the bench's correction bias makes its routing uneven by design.
Usage: partial_tiles.py DIR (DIR/stages-PRESET-{uniform,balanced}.csv)."""
import csv, math, random, sys

PRESETS = {  # E, K, H, I
    "qwen3-30b-a3b": (128, 8, 2048, 768),
    "gpt-oss-120b": (128, 4, 2880, 2880),
    "mixtral-8x7b": (8, 2, 4096, 14336),
}

def tile_m(preset, t):
    # The heuristic's gemm1 tile at these points when call 3 ran (12e6eec, before step 34 f's
    # 48-row rule; `moekit explain --arch sm90`): the 64 x 128 tile for Qwen3 and GPT-OSS up to
    # T = 1024, else 128 x 256. (Under the 48-row rule GPT-OSS T=1536's gemm1 takes 64 x 128.)
    return 64 if preset != "mixtral-8x7b" and t <= 1024 else 128

def uniform_tiles(e, k, t, tm, draws=8):
    total = 0
    rng = random.Random(1)
    for _ in range(draws):
        rows = [0] * e
        for _ in range(t):
            for x in rng.sample(range(e), k): rows[x] += 1
        total += sum(math.ceil(r / tm) for r in rows)
    return total / draws

def main(d):
    print("| preset | T | rows an expert | M tiles executed / needed (uniform) | gemm1 µs uniform / balanced | TFLOP/s routed, uniform / balanced | TFLOP/s executed, uniform / balanced | extra time / extra tiles |")
    print("|---|---|---|---|---|---|---|---|")
    for p, (e, k, h, i) in PRESETS.items():
        g = {}
        for pop in ("uniform", "balanced"):
            for r in csv.DictReader(open(f"{d}/stages-{p}-{pop}.csv")):
                if r["method"].strip() == "cuda.gemm1_activation":
                    g[(int(r["tokens"]), pop)] = float(r["median_us"])
        for t in sorted({t for t, _ in g}):
            if (t, "uniform") not in g or (t, "balanced") not in g: continue
            tm = tile_m(p, t)
            n, kk = 2 * i, h
            routed = t * k
            tu = uniform_tiles(e, k, t, tm)
            tb = e * math.ceil(routed / e / tm)
            need = routed / tm
            fl = 2.0 * routed * n * kk
            fu, fb = 2.0 * tu * tm * n * kk, 2.0 * tb * tm * n * kk
            us_u, us_b = g[(t, "uniform")], g[(t, "balanced")]
            # How much of a full tile's time each extra tile of random routing costs: the time's
            # relative increase over the tiles' (only where random routing adds 5% tiles or more).
            share = f"{(us_u / us_b - 1) / (tu / tb - 1):.2f}" if tu / tb >= 1.05 else "-"
            print(f"| {p} | {t} | {routed / e:.0f} | {tu:.0f} / {need:.0f} (+{100 * (tu / need - 1):.0f}%), balanced {tb} | "
                  f"{us_u:.1f} / {us_b:.1f} | {fl / us_u / 1e6:.0f} / {fl / us_b / 1e6:.0f} | {fu / us_u / 1e6:.0f} / {fb / us_b / 1e6:.0f} | {share} |")

if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
